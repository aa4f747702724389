"""Template previews: what a sample contact would receive, for the admin and portal editors."""

from __future__ import annotations

import pytest

from reviews.models import BusinessSettings, Channel, MessageTemplate
from reviews.rendering import SAMPLE_TOKEN, preview_message

pytestmark = pytest.mark.django_db


def test_sms_preview_shows_the_default_with_sample_values_and_its_segments(owner, settings):
    preview = preview_message(owner=owner, channel=Channel.SMS, step=0)
    assert owner.business_name in preview.sms
    assert f"{settings.SITE_URL}/r/{SAMPLE_TOKEN}/" in preview.sms
    assert "Jane" in preview.sms
    assert preview.segments.segments >= 1
    assert preview.segments.encoding == "GSM-7"


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


def test_sms_preview_uses_the_owners_saved_template(owner):
    saved = MessageTemplate(
        owner=owner, channel=Channel.SMS, step=0, body="{business_name}: {review_link}"
    )
    saved.full_clean()
    saved.save()
    preview = preview_message(owner=owner, channel=Channel.SMS, step=0)
    assert preview.sms.startswith(f"{owner.business_name}: http")


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
