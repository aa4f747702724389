"""The back office's contacts (reviews.admin.contacts): search by a phone number written any way or
an internationalised address, the opted-out and location filters, and the CSV import page."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from reviews.models import (
    Contact,
    ReviewRequest,
)
from reviews.services import contact_add
from tests.factories import LocationFactory, ReviewRequestFactory, UserFactory, first_location
from tests.support.contacts import contact_input
from tests.support.portal_data import add_request

pytestmark = pytest.mark.django_db


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


def test_contacts_filter_by_location_through_their_requests(staff, business):
    north = first_location(business, name="North")
    south = LocationFactory(account=business, name="South")

    def add_at(location, email):
        data = contact_input(business, {"email": email, "delay_hours": 5})
        return contact_add(owner=business, data=data, location_id=location.pk).review_request

    add_at(north, "north@example.com")
    add_at(south, "south@example.com")
    add_at(north, "both@example.com")
    add_at(south, "both@example.com")
    unplaced = add_at(north, "old@example.com")
    ReviewRequest.objects.filter(pk=unplaced.pk).update(location=None)  # the default's
    other = UserFactory()
    add_at_other = contact_add(
        owner=other,
        data=contact_input(other, {"email": "south@example.com"}),
        location_id=first_location(other).pk,
    )
    assert add_at_other.review_request

    def emails(location) -> set[str]:
        page = staff.get(
            "/admin/reviews/contact/", {"owner": business.email, "location": location.pk}
        )
        return {contact.email for contact in page.context["cl"].result_list}

    assert emails(south) == {"south@example.com", "both@example.com"}
    assert emails(north) == {"north@example.com", "both@example.com", "old@example.com"}


def test_the_location_filtered_contacts_cost_the_same_queries_for_more_rows(
    staff, business, django_assert_max_num_queries
):
    first_location(business, name="North")
    south = LocationFactory(account=business, name="South")

    def add(start: int, count: int) -> None:
        for n in range(start, start + count):
            data = contact_input(business, {"email": f"p{n}@example.com", "delay_hours": 5})
            contact_add(owner=business, data=data, location_id=south.pk)

    params = {"owner": business.email, "location": south.pk}
    add(0, 2)
    with CaptureQueriesContext(connection) as few:
        assert staff.get("/admin/reviews/contact/", params).status_code == 200
    add(2, 8)
    with django_assert_max_num_queries(len(few)):
        assert staff.get("/admin/reviews/contact/", params).status_code == 200


def test_the_location_filtered_contacts_count_each_contact_once_under_every_filter(staff, business):
    """The count of the location's contacts (read from its requests when nothing else narrows
    the list) is the number of rows listed: a contact with two requests there counts once, the
    default location's includes the requests with no location, and another filter or a search
    counts only what it keeps."""
    north = first_location(business, name="North")
    south = LocationFactory(account=business, name="South")

    def add_at(location, email):
        data = contact_input(business, {"email": email, "delay_hours": 5})
        return contact_add(owner=business, data=data, location_id=location.pk).review_request

    twice = add_at(south, "twice@example.com")
    ReviewRequestFactory(
        contact=twice.contact, location=south, status="completed", ended_at=timezone.now()
    )
    add_at(south, "phone@example.com")
    Contact.objects.filter(email="phone@example.com").update(phone="+14155552671")
    add_at(north, "north@example.com")
    unplaced = add_at(north, "old@example.com")
    ReviewRequest.objects.filter(pk=unplaced.pk).update(location=None)  # the default's

    def listed(location, **params) -> tuple[int, set[str]]:
        page = staff.get(
            "/admin/reviews/contact/",
            {"owner": business.email, "location": location.pk, **params},
        )
        changelist = page.context["cl"]
        return changelist.result_count, {contact.email for contact in changelist.result_list}

    assert ReviewRequest.objects.filter(location=south).count() == 3
    assert listed(south) == (2, {"twice@example.com", "phone@example.com"})
    assert listed(north) == (2, {"north@example.com", "old@example.com"})
    assert listed(south, channel="sms") == (1, {"phone@example.com"})
    assert listed(south, q="twice@example.com") == (1, {"twice@example.com"})
    assert listed(north, q="nobody@example.com") == (0, set())
