"""The public pages: review page (no gating), click redirect, private feedback, unsubscribe."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.cache import cache
from django.test import Client
from django.utils import timezone

from reviews.models import Click, Contact, Feedback, Message, OptOutEvent
from reviews.services.engagement import ip_hash
from tests.factories import ReviewSiteFactory
from tests.support.delivery import dispatch_and_send, email_request, step

pytestmark = pytest.mark.django_db


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
