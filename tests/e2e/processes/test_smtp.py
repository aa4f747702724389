"""Plain SMTP from EMAIL_URL: a real worker sends a review request to a local SMTP server."""

from __future__ import annotations

import email
from email import policy as email_policy

import pytest
import requests
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult

from reviews.models import BusinessSettings, Message
from tests.factories import ReviewSiteFactory, UserFactory
from tests.support.oauth import issue_tokens
from tests.support.processes import ServiceProcesses, free_port

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]


class Inbox:
    """aiosmtpd handler: keeps every message it accepts (and who logged in to send it)."""

    def __init__(self) -> None:
        self.messages: list[email.message.EmailMessage] = []
        self.logins: list[tuple[bytes, bytes]] = []

    async def handle_DATA(self, server, session, envelope) -> str:
        self.messages.append(
            email.message_from_bytes(envelope.original_content, policy=email_policy.default)
        )
        return "250 Message accepted"

    def authenticate(self, server, session, envelope, mechanism, auth_data) -> AuthResult:
        self.logins.append((auth_data.login, auth_data.password))
        return AuthResult(success=auth_data.password == b"s3cret/pw")


@pytest.fixture
def smtp_server():
    inbox = Inbox()
    controller = Controller(
        inbox,
        hostname="127.0.0.1",
        port=free_port(),
        authenticator=inbox.authenticate,
        auth_require_tls=False,
    )
    controller.start()
    try:
        yield inbox, controller.port
    finally:
        controller.stop()


def test_a_review_request_goes_out_through_the_smtp_server_email_url_names(tmp_path, smtp_server):
    inbox, port = smtp_server
    owner = UserFactory(business_name="Acme Plumbing")
    BusinessSettings.objects.create(
        owner=owner, send_window_applies_to=BusinessSettings.WindowAppliesTo.NONE
    )
    ReviewSiteFactory(owner=owner)
    access, _ = issue_tokens(owner)
    # The password percent-encoded, as a URL needs it.
    env = {"EMAIL_URL": f"smtp://mailer:s3cret%2Fpw@127.0.0.1:{port}"}
    with ServiceProcesses(tmp_path, ["web", "worker"], embedded_broker=True, env=env) as svc:
        svc.wait_for(lambda: requests.get(f"{svc.base_url}/healthz", timeout=2).ok, what="web")
        response = requests.post(
            f"{svc.base_url}/api/zapier/send-review-request",
            json={"first_name": "Jane", "email": "jane@example.com", "delay_hours": 0},
            headers={"Authorization": f"Bearer {access}"},
            timeout=10,
        )
        assert response.status_code == 201, response.text
        svc.wait_for(lambda: inbox.messages, timeout=60, what="a message at the SMTP server")
        svc.wait_for(
            lambda: Message.objects.filter(step=0, status="sent").exists(), timeout=30, what="sent"
        )

    (mail,) = inbox.messages
    assert inbox.logins == [(b"mailer", b"s3cret/pw")]
    assert mail["To"] == "jane@example.com"
    assert "Acme Plumbing" in mail["From"]
    assert mail["List-Unsubscribe"].startswith("<http")
    assert mail["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert "/r/" in mail.get_body(("plain",)).get_content()
    message = Message.objects.get(step=0)
    assert message.provider == "smtp"
    assert message.provider_message_id == mail["Message-ID"]
