"""Fixtures and helpers of the accounts tests: login attempts on the owners' and the admin's login
pages from a given network, the login throttle's limits reached, and password-reset mail through
the outbox with the queued tasks run in place of a worker."""

from __future__ import annotations

import email
from email import policy

import pytest
from django.conf import settings

from accounts import throttle
from accounts.tasks import send_password_reset_email
from tests.factories import DEFAULT_PASSWORD

LOGIN = "/accounts/login/"
ADMIN_LOGIN = "/admin/login/"


def attempt(client, email: str, password: str, ip: str = "10.1.1.1"):
    return client.post(LOGIN, {"username": email, "password": password}, REMOTE_ADDR=ip)


def admin_attempt(client, email: str, password: str, ip: str = "10.7.7.7"):
    return client.post(
        ADMIN_LOGIN, {"username": email, "password": password, "next": "/admin/"}, REMOTE_ADDR=ip
    )


def lock(client, email: str, ip: str) -> None:
    for _ in range(throttle.LOGIN_FAILURES_PER_PAIR):
        attempt(client, email, "guess", ip=ip)
    assert attempt(client, email, DEFAULT_PASSWORD, ip=ip).status_code == 429


def budget() -> int:
    return settings.LOGIN_NEW_PAIR_FAILURES_PER_NETWORK


def use_up_budget(client, ip: str, prefix: str = "stranger") -> None:
    """Wrong passwords for ever-changing addresses, each pair far under its own limit."""
    for n in range(budget()):
        assert attempt(client, f"{prefix}{n}@example.com", "guess", ip).status_code == 200


RESET = "/accounts/password_reset/"


@pytest.fixture
def outbox(settings, tmp_path):
    """Mail goes out through the configured backend: files in OUTBOX_DIR, as by default."""
    settings.EMAIL_BACKEND = "providers.outbox.OutboxEmailBackend"
    settings.OUTBOX_DIR = tmp_path
    return tmp_path


@pytest.fixture
def queued(monkeypatch):
    """The reset tasks queued by requests; ``run()`` plays the worker."""

    class Queue(list):
        def run(self) -> None:
            while self:
                send_password_reset_email.apply(args=self.pop(0))

    queue = Queue()
    monkeypatch.setattr(
        send_password_reset_email,
        "apply_async",
        lambda args, retry: queue.append(list(args)),  # a tuple or a list: Celery takes both
    )
    return queue


def mails(outbox) -> list[email.message.EmailMessage]:
    return [
        email.message_from_bytes(path.read_bytes(), policy=policy.default)
        for path in sorted(outbox.glob("*.eml"))
    ]


OFFICE = "10.20.0.1"
