"""The public pages and provider webhooks (reviews.views): the review page (no gating), click
redirect, private feedback, unsubscribe; Twilio's status callbacks and inbound SMS, verified (403
without a valid signature), tolerant (unknown ids answer 200), idempotent (replays change nothing),
and never moving a message backwards. A request at a location shows that location's sites."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.test import Client
from django.utils import timezone
from twilio.request_validator import RequestValidator

from reviews.models import Click, Contact, Feedback, Message, OptOutEvent
from reviews.services.engagement import ip_hash
from tests.factories import (
    ContactFactory,
    LocationFactory,
    ReviewRequestFactory,
    ReviewSiteFactory,
    UserFactory,
    first_location,
)
from tests.support.delivery import (
    TWILIO_TOKEN,
    dispatch_and_send,
    email_request,
    sms_request,
    step,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _twilio_auth_token(settings):
    """Webhooks are verified with the auth token (sending without the SID stays in the outbox)."""
    settings.TWILIO_AUTH_TOKEN = TWILIO_TOKEN


def twilio_post(client: Client, settings, path: str, data: dict, *, signature: str | None = None):
    if signature is None:
        signature = RequestValidator(TWILIO_TOKEN).compute_signature(settings.SITE_URL + path, data)
    headers = {"X-Twilio-Signature": signature} if signature else {}
    return client.post(path, data, headers=headers)


def status_path(message) -> str:
    return f"/webhooks/twilio/status/{message.pk}/"


@pytest.fixture
def sent_sms(business, twilio):
    request = sms_request(business)
    dispatch_and_send()
    return step(request, 0)


# --- Twilio status callbacks ----------------------------------------------------------------------


def test_status_callback_with_a_valid_signature_marks_delivered(client, settings, sent_sms):
    data = {"MessageSid": sent_sms.provider_message_id, "MessageStatus": "delivered"}
    response = twilio_post(client, settings, status_path(sent_sms), data)
    assert response.status_code == 200
    sent_sms.refresh_from_db()
    assert sent_sms.status == "delivered" and sent_sms.delivered_at is not None
    assert sent_sms.review_request.status == "delivered"


@pytest.mark.parametrize("signature", ["", "bm90IGEgc2lnbmF0dXJl"])
def test_status_callback_with_a_missing_or_bad_signature_is_refused(
    client, settings, sent_sms, signature
):
    data = {"MessageSid": sent_sms.provider_message_id, "MessageStatus": "undelivered"}
    response = twilio_post(client, settings, status_path(sent_sms), data, signature=signature)
    assert response.status_code == 403
    sent_sms.refresh_from_db()
    assert sent_sms.status == "sent"


def test_a_signature_for_other_fields_or_another_url_is_refused(client, settings, sent_sms):
    signed = {"MessageSid": sent_sms.provider_message_id, "MessageStatus": "delivered"}
    signature = RequestValidator(TWILIO_TOKEN).compute_signature(
        settings.SITE_URL + status_path(sent_sms), signed
    )
    tampered = {**signed, "MessageStatus": "undelivered"}
    response = twilio_post(client, settings, status_path(sent_sms), tampered, signature=signature)
    assert response.status_code == 403
    other_url = f"/webhooks/twilio/status/{sent_sms.pk}/?x=1"
    response = twilio_post(client, settings, other_url, signed, signature=signature)
    assert response.status_code == 403
    sent_sms.refresh_from_db()
    assert sent_sms.status == "sent"


def test_status_callbacks_are_idempotent_and_never_go_backwards(client, settings, sent_sms):
    sid = sent_sms.provider_message_id
    for status in ("delivered", "delivered", "sent", "queued", "undelivered"):
        response = twilio_post(
            client, settings, status_path(sent_sms), {"MessageSid": sid, "MessageStatus": status}
        )
        assert response.status_code == 200
    sent_sms.refresh_from_db()
    assert sent_sms.status == "delivered"


def test_undelivered_callback_fails_the_message_with_twilios_error(client, settings, sent_sms):
    data = {
        "MessageSid": sent_sms.provider_message_id,
        "MessageStatus": "undelivered",
        "ErrorCode": "30005",
    }
    twilio_post(client, settings, status_path(sent_sms), data)
    sent_sms.refresh_from_db()
    assert (sent_sms.status, sent_sms.last_error_code) == ("failed", "30005")


def test_callback_for_another_sid_or_an_unknown_message_answers_200_and_changes_nothing(
    client, settings, sent_sms
):
    other = {"MessageSid": "SM" + "f" * 32, "MessageStatus": "undelivered"}
    assert twilio_post(client, settings, status_path(sent_sms), other).status_code == 200
    sent_sms.refresh_from_db()
    assert sent_sms.status == "sent"
    unknown_path = "/webhooks/twilio/status/00000000-0000-4000-8000-000000000000/"
    data = {"MessageSid": "SM1", "MessageStatus": "delivered"}
    assert twilio_post(client, settings, unknown_path, data).status_code == 200


def test_status_callback_reconciles_an_unknown_message(client, settings, business, twilio):
    twilio.script("twilio", "hang")
    request = sms_request(business)
    dispatch_and_send()
    message = step(request, 0)
    assert message.status == "unknown"
    sid = twilio.twilio_messages()[0]["sid"]
    twilio_post(
        client, settings, status_path(message), {"MessageSid": sid, "MessageStatus": "sent"}
    )
    message.refresh_from_db()
    assert (message.status, message.provider_message_id) == ("sent", sid)
    assert step(request, 1).status == "pending"


def test_webhooks_only_accept_post(client, sent_sms):
    assert client.get(status_path(sent_sms)).status_code == 405
    assert client.get("/webhooks/twilio/inbound/").status_code == 405


# --- Twilio inbound SMS ---------------------------------------------------------------------------


def inbound(client, settings, body: str, from_number: str, sid: str = "SMin1", **kwargs):
    data = {"From": from_number, "To": "+15005550006", "Body": body, "MessageSid": sid}
    return twilio_post(client, settings, "/webhooks/twilio/inbound/", data, **kwargs)


def test_inbound_stop_in_other_words_opts_out_every_contact_with_that_number(
    client, settings, business, other_owner, twilio
):
    request = sms_request(business, phone="+14155552671")
    other = sms_request(other_owner, phone="+14155552671")
    response = inbound(client, settings, "Please stop texting me!", "+14155552671")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/xml")
    assert b"<Message>You&apos;re unsubscribed" in response.content or (
        b"<Message>You're unsubscribed" in response.content
    )
    for contact_id in (request.contact_id, other.contact_id):
        contact = Contact.objects.get(pk=contact_id)
        assert contact.sms_opted_out_at is not None
    events = OptOutEvent.objects.filter(action="opt_out")
    assert events.count() == 2
    event = events.first()
    assert (event.channel, event.source, event.raw_text) == (
        "sms",
        "sms_reply",
        "Please stop texting me!",
    )
    assert dispatch_and_send() == []  # their pending first messages were cancelled
    request.refresh_from_db()
    assert request.status == "opted_out"


def test_inbound_standard_keyword_gets_no_second_confirmation(client, settings, business):
    sms_request(business, phone="+14155552671")
    response = inbound(client, settings, "STOP", "+14155552671")
    assert response.status_code == 200
    assert b"<Message>" not in response.content  # Twilio already confirmed it
    settings.TWILIO_ANSWERS_STANDARD_KEYWORDS = False
    response = inbound(client, settings, "STOP", "+14155552671", sid="SMin2")
    assert b"<Message>" in response.content


def test_inbound_replay_records_nothing_new(client, settings, business):
    sms_request(business, phone="+14155552671")
    inbound(client, settings, "unsubscribe", "+14155552671", sid="SMsame")
    inbound(client, settings, "unsubscribe", "+14155552671", sid="SMsame")
    assert OptOutEvent.objects.count() == 1


def test_inbound_start_opts_back_in_only_after_an_sms_opt_out(client, settings, business):
    request = sms_request(business, phone="+14155552671")
    inbound(client, settings, "STOP", "+14155552671", sid="SMa")
    inbound(client, settings, "Start", "+14155552671", sid="SMb")
    contact = Contact.objects.get(pk=request.contact_id)
    assert contact.sms_opted_out_at is None
    assert list(OptOutEvent.objects.order_by("id").values_list("action", flat=True)) == [
        "opt_out",
        "opt_in",
    ]
    request.refresh_from_db()
    assert request.status == "opted_out"  # a request that ended stays ended
    Contact.objects.filter(pk=contact.pk).update(
        sms_opted_out_at=contact.created_at, sms_opt_out_source="staff"
    )
    inbound(client, settings, "START", "+14155552671", sid="SMc")
    assert Contact.objects.get(pk=contact.pk).sms_opted_out_at is not None


def test_inbound_help_is_answered_and_other_text_is_ignored(client, settings, business):
    settings.TWILIO_ANSWERS_STANDARD_KEYWORDS = False
    response = inbound(client, settings, "help", "+14155552671")
    assert settings.SMS_HELP_TEXT.encode().replace(b"&", b"&amp;") in response.content
    response = inbound(client, settings, "Thanks, it was great", "+14155552671", sid="SMx")
    assert b"<Message>" not in response.content
    assert OptOutEvent.objects.count() == 0


@pytest.mark.parametrize("signature", ["", "bm90IGEgc2lnbmF0dXJl"])
def test_inbound_without_a_valid_signature_is_refused(client, settings, business, signature):
    request = sms_request(business, phone="+14155552671")
    response = inbound(client, settings, "STOP", "+14155552671", signature=signature)
    assert response.status_code == 403
    assert Contact.objects.get(pk=request.contact_id).sms_opted_out_at is None


def test_twilio_webhooks_are_refused_when_no_auth_token_is_configured(client, settings):
    settings.TWILIO_AUTH_TOKEN = ""
    data = {"From": "+14155552671", "Body": "STOP"}
    signature = RequestValidator("").compute_signature(
        settings.SITE_URL + "/webhooks/twilio/inbound/", data
    )
    response = twilio_post(client, settings, "/webhooks/twilio/inbound/", data, signature=signature)
    assert response.status_code == 403


# --- the review page, clicks, private feedback, unsubscribing -------------------------------------


@pytest.fixture(autouse=True)
def _fresh_feedback_rate():
    """The per-address feedback limit lives in the shared cache: start each test at zero."""
    cache.delete(f"reviews:feedback:{ip_hash('127.0.0.1')}")


HUMAN = "Mozilla/5.0 (Linux; Android 14) AppleWebKit/537.36 Chrome/120.0 Mobile Safari/537.36"


@pytest.fixture
def sent(business):
    request = email_request(business)
    dispatch_and_send()
    # Sent a while ago: a click now is not "within a second of sending".
    Message.objects.filter(review_request=request, step=0).update(
        sent_at=timezone.now() - timedelta(minutes=10),
        sending_at=timezone.now() - timedelta(minutes=10),
    )
    return request


def test_review_page_shows_every_site_equally_and_private_feedback_as_an_extra(client, sent):
    response = client.get(f"/r/{sent.token}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "How was your experience with Acme Plumbing?" in html
    for site in sent.owner.review_sites.all():
        link = f'<a class="button" href="/r/{sent.token}/go/{site.pk}/" rel="noopener noreferrer">'
        assert link + site.label + "</a>" in html  # same markup, same size: no gating
    assert 'name="text"' in html and "csrfmiddlewaretoken" in html
    for gating in ("star", "happy", "unhappy", "rate us"):
        assert gating not in html.lower()
    assert "<script" not in html and "https://" not in html.split("<body")[0]  # no 3rd-party
    assert response["Cache-Control"].startswith("max-age=0")


def test_unknown_token_gets_a_404_page(client, db):
    response = client.get("/r/not-a-real-token/")
    assert response.status_code == 404
    assert b"This link does not work" in response.content
    assert client.get("/unsubscribe/nope/").status_code == 404


def test_site_link_records_the_click_and_redirects(client, sent):
    site = sent.owner.review_sites.first()
    response = client.get(f"/r/{sent.token}/go/{site.pk}/", HTTP_USER_AGENT=HUMAN)
    assert response.status_code == 302 and response["Location"] == site.url
    click = Click.objects.get()
    assert click.counted and click.site == site and click.user_agent == HUMAN
    assert len(click.ip_hash) == 64 and "127.0.0.1" not in click.ip_hash
    sent.refresh_from_db()
    assert sent.status == "clicked"


@pytest.mark.parametrize(
    ("method", "agent", "reason"),
    [
        ("head", HUMAN, "head_request"),
        ("get", "Mozilla/5.0 (compatible; SafeLinks)", "scanner_user_agent"),
        ("get", "", "no_user_agent"),
    ],
)
def test_bot_fetches_redirect_but_do_not_count(client, sent, method, agent, reason):
    site = sent.owner.review_sites.first()
    response = getattr(client, method)(f"/r/{sent.token}/go/{site.pk}/", HTTP_USER_AGENT=agent)
    assert response.status_code == 302
    click = Click.objects.get()
    assert (click.counted, click.ignored_reason) == (False, reason)
    sent.refresh_from_db()
    assert sent.status == "sent"


def test_a_click_after_the_sequence_ended_is_recorded_without_changing_the_ending(client, sent):
    sent.status, sent.ended_at, sent.ended_reason = "completed", timezone.now(), "sequence_finished"
    sent.save()
    site = sent.owner.review_sites.first()
    client.get(f"/r/{sent.token}/go/{site.pk}/", HTTP_USER_AGENT=HUMAN)
    sent.refresh_from_db()
    assert sent.status == "completed" and sent.clicked_at is not None


def test_another_businesss_site_is_not_a_redirect_target(client, sent, other_owner):
    foreign = ReviewSiteFactory(owner=other_owner)
    response = client.get(f"/r/{sent.token}/go/{foreign.pk}/", HTTP_USER_AGENT=HUMAN)
    assert response.status_code == 404
    assert Click.objects.count() == 0


def test_private_feedback_is_stored_and_thanked(client, sent):
    response = client.post(f"/r/{sent.token}/feedback/", {"text": "  The plumber was late.  "})
    assert response.status_code == 302
    assert response["Location"] == f"/r/{sent.token}/?feedback=sent#feedback"
    assert Feedback.objects.get().text == "The plumber was late."
    assert b"Thank you, your message was sent" in client.get(response["Location"]).content
    sent.refresh_from_db()
    assert sent.status == "sent"  # feedback is not a click: follow-ups continue


def test_feedback_needs_a_csrf_token(sent):
    client = Client(enforce_csrf_checks=True)
    response = client.post(f"/r/{sent.token}/feedback/", {"text": "hello"})
    assert response.status_code == 403
    assert Feedback.objects.count() == 0


def test_feedback_is_limited_in_size_and_number(client, sent):
    response = client.post(f"/r/{sent.token}/feedback/", {"text": "x" * 2001})
    assert response.status_code == 400 and b"At most 2000 characters" in response.content
    assert client.post(f"/r/{sent.token}/feedback/", {"text": " "}).status_code == 400
    for i in range(5):
        assert client.post(f"/r/{sent.token}/feedback/", {"text": f"note {i}"}).status_code == 302
    response = client.post(f"/r/{sent.token}/feedback/", {"text": "one more"})
    assert response.status_code == 400
    assert Feedback.objects.count() == 5


def test_unsubscribe_page_asks_then_opts_out(sent):
    client = Client(enforce_csrf_checks=True)
    page = client.get(f"/unsubscribe/{sent.token}/")
    assert page.status_code == 200 and sent.contact.email.encode() in page.content
    token = page.context["csrf_token"]
    response = client.post(f"/unsubscribe/{sent.token}/", {"csrfmiddlewaretoken": str(token)})
    assert response.status_code == 200 and b"You're unsubscribed" in response.content
    contact = Contact.objects.get(pk=sent.contact_id)
    assert contact.email_opt_out_source == "email_unsubscribe"
    assert OptOutEvent.objects.get().raw_text == "unsubscribe page"
    assert b"already unsubscribed" in client.get(f"/unsubscribe/{sent.token}/").content
    sent.refresh_from_db()
    assert sent.status == "opted_out"
    assert set(sent.messages.exclude(step=0).values_list("status", flat=True)) == {"cancelled"}


def test_one_click_unsubscribe_needs_no_csrf_token(sent):
    client = Client(enforce_csrf_checks=True)
    response = client.post(
        f"/unsubscribe/{sent.token}/",
        "List-Unsubscribe=One-Click",
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 200
    assert Contact.objects.get(pk=sent.contact_id).email_opted_out_at is not None


def test_any_other_post_to_unsubscribe_is_csrf_checked(sent):
    client = Client(enforce_csrf_checks=True)
    response = client.post(
        f"/unsubscribe/{sent.token}/",
        "List-Unsubscribe=One-Click&extra=1",
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 403
    assert Contact.objects.get(pk=sent.contact_id).email_opted_out_at is None


def test_one_click_with_an_unknown_token_is_404(db):
    response = Client().post(
        "/unsubscribe/unknown/",
        "List-Unsubscribe=One-Click",
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 404


def test_no_message_goes_to_an_unsubscribed_address(client, business):
    request = email_request(business)
    client.post(
        f"/unsubscribe/{request.token}/",
        "List-Unsubscribe=One-Click",
        content_type="application/x-www-form-urlencoded",
    )
    assert dispatch_and_send() == []
    assert step(request, 0).status == "cancelled"


def test_feedback_from_one_address_is_limited_per_hour(client, business):
    requests_ = [email_request(business) for _ in range(3)]
    accepted = 0
    for request in requests_:
        for i in range(5):
            response = client.post(f"/r/{request.token}/feedback/", {"text": f"note {i}"})
            accepted += response.status_code == 302
    assert accepted == 10  # then "Too many messages from here"
    assert Feedback.objects.count() == 10


# --- The review page of a request at a location -----------------------------------------------


@pytest.fixture
def account():
    owner = UserFactory(business_name="Acme")
    downtown = first_location(owner, name="Downtown")
    harbour = LocationFactory(account=owner, name="Harbour")
    sites = {
        "down_google": ReviewSiteFactory(
            owner=owner, location=downtown, label="G Down", position=1
        ),
        "down_fb": ReviewSiteFactory(owner=owner, location=downtown, label="FB Down", position=0),
        "unplaced": ReviewSiteFactory(owner=owner, label="Old site", position=2),
        "harbour": ReviewSiteFactory(owner=owner, location=harbour, label="G Harbour"),
    }
    return owner, downtown, harbour, sites


def labels(client, request) -> list[str]:
    page = client.get(f"/r/{request.token}/")
    assert page.status_code == 200
    return re.findall(
        r'<a class="button" href="/r/[^"]+/go/[^"]+/"[^>]*>([^<]+)</a>', page.content.decode()
    )


def test_the_page_lists_the_sites_of_the_requests_location_in_order(client, account):
    owner, downtown, harbour, _ = account
    at_harbour = ReviewRequestFactory(contact=ContactFactory(owner=owner), location=harbour)
    at_downtown = ReviewRequestFactory(contact=ContactFactory(owner=owner), location=downtown)
    assert labels(client, at_harbour) == ["G Harbour"]
    # The default location's sites include those with no location.
    assert labels(client, at_downtown) == ["FB Down", "G Down", "Old site"]


def test_a_request_with_no_location_shows_the_default_locations_sites(client, account):
    owner, *_ = account
    unplaced = ReviewRequestFactory(contact=ContactFactory(owner=owner))
    assert labels(client, unplaced) == ["FB Down", "G Down", "Old site"]


def test_a_location_without_a_site_shows_none_of_the_others(client, account):
    owner, *_ = account
    bare = LocationFactory(account=owner, name="Airport")
    request = ReviewRequestFactory(contact=ContactFactory(owner=owner), location=bare)
    page = client.get(f"/r/{request.token}/").content.decode()
    assert "has not listed a review site yet" in page
    assert labels(client, request) == []


def test_the_link_of_another_locations_site_is_not_followed(client, account):
    owner, _downtown, harbour, sites = account
    request = ReviewRequestFactory(contact=ContactFactory(owner=owner), location=harbour)
    elsewhere = client.get(f"/r/{request.token}/go/{sites['down_google'].pk}/")
    assert elsewhere.status_code == 404
    own = client.get(f"/r/{request.token}/go/{sites['harbour'].pk}/")
    assert own.status_code == 302 and own["Location"] == sites["harbour"].url
    assert list(Click.objects.values_list("site", flat=True)) == [sites["harbour"].pk]
