"""manage.py simulate_inbound_sms: an inbound SMS without Twilio, through the webhook's path."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from reviews.models import Contact, OptOutEvent
from tests.support.delivery import dispatch_and_send, sms_request

pytestmark = pytest.mark.django_db


def simulate(capsys, *args: str) -> str:
    call_command("simulate_inbound_sms", *args)
    return capsys.readouterr().out


def test_stop_opts_the_number_out_as_the_webhook_does(business, capsys, settings):
    settings.TWILIO_ANSWERS_STANDARD_KEYWORDS = False
    request = sms_request(business, phone="+14155552671")
    out = simulate(capsys, "--from", "+1 415-555-2671", "--body", "STOP", "--to", "+15005550006")

    contact = Contact.objects.get(pk=request.contact_id)
    assert contact.sms_opted_out_at is not None
    event = OptOutEvent.objects.get()
    assert (event.action, event.channel, event.source, event.raw_text) == (
        "opt_out",
        "sms",
        "sms_reply",
        "STOP",
    )
    assert event.external_id.startswith("simulated-")
    assert dispatch_and_send() == []  # the pending first message was cancelled
    request.refresh_from_db()
    assert request.status == "opted_out"
    assert "Read as: opt out" in out
    assert "opted out of SMS" in out
    assert "Reply: You're unsubscribed" in out


def test_start_opts_back_in_and_twilios_own_keywords_get_no_reply_from_us(business, capsys):
    request = sms_request(business, phone="+14155552671")
    simulate(capsys, "--from", "+14155552671", "--body", "STOP")
    out = simulate(capsys, "--from", "+14155552671", "--body", "START")
    assert Contact.objects.get(pk=request.contact_id).sms_opted_out_at is None
    assert "Read as: opt in" in out and "can receive SMS" in out
    assert "Reply: none from us" in out  # Twilio answers START itself by default


def test_an_unknown_number_changes_nothing_and_a_bad_one_is_refused(business, capsys):
    out = simulate(capsys, "--from", "+14155550000", "--body", "stop")
    assert "No contact has this number" in out
    assert not OptOutEvent.objects.exists()
    with pytest.raises(CommandError, match="--from"):
        call_command("simulate_inbound_sms", "--from", "12", "--body", "STOP")
