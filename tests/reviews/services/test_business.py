"""reviews.services.business: creating a business, its settings, and its review sites (the kind and
label a link gets, the place a new site takes, an edit by the same rules); no review request leaves
while the business lists no review site, and adding one sends the waiting requests through the
dispatcher's normal path."""

from __future__ import annotations

from datetime import UTC, datetime, time

import pytest
from django.core.exceptions import ValidationError

from reviews.models import BusinessSettings, ReviewSite
from reviews.services import (
    business_create,
    business_settings_update,
    messages_dispatch_due,
    review_site_add,
    review_site_update,
)
from tests.support.delivery import dispatch_and_send, email_request, reload, sms_request, step

pytestmark = pytest.mark.django_db


# --- settings -------------------------------------------------------------------------------------


def test_business_create_creates_the_review_settings_with_the_defaults(db):
    owner = business_create(
        email="owner@example.com", password="a long passphrase 42", business_name="Acme"
    )
    policy = owner.review_settings
    assert policy.initial_channel == BusinessSettings.InitialChannel.SMS
    assert policy.follow_up_offsets_hours == [72, 168]
    assert policy.follow_up_other_channel is True
    assert policy.cooldown_days == 90
    assert (policy.send_window_start, policy.send_window_end) == (time(8), time(21))
    assert policy.send_window_applies_to == BusinessSettings.WindowAppliesTo.SMS
    assert policy.default_delay_hours == 0


def test_the_service_reports_errors_of_both_rows_at_once(owner):
    with pytest.raises(ValidationError) as caught:
        business_settings_update(
            owner=owner, changes={"time_zone": "Nowhere/Land", "cooldown_days": 99999}
        )
    assert set(caught.value.message_dict) == {"time_zone", "cooldown_days"}


def test_the_service_refuses_fields_an_owner_may_not_change(owner):
    with pytest.raises(ValueError, match="is_staff"):
        business_settings_update(owner=owner, changes={"is_staff": True})
    owner.refresh_from_db()
    assert owner.is_staff is False


# --- review sites ---------------------------------------------------------------------------------


def sites(owner) -> list[tuple[str, str, int]]:
    return list(
        ReviewSite.objects.filter(owner=owner)
        .order_by("position", "created_at")
        .values_list("kind", "label", "position")
    )


def test_a_site_added_without_a_position_goes_last(owner):
    """``owner`` lists one Google site, at position 0."""
    review_site_add(owner=owner, url="https://www.trustpilot.com/review/acme.example")
    review_site_add(owner=owner, url="https://www.facebook.com/acme", label="FB", position=0)
    assert sites(owner) == [
        ("google", "Google", 0),
        ("facebook", "FB", 0),
        ("trustpilot", "Trustpilot", 1),
    ]


def test_an_update_follows_the_new_link_and_keeps_the_place_unless_given_one(owner):
    site = ReviewSite.objects.get(owner=owner)
    ReviewSite.objects.filter(pk=site.pk).update(position=2)
    updated = review_site_update(owner=owner, site_id=site.pk, url="https://www.acme.example/r")
    assert (updated.kind, updated.label, updated.position) == ("custom", "acme.example", 2)
    review_site_update(
        owner=owner, site_id=site.pk, url="https://g.page/r/acme", label="Us", position=0
    )
    assert sites(owner) == [("google", "Us", 0)]


def test_an_update_is_refused_like_an_add_and_saves_nothing(owner, other_owner):
    site = ReviewSite.objects.get(owner=owner)
    before = sites(owner)
    with pytest.raises(ValidationError) as refused:
        review_site_update(owner=owner, site_id=site.pk, url="https://www.yelp.com/biz/acme")
    assert refused.value.message_dict == {
        "url": ["Yelp does not allow asking customers for reviews."]
    }
    with pytest.raises(ValidationError):
        review_site_update(owner=owner, site_id=site.pk, url="https://g.page/r/x", label="x" * 81)
    assert sites(owner) == before
    theirs = ReviewSite.objects.get(owner=other_owner)
    with pytest.raises(ReviewSite.DoesNotExist):
        review_site_update(owner=owner, site_id=theirs.pk, url="https://g.page/r/mine")


# --- no review site yet: requests wait, and go once a site is added -------------------------------


NOON_IN_NEW_YORK = datetime(2026, 6, 10, 16, 0, tzinfo=UTC)


# 02:00 in New York: outside the default SMS window (08:00-21:00 on the recipient's clock).
NIGHT_IN_NEW_YORK = datetime(2026, 6, 11, 6, 0, tzinfo=UTC)


def test_adding_a_site_sends_the_waiting_requests(siteless, mailoutbox):
    request = email_request(siteless)
    assert dispatch_and_send() == []

    review_site_add(owner=siteless, url="https://g.page/r/acme/review")

    first = step(request, 0)
    assert first.status == "pending" and not first.waiting_for_review_site
    assert (first.last_error, first.last_error_code) == ("", "")
    assert dispatch_and_send() == ["sent"]
    assert reload(request).status == "sent"
    (email,) = mailoutbox
    assert request.public_url() in email.body


def test_a_released_sms_still_waits_for_the_sending_window(siteless, time_machine):
    BusinessSettings.objects.filter(owner=siteless).update(
        send_window_applies_to=BusinessSettings.WindowAppliesTo.SMS,
        send_window_start=time(8),
        send_window_end=time(21),
    )
    BusinessSettings.invalidate_cached(siteless.pk)
    time_machine.move_to(NOON_IN_NEW_YORK, tick=False)
    request = sms_request(siteless, phone="+12125550123")  # New York

    time_machine.move_to(NIGHT_IN_NEW_YORK, tick=False)
    review_site_add(owner=siteless, url="https://g.page/r/acme/review")

    first = step(request, 0)
    opens = datetime(2026, 6, 11, 12, 0, tzinfo=UTC)  # 08:00 in New York
    assert (first.status, first.due_at) == ("pending", opens)
    assert reload(request).scheduled_for == opens
    assert messages_dispatch_due().claimed == []
