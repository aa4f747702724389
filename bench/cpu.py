"""CPU and SQL statements per unit of the two hot paths, in process (a tool, not part of
``make bench``).

``send``: queues N SMS rows (one per new request, as the dispatcher bench does) and runs the
send service over them in batches of ``DELIVERY_SEND_BATCH`` against the loopback fake Twilio
(its own process, answering at once). ``write``: sends N new contacts to ``POST
/api/zapier/send-review-request`` through Django's test client (the whole middleware stack, a
real bearer token, an ``Idempotency-Key`` each, the rate limit and caches on ``REDIS_URL``).

Reports per sent message or per request: statements, this process's CPU ms and the PostgreSQL
backend's CPU ms. Works on any tree of the project (run it from the tree to measure, by
path)::

    cd <tree> && .venv/bin/python /path/to/bench/cpu.py send --messages 400 [--profile out.prof]
    cd <tree> && .venv/bin/python /path/to/bench/cpu.py write --requests 400

A fresh database is created and dropped (``--admin-database-url``); Redis is ``REDIS_URL`` (the
``write`` run clears its cache database first: give it one nothing else uses).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import secrets
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

import psycopg

ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres"
SEND = "/api/zapier/send-review-request"
OWNER_EMAIL = "owner@cpu.example"

# ``batch(n)`` prepares n units of work (untimed) and returns what runs them (timed).
Batch = Callable[[int], Callable[[], None]]


def _backend_cpu_ms(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def _fake_twilio() -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.fake_providers", "--latency", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        proc.terminate()
        proc.wait()


@contextlib.contextmanager
def _database(admin_url: str) -> Iterator[str]:
    name = f"cpu_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield admin_url.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    paths = parser.add_subparsers(dest="path", required=True)
    send = paths.add_parser("send", help="per sent SMS")
    send.add_argument("--messages", dest="count", type=int, default=400)
    write = paths.add_parser("write", help="per API write")
    write.add_argument("--requests", dest="count", type=int, default=400)
    for sub in (send, write):
        sub.add_argument("--warmup", type=int, default=40)
        sub.add_argument("--rounds", type=int, default=3)
        sub.add_argument("--profile", help="write a cProfile of the measured work here")
        sub.add_argument("--admin-database-url", default=ADMIN_URL)
    args = parser.parse_args()
    sys.path.insert(0, os.getcwd())
    with contextlib.ExitStack() as stack:
        os.environ.update(
            DJANGO_SETTINGS_MODULE="config.settings",
            DATABASE_URL=stack.enter_context(_database(args.admin_database_url)),
            DEBUG="False",
            LOG_LEVEL="WARNING",
            SECRET_KEY=os.environ.get("SECRET_KEY") or secrets.token_urlsafe(50),
        )
        if args.path == "send":
            os.environ.update(
                TWILIO_ACCOUNT_SID="ACbench",
                TWILIO_AUTH_TOKEN="bench-token",
                TWILIO_FROM_NUMBER="+15005550006",
                TWILIO_API_BASE_URL=stack.enter_context(_fake_twilio()),
            )
        else:
            os.environ.update(RATE_LIMIT_PER_HOUR="1000000", ALLOWED_HOSTS="testserver")
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        call_command(
            "create_business",
            f"--email={OWNER_EMAIL}",
            "--password=a long passphrase for the bench",
            "--business-name=Bench Co",
            "--review-url=https://g.page/r/bench-co/review",
            stdout=io.StringIO(),
        )
        if args.path == "send":
            _measure(_send_batches(), args, unit="message")
            from reviews.models import Message

            print(f"sent {Message.objects.filter(status=Message.Status.SENT).count()}")
        else:
            _measure(_write_batches(), args, unit="request")


def _measure(batch: Batch, args: argparse.Namespace, *, unit: str) -> None:
    """Warm up, count the statements of one batch, then time ``--rounds`` batches."""
    from django.db import connection

    batch(args.warmup)()
    statements = 0

    def count(execute, sql, params, many, context):
        nonlocal statements
        statements += 1
        return execute(sql, params, many, context)

    work = batch(args.count)
    with connection.execute_wrapper(count):
        work()
    backend = connection.cursor().connection.info.backend_pid
    rows = []
    for _ in range(args.rounds):
        work = batch(args.count)
        profiler = None
        if args.profile:
            import cProfile

            profiler = cProfile.Profile(time.process_time)
            profiler.enable()
        cpu, db, wall = time.process_time(), _backend_cpu_ms(backend), time.perf_counter()
        work()
        cpu, db = time.process_time() - cpu, _backend_cpu_ms(backend) - db
        wall = time.perf_counter() - wall
        if profiler:
            profiler.disable()
            profiler.dump_stats(args.profile)
        rows.append((cpu * 1000 / args.count, db / args.count, wall * 1000 / args.count))
    print(
        f"statements/{unit} {statements / args.count:.2f}; per {unit}, each round: "
        "python CPU ms / postgres CPU ms / wall ms"
    )
    for cpu, db, wall in rows:
        print(f"  {cpu:6.2f} {db:6.2f} {wall:6.2f}")
    rows.sort()
    print(f"python CPU ms/{unit}: median {rows[len(rows) // 2][0]:.2f}, min {rows[0][0]:.2f}")


def _send_batches() -> Batch:
    from django.conf import settings
    from django.utils import timezone

    from accounts.models import User
    from reviews import services
    from reviews.models import BusinessSettings, Channel, Contact, Message, ReviewRequest

    # Named send_messages before the services were renamed (the older trees).
    send = getattr(services, "messages_send", None) or getattr(services, "send_messages")  # noqa: B009
    owner = User.objects.get(email=OWNER_EMAIL)
    policy, _ = BusinessSettings.objects.get_or_create(owner=owner)
    policy.send_window_applies_to = BusinessSettings.WindowAppliesTo.NONE
    policy.save()
    size = settings.DELIVERY_SEND_BATCH

    def batch(count: int) -> Callable[[], None]:
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
        ids = [str(m.pk) for m in messages]

        def run() -> None:
            for i in range(0, len(ids), size):
                send(message_ids=ids[i : i + size])

        return run

    return batch


def _write_batches() -> Batch:
    from django.core.cache import cache
    from django.test import Client
    from django.utils import timezone
    from oauth2_provider.models import (
        get_access_token_model,
        get_application_model,
        set_token_value,
    )

    from accounts.models import User

    cache.clear()
    owner = User.objects.get(email=OWNER_EMAIL)
    Application = get_application_model()
    application = Application.objects.create(
        name="Bench",
        client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris="https://bench.example/callback",
        client_secret=secrets.token_urlsafe(32),
    )
    raw = secrets.token_urlsafe(30)
    access = get_access_token_model()(
        user=owner,
        application=application,
        scope="read write",
        expires=timezone.now() + timedelta(hours=6),
    )
    set_token_value(access, raw)
    access.save()
    client = Client(HTTP_AUTHORIZATION=f"Bearer {raw}")
    run_id = uuid.uuid4().hex[:8]
    sent = 0

    def batch(count: int) -> Callable[[], None]:
        def run() -> None:
            nonlocal sent
            for _ in range(count):
                sent += 1
                body = {
                    "first_name": "Bench",
                    "last_name": f"User {sent}",
                    "email": f"{run_id}-{sent}@bench.example",
                    "delay_hours": 2,
                }
                response = client.post(
                    SEND,
                    json.dumps(body),
                    content_type="application/json",
                    HTTP_IDEMPOTENCY_KEY=f"{run_id}-{sent}",
                )
                if response.status_code not in (200, 201, 202):
                    raise SystemExit(f"{response.status_code}: {response.content[:500]!r}")

        return run

    return batch


if __name__ == "__main__":
    main()
