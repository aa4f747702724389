"""The back office's businesses, settings, review sites and wording (reviews.admin.business),
through Django's test client: every write goes through a service."""

from __future__ import annotations

import pytest

from reviews import services
from reviews.models import (
    BusinessSettings,
    Channel,
    Message,
    MessageTemplate,
    ReviewSite,
)
from tests.factories import LocationFactory, ReviewSiteFactory, UserFactory, first_location
from tests.support.delivery import email_request, step
from tests.support.portal_data import add_request

pytestmark = pytest.mark.django_db


# --- Business settings and wording ----------------------------------------------------------------


def test_business_settings_are_saved_through_the_service_with_the_profile(staff, business):
    url = f"/admin/reviews/businesssettings/{business.pk}/change/"
    form = {
        "business_name": "Acme Plumbing & Heating",
        "time_zone": "Europe/London",
        "default_region": "gb",
        "initial_channel": "email",
        "default_delay_hours": "2",
        "follow_up_offsets_hours": "[48]",
        "follow_up_other_channel": "on",
        "cooldown_days": "30",
        "send_window_start": "09:00",
        "send_window_end": "20:00",
        "send_window_applies_to": "all",
        "sender_name": "Acme",
        "postal_address": "1 High St, London",
    }
    assert staff.post(url, form).status_code == 302
    business.refresh_from_db()
    policy = BusinessSettings.objects.get(owner=business)
    assert (business.time_zone, business.default_region) == ("Europe/London", "GB")
    assert business.business_name == "Acme Plumbing & Heating"
    assert policy.follow_up_offsets_hours == [48] and policy.cooldown_days == 30
    page = staff.post(url, {**form, "follow_up_offsets_hours": "[48, 24]", "time_zone": "Mars"})
    assert page.status_code == 200
    assert "increasing" in page.content.decode() and "IANA" in page.content.decode()


def test_template_saved_through_the_service_gets_the_stop_line(staff, business):
    add_page = staff.get("/admin/reviews/messagetemplate/add/").content.decode()
    assert 'id="preview-body"' in add_page and "Type the wording to see it here." in add_page
    page = staff.post(
        "/admin/reviews/messagetemplate/add/",
        {
            "owner": str(business.pk),
            "channel": "sms",
            "step": "0",
            "subject": "",
            "body": "Hi {first_name}, {business_name} here: {review_link}",
        },
    )
    assert page.status_code == 302
    template = MessageTemplate.objects.get()
    assert template.body.endswith("Reply STOP to opt out")
    change = staff.get(f"/admin/reviews/messagetemplate/{template.pk}/change/").content.decode()
    assert 'id="preview-body"' in change and "Hi Jane, Acme Plumbing here" in change
    assert "js/template-preview.js" in change


def test_deleting_wording_goes_back_to_the_default_through_the_service(
    staff, business, monkeypatch
):
    reset = []
    reset_one = services.message_template_reset

    def spy(**kwargs):
        reset.append((kwargs["channel"], kwargs["step"]))
        return reset_one(**kwargs)

    monkeypatch.setattr(services, "message_template_reset", spy)
    sms, email, follow_up = (
        MessageTemplate.objects.create(
            owner=business, channel=channel, step=step, subject="Hi", body="{review_link}"
        )
        for channel, step in (("sms", 0), ("email", 0), ("email", 1))
    )
    url = "/admin/reviews/messagetemplate/"
    assert staff.post(f"{url}{sms.pk}/delete/", {"post": "yes"}).status_code == 302
    staff.post(
        url,
        {
            "action": "delete_selected",
            "_selected_action": [str(email.pk), str(follow_up.pk)],
            "post": "yes",
        },
    )
    assert sorted(reset) == [("email", 0), ("email", 1), ("sms", 0)]
    assert not MessageTemplate.objects.exists()


def test_preview_endpoint_takes_a_template_id_that_only_looks_like_a_uuid_as_none(staff, business):
    """A hidden field of 36 hyphens passed the old pattern and made the lookup fail (500)."""
    page = staff.post(
        "/admin/reviews/messagetemplate/preview/",
        {
            "_template": "-" * 36,
            "owner": str(business.pk),
            "channel": "sms",
            "step": "0",
            "body": "Hello {first_name} from {business_name}! {review_link}",
        },
    )
    assert page.status_code == 200
    assert "Hello Jane" in page.content.decode()


def test_preview_endpoint_renders_the_draft_with_its_segment_count(staff, business):
    url = "/admin/reviews/messagetemplate/preview/"
    page = staff.post(
        url,
        {
            "owner": str(business.pk),
            "channel": "sms",
            "step": "0",
            "body": "Hello {first_name} from {business_name}! 😀 {review_link}",
        },
    )
    html = page.content.decode()
    assert "Hello Jane from Acme Plumbing!" in html
    assert "UCS-2" in html or "Unicode" in html or "segment" in html
    bad = staff.post(url, {"owner": str(business.pk), "channel": "sms", "step": "0", "body": "x"})
    assert "Must contain {review_link}." in bad.content.decode()
    email = staff.post(
        url,
        {
            "owner": str(business.pk),
            "channel": "email",
            "step": "1",
            "subject": "Thanks {first_name}",
            "body": "Please review us: {review_link}",
        },
    )
    assert "Thanks Jane" in email.content.decode()
    assert staff.get(url).status_code == 405


# --- Review sites: through the portal's services -------------------------------------------------

SITES = "/admin/reviews/reviewsite/"


def test_adding_a_site_names_it_from_the_link_puts_it_last_and_releases_held_requests(staff):
    """The portal's rules, not the model form's: a blank label is named from the link, the kind
    follows the link whatever the form says, no position means last; and the first site
    releases the requests held while the business listed none."""
    siteless = UserFactory(business_name="Acme Plumbing", time_zone="America/New_York")
    BusinessSettings.objects.create(
        owner=siteless, send_window_applies_to=BusinessSettings.WindowAppliesTo.NONE
    )
    held = add_request(siteless, email="jane@example.com")
    assert held.messages.get(step=0).waiting_for_review_site

    first = {"owner": siteless.pk, "url": "www.facebook.com/acme/reviews", "label": ""}
    response = staff.post(f"{SITES}add/", {**first, "kind": "custom", "position": ""})
    assert response.status_code == 302, response.content
    site = ReviewSite.objects.get(owner=siteless)
    assert (site.url, site.kind, site.label, site.position) == (
        "https://www.facebook.com/acme/reviews",
        "facebook",
        "Facebook",
        0,
    )
    assert response["Location"] == f"{SITES}"
    released = held.messages.get(step=0)
    assert released.status == Message.Status.PENDING and not released.waiting_for_review_site

    second = {"owner": siteless.pk, "url": "https://reviews.example.org/acme", "position": ""}
    assert staff.post(f"{SITES}add/", second).status_code == 302
    assert list(
        ReviewSite.objects.filter(owner=siteless)
        .order_by("position")
        .values_list("label", "kind", "position")
    ) == [("Facebook", "facebook", 0), ("reviews.example.org", "custom", 1)]


def test_changing_a_site_follows_the_new_link_and_keeps_its_business_and_place(
    staff, business, other_owner
):
    site = ReviewSite.objects.get(owner=business)
    ReviewSite.objects.filter(pk=site.pk).update(position=3)
    response = staff.post(
        f"{SITES}{site.pk}/change/",
        {
            "owner": other_owner.pk,  # a disabled field: ignored
            "url": "https://www.trustpilot.com/review/acme.example",
            "label": "",
            "position": "",
        },
    )
    assert response.status_code == 302, response.content
    site.refresh_from_db()
    assert (site.owner_id, site.kind, site.label, site.position) == (
        business.pk,
        "trustpilot",
        "Trustpilot",
        3,
    )


def test_the_site_pages_refuse_what_the_portal_refuses(staff, business):
    google = ReviewSite.objects.get(owner=business)
    yelp = staff.post(
        f"{SITES}add/", {"owner": business.pk, "url": "https://www.yelp.com/biz/acme"}
    )
    assert "Yelp does not allow asking customers for reviews." in yelp.content.decode()
    twice = staff.post(f"{SITES}add/", {"owner": business.pk, "url": google.url})
    assert twice.status_code == 200
    other = ReviewSite.objects.create(owner=business, url="https://example.com/r", label="R")
    taken = staff.post(f"{SITES}{other.pk}/change/", {"url": google.url, "label": "R"})
    assert taken.status_code == 200
    assert "already exists" in taken.content.decode()
    assert ReviewSite.objects.filter(owner=business).count() == 2
    other.refresh_from_db()
    assert other.url == "https://example.com/r"


def test_deleting_sites_goes_through_review_site_remove(staff, business, monkeypatch):
    removed = []
    remove = services.review_site_remove

    def spy(**kwargs):
        removed.append(kwargs)
        return remove(**kwargs)

    monkeypatch.setattr(services, "review_site_remove", spy)
    google = ReviewSite.objects.get(owner=business)
    assert staff.post(f"{SITES}{google.pk}/delete/", {"post": "yes"}).status_code == 302
    assert removed == [{"owner": business, "site_id": google.pk}]

    sites = [
        ReviewSite.objects.create(owner=business, url=f"https://example.com/{n}", label=str(n))
        for n in range(2)
    ]
    staff.post(
        SITES,
        {
            "action": "delete_selected",
            "_selected_action": [str(site.pk) for site in sites],
            "post": "yes",
        },
    )
    assert {call["site_id"] for call in removed[1:]} == {site.pk for site in sites}
    assert not ReviewSite.objects.filter(owner=business).exists()


def test_business_page_shows_settings_sites_and_templates(staff, business):
    MessageTemplate.objects.create(
        owner=business,
        channel=Channel.SMS,
        step=0,
        body="{business_name}: {review_link} Reply STOP to opt out",
    )
    html = staff.get(f"/admin/accounts/user/{business.pk}/change/").content.decode()
    assert "https://g.page/r/acme/review" in html
    assert "Reply STOP to opt out" in html
    assert "review settings" in html


def test_admin_shows_the_sms_segment_count_of_a_template(staff, business):
    template = MessageTemplate(
        owner=business, channel="sms", step=0, body="{business_name}: {review_link}"
    )
    template.full_clean()
    template.save()
    page = staff.get(f"/admin/reviews/messagetemplate/{template.pk}/change/")
    assert page.status_code == 200
    assert "1 segment (GSM-7" in page.content.decode()
    listing = staff.get("/admin/reviews/messagetemplate/")
    assert "1 segment (GSM-7" in listing.content.decode()


def test_admin_refuses_a_template_without_the_review_link(staff, business):
    response = staff.post(
        "/admin/reviews/messagetemplate/add/",
        {"owner": business.pk, "channel": "sms", "step": 0, "subject": "", "body": "Hi"},
    )
    assert response.status_code == 200
    assert "Must contain {review_link}" in response.content.decode()
    assert MessageTemplate.objects.count() == 0


def test_the_admin_lists_it_as_waiting_and_adding_a_site_there_releases_it(siteless, client):
    request = email_request(siteless)
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    listing = client.get("/admin/reviews/reviewrequest/").content.decode()
    assert "Scheduled: waiting for a review site" in listing
    page = client.get(f"/admin/reviews/reviewrequest/{request.pk}/change/").content.decode()
    assert "waiting for a review site" in page

    response = client.post(
        "/admin/reviews/reviewsite/add/",
        {
            "owner": siteless.pk,
            "kind": "google",
            "label": "Google",
            "url": "https://g.page/r/acme/review",
            "position": 0,
        },
    )
    assert response.status_code == 302, response.content
    assert step(request, 0).status == "pending"


# --- Locations on the sites' and wording's lists ----------------------------------------------


def test_sites_and_wording_filter_by_location_and_name_it(staff, business):
    north = first_location(business, name="North")
    south = LocationFactory(account=business, name="South")
    south_site = ReviewSiteFactory(owner=business, location=south, label="South Google")
    own = services.message_template_save(
        owner=business,
        channel=Channel.SMS,
        step=0,
        body="Hi {first_name}, review {business_name}: {review_link} Reply STOP to opt out",
        location_id=south.pk,
    )
    shared = services.message_template_save(
        owner=business,
        channel=Channel.SMS,
        step=1,
        body="Reminder from {business_name}: {review_link} Reply STOP to opt out",
    )
    by = {"owner": business.email}

    def listed(model, **params):
        page = staff.get(f"/admin/reviews/{model}/", {**by, **params})
        assert page.status_code == 200
        return list(page.context["cl"].result_list)

    sites = {site.pk: site for site in listed("reviewsite")}
    assert {site.location_label for site in sites.values()} == {"North", "South"}
    assert [s.pk for s in listed("reviewsite", location=south.pk)] == [south_site.pk]
    assert south_site.pk not in {s.pk for s in listed("reviewsite", location=north.pk)}
    # A template with no location is the account's wording, not the default location's.
    assert [t.pk for t in listed("messagetemplate", location=south.pk)] == [own.pk]
    assert listed("messagetemplate", location=north.pk) == []
    labels = {t.pk: t.location_label for t in listed("messagetemplate")}
    assert labels == {own.pk: "South", shared.pk: "All locations (the account's wording)"}


def test_an_accounts_page_links_each_location_to_its_requests_and_the_move_page(staff, business):
    north = first_location(business, name="North")
    html = staff.get(f"/admin/accounts/user/{business.pk}/change/").content.decode()
    assert f"location={north.pk}" in html
    assert "/admin/reviews/reviewrequest/move/" in html
