"""What a request's messages say and when they go, by its location: its sender name, postal
address, wording, sending window and time zone where it sets them, else the account's."""

from __future__ import annotations

from datetime import UTC, datetime, time

import pytest
from django.core import mail

from reviews.models import BusinessSettings, Channel, Message
from reviews.rendering import preview_message, render_email, render_sms
from reviews.services import (
    business_settings_update,
    contact_add,
    location_settings_update,
    message_template_save,
)
from tests.factories import LocationFactory, ReviewSiteFactory, UserFactory, first_location
from tests.support.contacts import contact_input
from tests.support.delivery import dispatch_and_send

pytestmark = pytest.mark.django_db

NINE_THIRTY_IN_NEW_YORK = datetime(2026, 6, 10, 13, 30, tzinfo=UTC)
SMS_BODY = "{business_name} asks {first_name}: {review_link}"


@pytest.fixture
def account(settings):
    settings.DEFAULT_FROM_EMAIL = "Reviews <reviews@example.com>"
    owner = UserFactory(business_name="Acme", time_zone="America/New_York")
    business_settings_update(
        owner=owner,
        changes={
            "sender_name": "Acme Group",
            "postal_address": "1 Main St, New York",
            "send_window_applies_to": "all",
        },
    )
    downtown = first_location(owner, name="Downtown", time_zone="America/New_York")
    harbour = LocationFactory(account=owner, name="Harbour", time_zone="America/Los_Angeles")
    for location in (downtown, harbour):
        ReviewSiteFactory(owner=owner, location=location)
    location_settings_update(
        owner=owner,
        location_id=harbour.pk,
        changes={"sender_name": "Acme Harbour", "postal_address": "9 Pier Rd, San Diego"},
    )
    return owner, downtown, harbour


def add(owner, location, email="jane@example.com", **data):
    return contact_add(
        owner=owner,
        data=contact_input(owner, {"first_name": "Jane", "email": email, **data}),
        location_id=location.pk,
    ).review_request


def test_each_locations_e_mail_has_its_sender_and_postal_address(account, time_machine):
    owner, downtown, harbour = account
    time_machine.move_to(datetime(2026, 6, 10, 18, 0, tzinfo=UTC), tick=False)
    add(owner, downtown, "a@example.com")
    add(owner, harbour, "b@example.com")
    dispatch_and_send()
    sent = {m.to[0]: m for m in mail.outbox}
    assert sent["a@example.com"].from_email == "Acme Group <reviews@example.com>"
    assert "1 Main St, New York" in sent["a@example.com"].body
    assert sent["b@example.com"].from_email == "Acme Harbour <reviews@example.com>"
    assert "9 Pier Rd, San Diego" in sent["b@example.com"].body
    assert "1 Main St" not in sent["b@example.com"].body


def test_a_locations_own_wording_wins_then_the_accounts_then_the_default(account, time_machine):
    owner, downtown, harbour = account
    time_machine.move_to(datetime(2026, 6, 10, 18, 0, tzinfo=UTC), tick=False)
    airport = LocationFactory(account=owner, name="Airport")
    message_template_save(owner=owner, channel="sms", step=0, body="Account: " + SMS_BODY)
    message_template_save(
        owner=owner, channel="sms", step=0, body="Harbour: " + SMS_BODY, location_id=harbour.pk
    )
    policy = BusinessSettings.for_owner(owner)

    def first_sms(location) -> str:
        request = add(owner, location, mobile_phone_number=None)
        return render_sms(Message(review_request=request, step=0, channel=Channel.SMS), policy)

    assert first_sms(harbour).startswith("Harbour: Acme asks Jane: ")
    assert first_sms(downtown).startswith("Account: Acme asks Jane: ")
    message_template_save(
        owner=owner,
        channel="email",
        step=1,
        subject="Hi",
        body="Airport {review_link}",
        location_id=airport.pk,
    )
    at_airport = add(owner, airport, "c@example.com")
    email = render_email(Message(review_request=at_airport, step=1, channel="email"), policy)
    assert email.subject == "Hi" and email.text.startswith("Airport http")
    at_downtown = add(owner, downtown, "d@example.com")
    default = render_email(Message(review_request=at_downtown, step=1, channel="email"), policy)
    assert default.subject != "Hi"  # the shipped follow-up


def test_the_preview_shows_a_locations_sender_and_wording(account):
    owner, _downtown, harbour = account
    message_template_save(
        owner=owner, channel="sms", step=0, body="Harbour: " + SMS_BODY, location_id=harbour.pk
    )
    preview = preview_message(owner=owner, channel="sms", step=0, location_id=harbour.pk)
    assert preview.sms.startswith("Harbour: Acme asks Jane")
    email = preview_message(owner=owner, channel="email", step=0, location_id=harbour.pk).email
    assert email is not None and email.from_email == "Acme Harbour <reviews@example.com>"
    account_email = preview_message(owner=owner, channel="email", step=0).email
    assert account_email is not None and account_email.from_email.startswith("Acme Group")


def test_the_first_message_waits_for_the_locations_morning(account, time_machine):
    """An e-mail has no phone number to tell the recipient's zone: the location's clock
    decides (the account's sending window applies to e-mail here)."""
    owner, downtown, harbour = account
    time_machine.move_to(NINE_THIRTY_IN_NEW_YORK, tick=False)  # 06:30 in San Diego
    assert add(owner, downtown, "a@example.com").scheduled_for == NINE_THIRTY_IN_NEW_YORK
    at_harbour = add(owner, harbour, "b@example.com")
    assert at_harbour.scheduled_for == datetime(2026, 6, 10, 15, 0, tzinfo=UTC)  # 08:00 there
    step0 = at_harbour.messages.get(step=0)
    assert step0.due_at == at_harbour.scheduled_for


def test_a_locations_own_sending_hours_apply_to_its_requests_only(account, time_machine):
    owner, downtown, harbour = account
    location_settings_update(
        owner=owner,
        location_id=downtown.pk,
        changes={"send_window_start": time(10, 0), "send_window_end": time(18, 0)},
    )
    time_machine.move_to(NINE_THIRTY_IN_NEW_YORK, tick=False)
    at_downtown = add(owner, downtown, "a@example.com")
    assert at_downtown.scheduled_for == datetime(2026, 6, 10, 14, 0, tzinfo=UTC)  # 10:00 NY
    location_settings_update(
        owner=owner, location_id=harbour.pk, changes={"send_window_applies_to": "none"}
    )
    assert add(owner, harbour, "b@example.com").scheduled_for == NINE_THIRTY_IN_NEW_YORK


def test_a_follow_up_waits_for_the_morning_of_its_requests_location(account, time_machine):
    owner, downtown, harbour = account
    business_settings_update(owner=owner, changes={"follow_up_offsets_hours": [12]})
    sent_at = datetime(2026, 6, 10, 18, 0, tzinfo=UTC)  # +12 h: 02:00 in New York, 23:00 there
    time_machine.move_to(sent_at, tick=False)
    at_downtown = add(owner, downtown, "a@example.com")
    at_harbour = add(owner, harbour, "b@example.com")
    dispatch_and_send()
    follow_ups = {
        request.pk: request.messages.get(step=1).due_at for request in (at_downtown, at_harbour)
    }
    assert follow_ups == {
        at_downtown.pk: datetime(2026, 6, 11, 12, 0, tzinfo=UTC),  # 08:00 in New York
        at_harbour.pk: datetime(2026, 6, 11, 15, 0, tzinfo=UTC),  # 08:00 in San Diego
    }
