"""Settings come from the environment; the embedded default works with nothing set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.cache.backends.filebased import FileBasedCache

ROOT = Path(__file__).resolve().parents[2]

# The settings alone, as the service's processes load them (their checks run at import), and a
# connection: no django.setup(), whose importing of every app was most of a probe's CPU.
PROBE = """
import json
from django.conf import settings
from django.db import connection
out = {
    "engine": settings.DATABASES["default"]["ENGINE"],
    "db_options": {k: v for k, v in settings.DATABASES["default"].get("OPTIONS", {}).items()},
    "broker": settings.CELERY_BROKER_URL,
    "cache": settings.CACHES["default"]["BACKEND"],
    "cache_options": settings.CACHES["default"].get("OPTIONS", {}),
    "secret_key": settings.SECRET_KEY,
    "ssl_redirect": settings.SECURE_SSL_REDIRECT,
    "hsts": settings.SECURE_HSTS_SECONDS,
    "secure_cookies": settings.SESSION_COOKIE_SECURE and settings.CSRF_COOKIE_SECURE,
    "rate_limit": settings.RATE_LIMIT_PER_HOUR,
    "anymail": settings.ANYMAIL,
    "twilio_auth_token": settings.TWILIO_AUTH_TOKEN,
    "email": {
        name: getattr(settings, name)
        for name in (
            "EMAIL_BACKEND", "EMAIL_HOST", "EMAIL_PORT", "EMAIL_HOST_USER",
            "EMAIL_HOST_PASSWORD", "EMAIL_USE_TLS", "EMAIL_USE_SSL",
        )
    },
}
if connection.vendor == "sqlite":
    with connection.cursor() as c:
        c.execute("PRAGMA journal_mode")
        out["journal_mode"] = c.fetchone()[0]
        c.execute("PRAGMA busy_timeout")
        out["busy_timeout_ms"] = c.fetchone()[0]
print(json.dumps(out))
"""


def _run(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in _CONFIG_VARS}
    clean.update(DJANGO_SETTINGS_MODULE="config.settings", VAR_DIR=str(tmp_path / "var"), **env)
    return subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
    )


_CONFIG_VARS = {
    "DATABASE_URL",
    "REDIS_URL",
    "SECRET_KEY",
    "DEBUG",
    "SITE_URL",
    "ALLOWED_HOSTS",
    "SECURE_SSL_REDIRECT",
    "RATE_LIMIT_PER_HOUR",
    "OUTBOX_DIR",
    "VAR_DIR",
    "EMAIL_URL",
    "EMAIL_BACKEND",
    "ANYMAIL",
    "TWILIO_AUTH_TOKEN",
}


def test_embedded_default_needs_nothing_set(tmp_path):
    result = _run(tmp_path)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["engine"] == "django.db.backends.sqlite3"
    assert out["broker"].startswith("filesystem://")
    assert out["cache"].endswith("FileBasedCache")
    assert out["journal_mode"] == "wal"
    assert out["busy_timeout_ms"] >= 5000
    assert out["db_options"]["transaction_mode"] == "IMMEDIATE"
    assert out["ssl_redirect"] is False
    assert out["rate_limit"] == 5000


def test_embedded_cache_keeps_its_entries_instead_of_culling_at_random(tmp_path):
    """Django's file cache deletes a third of its files at random once it holds MAX_ENTRIES
    (300 by default): a token's generation key among them makes the token cache miss, and
    could make an entry written by a request that raced a revocation look current again."""
    result = _run(tmp_path)
    assert result.returncode == 0, result.stderr
    options = json.loads(result.stdout)["cache_options"]
    cache = FileBasedCache(str(tmp_path / "cache"), {"OPTIONS": options})
    for n in range(400):
        cache.set(f"key-{n}", n)
    assert [cache.get(f"key-{n}") for n in range(400)] == list(range(400))


def test_embedded_secret_key_is_generated_once_and_kept_under_var(tmp_path):
    first = json.loads(_run(tmp_path).stdout)["secret_key"]
    second = json.loads(_run(tmp_path).stdout)["secret_key"]
    key_file = tmp_path / "var" / "secret_key"
    assert first == second == key_file.read_text().strip()
    assert len(first) >= 50
    assert key_file.stat().st_mode & 0o777 == 0o600


def test_secret_key_is_required_when_debug_is_off_outside_the_embedded_default(tmp_path):
    result = _run(tmp_path, DATABASE_URL="postgres://postgres@127.0.0.1:5432/unused")
    assert result.returncode != 0
    assert "SECRET_KEY is required" in result.stderr


def test_https_site_turns_on_redirects_hsts_and_secure_cookies(tmp_path):
    result = _run(tmp_path, SITE_URL="https://reviews.example.com", SECRET_KEY="x" * 60)
    out = json.loads(result.stdout)
    assert out["ssl_redirect"] is True
    assert out["hsts"] >= 31_536_000
    assert out["secure_cookies"] is True


def test_redis_url_switches_broker_and_cache_to_redis(tmp_path):
    result = _run(tmp_path, REDIS_URL="redis://127.0.0.1:6379/9", RATE_LIMIT_PER_HOUR="10")
    out = json.loads(result.stdout)
    assert out["broker"] == "redis://127.0.0.1:6379/9"
    assert out["cache"] == "core.cache.RedisCache"  # Django's, reusing its client
    assert out["rate_limit"] == 10


def test_email_url_sets_smtp_host_port_login_and_tls(tmp_path):
    starttls = _run(tmp_path, EMAIL_URL="smtp://user:p%40ss@mail.example.com:587?tls=1")
    assert starttls.returncode == 0, starttls.stderr
    assert json.loads(starttls.stdout)["email"] == {
        "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
        "EMAIL_HOST": "mail.example.com",
        "EMAIL_PORT": 587,
        "EMAIL_HOST_USER": "user",
        "EMAIL_HOST_PASSWORD": "p@ss",
        "EMAIL_USE_TLS": True,
        "EMAIL_USE_SSL": False,
    }
    ssl = json.loads(_run(tmp_path, EMAIL_URL="smtp+ssl://u:p@mail.example.com:465").stdout)
    assert (ssl["email"]["EMAIL_USE_SSL"], ssl["email"]["EMAIL_USE_TLS"]) == (True, False)
    default = json.loads(_run(tmp_path).stdout)["email"]
    assert default["EMAIL_BACKEND"] == "providers.outbox.OutboxEmailBackend"


def test_secrets_can_be_read_from_the_files_name_file_points_at(tmp_path):
    secrets_dir = tmp_path / "secrets"
    secrets_dir.mkdir()
    values = {
        "SECRET_KEY": "k" * 50,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'from-file.sqlite3'}",
        "REDIS_URL": "redis://127.0.0.1:6379/9",
        "EMAIL_URL": "smtp://user:pw@mail.example.com:587?tls=1",
        "ANYMAIL": '{"POSTMARK_SERVER_TOKEN": "pm-token"}',
        "TWILIO_AUTH_TOKEN": "tw-token",
    }
    files = {}
    for name, value in values.items():
        (secrets_dir / name.lower()).write_text(value + "\n")  # as `echo` writes it
        files[f"{name}_FILE"] = str(secrets_dir / name.lower())
    result = _run(tmp_path, **files)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["secret_key"] == "k" * 50
    assert out["engine"] == "django.db.backends.sqlite3"
    assert out["broker"] == "redis://127.0.0.1:6379/9"
    assert out["email"]["EMAIL_HOST_PASSWORD"] == "pw"
    assert out["anymail"]["POSTMARK_SERVER_TOKEN"] == "pm-token"
    assert out["twilio_auth_token"] == "tw-token"

    both = _run(tmp_path, SECRET_KEY="x" * 50, SECRET_KEY_FILE=files["SECRET_KEY_FILE"])
    assert both.returncode != 0 and "SECRET_KEY or SECRET_KEY_FILE" in both.stderr
    missing = _run(tmp_path, SECRET_KEY_FILE=str(tmp_path / "nowhere"))
    assert missing.returncode != 0 and "SECRET_KEY_FILE" in missing.stderr


def test_env_example_lists_every_variable_the_settings_read():
    settings_source = (ROOT / "config" / "settings.py").read_text()
    import re

    read = set(re.findall(r'env(?:\.\w+)?\(\s*"([A-Z][A-Z0-9_]+)"', settings_source))
    listed = set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]+)=", (ROOT / ".env.example").read_text(), re.M))
    assert read - listed == set(), f"missing from .env.example: {sorted(read - listed)}"
    readme = (ROOT / "docs" / "configuration.md").read_text()
    assert [name for name in sorted(read) if f"`{name}`" not in readme] == []


DELIVERY_PROBE = (
    "from django.conf import settings as s; "
    "print(s.EMAIL_BACKEND, s.DISPATCH_INTERVAL_SECONDS, s.ANYMAIL['REQUESTS_TIMEOUT'], "
    "s.CELERY_BEAT_SCHEDULE['dispatch-due-messages']['schedule'])"
)


def probe(tmp_path, **env: str) -> subprocess.CompletedProcess:
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DELIVERY_", "CELERY_", "DISPATCH_", "DATABASE_URL", "REDIS_URL"))
    }
    clean.update(DJANGO_SETTINGS_MODULE="config.settings", VAR_DIR=str(tmp_path), **env)
    return subprocess.run(
        [sys.executable, "-c", DELIVERY_PROBE],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_defaults_write_email_to_the_outbox_and_dispatch_every_two_seconds(tmp_path):
    result = probe(tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "providers.outbox.OutboxEmailBackend",
        "2.0",
        "(5.0,",
        "20.0)",
        "2.0",
    ]


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"DELIVERY_SENDING_LEASE_SECONDS": "90"}, "must be longer than CELERY_TASK_TIME_LIMIT"),
        ({"DELIVERY_READ_TIMEOUT": "58"}, "below CELERY_TASK_SOFT_TIME_LIMIT"),
        (
            {"DELIVERY_PROVIDER_CONCURRENCY": "4", "DELIVERY_PROVIDER_WAIT_SECONDS": "40"},
            "below CELERY_TASK_SOFT_TIME_LIMIT",
        ),
    ],
)
def test_a_sending_lease_or_timeout_that_would_break_at_most_once_is_refused(
    tmp_path, env, message
):
    result = probe(tmp_path, **env)
    assert result.returncode != 0
    assert message in result.stderr
