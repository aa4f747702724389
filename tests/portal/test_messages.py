"""Message wording: the list of steps, the editor's preview (no JavaScript needed), saving."""

from __future__ import annotations

import pytest
from django.conf import settings

from reviews.models import BusinessSettings, MessageTemplate
from reviews.rendering import SAMPLE_TOKEN

pytestmark = pytest.mark.django_db

SMS = "/portal/settings/messages/sms/0/"
EMAIL = "/portal/settings/messages/email/1/"
LINK = f"{settings.SITE_URL}/r/{SAMPLE_TOKEN}/"


def test_the_list_has_a_row_per_step_of_the_policy_and_marks_own_wording(browser, owner):
    policy = BusinessSettings.for_owner(owner)
    policy.follow_up_offsets_hours = [36, 120, 240]
    policy.save()
    MessageTemplate.objects.create(
        owner=owner, channel="email", step=2, subject="Hi", body="{review_link}"
    )
    rows = browser.get("/portal/settings/messages/").context["rows"]
    assert [(row["name"], row["when"]) for row in rows] == [
        ("First message", "when the contact is added (after any wait and quiet hours)"),
        ("Follow-up 1", "36 hours after the first message"),
        ("Follow-up 2", "5 days after the first message"),
        ("Follow-up 3", "10 days after the first message"),
    ]
    own = [(row["step"], ch) for row in rows for ch, _, saved in row["channels"] if saved]
    assert own == [(2, "email")]


def test_a_saved_step_outside_the_policy_is_still_listed(browser, owner):
    BusinessSettings.for_owner(owner)
    MessageTemplate.objects.create(owner=owner, channel="sms", step=4, body="{review_link}")
    rows = browser.get("/portal/settings/messages/").context["rows"]
    assert rows[-1]["name"] == "Follow-up 4"
    assert rows[-1]["when"] == "not in your current follow-up plan"


def test_the_editor_starts_from_the_default_wording_and_previews_it(browser, owner):
    response = browser.get(SMS)
    assert response.context["form"].initial["body"].startswith("Hi {first_name}, thanks for")
    preview = response.context["preview"]
    assert preview.sms == (
        f"Hi Jane, thanks for choosing {owner.business_name}! Would you review us? {LINK}\n"
        "Reply STOP to opt out"
    )
    assert b"1 segment (GSM-7" in response.content


def test_preview_renders_the_draft_without_saving_it(browser, owner):
    response = browser.post(
        SMS,
        {
            "action": "preview",
            "body": "{business_name}: quick review, {first_name}? 🙏 {review_link}",
        },
    )
    assert response.status_code == 200
    text = response.context["preview"].sms
    assert text.startswith(f"{owner.business_name}: quick review, Jane? 🙏 {LINK}")
    assert text.endswith("Reply STOP to opt out")
    assert "UCS-2 because of 🙏" in response.content.decode()
    # The draft stays in the form, as typed.
    assert "quick review, {first_name}? 🙏" in response.content.decode()
    assert not MessageTemplate.objects.exists()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("Review us, {first_name}!", "Must contain {review_link}."),
        ("{business_name}: {nickname} {review_link}", "nickname"),
        ("Review us: {review_link}", "An SMS must name the business: add {business_name}."),
    ],
)
def test_a_draft_that_cannot_be_sent_shows_why_and_no_preview(browser, body, message):
    response = browser.post(SMS, {"action": "preview", "body": body})
    assert response.context["preview"] is None
    errors = response.context["form"].errors["body"]
    assert any(message in error for error in errors)
    assert 'id="id_body_error"' in response.content.decode()
    assert not MessageTemplate.objects.exists()


def test_save_stores_the_wording_and_later_saves_replace_it(browser, owner):
    response = browser.post(
        SMS, {"action": "save", "body": "Thanks from {business_name}! {review_link}"}
    )
    assert response.status_code == 302
    template = MessageTemplate.objects.get(owner=owner, channel="sms", step=0)
    assert template.body == "Thanks from {business_name}! {review_link}\nReply STOP to opt out"
    browser.post(SMS, {"action": "save", "body": "{business_name} says thanks: {review_link}"})
    template.refresh_from_db()
    assert template.body.startswith("{business_name} says thanks")
    assert MessageTemplate.objects.count() == 1
    page = browser.get(SMS)
    assert b"This is your own wording." in page.content
    assert page.context["preview"].sms.startswith(f"{owner.business_name} says thanks")


def test_saving_the_default_unchanged_stores_nothing(browser):
    default = browser.get(SMS).context["form"].initial["body"]
    response = browser.post(SMS, {"action": "save", "body": default}, follow=True)
    assert b"This is the default wording already" in response.content
    assert not MessageTemplate.objects.exists()


def test_an_email_needs_a_subject_and_previews_subject_text_and_html(browser, owner):
    missing = browser.post(EMAIL, {"action": "preview", "subject": "", "body": "Hi {review_link}"})
    assert "subject" in missing.context["form"].errors

    response = browser.post(
        EMAIL,
        {
            "action": "preview",
            "subject": "A reminder from {business_name}",
            "body": "Hi {first_name},\n\nStill a minute for us? {review_link}",
        },
    )
    email = response.context["preview"].email
    assert email.subject == f"A reminder from {owner.business_name}"
    assert "Still a minute for us?" in email.text and "Unsubscribe:" in email.text
    html = response.content.decode()
    # The message HTML sits in a sandboxed frame's srcdoc, escaped as an attribute value.
    assert '<iframe class="email-preview" sandbox srcdoc="&lt;!doctype html&gt;' in html
    assert "style-src-attr 'unsafe-inline'" in response["Content-Security-Policy"]
    assert "script-src 'self'" in response["Content-Security-Policy"]


def test_reset_goes_back_to_the_default(browser, owner):
    MessageTemplate.objects.create(owner=owner, channel="sms", step=0, body="{review_link}")
    response = browser.post(f"{SMS}reset/", follow=True)
    assert b"Back to the default wording." in response.content
    assert not MessageTemplate.objects.exists()
    assert response.context["preview"].sms.startswith("Hi Jane, thanks for choosing")


@pytest.mark.parametrize(
    "path", ["/portal/settings/messages/fax/0/", "/portal/settings/messages/sms/6/"]
)
def test_unknown_channels_and_steps_are_not_found(browser, path):
    assert browser.get(path).status_code == 404
    assert browser.post(f"{path}reset/").status_code == 404
