"""Password reset by e-mail: the same answer for every address, the mail in the outbox, a link
that works once, and limits on how often it can be asked for."""

from __future__ import annotations

import email
import re
from email import policy

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import authenticate

from accounts import services, throttle
from accounts.tasks import send_password_reset_email
from tests.factories import DEFAULT_PASSWORD, UserFactory

pytestmark = pytest.mark.django_db

RESET = "/accounts/password_reset/"
NEW_PASSWORD = "a fresh and long passphrase 42"


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


def test_a_known_and_an_unknown_address_get_the_same_answer(client, queued, outbox):
    UserFactory(email="owner@example.com")
    known = client.post(RESET, {"email": "owner@example.com"})
    unknown = client.post(RESET, {"email": "nobody@example.com"})
    assert known.status_code == unknown.status_code == 302
    assert known["Location"] == unknown["Location"] == "/accounts/password_reset/done/"
    # Both are handed to a worker: the request itself does the same work either way.
    assert queued == [["owner@example.com"], ["nobody@example.com"]]
    queued.run()
    assert [m["To"] for m in mails(outbox)] == ["owner@example.com"]


def test_the_mail_lands_in_the_outbox_and_its_link_sets_a_new_password(client, queued, outbox):
    owner = UserFactory(email="owner@example.com", business_name="Acme Plumbing")
    client.post(RESET, {"email": "OWNER@example.com"})
    queued.run()
    [mail] = mails(outbox)
    assert mail["To"] == "owner@example.com"  # the stored address, not what was typed
    assert mail["Subject"] == "Reset your Review requests password"
    assert mail["From"] == django_settings.DEFAULT_FROM_EMAIL
    body = mail.get_content()
    assert "Hello Acme Plumbing," in body
    link = re.search(r"^(http\S+/accounts/reset/\S+/)$", body, re.MULTILINE)[1]
    assert link.startswith(django_settings.SITE_URL + "/accounts/reset/")

    form_page = client.get(link.removeprefix(django_settings.SITE_URL), follow=True)
    assert b"Choose a new password" in form_page.content
    set_password_url = form_page.redirect_chain[-1][0]  # the token moved to the session
    done = client.post(
        set_password_url, {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD}
    )
    assert done["Location"] == "/accounts/reset/done/"
    assert authenticate(username="owner@example.com", password=NEW_PASSWORD) == owner
    assert authenticate(username="owner@example.com", password=DEFAULT_PASSWORD) is None

    again = client.get(link.removeprefix(django_settings.SITE_URL), follow=True)
    assert b"This link does not work any more" in again.content


def test_inactive_owners_and_unusable_passwords_get_no_mail(client, queued, outbox):
    UserFactory(email="gone@example.com", is_active=False)
    sso = UserFactory(email="nopass@example.com")
    sso.set_unusable_password()
    sso.save()
    for address in ("gone@example.com", "nopass@example.com"):
        client.post(RESET, {"email": address})
    queued.run()
    assert mails(outbox) == []


def test_resets_are_limited_per_address_whatever_the_network(client, queued):
    for n in range(throttle.RESET_PER_ADDRESS):
        ip = f"10.0.0.{n}"
        assert client.post(RESET, {"email": "a@example.com"}, REMOTE_ADDR=ip).status_code == 302
    refused = client.post(RESET, {"email": "A@example.com"}, REMOTE_ADDR="10.0.1.1")
    assert refused.status_code == 429
    assert b"Too many reset requests" in refused.content
    assert b'id="id_email_error"' in refused.content
    assert len(queued) == throttle.RESET_PER_ADDRESS
    assert client.post(RESET, {"email": "b@example.com"}).status_code == 302


def test_resets_are_limited_per_network(client, queued):
    for n in range(throttle.RESET_PER_IP):
        client.post(RESET, {"email": f"person{n}@example.com"}, REMOTE_ADDR="10.9.9.9")
    refused = client.post(RESET, {"email": "one.more@example.com"}, REMOTE_ADDR="10.9.9.9")
    assert refused.status_code == 429
    assert len(queued) == throttle.RESET_PER_IP
    elsewhere = client.post(RESET, {"email": "one.more@example.com"}, REMOTE_ADDR="10.8.8.8")
    assert elsewhere.status_code == 302


def test_an_ipv6_network_is_counted_by_its_64(client, queued):
    for n in range(throttle.RESET_PER_IP):
        ip = f"2001:db8:7:8::{n + 1:x}"
        client.post(RESET, {"email": f"person{n}@example.com"}, REMOTE_ADDR=ip)
    refused = client.post(RESET, {"email": "x@example.com"}, REMOTE_ADDR="2001:db8:7:8:1::1")
    assert refused.status_code == 429
    elsewhere = client.post(RESET, {"email": "x@example.com"}, REMOTE_ADDR="2001:db8:7:9::1")
    assert elsewhere.status_code == 302


def test_a_broker_outage_says_to_try_again_instead_of_pretending(client, monkeypatch):
    def down(*args, **kwargs):
        raise ConnectionRefusedError("broker down")

    monkeypatch.setattr(send_password_reset_email, "apply_async", down)
    response = client.post(RESET, {"email": "owner@example.com"})
    assert response.status_code == 503
    assert b"We cannot send e-mail just now" in response.content


def test_the_worker_sends_to_each_matching_owner_and_reports_the_count(outbox):
    UserFactory(email="owner@example.com")
    assert services.password_reset_email_send(email="owner@example.com") == 1
    assert services.password_reset_email_send(email="nobody@example.com") == 0
    assert len(mails(outbox)) == 1


@pytest.mark.parametrize(
    "path",
    [RESET, "/accounts/password_reset/done/", "/accounts/reset/done/", "/accounts/reset/x/y/"],
)
def test_reset_pages_are_strict_pages(client, path):
    response = client.get(path, follow=True)
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    assert "default-src 'none'" in response["Content-Security-Policy"]
    assert response["Referrer-Policy"] == "no-referrer"


def test_the_login_page_links_to_the_reset(client):
    assert b'href="/accounts/password_reset/"' in client.get("/accounts/login/").content


def test_there_is_no_public_sign_up(client):
    assert client.get("/accounts/signup/").status_code == 404
    assert client.get("/accounts/register/").status_code == 404
    assert b"Accounts are opened by our team." in client.get("/").content
