"""CPU and SQL statements per sent SMS of the send path, in process (a tool, not part of
``make bench``).

Queues N SMS rows (one per new request, as the dispatcher bench does) and runs the send
service over them in batches of ``DELIVERY_SEND_BATCH`` against the loopback fake Twilio (its
own process, answering at once), then reports per message: statements, this process's CPU ms
and the PostgreSQL backend's CPU ms. Works on any tree of the project (run it from the tree
to measure, by path)::

    cd <tree> && .venv/bin/python /path/to/bench/send_cpu.py --messages 400 [--profile out.prof]

A fresh database is created and dropped (``--admin-database-url``); Redis is ``REDIS_URL``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path

import psycopg

ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres"


def _backend_cpu_ms(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def _fake_twilio():
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.fake_providers", "--latency", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        yield proc.stdout.readline().strip()
    finally:
        proc.terminate()
        proc.wait()


@contextlib.contextmanager
def _database(admin_url: str):
    name = f"sendcpu_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield admin_url.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _queue(owner, count: int) -> list[str]:
    from django.utils import timezone

    from reviews.models import Channel, Contact, Message, ReviewRequest

    now = timezone.now()
    base = uuid.uuid4().int % 10**6
    contacts = Contact.objects.bulk_create(
        Contact(owner=owner, first_name="Bench", phone=f"+1555{(base * 1000 + n) % 10**7:07d}")
        for n in range(count)
    )
    requests = ReviewRequest.objects.bulk_create(
        ReviewRequest(owner=owner, contact=c, scheduled_for=now - timedelta(seconds=1))
        for c in contacts
    )
    messages = Message.objects.bulk_create(
        Message(
            review_request=r,
            step=0,
            channel=Channel.SMS,
            status=Message.Status.QUEUED,
            due_at=r.scheduled_for,
            queued_at=now,
        )
        for r in requests
    )
    return [str(m.pk) for m in messages]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=400)
    parser.add_argument("--warmup", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", help="write a cProfile of the measured sends here")
    parser.add_argument("--admin-database-url", default=ADMIN_URL)
    args = parser.parse_args()
    sys.path.insert(0, os.getcwd())
    with _database(args.admin_database_url) as url, _fake_twilio() as fake_url:
        os.environ.update(
            DJANGO_SETTINGS_MODULE="config.settings",
            DATABASE_URL=url,
            DEBUG="False",
            LOG_LEVEL="WARNING",
            TWILIO_ACCOUNT_SID="ACbench",
            TWILIO_AUTH_TOKEN="bench-token",
            TWILIO_FROM_NUMBER="+15005550006",
            TWILIO_API_BASE_URL=fake_url,
        )
        import django

        django.setup()
        _run(args)


def _run(args) -> None:
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection

    from accounts.models import User
    from reviews import services
    from reviews.models import BusinessSettings, Message

    # Named send_messages before the services were renamed (the older trees).
    send = getattr(services, "messages_send", None) or getattr(services, "send_messages")  # noqa: B009
    call_command("migrate", verbosity=0)
    call_command(
        "create_business",
        "--email=owner@sendcpu.example",
        "--password=a long passphrase for the bench",
        "--business-name=Bench Co",
        "--review-url=https://g.page/r/bench-co/review",
        stdout=io.StringIO(),
    )
    owner = User.objects.get(email="owner@sendcpu.example")
    policy, _ = BusinessSettings.objects.get_or_create(owner=owner)
    policy.send_window_applies_to = BusinessSettings.WindowAppliesTo.NONE
    policy.save()
    batch = settings.DELIVERY_SEND_BATCH

    def run(ids: list[str]) -> None:
        for i in range(0, len(ids), batch):
            send(message_ids=ids[i : i + batch])

    run(_queue(owner, args.warmup))
    statements = 0

    def count(execute, sql, params, many, context):
        nonlocal statements
        statements += 1
        return execute(sql, params, many, context)

    ids = _queue(owner, args.messages)
    with connection.execute_wrapper(count):
        run(ids)
    per_message_statements = statements / len(ids)
    backend = connection.cursor().connection.info.backend_pid
    rows = []
    for _ in range(args.rounds):
        ids = _queue(owner, args.messages)
        profiler = None
        if args.profile:
            import cProfile

            profiler = cProfile.Profile(time.process_time)
            profiler.enable()
        cpu, db, wall = time.process_time(), _backend_cpu_ms(backend), time.perf_counter()
        run(ids)
        cpu, db = time.process_time() - cpu, _backend_cpu_ms(backend) - db
        wall = time.perf_counter() - wall
        if profiler:
            profiler.disable()
            profiler.dump_stats(args.profile)
        rows.append((cpu * 1000 / len(ids), db / len(ids), wall * 1000 / len(ids)))
    sent = Message.objects.filter(status=Message.Status.SENT).count()
    print(
        f"statements/message {per_message_statements:.2f}; sent {sent}; per message, "
        "each round: python CPU ms / postgres CPU ms / wall ms"
    )
    for cpu, db, wall in rows:
        print(f"  {cpu:6.2f} {db:6.2f} {wall:6.2f}")
    rows.sort()
    print(f"python CPU ms/message: median {rows[len(rows) // 2][0]:.2f}, min {rows[0][0]:.2f}")


if __name__ == "__main__":
    main()
