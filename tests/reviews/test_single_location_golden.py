"""A business with one location sees no change: what it produced before accounts had locations,
captured in ``golden/single_location.json`` (``golden/write_single_location.py`` writes it), must
be what it produces now. Fields may be added to the API's answers, none removed or changed; the
rendered messages and the review page must be identical."""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from reviews.models import BusinessSettings, Channel, Message, ReviewRequest, ReviewSite
from reviews.rendering import render_email, render_sms
from reviews.services import business_create, business_settings_update, message_template_save
from tests.support.oauth import issue_tokens

pytestmark = pytest.mark.django_db

GOLDEN = Path(__file__).parent / "golden" / "single_location.json"
WRITE = os.environ.get("GOLDEN_WRITE") == "1"  # golden/write_single_location.py sets it
NOON_IN_NEW_YORK = datetime(2026, 6, 10, 16, 0, tzinfo=UTC)
NIGHT_IN_NEW_YORK = datetime(2026, 6, 11, 3, 30, tzinfo=UTC)
TOKEN = "GoldenToken0123456789A"
SEND = "/api/zapier/send-review-request"


def _placeholders(text: str, names: dict[str, str]) -> str:
    for value, name in names.items():
        text = text.replace(value, f"<{name}>")
    return text


def _without_csrf_token(html: str) -> str:
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', 'name="csrfmiddlewaretoken"', html)


def _rendered(request: ReviewRequest) -> dict[str, Any]:
    policy = BusinessSettings.for_owner(request.owner)
    out: dict[str, Any] = {}
    for step in range(3):
        sms = Message(review_request=request, step=step, channel=Channel.SMS)
        out[f"sms_{step}"] = render_sms(sms, policy)
        email = render_email(
            Message(review_request=request, step=step, channel=Channel.EMAIL), policy
        )
        out[f"email_{step}"] = {
            "subject": email.subject,
            "text": email.text,
            "html": email.html,
            "from_email": email.from_email,
            "reply_to": list(email.reply_to),
            "headers": email.headers,
        }
    return out


def capture(time_machine) -> dict[str, Any]:
    """What a one-location business produces, with its ids as placeholders."""
    time_machine.move_to(NOON_IN_NEW_YORK, tick=False)
    owner = business_create(
        email="golden@example.com",
        password="a long golden passphrase",
        business_name="Acme Plumbing",
        time_zone="America/New_York",
        review_urls=["https://g.page/r/acme/review", "https://www.trustpilot.com/review/acme"],
    )
    business_settings_update(
        owner=owner,
        changes={"sender_name": "Acme Team", "postal_address": "1 Main St\nSpringfield, IL 62701"},
    )
    message_template_save(
        owner=owner,
        channel=Channel.SMS,
        step=1,
        body="{business_name}: a reminder for {first_name}, {review_link}",
    )
    message_template_save(
        owner=owner,
        channel=Channel.EMAIL,
        step=0,
        subject="{first_name}, how did we do?",
        body="Hello {first_name},\n\nPlease review {business_name}: {review_link}\n\nThanks!",
    )
    access, _ = issue_tokens(owner, scope="read write", expires_in=86400)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {access}")
    body = {
        "first_name": "Jane",
        "last_name": "Smith",
        "email": "jane@example.com",
        "mobile_phone_number": "+14155552671",
    }
    created = api.post(SEND, body, format="json")
    again = api.post(SEND, body, format="json")
    time_machine.move_to(NIGHT_IN_NEW_YORK, tick=False)
    night = api.post(
        SEND, {"first_name": "Bob", "mobile_phone_number": "+12125552671"}, format="json"
    )
    me = api.get("/api/zapier/me")
    request = ReviewRequest.objects.get(pk=created.json()["id"])
    ReviewRequest.objects.filter(pk=request.pk).update(token=TOKEN)
    request.refresh_from_db()
    page = Client().get(f"/r/{TOKEN}/")
    names = {str(owner.pk): "owner_id"}
    assert (created.status_code, night.status_code) == (201, 201), night.content
    for answer, label in ((created, "request"), (night, "night_request")):
        names[answer.json()["id"]] = f"{label}_id"
        names[answer.json()["contact_id"]] = f"{label}_contact_id"
    sites = ReviewSite.objects.filter(owner=owner).order_by("position")
    names.update({str(site.pk): f"site_{n}" for n, site in enumerate(sites)})
    data = {
        "api": {
            "created": [created.status_code, created.json()],
            "again": [again.status_code, again.json()],
            "night": [night.status_code, night.json()],
            "me": [me.status_code, me.json()],
        },
        "messages": _rendered(request),
        "review_page": [page.status_code, _without_csrf_token(page.content.decode())],
    }
    return json.loads(_placeholders(json.dumps(data, indent=1, sort_keys=True), names))


@pytest.fixture
def golden_settings(settings):
    settings.SITE_URL = "https://reviews.example.com"
    settings.DEFAULT_FROM_EMAIL = "Reviews <reviews@example.com>"
    settings.UNSUBSCRIBE_MAILTO = ""


def _answers_keep_every_field(before: Any, now: Any, where: str) -> None:
    """``now`` has every field of ``before`` with the same value; it may have more."""
    if isinstance(before, dict):
        assert isinstance(now, dict), where
        for key, value in before.items():
            assert key in now, f"{where}.{key} removed"
            _answers_keep_every_field(value, now[key], f"{where}.{key}")
    elif isinstance(before, list):  # [status, body]: the same length, each item kept
        assert isinstance(now, list) and len(now) == len(before), where
        for n, (was, is_) in enumerate(zip(before, now, strict=True)):
            _answers_keep_every_field(was, is_, f"{where}[{n}]")
    else:
        assert now == before, where


def test_a_business_with_one_location_produces_what_it_did_before_locations(
    golden_settings, time_machine
):
    now = capture(time_machine)
    if WRITE:
        GOLDEN.write_text(json.dumps(now, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
        pytest.skip(f"written: {GOLDEN}")
    before = json.loads(GOLDEN.read_text())
    _answers_keep_every_field(before["api"], now["api"], "api")
    assert now["messages"] == before["messages"]
    assert now["review_page"][0] == before["review_page"][0]
    assert now["review_page"][1].splitlines() == before["review_page"][1].splitlines()
