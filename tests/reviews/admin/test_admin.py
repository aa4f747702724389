"""The back office through Django's test client: every write goes through a service."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone

from reviews import services
from reviews.models import (
    BusinessSettings,
    Channel,
    Contact,
    Message,
    MessageTemplate,
    ReviewRequest,
    ReviewSite,
)
from tests.factories import UserFactory
from tests.support.portal_data import add_request

pytestmark = pytest.mark.django_db


def action(client, model, name, ids, **extra):
    return client.post(
        f"/admin/reviews/{model}/",
        {"action": name, "_selected_action": [str(pk) for pk in ids], **extra},
        follow=True,
    )


# --- Requests: cancel, send now, resend -----------------------------------------------------------


def test_cancel_action_ends_requests_through_the_service(staff, business):
    active = add_request(business, email="a@example.com", delay_hours=5)
    ended = add_request(business, email="b@example.com", delay_hours=5)
    ended.status, ended.ended_at = ReviewRequest.Status.COMPLETED, timezone.now()
    ended.save()
    page = action(staff, "reviewrequest", "cancel_requests", [active.pk, ended.pk])
    html = page.content.decode()
    assert "Cancelled: 1." in html and "already ended (completed)" in html
    active.refresh_from_db()
    assert active.status == ReviewRequest.Status.CANCELLED
    assert "staff@example.com" in active.ended_detail
    assert set(active.messages.values_list("status", flat=True)) == {Message.Status.CANCELLED}


def test_send_now_action_reports_refusals(staff, business):
    later = add_request(business, email="a@example.com", delay_hours=24)
    opted = add_request(business, email="b@example.com", delay_hours=24)
    Contact.objects.filter(pk=opted.contact_id).update(email_opted_out_at=timezone.now())
    html = action(staff, "reviewrequest", "send_now", [later.pk, opted.pk]).content.decode()
    assert "Due now (a worker sends them shortly): 1." in html
    assert "opted out of e-mail" in html
    assert later.messages.get(step=0).due_at <= timezone.now()
    assert opted.messages.get(step=0).due_at > timezone.now() + timedelta(hours=23)


def test_resend_action_resends_a_failed_message_and_refuses_an_unknown_sms(staff, business):
    failed = add_request(business, email="a@example.com", delay_hours=0)
    Message.objects.filter(review_request=failed, step=0).update(
        status=Message.Status.FAILED, last_error="bounced"
    )
    unknown = add_request(business, mobile_phone_number="+14155552671", delay_hours=0)
    Message.objects.filter(review_request=unknown, step=0).update(status=Message.Status.UNKNOWN)
    html = action(staff, "reviewrequest", "resend_failed", [failed.pk, unknown.pk]).content
    html = html.decode()
    assert "Resent (pending again, due now): 1." in html
    assert "may already have been delivered" in html
    assert failed.messages.get(step=0).status == Message.Status.PENDING
    assert unknown.messages.get(step=0).status == Message.Status.UNKNOWN


def test_forced_resend_of_an_unknown_sms_asks_first(staff, business):
    unknown = add_request(business, mobile_phone_number="+14155552671", delay_hours=0)
    message = unknown.messages.get(step=0)
    Message.objects.filter(pk=message.pk).update(status=Message.Status.UNKNOWN)
    page = action(staff, "message", "resend_forced", [message.pk])
    assert "may already have delivered it" in page.content.decode()
    message.refresh_from_db()
    assert message.status == Message.Status.UNKNOWN
    action(staff, "message", "resend_forced", [message.pk], confirm="yes")
    message.refresh_from_db()
    assert message.status == Message.Status.PENDING


def test_staff_without_change_permission_get_no_actions(business):
    from django.contrib.auth.models import Permission

    viewer = UserFactory(is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_reviewrequest"))
    client = Client()
    client.force_login(viewer)
    request = add_request(business, email="a@example.com", delay_hours=5)
    page = client.get("/admin/reviews/reviewrequest/")
    assert page.status_code == 200 and b"cancel_requests" not in page.content
    client.post(
        "/admin/reviews/reviewrequest/",
        {"action": "cancel_requests", "_selected_action": [str(request.pk)]},
    )
    request.refresh_from_db()
    assert request.status == ReviewRequest.Status.SCHEDULED
    assert client.get("/admin/reviews/contact/import/").status_code == 403


def test_a_request_page_shows_its_timeline_and_every_message(staff, business):
    request = add_request(business, email="a@example.com", delay_hours=0)
    Message.objects.filter(review_request=request, step=0).update(
        status=Message.Status.FAILED,
        failed_at=timezone.now(),
        provider="postmark",
        provider_message_id="pm-123",
        last_error_code="bounced",
        last_error="Hard bounce",
    )
    html = staff.get(f"/admin/reviews/reviewrequest/{request.pk}/change/").content.decode()
    assert "Review request created" in html
    assert "First message (e-mail) failed" in html
    assert "pm-123" in html and "Hard bounce" in html


def test_requests_filter_by_status_and_owner(staff, business):
    other = UserFactory(business_name="Other Co")
    add_request(business, email="mine@example.com", first_name="Minnie", delay_hours=1)
    add_request(other, email="theirs@example.com", first_name="Theodore", delay_hours=1)
    # The business is typed (its e-mail, any case, or its id), completed from a list.
    for value in (business.email.upper(), str(business.pk)):
        page = staff.get("/admin/reviews/reviewrequest/", {"owner": value})
        html = page.content.decode()
        assert "Minnie" in html and "Theodore" not in html
    assert f'<option value="{business.email}">Acme Plumbing</option>' in html
    nobody = staff.get("/admin/reviews/reviewrequest/", {"owner": "nobody@example.com"})
    assert "Minnie" not in nobody.content.decode()
    page = staff.get("/admin/reviews/reviewrequest/", {"status__exact": "cancelled"})
    assert "Minnie" not in page.content.decode()


# --- Contacts -------------------------------------------------------------------------------------


def test_contacts_search_by_phone_written_any_way_and_filter_opted_out(staff, business):
    add_request(business, mobile_phone_number="+14155552671", first_name="Phoebe")
    add_request(business, email="olive@example.com", first_name="Olive")
    Contact.objects.filter(first_name="Olive").update(email_opted_out_at=timezone.now())
    found = staff.get("/admin/reviews/contact/", {"q": "(415) 555-2671"}).content.decode()
    assert "Phoebe" in found and "Olive" not in found
    opted = staff.get("/admin/reviews/contact/", {"opted_out": "any"}).content.decode()
    assert "Olive" in opted and "Phoebe" not in opted
    sms = staff.get("/admin/reviews/contact/", {"channel": "sms"}).content.decode()
    assert "Phoebe" in sms and "Olive" not in sms
    # All zeros leaves no digits to look for: not a match for every number.
    zeros = staff.get("/admin/reviews/contact/", {"q": "0000"}).content.decode()
    assert "Phoebe" not in zeros


def test_contacts_search_finds_an_internationalised_address_either_way(staff, business):
    add_request(business, email="zoe@bücher.de", first_name="Zoë")
    add_request(business, email="olive@example.com", first_name="Olive")
    for search in ("bücher.de", "xn--bcher-kva"):
        found = staff.get("/admin/reviews/contact/", {"q": search}).content.decode()
        assert "Zoë" in found and "Olive" not in found, search


def test_import_page_runs_the_import_and_shows_the_report(staff, business):
    upload = SimpleUploadedFile(
        "contacts.csv",
        b"First Name,E-mail,Mobile,Shoe size\nJane,jane@example.com,,41\nBob,bob@,,\n",
        content_type="text/csv",
    )
    page = staff.post("/admin/reviews/contact/import/", {"owner": business.email, "file": upload})
    html = page.content.decode()
    assert page.status_code == 200
    assert "2 rows read, 1 review request was scheduled, 1 error." in html
    assert (
        '<tr class="has-errors"><td>3</td><td>Not imported</td>'
        "<td>E-mail: Is not a valid e-mail address.</td>" in html
    )
    assert "<code>Shoe size</code>" in html
    assert Contact.objects.get().source == Contact.Source.IMPORT


def test_import_page_dry_run_and_file_errors(staff, business):
    upload = SimpleUploadedFile("c.csv", b"Email\njane@example.com\n")
    html = staff.post(
        "/admin/reviews/contact/import/",
        {"owner": business.email, "file": upload, "dry_run": "on"},
    ).content.decode()
    assert "Dry run: nothing was written" in html and "would be scheduled" in html
    assert not Contact.objects.exists()
    bad = SimpleUploadedFile("c.csv", b"Name\nJane\n")
    html = staff.post(
        "/admin/reviews/contact/import/", {"owner": business.email, "file": bad}
    ).content.decode()
    assert "needs an e-mail column" in html
    unknown = SimpleUploadedFile("c.csv", b"Email\njane@example.com\n")
    html = staff.post(
        "/admin/reviews/contact/import/", {"owner": "nobody@example.com", "file": unknown}
    ).content.decode()
    assert "No business with this e-mail." in html


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
