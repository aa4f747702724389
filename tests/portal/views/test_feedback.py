"""The Feedback page (the owner's private feedback, newest first, paged) and its count on the
dashboard."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from tests.factories import LocationFactory, first_location
from tests.support.portal_data import add_request, leave_feedback, member_client, query_count
from tests.support.portal_golden import assert_page_unchanged

pytestmark = pytest.mark.django_db


def texts(response) -> list[str]:
    return [note.text for note in response.context["page"].object_list]


def test_the_page_lists_the_owners_feedback_newest_first_with_a_link_to_the_request(
    browser, owner, other_owner
):
    now = timezone.now()
    mine = add_request(owner, first_name="Maria", email="maria@example.com")
    leave_feedback(mine, at=now - timedelta(days=2), text="Older note")
    leave_feedback(mine, at=now - timedelta(hours=1), text="Newer note")
    theirs = add_request(other_owner, first_name="Other", email="other@example.com")
    leave_feedback(theirs, at=now, text="Someone else's note")

    response = browser.get("/portal/feedback/")
    assert response.status_code == 200
    assert texts(response) == ["Newer note", "Older note"]
    html = response.content.decode()
    assert "Someone else&#x27;s note" not in html and "Someone else" not in html
    assert f'href="/portal/requests/{mine.pk}/"' in html
    assert 'href="/portal/feedback/" aria-current="page"' in html  # the nav link


def test_the_page_is_paged_by_cursor(browser, owner, django_assert_max_num_queries):
    now = timezone.now()
    request = add_request(owner, first_name="Maria", email="maria@example.com")
    for i in range(30):
        leave_feedback(request, at=now - timedelta(minutes=i), text=f"note {i}")
    with django_assert_max_num_queries(8) as first:
        response = browser.get("/portal/feedback/")
    assert texts(response) == [f"note {i}" for i in range(25)]
    older = re.search(r'<a href="([^"]*)" rel="next">Older', response.content.decode())[1]
    with django_assert_max_num_queries(len(first)):
        response = browser.get("/portal/feedback/" + older.replace("&amp;", "&"))
    assert texts(response) == [f"note {i}" for i in range(25, 30)]


def test_other_people_see_a_login(client):
    response = client.get("/portal/feedback/")
    assert response.status_code == 302 and "/login" in response["Location"]


def test_the_dashboard_counts_the_feedback_of_the_period(browser, owner, other_owner):
    now = timezone.now()
    request = add_request(owner, first_name="Maria", email="maria@example.com")
    leave_feedback(request, at=now - timedelta(days=2), text="recent")
    leave_feedback(request, at=now - timedelta(days=20), text="this month")
    leave_feedback(request, at=now - timedelta(days=60), text="long ago")
    leave_feedback(add_request(other_owner, email="x@example.com"), at=now, text="not mine")

    assert browser.get("/", {"period": "7"}).context["feedback_count"] == 1
    assert browser.get("/", {"period": "30"}).context["feedback_count"] == 2
    html = browser.get("/", {"period": "all"}).content.decode()
    assert re.search(r'data-testid="feedback-count".*?<strong>3</strong>', html, re.S)


def test_a_business_with_one_location_sees_the_page_it_saw_before(golden):
    client, _, _ = golden
    assert_page_unchanged(client, "feedback", "/portal/feedback/")


# --- Members and locations ------------------------------------------------------------------------


def feedback_at(owner, location, text: str):
    request = add_request(
        owner, first_name=location.name, email=f"{location.name}@example.com", location=location
    )
    leave_feedback(request, at=timezone.now(), text=text)
    return request


def test_a_member_reads_the_feedback_of_their_locations_only(owner, locations, manager, viewer):
    feedback_at(owner, locations[0], "Downtown note")
    feedback_at(owner, locations[1], "Uptown note")
    feedback_at(owner, locations[2], "Airport note")
    for client in (manager, viewer):
        response = client.get("/portal/feedback/")
        assert response.status_code == 200
        assert texts(response) == ["Uptown note"]
    assert manager.get("/").context["feedback_count"] == 1


def test_the_owner_reads_one_locations_feedback_and_its_count(browser, owner, locations):
    feedback_at(owner, locations[0], "Downtown note")
    feedback_at(owner, locations[2], "Airport note")
    assert sorted(texts(browser.get("/portal/feedback/"))) == ["Airport note", "Downtown note"]
    chosen = {"location": str(locations[2].pk)}
    assert texts(browser.get("/portal/feedback/", chosen)) == ["Airport note"]
    assert browser.get("/", chosen).context["feedback_count"] == 1
    assert browser.get("/").context["feedback_count"] == 2


def test_feedback_pages_keep_the_location_chosen(browser, owner, locations):
    request = add_request(owner, first_name="Up", email="up@example.com", location=locations[1])
    now = timezone.now()
    for n in range(27):
        leave_feedback(request, at=now - timedelta(minutes=n), text=f"Note {n}")
    feedback_at(owner, locations[0], "Downtown note")
    first = browser.get("/portal/feedback/", {"location": str(locations[1].pk)})
    link = re.search(r'<a href="([^"]*)" rel="next">', first.content.decode())
    assert link and f"location={locations[1].pk}" in link[1]
    second = browser.get("/portal/feedback/" + link[1].replace("&amp;", "&"))
    assert texts(second) == ["Note 25", "Note 26"]


def test_the_feedback_page_costs_the_same_queries_with_more_locations(
    browser, owner, locations, manager
):
    feedback_at(owner, locations[1], "Uptown note")
    owner_few, manager_few = (
        query_count(browser, "/portal/feedback/"),
        query_count(manager, "/portal/feedback/"),
    )
    for n in range(4):
        feedback_at(owner, LocationFactory(account=owner, name=f"Extra{n}"), f"Extra {n}")
    assert query_count(browser, "/portal/feedback/") == owner_few
    assert query_count(manager, "/portal/feedback/") == manager_few


def who_sees_it(response) -> str:
    """The page's sentence on who sees the feedback."""
    page = response.content.decode()
    found = re.search(r"(Only [^.<]*see it\.)", page)
    assert found is not None
    return found[1]


def test_an_owner_without_a_team_is_told_only_they_see_it(browser, owner):
    assert who_sees_it(browser.get("/portal/feedback/")) == "Only you see it."


def test_with_a_team_the_page_says_the_members_of_its_location_see_it_too(
    browser, owner, locations, manager, viewer
):
    shared = "Only you and the team members with access to its location see it."
    assert who_sees_it(browser.get("/portal/feedback/")) == shared
    for client in (manager, viewer):
        assert who_sees_it(client.get("/portal/feedback/")) == (
            "Only the business owner and the team members with access to its location see it."
        )


def test_a_one_location_business_with_a_member_says_so_too(browser, owner):
    assert who_sees_it(browser.get("/portal/feedback/")) == "Only you see it."
    member_client(owner, role="viewer", locations=[first_location(owner)], email="v@example.com")
    assert who_sees_it(browser.get("/portal/feedback/")) == (
        "Only you and the team members with access to its location see it."
    )
