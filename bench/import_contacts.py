"""Time the CSV import of 10,000 contacts on PostgreSQL (docs/benchmarks.md, "CSV import").

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/DB .venv/bin/python -m bench.import_contacts

Runs in a fresh database (``test_<DB>``, created and dropped by Django's test-database
helpers) so nothing existing is touched. The file is realistic: 10,000 rows with names,
e-mails, phone numbers written several ways and a metadata column; 1 % of rows are bad (an
invalid e-mail or phone) and 2 % repeat an earlier person (dedup). It is imported twice through
``contacts_import`` (the path of the admin page and ``manage.py import_contacts``): a dry run and
the real import. Prints rows per second for both.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import sys
import time

import django


def make_csv(rows: int, *, seed: int = 7) -> bytes:
    rng = random.Random(seed)
    lines = ["First Name,Last Name,E-mail,Mobile,Company,Metadata"]
    for i in range(rows):
        person = i if i < 200 or rng.random() > 0.02 else rng.randrange(0, i)  # 2 % repeats
        email = f"customer{person}@example.com"
        phone = rng.choice(["+1415{:07d}", "(415) {:03d}-{:04d}", "415.{:03d}.{:04d}"])
        number = 5550000 + person % 10000
        phone = (
            phone.format(number)
            if "{:07d}" in phone
            else phone.format(number // 10000, number % 10000)
        )
        if rng.random() < 0.01:
            email = f"customer{person}@"  # bad row
        meta = json.dumps({"order": str(10000 + i)}).replace('"', '""')
        lines.append(f'Cust{person},Omer{person},{email},{phone},Acme {person % 50},"{meta}"')
    return ("\n".join(lines) + "\n").encode()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rows", type=int, default=10_000)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    # A throwaway key: nothing signed here outlives the run (settings require one with a DB URL).
    os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
    django.setup()
    from django.db import connection
    from django.test.utils import setup_test_environment

    if connection.vendor != "postgresql":
        print("Set DATABASE_URL to a PostgreSQL database.", file=sys.stderr)
        return 2
    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        from reviews.models import BusinessSettings, Contact, ReviewRequest
        from reviews.services import contacts_import
        from tests.factories import ReviewSiteFactory, UserFactory

        owner = UserFactory.create(email="bench@example.com", business_name="Bench Co")
        ReviewSiteFactory(owner=owner)  # a business that sends (without one, requests wait)
        BusinessSettings.objects.create(owner=owner)
        raw = make_csv(args.rows)
        version = ".".join(str(part) for part in connection.get_database_version())
        print(f"{args.rows} rows, {len(raw) / 1024:.0f} KiB, PostgreSQL {version}")
        for dry_run in (True, False):
            started = time.perf_counter()
            report = contacts_import(owner=owner, raw=raw, dry_run=dry_run)
            seconds = time.perf_counter() - started
            label = "dry run" if dry_run else "import "
            print(
                f"{label}: {seconds:6.2f} s  {args.rows / seconds:7.0f} rows/s  "
                f"scheduled={report.scheduled} skipped={len(report.notes)} "
                f"errors={len(report.errors)}"
            )
        print(
            f"stored: {Contact.objects.count()} contacts, "
            f"{ReviewRequest.objects.count()} review requests"
        )
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
