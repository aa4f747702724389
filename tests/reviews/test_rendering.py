"""What gets sent (reviews.rendering): the default wording and an owner's, e-mail as multipart with
its footer, postal address and one-click unsubscribe, the outbox's whole MIME message; and template
previews, what a sample contact would receive, for the admin and portal editors. By location: a
request's sender name, postal address, wording, sending window and time zone are its location's
where it sets them, else the account's."""

from __future__ import annotations

import email
from datetime import UTC, datetime, time
from email import policy as email_policy

import pytest
from django.core import mail

from reviews import merge_fields, rendering
from reviews.models import BusinessSettings, Channel, Message, MessageTemplate
from reviews.rendering import SAMPLE_TOKEN, preview_message, render_email, render_sms
from reviews.services import (
    business_settings_update,
    contact_add,
    location_settings_update,
    message_template_save,
)
from reviews.sms_segments import count_segments
from tests.factories import LocationFactory, ReviewSiteFactory, UserFactory, first_location
from tests.support.contacts import contact_input
from tests.support.delivery import VALUES, dispatch_and_send, email_request, sms_request, step

pytestmark = pytest.mark.django_db


def test_sms_default_names_the_business_links_the_page_and_offers_stop(business):
    request = sms_request(business, first_name="")
    text = rendering.render_sms(step(request, 0), BusinessSettings.for_owner(business))
    assert text.startswith("Hi there, thanks for choosing Acme Plumbing!")
    assert request.public_url() in text
    assert text.endswith("Reply STOP to opt out")


def test_owner_template_for_a_step_replaces_the_default(business):
    MessageTemplate.objects.create(
        owner=business,
        channel="sms",
        step=0,
        body="{first_name} at {company_name}: {business_name} asks {review_link} STOP=stop",
    )
    request = sms_request(business, first_name="Ann")
    text = rendering.render_sms(step(request, 0), BusinessSettings.for_owner(business))
    assert text == f"Ann at your company: Acme Plumbing asks {request.public_url()} STOP=stop"
    follow_up = rendering.render_sms(step(request, 1), BusinessSettings.for_owner(business))
    assert follow_up.startswith("Hi Ann, a reminder from Acme Plumbing")  # default for step 1


def test_email_is_multipart_with_footer_address_and_one_click_unsubscribe(business, settings):
    settings.UNSUBSCRIBE_MAILTO = "unsubscribe@inbound.example.com"
    policy = BusinessSettings.for_owner(business)
    policy.sender_name = "Acme Team"
    policy.save()
    request = email_request(business)
    rendered = rendering.render_email(step(request, 0), policy)
    assert rendered.subject == "How was your experience with Acme Plumbing?"
    assert rendered.from_email == "Acme Team <reviews@127.0.0.1>"
    assert rendered.reply_to == (business.email,)
    assert rendered.headers == {
        "List-Unsubscribe": f"<{request.unsubscribe_url()}>, "
        f"<mailto:unsubscribe@inbound.example.com?subject=unsubscribe%20{request.token}>",
        "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
    }
    for part in (rendered.text, rendered.html):
        assert request.public_url() in part
        assert request.unsubscribe_url() in part
        assert "Springfield, IL 62701" in part


def test_owner_email_text_becomes_escaped_html_with_a_clickable_link(business):
    MessageTemplate.objects.create(
        owner=business,
        channel="email",
        step=0,
        subject="A note from {business_name}",
        body="Hi {first_name} <script>alert(1)</script>\n\nReview: {review_link}",
    )
    request = email_request(business, first_name="<b>Eve</b>")
    rendered = rendering.render_email(step(request, 0), BusinessSettings.for_owner(business))
    assert "<script>" not in rendered.html and "<b>Eve</b>" not in rendered.html
    assert "Hi &lt;b&gt;Eve&lt;/b&gt; &lt;script&gt;" in rendered.html
    link = request.public_url()
    assert f'<a href="{link}" style="color:#1f6feb">{link}</a>' in rendered.html
    assert rendered.text.startswith("Hi <b>Eve</b> <script>alert(1)</script>")


def test_outbox_eml_is_the_whole_mime_message(business, outbox_email):
    request = email_request(business)
    assert dispatch_and_send() == ["sent"]
    message = step(request, 0)
    raw = (outbox_email / f"{message.pk}.eml").read_bytes()
    parsed = email.message_from_bytes(raw, policy=email_policy.default)
    assert parsed["To"] == request.contact.email
    assert parsed["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert [p.get_content_type() for p in parsed.iter_parts()] == ["text/plain", "text/html"]
    assert message.provider == "outbox" and message.provider_message_id == f"outbox:{message.pk}"


def test_a_numbered_default_file_overrides_one_follow_up(tmp_path, monkeypatch):
    (tmp_path / "sms").mkdir()
    (tmp_path / "sms" / "initial.txt").write_text("first {review_link}")
    (tmp_path / "sms" / "follow_up.txt").write_text("any follow-up {review_link}")
    (tmp_path / "sms" / "follow_up_2.txt").write_text("the second one {review_link}")
    monkeypatch.setattr(rendering, "DEFAULTS_DIR", tmp_path)
    rendering.default_file.cache_clear()
    try:
        assert rendering.default_file("sms", 0, "") == "first {review_link}"
        assert rendering.default_file("sms", 1, "") == "any follow-up {review_link}"
        assert rendering.default_file("sms", 2, "") == "the second one {review_link}"
        assert rendering.default_file("sms", 3, "") == "any follow-up {review_link}"
    finally:
        rendering.default_file.cache_clear()


def test_every_shipped_default_renders_and_every_sms_fits_one_segment(business):
    values = {
        **VALUES,
        "business_name": "Acme Plumbing & Heating",
        "review_link": "https://reviews.example.com/r/AbCdEfGhIjKlMnOpQrStUv/",
    }
    for step_number in range(3):
        sms = merge_fields.render(rendering.default_file("sms", step_number, ""), values)
        assert "Acme Plumbing & Heating" in sms and sms.endswith("Reply STOP to opt out")
        assert count_segments(sms).segments == 1, sms
        for part in ("_subject", "", ".html"):
            text = rendering.default_file("email", step_number, part)
            assert merge_fields.render(text, values)


@pytest.mark.django_db
def test_sms_preview_shows_the_default_with_sample_values_and_its_segments(owner, settings):
    preview = preview_message(owner=owner, channel=Channel.SMS, step=0)
    assert owner.business_name in preview.sms
    assert f"{settings.SITE_URL}/r/{SAMPLE_TOKEN}/" in preview.sms
    assert "Jane" in preview.sms
    assert preview.segments.segments >= 1
    assert preview.segments.encoding == "GSM-7"


@pytest.mark.django_db
def test_sms_preview_of_an_unsaved_draft_counts_ucs2_segments(owner):
    draft = MessageTemplate(
        owner=owner,
        channel=Channel.SMS,
        step=1,
        body="Hi {first_name} 😊, {business_name} would love a review: {review_link}",
    )
    draft.full_clean()
    preview = preview_message(owner=owner, channel=Channel.SMS, step=1, template=draft)
    assert preview.sms.startswith("Hi Jane 😊")
    assert preview.segments.encoding == "UCS-2"
    assert not MessageTemplate.objects.exists()


@pytest.mark.django_db
def test_sms_preview_uses_the_owners_saved_template(owner):
    saved = MessageTemplate(
        owner=owner, channel=Channel.SMS, step=0, body="{business_name}: {review_link}"
    )
    saved.full_clean()
    saved.save()
    preview = preview_message(owner=owner, channel=Channel.SMS, step=0)
    assert preview.sms.startswith(f"{owner.business_name}: http")


@pytest.mark.django_db
def test_email_preview_has_subject_text_html_and_the_postal_address(owner):
    policy = BusinessSettings.for_owner(owner)
    policy.postal_address = "1 Main St, Springfield"
    policy.save()
    preview = preview_message(owner=owner, channel=Channel.EMAIL, step=0)
    email = preview.email
    assert email.subject
    assert "Jane" in email.text
    assert "1 Main St, Springfield" in email.text
    assert "1 Main St, Springfield" in email.html
    assert f"/unsubscribe/{SAMPLE_TOKEN}/" in email.html
    assert preview.segments is None


# --- By location: sender, address, wording, window, time zone ---------------------------------

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
