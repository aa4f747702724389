"""The settings pages (portal.views.configure): the owner's profile and sending policy, validated
by the models and saved together; the message wording (the list of steps, the editor's preview
without JavaScript, saving); the review sites (add, reorder, remove)."""

from __future__ import annotations

import re
from datetime import time

import pytest
from django.conf import settings
from django.core.exceptions import ValidationError

from reviews.models import BusinessSettings, MessageTemplate, ReviewSite
from reviews.rendering import SAMPLE_TOKEN
from reviews.services import location_settings_update, review_sites_reorder
from tests.factories import LocationFactory, UserFactory
from tests.support.portal_data import member_client, query_count
from tests.support.portal_golden import assert_page_unchanged

pytestmark = pytest.mark.django_db

URL = "/portal/settings/"


def form_data(**overrides) -> dict:
    data = {
        "business_name": "Acme Plumbing",
        "sender_name": "Acme Plumbing team",
        "postal_address": "1 Main St\nSpringfield, IL 62701",
        "time_zone": "America/Chicago",
        "default_region": "US",
        "initial_channel": "email",
        "default_delay_hours": "2",
        "follow_up_offsets_hours": "36h, 4, 10 days",
        "follow_up_other_channel": "",
        "cooldown_days": "30",
        "send_window_start": "09:00",
        "send_window_end": "20:30",
        "send_window_applies_to": "all",
    }
    data.update(overrides)
    return data


def test_the_form_shows_the_current_settings(browser, owner):
    BusinessSettings.for_owner(owner)
    html = browser.get(URL).content.decode()
    assert 'value="3, 7"' in html  # [72, 168] hours, written as days
    assert '<option value="America/New_York" selected>America/New York</option>' in html
    assert 'value="08:00"' in html and 'value="21:00"' in html


def test_saving_changes_the_profile_and_the_policy(browser, owner):
    response = browser.post(URL, form_data())
    assert response.status_code == 302
    owner.refresh_from_db()
    policy = BusinessSettings.objects.get(owner=owner)
    assert (owner.business_name, owner.time_zone, owner.default_region) == (
        "Acme Plumbing",
        "America/Chicago",
        "US",
    )
    assert policy.follow_up_offsets_hours == [36, 96, 240]
    assert policy.initial_channel == "email"
    assert policy.follow_up_other_channel is False
    assert (policy.cooldown_days, policy.default_delay_hours) == (30, 2)
    assert (policy.send_window_start, policy.send_window_end) == (time(9), time(20, 30))
    assert policy.send_window_applies_to == "all"
    assert policy.sender_name == "Acme Plumbing team"
    assert policy.postal_address == "1 Main St\nSpringfield, IL 62701"
    assert b"Settings saved." in browser.get(URL).content


def test_no_follow_ups_is_an_empty_field(browser, owner):
    browser.post(URL, form_data(follow_up_offsets_hours=""))
    assert BusinessSettings.objects.get(owner=owner).follow_up_offsets_hours == []


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        (
            "follow_up_offsets_hours",
            "7, 3",
            "Each offset from 1 to 8760 hours, increasing (each follow-up after the previous one).",
        ),
        ("follow_up_offsets_hours", "1, 2, 3, 4, 5, 6", "At most 5 follow-ups."),
        ("follow_up_offsets_hours", "soon", "Write days separated by commas"),
        ("follow_up_offsets_hours", "400", "Each offset from 1 to 8760 hours"),
        ("send_window_end", "09:00", "Must differ from the start (or turn quiet hours off)."),
        ("time_zone", "Mars/Olympus", "Select a valid choice."),
        ("default_region", "XX", "Select a valid choice."),
        ("business_name", "", "This field is required."),
        ("cooldown_days", "-1", "Ensure this value is greater than or equal to 0."),
    ],
)
def test_an_invalid_value_is_shown_next_to_its_field_and_nothing_is_saved(
    browser, owner, field, value, message
):
    before = BusinessSettings.for_owner(owner).follow_up_offsets_hours
    response = browser.post(URL, form_data(**{"business_name": "Renamed", field: value}))
    assert response.status_code == 200
    html = response.content.decode()
    error_id = f"id_{field}_error"
    assert f'<ul class="errorlist" id="{error_id}"><li>{message}' in html.replace("&#x27;", "'")
    # The input points at its error, so a screen reader reads it with the field.
    control = re.search(rf'<(?:input|select)[^>]*name="{field}"[^>]*>', html)[0]
    assert re.search(rf'aria-describedby="[^"]*\b{error_id}\b', control)
    assert 'aria-invalid="true"' in control
    owner.refresh_from_db()
    assert owner.business_name != "Renamed"  # profile and policy are saved together or not at all
    assert BusinessSettings.objects.get(owner=owner).follow_up_offsets_hours == before


def test_quiet_hours_may_be_off_with_any_window(browser, owner):
    browser.post(
        URL,
        form_data(
            send_window_start="00:00", send_window_end="00:00", send_window_applies_to="none"
        ),
    )
    assert BusinessSettings.objects.get(owner=owner).send_window_applies_to == "none"


def test_a_legacy_time_zone_set_by_staff_stays_selectable(browser, owner):
    owner.time_zone = "US/Eastern"
    owner.save()
    html = browser.get(URL).content.decode()
    assert '<option value="US/Eastern" selected>' in html
    assert browser.post(URL, form_data(time_zone="US/Eastern")).status_code == 302


def test_the_feedback_email_can_be_turned_off_and_on(browser, owner):
    assert BusinessSettings.for_owner(owner).notify_feedback is True
    box = re.search(
        r'<input type="checkbox" name="notify_feedback"[^>]*>', browser.get(URL).content.decode()
    )
    assert " checked" in box[0]
    browser.post(URL, form_data())  # an unticked box is not posted
    assert BusinessSettings.objects.get(owner=owner).notify_feedback is False
    browser.post(URL, form_data(notify_feedback="on"))
    assert BusinessSettings.objects.get(owner=owner).notify_feedback is True


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


SITES_URL = "/portal/settings/sites/"


def labels(owner) -> list[str]:
    return list(
        ReviewSite.objects.filter(owner=owner)
        .order_by("position", "created_at")
        .values_list("label", flat=True)
    )


class TestSites:
    """The review sites page: add (Yelp refused with the model's message), reorder, remove; for
    a business that lists no review site yet."""

    @pytest.fixture
    def owner(self, db):
        """A business that lists no review site yet: these tests add them."""
        return UserFactory()

    def test_adding_a_link_names_the_site_and_puts_it_last(self, browser, owner):
        ReviewSite.objects.create(
            owner=owner, url="https://www.trustpilot.com/review/acme", label="TP"
        )
        response = browser.post(SITES_URL, {"url": "g.page/r/acme-plumbing/review", "label": ""})
        assert response.status_code == 302
        site = ReviewSite.objects.get(owner=owner, kind="google")
        assert (site.url, site.label, site.position) == (
            "https://g.page/r/acme-plumbing/review",
            "Google",
            1,
        )
        assert labels(owner) == ["TP", "Google"]
        assert b"Added Google." in browser.get(SITES_URL).content

    def test_yelp_is_refused_with_the_models_message(self, browser, owner):
        response = browser.post(SITES_URL, {"url": "https://www.yelp.com/biz/acme-plumbing"})
        assert response.status_code == 200
        html = response.content.decode()
        assert '<ul class="errorlist" id="id_url_error"><li>Yelp does not allow asking' in html
        assert not ReviewSite.objects.exists()

    @pytest.mark.parametrize(
        ("url", "message"),
        [
            ("https://g.page/r/acme/review", "This link is already on your list."),
            ("not a link", "Enter a valid URL."),
            ("", "This field is required."),
        ],
    )
    def test_bad_links_are_refused_next_to_the_field(self, browser, owner, url, message):
        ReviewSite.objects.create(owner=owner, url="https://g.page/r/acme/review", label="Google")
        html = browser.post(SITES_URL, {"url": url}).content.decode()
        assert f'id="id_url_error"><li>{message}</li>' in html
        assert ReviewSite.objects.count() == 1

    def test_sites_move_up_and_down(self, browser, owner):
        for position, label in enumerate(["Google", "Facebook", "Trustpilot"]):
            ReviewSite.objects.create(
                owner=owner, url=f"https://example.com/{label}", label=label, position=position
            )
        trustpilot = ReviewSite.objects.get(owner=owner, label="Trustpilot")
        response = browser.post(f"{SITES_URL}{trustpilot.pk}/move/", {"direction": "up"})
        assert response["Location"] == f"{SITES_URL}#site-{trustpilot.pk}"
        assert labels(owner) == ["Google", "Trustpilot", "Facebook"]
        google = ReviewSite.objects.get(owner=owner, label="Google")
        browser.post(f"{SITES_URL}{google.pk}/move/", {"direction": "down"})
        assert labels(owner) == ["Trustpilot", "Google", "Facebook"]
        browser.post(f"{SITES_URL}{trustpilot.pk}/move/", {"direction": "up"})  # already first
        assert labels(owner) == ["Trustpilot", "Google", "Facebook"]
        assert list(
            ReviewSite.objects.filter(owner=owner)
            .order_by("position")
            .values_list("position", flat=True)
        ) == [0, 1, 2]

    def test_removing_a_site(self, browser, owner):
        site = ReviewSite.objects.create(
            owner=owner, url="https://g.page/r/acme/review", label="Google"
        )
        response = browser.post(f"{SITES_URL}{site.pk}/remove/", follow=True)
        assert b"Removed Google." in response.content
        assert not ReviewSite.objects.exists()
        assert browser.post(f"{SITES_URL}{site.pk}/remove/").status_code == 404

    def test_the_review_page_shows_sites_in_the_owners_order(self, browser, client, owner):
        from tests.support.portal_data import add_request

        for position, label in enumerate(["Google", "Facebook"]):
            ReviewSite.objects.create(
                owner=owner, url=f"https://example.com/{label}", label=label, position=position
            )
        facebook = ReviewSite.objects.get(label="Facebook")
        browser.post(f"{SITES_URL}{facebook.pk}/move/", {"direction": "up"})
        request = add_request(owner, first_name="Jane", email="jane@example.com")
        page = client.get(f"/r/{request.token}/").content.decode()
        assert page.index(">Facebook<") < page.index(">Google<")

    def test_reordering_must_name_every_site_once(self, owner, other_owner):
        mine = ReviewSite.objects.create(owner=owner, url="https://example.com/a", label="A")
        theirs = ReviewSite.objects.create(
            owner=other_owner, url="https://example.com/b", label="B"
        )
        for ids in ([mine.pk, theirs.pk], [mine.pk, mine.pk], []):
            with pytest.raises(ValidationError):
                review_sites_reorder(owner=owner, site_ids=ids)
        assert review_sites_reorder(owner=owner, site_ids=[mine.pk]) == [mine]


def test_a_business_with_one_location_sees_the_pages_it_saw_before(golden):
    client, _, _ = golden
    assert_page_unchanged(client, "settings", "/portal/settings/")
    assert_page_unchanged(client, "sites", "/portal/settings/sites/")
    assert_page_unchanged(client, "messages", "/portal/settings/messages/")
    assert_page_unchanged(client, "message_sms_1", "/portal/settings/messages/sms/1/")
    assert_page_unchanged(client, "message_email_0", "/portal/settings/messages/email/0/")


# --- Members and locations ------------------------------------------------------------------------


def chosen(location) -> str:
    return f"?location={location.pk}"


def test_business_settings_are_the_owners_only(owner, locations, manager, viewer):
    for client in (manager, viewer):
        assert client.get(URL).status_code == 403
        assert client.get(URL + chosen(locations[1])).status_code == 403
        assert client.post(URL, form_data(business_name="Hijacked")).status_code == 403
    owner.refresh_from_db()
    assert owner.business_name != "Hijacked"


def test_with_a_location_chosen_the_owner_edits_what_it_sends_blank_being_the_accounts(
    browser, owner, locations
):
    uptown = locations[1]
    page = browser.get(URL + chosen(uptown))
    assert page.status_code == 200
    assert "What Uptown sends" in page.content.decode()
    answer = browser.post(
        URL + chosen(uptown),
        {
            "sender_name": "Uptown Clinic",
            "postal_address": "",
            "send_window_start": "08:00",
            "send_window_end": "18:00",
            "send_window_applies_to": "",
        },
    )
    assert answer.status_code == 302 and answer["Location"] == URL + chosen(uptown)
    policy = BusinessSettings.for_owner(owner)
    at_uptown = policy.at(uptown.pk)
    assert at_uptown.sender_name == "Uptown Clinic"
    assert at_uptown.postal_address == policy.postal_address  # blank: the account's
    assert (at_uptown.send_window_start, at_uptown.send_window_end) == (time(8), time(18))
    assert policy.at(locations[2].pk).sender_name == policy.sender_name
    assert policy.sender_name != "Uptown Clinic"  # the account's unchanged


def test_a_location_window_with_one_end_is_refused_next_to_the_field(browser, locations):
    page = browser.post(
        URL + chosen(locations[1]),
        {"send_window_start": "08:00", "send_window_end": "", "send_window_applies_to": ""},
    )
    assert page.status_code == 200
    assert "Give both ends of the sending hours, or neither." in page.content.decode()


def test_all_locations_edits_the_accounts_settings_as_before(browser, owner, locations):
    page = browser.get(URL)
    assert "The account's settings: every location uses them" in page.content.decode()
    assert browser.post(URL, form_data(business_name="Renamed")).status_code == 302
    owner.refresh_from_db()
    assert owner.business_name == "Renamed"


def test_a_manager_edits_the_review_sites_of_their_location(owner, locations, manager):
    page = manager.get(SITES_URL)
    assert page.status_code == 200
    assert page.context["sites"] == []  # Uptown has none; Downtown's is not theirs
    answer = manager.post(SITES_URL, {"url": "https://g.page/r/uptown/review"})
    assert answer.status_code == 302 and answer["Location"] == SITES_URL + chosen(locations[1])
    site = ReviewSite.objects.get(url="https://g.page/r/uptown/review")
    assert site.location_id == locations[1].pk
    assert [s.label for s in manager.get(SITES_URL).context["sites"]] == ["Google"]


def test_the_owner_edits_a_chosen_locations_sites_and_none_chosen_is_the_defaults(
    browser, owner, locations
):
    browser.post(SITES_URL + chosen(locations[2]), {"url": "https://g.page/r/airport/review"})
    browser.post(SITES_URL + chosen(locations[2]), {"url": "https://www.trustpilot.com/review/a"})
    airport = browser.get(SITES_URL + chosen(locations[2]))
    assert [s.label for s in airport.context["sites"]] == ["Google", "Trustpilot"]
    assert "Review sites of Airport" in airport.content.decode()
    default = browser.get(SITES_URL)
    assert [s.location_id for s in default.context["sites"]] == [None]  # the owner fixture's
    assert "Review sites of Downtown, the default location" in default.content.decode()
    trustpilot = ReviewSite.objects.get(label="Trustpilot")
    moved = browser.post(
        f"{SITES_URL}{trustpilot.pk}/move/{chosen(locations[2])}", {"direction": "up"}
    )
    assert moved["Location"] == f"{SITES_URL}{chosen(locations[2])}#site-{trustpilot.pk}"
    airport = browser.get(SITES_URL + chosen(locations[2]))
    assert [s.label for s in airport.context["sites"]] == ["Trustpilot", "Google"]


def test_a_manager_cannot_touch_another_locations_sites(owner, locations, manager):
    downtown = ReviewSite.objects.get(owner=owner)
    assert manager.get(SITES_URL + chosen(locations[0])).status_code == 404
    assert manager.post(f"{SITES_URL}{downtown.pk}/remove/").status_code == 404
    assert manager.post(f"{SITES_URL}{downtown.pk}/move/", {"direction": "down"}).status_code == 404
    assert ReviewSite.objects.filter(pk=downtown.pk).exists()


def test_a_viewer_sees_the_sites_and_wording_without_forms_and_cannot_write(
    owner, locations, viewer
):
    site = ReviewSite.objects.create(
        owner=owner, location=locations[1], url="https://g.page/r/up/review", label="Google"
    )
    html = viewer.get(SITES_URL).content.decode()
    assert "https://g.page/r/up/review" in html
    assert "/remove/" not in html and "Add a review site" not in html
    assert viewer.post(SITES_URL, {"url": "https://g.page/r/x/review"}).status_code == 403
    assert viewer.post(f"{SITES_URL}{site.pk}/remove/").status_code == 403
    assert viewer.post(f"{SITES_URL}{site.pk}/move/", {"direction": "up"}).status_code == 403
    edit = viewer.get("/portal/settings/messages/sms/0/")
    assert edit.status_code == 200
    assert 'id="template-form"' not in edit.content.decode()
    assert 'data-testid="wording"' in edit.content.decode()
    saved = viewer.post(
        "/portal/settings/messages/sms/0/", {"action": "save", "body": "Hi {review_link}"}
    )
    assert saved.status_code == 403
    assert viewer.post("/portal/settings/messages/sms/0/reset/").status_code == 403
    assert ReviewSite.objects.count() == 2 and not MessageTemplate.objects.exists()


SMS_BODY = "{business_name}: how did we do, {first_name}? {review_link}"


def test_a_location_gets_its_own_wording_the_others_keep_the_accounts(browser, owner, locations):
    browser.post(
        "/portal/settings/messages/sms/0/",
        {"action": "save", "body": "Account: " + SMS_BODY},
    )
    editor = browser.get("/portal/settings/messages/sms/0/" + chosen(locations[1]))
    assert editor.context["form"]["body"].value().startswith("Account: ")  # the fallback
    assert "Uptown uses the account's wording" in editor.content.decode()
    answer = browser.post(
        "/portal/settings/messages/sms/0/" + chosen(locations[1]),
        {"action": "save", "body": "Uptown: " + SMS_BODY},
    )
    assert answer["Location"] == "/portal/settings/messages/sms/0/" + chosen(locations[1])
    own = MessageTemplate.objects.get(location=locations[1])
    assert own.body.startswith("Uptown: ")
    account = MessageTemplate.objects.get(location__isnull=True)
    assert account.body.startswith("Account: ")
    listed = browser.get("/portal/settings/messages/" + chosen(locations[1])).content.decode()
    assert "Its own wording" in listed
    airport = browser.get("/portal/settings/messages/" + chosen(locations[2])).content.decode()
    assert "The account's wording" in airport and "Its own wording" not in airport
    browser.post("/portal/settings/messages/sms/0/reset/" + chosen(locations[1]))
    assert not MessageTemplate.objects.filter(location=locations[1]).exists()
    assert MessageTemplate.objects.filter(location__isnull=True).exists()


def test_the_preview_uses_the_locations_settings(browser, owner, locations):
    location_settings_update(
        owner=owner, location_id=locations[1].pk, changes={"sender_name": "Uptown Desk"}
    )
    page = browser.get("/portal/settings/messages/email/0/" + chosen(locations[1]))
    assert "Uptown Desk" in page.content.decode()
    assert "Uptown Desk" not in browser.get("/portal/settings/messages/email/0/").content.decode()


def test_a_manager_edits_their_locations_wording_never_the_accounts(owner, locations, manager):
    answer = manager.post(
        "/portal/settings/messages/sms/0/", {"action": "save", "body": "Manager: " + SMS_BODY}
    )
    assert answer.status_code == 302
    saved = MessageTemplate.objects.get()
    assert saved.location_id == locations[1].pk
    other = manager.get("/portal/settings/messages/sms/0/" + chosen(locations[2]))
    assert other.status_code == 404
    assert "All locations" not in manager.get("/portal/settings/messages/").content.decode()


def test_the_settings_pages_show_the_switcher_and_keep_the_choice(browser, owner, locations):
    html = browser.get(SITES_URL + chosen(locations[1])).content.decode()
    assert 'data-testid="location-switcher"' in html
    assert "All locations (the account's settings)" in html
    assert f'href="/portal/settings/messages/{chosen(locations[1])}"' in html
    assert f'href="/portal/settings/{chosen(locations[1])}"' in html


@pytest.mark.parametrize(
    "path", [URL, SITES_URL, "/portal/settings/messages/", "/portal/settings/messages/sms/1/"]
)
def test_settings_pages_cost_the_same_queries_with_more_locations_and_members(
    browser, owner, locations, manager, path
):
    owner_few = query_count(browser, path)
    manager_few = query_count(manager, path) if path != URL else None
    more = [LocationFactory(account=owner, name=f"Extra {n}") for n in range(4)]
    for n in range(3):
        member_client(owner, role="manager", locations=more, email=f"m{n}@example.com")
    assert query_count(browser, path) == owner_few
    if manager_few is not None:
        assert query_count(manager, path) == manager_few


def test_a_member_given_no_location_never_edits_the_accounts_wording(owner, locations):
    nowhere = member_client(owner, role="manager", locations=[], email="nowhere@example.com")
    assert nowhere.get("/portal/settings/messages/").status_code == 403
    answer = nowhere.post(
        "/portal/settings/messages/sms/0/", {"action": "save", "body": "Mine: " + SMS_BODY}
    )
    assert answer.status_code == 403 and not MessageTemplate.objects.exists()
    assert nowhere.get(SITES_URL).status_code == 403
