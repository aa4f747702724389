"""CPU and SQL statements per request of the write path, in process (a tool, not part of
``make bench``).

Sends N new contacts to ``POST /api/zapier/send-review-request`` through Django's test client
(the whole middleware stack, a real bearer token, an ``Idempotency-Key`` each, the rate limit
and caches on ``REDIS_URL``) and reports per request: statements, this process's CPU ms and
the PostgreSQL backend's CPU ms. Works on any tree of the project (run it from the tree to
measure, by path)::

    cd <tree> && .venv/bin/python /path/to/bench/write_cpu.py --requests 400 [--profile out.prof]

A fresh database is created and dropped (``--admin-database-url``); Redis is ``REDIS_URL`` (its
database is flushed first: give it one nothing else uses).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import secrets
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path

import psycopg

ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres"
SEND = "/api/zapier/send-review-request"


def _backend_cpu_ms(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def _database(admin_url: str):
    name = f"writecpu_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield admin_url.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _token(owner) -> str:
    from django.utils import timezone
    from oauth2_provider.models import (
        get_access_token_model,
        get_application_model,
        set_token_value,
    )

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
    return raw


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--warmup", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", help="write a cProfile of the measured requests here")
    parser.add_argument("--admin-database-url", default=ADMIN_URL)
    args = parser.parse_args()
    sys.path.insert(0, os.getcwd())
    with _database(args.admin_database_url) as url:
        os.environ.update(
            DJANGO_SETTINGS_MODULE="config.settings",
            DATABASE_URL=url,
            DEBUG="False",
            LOG_LEVEL="WARNING",
            RATE_LIMIT_PER_HOUR="1000000",
            SECRET_KEY=os.environ.get("SECRET_KEY") or secrets.token_urlsafe(50),
            ALLOWED_HOSTS="testserver",
        )
        import django

        django.setup()
        _run(args)


def _run(args) -> None:
    from django.core.cache import cache
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client

    from accounts.models import User

    call_command("migrate", verbosity=0)
    cache.clear()
    call_command(
        "create_business",
        "--email=owner@writecpu.example",
        "--password=a long passphrase for the bench",
        "--business-name=Bench Co",
        "--review-url=https://g.page/r/bench-co/review",
        stdout=io.StringIO(),
    )
    owner = User.objects.get(email="owner@writecpu.example")
    client = Client(HTTP_AUTHORIZATION=f"Bearer {_token(owner)}")
    run_id = uuid.uuid4().hex[:8]
    sent = 0

    def post(count: int) -> None:
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

    post(args.warmup)
    statements = 0

    def count(execute, sql, params, many, context):
        nonlocal statements
        statements += 1
        if os.environ.get("WRITE_CPU_SQL") and statements <= 8:
            print(sql[:300].replace("\n", " "))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count):
        post(args.requests)
    per_request_statements = statements / args.requests
    backend = connection.cursor().connection.info.backend_pid
    rows = []
    for _ in range(args.rounds):
        profiler = None
        if args.profile:
            import cProfile

            profiler = cProfile.Profile(time.process_time)
            profiler.enable()
        cpu, db, wall = time.process_time(), _backend_cpu_ms(backend), time.perf_counter()
        post(args.requests)
        cpu, db = time.process_time() - cpu, _backend_cpu_ms(backend) - db
        wall = time.perf_counter() - wall
        if profiler:
            profiler.disable()
            profiler.dump_stats(args.profile)
        rows.append((cpu * 1000 / args.requests, db / args.requests, wall * 1000 / args.requests))
    print(
        f"statements/request {per_request_statements:.2f}; per request, each round: "
        "python CPU ms / postgres CPU ms / wall ms"
    )
    for cpu, db, wall in rows:
        print(f"  {cpu:6.2f} {db:6.2f} {wall:6.2f}")
    rows.sort()
    print(f"python CPU ms/request: median {rows[len(rows) // 2][0]:.2f}, min {rows[0][0]:.2f}")


if __name__ == "__main__":
    main()
