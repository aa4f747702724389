"""A business's own wording (reviews.models.templates): checked when saved, the STOP line added,
the SMS segments counted."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from reviews.models import MessageTemplate

pytestmark = pytest.mark.django_db


def _template(owner, **kwargs):
    kwargs.setdefault("channel", "sms")
    kwargs.setdefault("step", 0)
    return MessageTemplate(owner=owner, **kwargs)


def test_sms_template_gets_the_stop_line_appended_when_it_has_none(business):
    template = _template(business, body="Hi {first_name}! Review {business_name}: {review_link}")
    template.full_clean()
    assert template.body.endswith("\nReply STOP to opt out")
    kept = _template(business, body="{business_name}: {review_link} Text STOP to stop", step=1)
    kept.full_clean()
    assert kept.body == "{business_name}: {review_link} Text STOP to stop"


def test_sms_template_must_name_the_business(business):
    with pytest.raises(ValidationError, match="must name the business"):
        _template(business, body="Hi {first_name}: {review_link}").full_clean()
    named = _template(business, body="Hi from Acme Plumbing: {review_link}")
    named.full_clean()  # the literal name counts too


def test_template_refuses_unknown_fields_and_needs_the_review_link(business):
    with pytest.raises(ValidationError) as error:
        _template(business, body="{business_name} {coupon_code} {review_link}").full_clean()
    assert "Unknown merge field {coupon_code}" in str(error.value)
    with pytest.raises(ValidationError, match=r"Must contain \{review_link\}"):
        _template(business, body="{business_name} says hi").full_clean()


def test_email_template_needs_a_valid_one_line_subject(business):
    with pytest.raises(ValidationError, match="needs a subject"):
        _template(business, channel="email", body="{review_link}").full_clean()
    with pytest.raises(ValidationError, match="Unknown merge field"):
        _template(business, channel="email", subject="{oops}", body="{review_link}").full_clean()
    ok = _template(
        business, channel="email", subject="  Thanks\n{first_name} ", body="{review_link}"
    )
    ok.full_clean()
    assert ok.subject == "Thanks {first_name}"


def test_sample_segment_count_is_shown_for_sms_templates(business):
    template = _template(business, body="{business_name} {review_link}")
    template.full_clean()
    assert template.sample_segments().segments == 1
    long = _template(business, body="{business_name} " + "x" * 200 + " {review_link}")
    long.full_clean()
    assert long.sample_segments().segments == 2
    assert _template(business, channel="email", body="x").sample_segments() is None
