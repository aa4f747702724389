"""The back office's requests and messages (reviews.admin.requests): the cancel, send-now and
resend actions through the services, a request's page with its timeline and every message, the
lists' filters (by account and location, waiting for a review site) and location column, and the
page that moves a location's requests."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.admin.models import LogEntry
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from reviews.models import (
    Click,
    Contact,
    Feedback,
    Message,
    ReviewRequest,
    ReviewSite,
)
from reviews.services import contact_add
from tests.factories import LocationFactory, ReviewSiteFactory, UserFactory, first_location
from tests.support.contacts import contact_input
from tests.support.portal_data import add_request

pytestmark = pytest.mark.django_db


def action(client, model, name, ids, **extra):
    return client.post(
        f"/admin/reviews/{model}/",
        {"action": name, "_selected_action": [str(pk) for pk in ids], **extra},
        follow=True,
    )


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


@pytest.mark.parametrize("model", ["click", "feedback", "optoutevent"])
def test_engagement_and_audit_rows_are_read_only_in_admin(staff, model):
    assert staff.get(f"/admin/reviews/{model}/").status_code == 200
    assert staff.get(f"/admin/reviews/{model}/add/").status_code == 403


# --- Locations: filters, the location column, waiting per location, moving requests ---------


@pytest.fixture
def north(business):
    return first_location(business, name="North")  # lists the business's site (no location)


@pytest.fixture
def south(business):
    return LocationFactory(account=business, name="South")  # lists no site


def add_at(owner, location, **contact) -> ReviewRequest:
    data = contact_input(owner, {"delay_hours": 5, **contact})
    return contact_add(owner=owner, data=data, location_id=location.pk).review_request


def listed(client, model: str, params: dict) -> list:
    response = client.get(f"/admin/reviews/{model}/", params)
    assert response.status_code == 200
    return list(response.context["cl"].result_list)


def test_the_location_filter_offers_the_chosen_accounts_locations_only(
    staff, business, north, south
):
    other = UserFactory(business_name="Other Co")
    first_location(other, name="Elsewhere")
    page = staff.get("/admin/reviews/reviewrequest/", {"owner": business.email})
    (spec,) = [
        s for s in page.context["cl"].filter_specs if getattr(s, "parameter_name", "") == "location"
    ]
    assert [label for _, label in spec.lookup_choices] == ["North", "South"]
    # No account chosen: no list of every location in the database.
    page = staff.get("/admin/reviews/reviewrequest/")
    assert not [
        s for s in page.context["cl"].filter_specs if getattr(s, "parameter_name", "") == "location"
    ]


def rows_at_north_south(business, north, south):
    """A request at each location, one of the default's (north) with no location, and another
    account's with no location."""
    at_north = add_at(business, north, email="n@example.com")
    unplaced = add_at(business, north, email="u@example.com")
    ReviewRequest.objects.filter(pk=unplaced.pk).update(location=None)
    at_south = add_at(business, south, email="s@example.com")
    other = UserFactory()
    foreign = add_at(other, first_location(other), email="x@example.com")
    ReviewRequest.objects.filter(pk=foreign.pk).update(location=None)
    return at_north, unplaced, at_south, other, foreign


def test_requests_and_messages_filter_by_location_the_default_with_its_unplaced_rows(
    staff, business, north, south
):
    at_north, unplaced, at_south, other, foreign = rows_at_north_south(business, north, south)
    by = {"owner": business.email}
    assert {r.pk for r in listed(staff, "reviewrequest", {**by, "location": north.pk})} == {
        at_north.pk,
        unplaced.pk,
    }
    assert [r.pk for r in listed(staff, "reviewrequest", {**by, "location": south.pk})] == [
        at_south.pk
    ]
    # A location alone (a link from the account's page) filters the same.
    assert [r.pk for r in listed(staff, "reviewrequest", {"location": south.pk})] == [at_south.pk]
    messages = listed(staff, "message", {**by, "location": south.pk})
    assert {m.review_request_id for m in messages} == {at_south.pk}
    assert listed(staff, "message", {"owner": other.email})[0].review_request_id == foreign.pk
    assert listed(staff, "reviewrequest", {"location": "not-an-id"}) == []


def test_the_default_locations_count_is_its_rows_and_its_unplaced_rows_under_every_filter(
    staff, business, north, south
):
    """The default location's count (its own rows and those with no location, counted as two
    ranges) is the number of rows listed, for requests, messages and clicks, with another
    filter or a search too."""
    at_north, unplaced, at_south, _, foreign = rows_at_north_south(business, north, south)
    ReviewRequest.objects.filter(pk=at_north.pk).update(status="failed", ended_at=timezone.now())
    for request in (at_north, unplaced, at_south, foreign):
        Click.objects.create(review_request=request, url="https://g.page/r/x", method="GET")

    def counted(model: str, **params) -> tuple[int, set]:
        page = staff.get(
            f"/admin/reviews/{model}/", {"owner": business.email, "location": north.pk, **params}
        )
        changelist = page.context["cl"]
        rows = list(changelist.result_list)
        ids = {getattr(row, "review_request_id", row.pk) for row in rows}
        assert changelist.result_count == len(rows)
        return changelist.result_count, ids

    both = {at_north.pk, unplaced.pk}
    assert counted("reviewrequest") == (2, both)
    assert counted("reviewrequest", status__exact="failed") == (1, {at_north.pk})
    assert counted("reviewrequest", q=str(unplaced.pk)) == (1, {unplaced.pk})
    assert counted("click") == (2, both)
    assert counted("click", q=str(at_north.pk)) == (1, {at_north.pk})
    messages = Message.objects.filter(review_request__in=both).count()
    assert counted("message")[0] == messages > 0


def test_clicks_and_feedback_filter_by_account_and_location(staff, business, north, south):
    at_north = add_at(business, north, email="n@example.com")
    at_south = add_at(business, south, email="s@example.com")
    for request in (at_north, at_south):
        Feedback.objects.create(review_request=request, text=f"About {request.location.name}")
        Click.objects.create(review_request=request, url="https://g.page/r/x", method="GET")
    by = {"owner": business.email, "location": south.pk}
    assert [f.review_request_id for f in listed(staff, "feedback", by)] == [at_south.pk]
    assert [c.review_request_id for c in listed(staff, "click", by)] == [at_south.pk]
    shown = staff.get("/admin/reviews/feedback/", {"owner": business.email}).content.decode()
    assert "North" in shown and "South" in shown  # the location column


def test_clicks_filter_by_a_fixed_ignored_reason_without_reading_every_click(
    staff, business, north
):
    request = add_at(business, north, email="n@example.com")
    head = Click.objects.create(
        review_request=request,
        url="https://g.page/r/x",
        method="HEAD",
        ignored_reason="head_request",
    )
    Click.objects.create(review_request=request, url="https://g.page/r/x", counted=True)
    with CaptureQueriesContext(connection) as queries:
        page = staff.get("/admin/reviews/click/")
    assert "too soon after send" in page.content.decode()  # offered before any such click
    assert not [q["sql"] for q in queries.captured_queries if "DISTINCT" in q["sql"]]
    assert listed(staff, "click", {"ignored_reason": "head_request"}) == [head]


def test_the_location_column_names_the_default_for_a_row_with_no_location(
    staff, business, north, south
):
    unplaced = add_at(business, north, email="u@example.com")
    ReviewRequest.objects.filter(pk=unplaced.pk).update(location=None)
    add_at(business, south, email="s@example.com")
    rows = {r.pk: r for r in listed(staff, "reviewrequest", {"owner": business.email})}
    assert rows[unplaced.pk].location_label == "North"
    assert {r.location_label for r in rows.values()} == {"North", "South"}


def test_a_request_waits_when_its_own_location_lists_no_site(staff, business, north, south):
    at_north = add_at(business, north, email="n@example.com")
    at_south = add_at(business, south, email="s@example.com")
    rows = {r.pk: r for r in listed(staff, "reviewrequest", {"owner": business.email})}
    html = staff.get("/admin/reviews/reviewrequest/", {"owner": business.email}).content.decode()
    assert html.count("waiting for a review site") == 1
    assert rows[at_south.pk].location_lists_site is False
    assert rows[at_north.pk].location_lists_site is True
    waiting = listed(staff, "reviewrequest", {"owner": business.email, "waiting": "site"})
    assert [r.pk for r in waiting] == [at_south.pk]
    # South's own site: nothing waits any more.
    ReviewSiteFactory(owner=business, location=south)
    assert listed(staff, "reviewrequest", {"owner": business.email, "waiting": "site"}) == []


def test_requests_with_no_location_wait_when_the_default_location_lists_no_site(
    staff, business, north, south
):
    """The default location lists its account's sites with no location; pinned elsewhere,
    the default's requests wait, those by its id and those with no location alike, and no
    other account's."""
    at_north = add_at(business, north, email="n@example.com")
    unplaced = add_at(business, north, email="u@example.com")
    ReviewRequest.objects.filter(pk=unplaced.pk).update(location=None)
    at_south = add_at(business, south, email="s@example.com")
    other = UserFactory()
    ReviewSiteFactory(owner=other)
    foreign = add_at(other, first_location(other), email="x@example.com")
    ReviewRequest.objects.filter(pk=foreign.pk).update(location=None)
    ReviewSite.objects.filter(owner=business).update(location=south)
    waiting = listed(staff, "reviewrequest", {"waiting": "site"})
    assert {r.pk for r in waiting} == {at_north.pk, unplaced.pk}
    rows = {r.pk: r for r in listed(staff, "reviewrequest", {})}
    assert [rows[pk].location_lists_site for pk in (at_north.pk, unplaced.pk)] == [False, False]
    assert rows[at_south.pk].location_lists_site is True
    assert rows[foreign.pk].location_lists_site is True


@pytest.mark.parametrize("model", ["reviewrequest", "message", "click", "feedback"])
def test_a_location_filtered_list_costs_the_same_queries_for_more_rows(
    staff, business, north, south, model, django_assert_max_num_queries
):
    def add_rows(start: int, count: int) -> None:
        for n in range(start, start + count):
            request = add_at(business, south if n % 2 else north, email=f"p{n}@example.com")
            Feedback.objects.create(review_request=request, text="Nice")
            Click.objects.create(review_request=request, url="https://g.page/r/x", method="GET")

    params = {"owner": business.email, "location": south.pk}
    add_rows(0, 2)
    with CaptureQueriesContext(connection) as few:
        assert staff.get(f"/admin/reviews/{model}/", params).status_code == 200
    add_rows(2, 8)
    with django_assert_max_num_queries(len(few)):
        assert staff.get(f"/admin/reviews/{model}/", params).status_code == 200


def test_staff_move_a_locations_requests_after_a_confirmation_with_the_counts(
    staff, business, north, south
):
    both = add_at(business, south, email="both@example.com")
    add_at(business, north, email="both@example.com")
    alone = add_at(business, south, email="alone@example.com")
    url = "/admin/reviews/reviewrequest/move/"
    chooser = staff.get(url, {"owner": business.email, "from": south.pk})
    form = chooser.context["form"]
    assert list(form.fields["to_location"].queryset) == [north, south]
    fields = {"owner": business.pk, "from_location": south.pk, "to_location": north.pk}
    confirm = staff.post(url, fields)
    assert (confirm.context["preview"].moved, confirm.context["preview"].left) == (1, 1)
    assert ReviewRequest.objects.filter(location=south).count() == 2  # nothing moved yet
    done = staff.post(url, {**fields, "confirm": "yes"}, follow=True)
    assert "Moved 1 review requests from South to North; left 1 at South" in done.content.decode()
    assert set(ReviewRequest.objects.filter(location=south).values_list("pk", flat=True)) == {
        both.pk
    }
    alone.refresh_from_db()
    assert alone.location_id == north.pk
    entry = LogEntry.objects.get()
    assert entry.object_id == str(south.pk) and "Moved 1" in entry.get_change_message()


def test_the_move_page_refuses_the_same_location_and_needs_the_change_permission(
    staff, business, north
):
    url = "/admin/reviews/reviewrequest/move/"
    same = {"owner": business.pk, "from_location": north.pk, "to_location": north.pk}
    page = staff.post(url, same)
    assert "Choose another location" in page.content.decode()
    from django.contrib.auth.models import Permission

    viewer = UserFactory(is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_reviewrequest"))
    client = Client()
    client.force_login(viewer)
    assert client.get(url, {"owner": business.email}).status_code == 403
