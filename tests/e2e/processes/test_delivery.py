"""End to end with the real processes (gunicorn, Celery worker and beat) and a real broker:
a contact added through the API is sent exactly once, by itself, within seconds, and the link
in what was sent opens the review page. Embedded broker here; Redis where CI has it."""

from __future__ import annotations

import email
import json
import re
import time
from datetime import timedelta
from email import policy as email_policy
from pathlib import Path

import pytest
import requests

from reviews.models import BusinessSettings, Message
from tests.factories import ReviewSiteFactory, UserFactory
from tests.support.oauth import issue_tokens
from tests.support.processes import ServiceProcesses

pytestmark = [pytest.mark.processes, pytest.mark.django_db(transaction=True)]

LINK = re.compile(r"https?://[^\s\"<>]+/r/[A-Za-z0-9_-]+/")


def outbox_files(outbox: Path, suffix: str) -> list[Path]:
    return sorted(p for p in outbox.glob(f"*{suffix}") if not p.name.startswith("."))


@pytest.mark.parametrize(
    "embedded",
    [
        pytest.param(True, id="embedded-broker"),
        pytest.param(False, id="redis", marks=pytest.mark.redis),
    ],
)
def test_contacts_added_through_the_api_are_sent_once_and_link_to_the_review_page(
    tmp_path, embedded
):
    owner = UserFactory(business_name="Acme Plumbing")
    BusinessSettings.objects.create(
        owner=owner, send_window_applies_to=BusinessSettings.WindowAppliesTo.NONE
    )
    ReviewSiteFactory(owner=owner, label="Google")
    access, _ = issue_tokens(owner)
    service = ServiceProcesses(
        tmp_path,
        ["web", "worker", "beat"],
        embedded_broker=embedded,
        env={"DISPATCH_INTERVAL_SECONDS": "1"},
    )
    service.env["SITE_URL"] = service.base_url  # links in messages point at this web process
    outbox = tmp_path / "outbox"
    with service as svc:
        svc.wait_for(lambda: requests.get(f"{svc.base_url}/healthz", timeout=2).ok, what="web")
        api = requests.Session()
        api.headers["Authorization"] = f"Bearer {access}"
        added = {}
        for kind, contact in {
            "email": {"first_name": "Jane", "email": "jane@example.com", "delay_hours": 0},
            "sms": {"first_name": "Sam", "mobile_phone_number": "+14155552671", "delay_hours": 0},
        }.items():
            response = api.post(
                f"{svc.base_url}/api/zapier/send-review-request", json=contact, timeout=10
            )
            assert response.status_code == 201, response.text
            added[kind] = response.json()["id"]

        svc.wait_for(
            lambda: outbox_files(outbox, ".eml") and outbox_files(outbox, ".json"),
            timeout=60,
            what="one .eml and one .json in the outbox",
        )
        time.sleep(3)  # three more dispatcher runs: nothing is sent a second time
        (eml,) = outbox_files(outbox, ".eml")
        (sms,) = outbox_files(outbox, ".json")

        mail = email.message_from_bytes(eml.read_bytes(), policy=email_policy.default)
        assert mail["To"] == "jane@example.com"
        text = mail.get_body(("plain",)).get_content()
        email_link = LINK.search(text).group(0)
        record = json.loads(sms.read_text())
        assert record["to"] == "+14155552671"
        assert record["message_id"] == sms.stem
        assert record["status_callback"] == f"{svc.base_url}/webhooks/twilio/status/{sms.stem}/"
        sms_link = LINK.search(record["body"]).group(0)

        for link in (email_link, sms_link):
            page = requests.get(link, timeout=10)
            assert page.status_code == 200
            assert "How was your experience with Acme Plumbing?" in page.text
            assert "Google" in page.text

    for kind, request_id in added.items():
        message = Message.objects.get(review_request_id=request_id, step=0)
        assert message.status == "sent" and message.attempts == 1
        assert message.provider_message_id == f"outbox:{message.pk}"
        assert (eml if kind == "email" else sms).stem == str(message.pk)
        # A correctness bound, not a speed measurement (that is the benchmark's job).
        assert message.sent_at - message.due_at < timedelta(seconds=30)
        assert message.review_request.status == "sent"
