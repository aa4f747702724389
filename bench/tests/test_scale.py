"""``make bench-scale``'s own checks: the loaded data set is one the service could have made,
every measured page answers on it, and the report says met or missed."""

from __future__ import annotations

from collections import Counter

import pytest
from django.db import connection
from django.test import Client

from accounts.models import Location, User
from activity.dashboard import staff_dashboard
from activity.models import ActivityRollup
from bench import scale
from reviews.models import Click, Contact, Message, OptOutEvent, ReviewRequest, ReviewSite
from reviews.services import business_create

pytestmark = pytest.mark.django_db

SIZE, SMALL, SMALL_REQUESTS, DUE = 2_000, 3, 10, 20


@pytest.fixture(autouse=True)
def _no_static_manifest(settings):
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }


@pytest.fixture
def loaded():
    if connection.vendor != "postgresql":
        pytest.skip("the loader writes PostgreSQL SQL")
    owner = business_create(
        email="owner@bench.example", password="a long bench passphrase", business_name="Bench"
    )
    report = scale.load(
        owner_id=str(owner.pk),
        size=SIZE,
        small=SMALL,
        small_requests=SMALL_REQUESTS,
        due=DUE,
        vacuum=False,
    )
    return owner, report


def test_the_data_set_has_every_table_and_the_states_the_service_leaves(loaded):
    owner, report = loaded
    total = SIZE + SMALL * SMALL_REQUESTS
    assert ReviewRequest.objects.count() == Contact.objects.count() == total
    assert Message.objects.count() == 3 * total
    assert report["rows"]["reviews_message"] == 3 * total  # after ANALYZE
    assert User.objects.filter(is_staff=False, account=None).count() == SMALL + 1
    mine = ReviewRequest.objects.filter(owner=owner)
    assert mine.count() == SIZE
    statuses = set(mine.values_list("status", flat=True))
    assert statuses >= {"scheduled", "completed", "clicked", "failed", "opted_out", "delivered"}
    due = Message.objects.filter(status="pending", review_request__owner=owner)
    assert due.count() == DUE
    assert Click.objects.count() == ReviewRequest.objects.filter(status="clicked").count()
    assert OptOutEvent.objects.count() == ReviewRequest.objects.filter(status="opted_out").count()
    # Spread over two years: the last 30 days hold a few per cent of the requests.
    data = staff_dashboard(owner_id=owner.pk)
    assert 0 < data.series[0].total < SIZE // 5
    assert data.failure_reasons and data.sent_in_period
    # The dashboards' rollup rebuilt after the load, as after a restore.
    assert ActivityRollup.objects.filter(owner=owner, metric="sent").exists()


def test_the_big_account_has_its_locations_and_members_and_requests_at_each(loaded):
    owner, _ = loaded
    locations = list(Location.objects.filter(account=owner).order_by("position"))
    assert len(locations) == scale.LOCATIONS
    requests = ReviewRequest.objects.filter(owner=owner)
    per_location = Counter(requests.values_list("location_id", flat=True))
    # The default location's with no location; every other location's by id, evenly.
    assert set(per_location) == {None} | {location.pk for location in locations[1:]}
    assert max(per_location.values()) - min(per_location.values()) <= 1
    assert ReviewSite.objects.filter(owner=owner).count() == scale.LOCATIONS
    members = User.objects.filter(account=owner)
    assert members.count() == scale.MEMBERS
    assert set(members.values_list("role", flat=True)) == {"manager", "viewer"}
    manager = members.get(email=scale.MANAGER_EMAIL)
    assert manager.role == "manager" and manager.locations.count() == 2
    assert all(m.locations.count() == 3 for m in members.exclude(pk=manager.pk))
    # The sample contact is at one of the manager's locations.
    at = {locations[k].pk for k in scale.MANAGER_LOCATIONS}
    assert set(manager.locations.values_list("pk", flat=True)) == at
    # The small businesses have their one location each, and their requests none.
    small = User.objects.filter(email__endswith="@small.bench.example")
    assert Location.objects.filter(account__in=small).count() == SMALL
    assert not ReviewRequest.objects.filter(owner__in=small, location__isnull=False).exists()


def test_every_measured_page_answers_on_the_data_set(loaded):
    owner, _ = loaded
    staff = User.objects.create(email="staff@bench.example", is_staff=True, is_superuser=True)
    clients = {"owner": Client(), "manager": Client(), "staff": Client()}
    clients["owner"].force_login(owner)
    clients["manager"].force_login(User.objects.get(email=scale.MANAGER_EMAIL))
    clients["staff"].force_login(staff)
    measured = scale.pages(str(owner.pk), SIZE)
    assert {who for _, _, who, _ in measured} == set(clients)
    for name, kind, who, url in measured:
        assert kind in scale.TARGET_MS
        page = scale._resolve(url, str(owner.pk))
        figures = scale.timed(lambda: clients[who].get(page).status_code, 1)  # noqa: B023
        assert figures["status"] == 200, (name, url, figures["status"])
        assert figures["queries"] > 0


def test_each_portal_page_is_measured_for_the_owner_and_the_manager(loaded):
    owner, _ = loaded
    measured = scale.pages(str(owner.pk), SIZE)
    portal = [name for name, kind, who, _ in measured if kind == "portal" and who == "owner"]
    managers = {name for name, kind, who, _ in measured if who == "manager"}
    assert managers == {f"{name} (manager, 2 locations)" for name in portal}
    filtered = [name for name, _, _, url in measured if "location=" in url]
    assert len(filtered) >= 4


def test_the_searches_find_the_sample_contact(loaded):
    owner, _ = loaded
    client = Client()
    client.force_login(owner)
    pages = {name: url for name, _, _, url in scale.pages(str(owner.pk), SIZE)}
    for name in ("portal search, e-mail", "portal search, phone", "portal search, name"):
        response = client.get(pages[name])
        assert len(response.context["rows"]) >= 1, name


def test_the_oldest_page_shows_the_oldest_requests(loaded):
    owner, _ = loaded
    client = Client()
    client.force_login(owner)
    pages = {name: url for name, _, _, url in scale.pages(str(owner.pk), SIZE)}
    response = client.get(scale._resolve(pages["portal dashboard, oldest page"], str(owner.pk)))
    shown = [item.pk for item, _ in response.context["rows"]]
    oldest = ReviewRequest.objects.filter(owner=owner).order_by("created_at", "id")
    assert shown == [r.pk for r in reversed(oldest[:25])]


def figures(median, kind="portal"):
    return {"median_ms": median, "max_ms": median, "queries": 5, "status": 200, "kind": kind}


def test_the_report_says_met_or_missed_by_target_and_ratio(capsys):
    small = {"size": 10, "load": {"total_seconds": 1}, "pages": {}}
    big = {"size": 1000, "load": {"total_seconds": 9}, "pages": {}}
    small["pages"]["fast"], big["pages"]["fast"] = figures(100), figures(120)
    small["pages"]["grows"], big["pages"]["grows"] = figures(10), figures(100)
    small["pages"]["slow"], big["pages"]["slow"] = (
        figures(400, "admin list"),
        figures(420, "admin list"),
    )
    small["pages"]["write"], big["pages"]["write"] = figures(20, "write"), figures(21, "write")
    rows = {row["page"]: row for row in scale.verdicts(small, big)}
    assert (rows["fast"]["met_ms"], rows["fast"]["met_ratio"]) == (True, True)
    assert (rows["grows"]["met_ms"], rows["grows"]["ratio"], rows["grows"]["met_ratio"]) == (
        True,
        10.0,
        False,
    )
    assert (rows["slow"]["met_ms"], rows["slow"]["met_ratio"]) == (False, True)
    assert (rows["write"]["target_ms"], rows["write"]["met_ratio"]) == (None, True)
    scale.print_table([small, big], list(rows.values()))
    out = capsys.readouterr().out
    assert "<= 300 ms MISSED" in out and "ratio MISSED" in out and "10.00" in out


def test_a_page_slower_than_the_limit_is_measured_once(monkeypatch):
    calls = []
    monkeypatch.setattr(scale, "SLOW_SECONDS", 0.0)
    figures = scale.timed(lambda: calls.append(1) or 200, 5)
    assert len(calls) == 2 and len(figures["runs_ms"]) == 1 and figures["status"] == 200
    monkeypatch.setattr(scale, "SLOW_SECONDS", 60.0)
    assert len(scale.timed(lambda: 200, 3)["runs_ms"]) == 3


def test_sizes_too_small_for_the_dispatcher_claims_are_refused():
    with pytest.raises(SystemExit):
        scale.parse_args(["--sizes", "100,200"])
    assert scale.parse_args(["--quick"]).sizes == [2_000, 50_000]
