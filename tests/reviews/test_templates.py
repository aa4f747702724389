"""Message templates: safe merge fields, validation on save, defaults, and what gets sent."""

from __future__ import annotations

import email
import html
from email import policy as email_policy

import pytest
from django.core.exceptions import ValidationError

from reviews import merge_fields, rendering
from reviews.models import BusinessSettings, MessageTemplate
from reviews.sms_segments import count_segments
from tests.support.delivery import dispatch_and_send, email_request, sms_request, step

VALUES = {
    "first_name": "Jane",
    "contact_name": "Jane Smith",
    "business_name": "Acme <b>Plumbing</b>",
    "review_link": "https://reviews.example.com/r/abc/",
    "company_name": "Smith & Co",
}


# --- merge fields (pure) --------------------------------------------------------------------------


def test_render_replaces_known_fields_and_keeps_doubled_braces_literal():
    text = merge_fields.render("Hi {first_name}, {{not a field}} {review_link}", VALUES)
    assert text == "Hi Jane, {not a field} https://reviews.example.com/r/abc/"


@pytest.mark.parametrize(
    "template",
    [
        "Hi {name}",
        "Hi {first_name.__class__}",
        "Hi {first_name!r}",
        "Hi {first_name:>99999999}",
        "Hi {0}",
        "Hi { first_name }",
        "Hi {first_name",
        "Hi first_name}",
    ],
)
def test_anything_but_a_known_field_in_braces_is_refused(template):
    with pytest.raises(merge_fields.MergeFieldError):
        merge_fields.fields_used(template)
    with pytest.raises(merge_fields.MergeFieldError):
        merge_fields.render(template, VALUES)


def test_values_are_escaped_in_html_parts_only_when_asked():
    assert merge_fields.render("{business_name}", VALUES) == "Acme <b>Plumbing</b>"
    assert (
        merge_fields.render("<p>{business_name}</p>", VALUES, escape=html.escape)
        == "<p>Acme &lt;b&gt;Plumbing&lt;/b&gt;</p>"
    )


def test_values_are_not_rendered_as_templates_themselves():
    values = {**VALUES, "first_name": "{review_link}"}
    assert merge_fields.render("Hi {first_name}", values) == "Hi {review_link}"


# --- MessageTemplate.clean ------------------------------------------------------------------------


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


# --- rendering a message --------------------------------------------------------------------------


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
