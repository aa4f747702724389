"""What gets sent (reviews.rendering): the default wording and an owner's, e-mail as multipart with
its footer, postal address and one-click unsubscribe, the outbox's whole MIME message; and template
previews, what a sample contact would receive, for the admin and portal editors."""

from __future__ import annotations

import email
from email import policy as email_policy

import pytest

from reviews import merge_fields, rendering
from reviews.models import BusinessSettings, Channel, MessageTemplate
from reviews.rendering import SAMPLE_TOKEN, preview_message
from reviews.sms_segments import count_segments
from tests.support.delivery import VALUES, dispatch_and_send, email_request, sms_request, step


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
