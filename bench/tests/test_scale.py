"""``make bench-scale``'s own checks: the loaded data set is one the service could have made,
every measured page answers on it, and the report says met or missed."""

from __future__ import annotations

from collections import Counter
from urllib.parse import parse_qs, urlsplit

import pytest
from django.db import connection
from django.db.models import Q
from django.test import Client

from accounts.models import Location, User
from activity.dashboard import staff_dashboard
from activity.models import ActivityRollup
from bench.scale import data, run
from bench.scale.pages import (
    EMPTY_STATUSES,
    FOLLOW,
    NAME_FRAGMENTS,
    SHAPES,
    pages,
    resolve,
)
from bench.trees import issue_token
from config.celery import app as celery_app
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
    report = data.load(
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
    assert len(locations) == data.LOCATIONS
    requests = ReviewRequest.objects.filter(owner=owner)
    per_location = Counter(requests.values_list("location_id", flat=True))
    # The default location's with no location; every other location's by id, evenly.
    assert set(per_location) == {None} | {location.pk for location in locations[1:]}
    assert max(per_location.values()) - min(per_location.values()) <= 1
    assert ReviewSite.objects.filter(owner=owner).count() == data.LOCATIONS
    members = User.objects.filter(account=owner)
    assert members.count() == data.MEMBERS
    assert set(members.values_list("role", flat=True)) == {"manager", "viewer"}
    manager = members.get(email=data.MANAGER_EMAIL)
    assert manager.role == "manager" and manager.locations.count() == 2
    assert all(m.locations.count() == 3 for m in members.exclude(pk=manager.pk))
    # The sample contact is at one of the manager's locations.
    at = {locations[k].pk for k in data.MANAGER_LOCATIONS}
    assert set(manager.locations.values_list("pk", flat=True)) == at
    # The small businesses have their one location each, and their requests none.
    small = User.objects.filter(email__endswith="@small.bench.example")
    assert Location.objects.filter(account__in=small).count() == SMALL
    assert not ReviewRequest.objects.filter(owner__in=small, location__isnull=False).exists()


@pytest.fixture
def clients(loaded):
    owner, _ = loaded
    return run.clients(str(owner.pk), issue_token(str(owner.pk)))


def shown(response) -> int:
    """The rows a measured page shows: the portal's list, an admin list's page, the API's."""
    if response["Content-Type"].startswith("application/json"):
        return len(response.json()["results"])
    if "cl" in response.context:
        return len(response.context["cl"].result_list)
    return len(response.context["rows"])


def test_every_measured_page_answers_on_the_data_set(loaded, clients):
    owner, _ = loaded
    measured = pages(str(owner.pk), SIZE)
    assert {page.who for page in measured} == set(clients)
    assert {page.shape for page in measured} == set(SHAPES) - {"write"}
    for page in measured:
        assert page.kind in run.TARGET_MS
        figures = run.measure_page(page, clients[page.who], str(owner.pk), 1)
        assert figures["status"] == 200, (page.name, figures["url"], figures["status"])
        assert figures["queries"] > 0, page.name


def test_each_filter_and_search_of_a_shape_finds_rows_unless_its_status_has_none(loaded, clients):
    """A filter value or search that found nothing would time an empty page by mistake."""
    owner, _ = loaded
    for page in pages(str(owner.pk), SIZE, ("names", "phones", "emails", "statuses", "api")):
        response = clients[page.who].get(resolve(page.url, str(owner.pk)))
        query = parse_qs(urlsplit(page.url).query)
        status = (query.get("status__exact") or query.get("status") or [""])[0]
        if status in EMPTY_STATUSES:
            assert shown(response) == 0, page.name
            assert "(no rows)" in page.name
        else:
            assert shown(response) >= 1, page.name


def test_the_phone_searches_are_the_sample_number_typed_three_ways(loaded):
    owner, _ = loaded
    urls = {page.name: page.url for page in pages(str(owner.pk), SIZE, ("phones",))}
    typed = {
        parse_qs(urlsplit(url).query)["q"][0] for name, url in urls.items() if "portal" in name
    }
    g = min(data.SAMPLE, SIZE // 3)
    digits = data.phone(g).removeprefix("+1415")
    assert typed == {
        f"(415) {digits[:3]}-{digits[3:]}",
        f"+1 415-{digits[:3]}-{digits[3:]}",
        data.phone(g),
    }
    assert Contact.objects.filter(owner=owner, phone=data.phone(g)).exists()


def test_the_name_fragments_find_the_share_they_are_labelled_with():
    # At 10,000 and over one whole period of the names (10 first x 20 last x 997 numbers: the
    # share at any multiple of it, 1,000,000 within a hundredth).
    for word, share in NAME_FRAGMENTS:
        for size in (10_000, 10 * 20 * data.NUMBERS):
            assert share * 0.8 <= data.share(word, size) <= share * 1.25, (word, size)


def test_the_generator_in_python_is_the_loaded_one(loaded):
    owner, _ = loaded
    contacts = Contact.objects.filter(owner=owner)
    for word, _ in NAME_FRAGMENTS:
        found = contacts.filter(
            Q(first_name__icontains=word)
            | Q(last_name__icontains=word)
            | Q(email_normalized__contains=word.lower())
        )
        assert found.count() == round(data.share(word, SIZE) * SIZE), word
    g = min(data.SAMPLE, SIZE // 3)
    sample = contacts.get(email=data.email(g))
    assert (sample.first_name, sample.last_name, sample.phone) == (
        data.first_name(g),
        data.last_name(g),
        data.phone(g),
    )


def test_each_portal_page_is_measured_for_the_owner_and_the_manager(loaded):
    owner, _ = loaded
    measured = pages(str(owner.pk), SIZE, ("pages",))
    portal = [page.name for page in measured if page.kind == "portal" and page.who == "owner"]
    managers = {page.name for page in measured if page.who == "manager"}
    assert managers == {f"{name} (manager, 2 locations)" for name in portal}
    filtered = [page.name for page in measured if "location=" in page.url]
    assert len(filtered) >= 4


def test_the_searches_find_the_sample_contact(loaded):
    owner, _ = loaded
    client = Client()
    client.force_login(owner)
    measured = pages(str(owner.pk), SIZE, ("pages", "phones", "emails"))
    urls = {page.name: page.url for page in measured if page.who == "owner"}
    g = min(data.SAMPLE, SIZE // 3)
    searches = [name for name in urls if name.startswith("portal search, ")]
    searches.remove("portal search, e-mail domain @example.com (100 %)")
    assert len(searches) == 7
    for name in searches:
        response = client.get(urls[name])
        contacts = {item.contact.email for item, _ in response.context["rows"]}
        assert contacts == {data.email(g)}, name


def test_the_oldest_page_shows_the_oldest_requests(loaded):
    owner, _ = loaded
    client = Client()
    client.force_login(owner)
    urls = {page.name: page.url for page in pages(str(owner.pk), SIZE)}
    response = client.get(resolve(urls["portal dashboard, oldest page"], str(owner.pk)))
    shown = [item.pk for item, _ in response.context["rows"]]
    oldest = ReviewRequest.objects.filter(owner=owner).order_by("created_at", "id")
    assert shown == [r.pk for r in reversed(oldest[:25])]


def test_the_cursor_page_is_reached_by_following_each_page_s_older_link(loaded):
    owner, _ = loaded
    client = Client()
    client.force_login(owner)
    (page,) = pages(str(owner.pk), SIZE, ("cursors",))
    probe = run.follow(client, page.url, page.follow)
    assert probe.status == 200 and probe.queries > 0 and probe.ms > 0
    response = client.get(probe.url)
    newest = ReviewRequest.objects.filter(owner=owner).order_by("-created_at", "-id")
    reached = [item.pk for item, _ in response.context["rows"]]
    assert reached == [r.pk for r in newest[FOLLOW * 25 : (FOLLOW + 1) * 25]]
    # Too few rows for that many cursors: not a page measured wrongly, a status 0.
    assert run.follow(client, page.url, SIZE // 25 + 1).status == 0


def test_each_dispatcher_run_claims_its_batch_however_many_runs(loaded, settings, monkeypatch):
    # As many due messages as the warm-up and the runs claim; the queue's cap below them. (In
    # the test's transaction nothing is published; the broker is left alone.)
    settings.DISPATCH_MAX_QUEUED = DUE // 2
    monkeypatch.setattr(celery_app.control, "purge", lambda: 0)
    figures = run.measure_claims(3, claim=DUE // 4)
    assert figures["status"] == DUE // 4 and len(figures["runs_ms"]) == 3
    assert not Message.objects.filter(status="queued").exists()
    assert Message.objects.filter(status="pending").count() == DUE


def figures(median, kind="portal", p95=None):
    return {
        "median_ms": median,
        "p95_ms": median if p95 is None else p95,
        "max_ms": median if p95 is None else p95,
        "queries": 5,
        "status": 200,
        "kind": kind,
    }


def test_the_report_says_met_or_missed_by_target_and_ratio(capsys):
    small = {"size": 10, "load": {"total_seconds": 1}, "pages": {}}
    big = {"size": 1000, "load": {"total_seconds": 9}, "pages": {}}
    small["pages"]["fast"], big["pages"]["fast"] = figures(100), figures(120)
    small["pages"]["grows"], big["pages"]["grows"] = figures(10), figures(100)
    small["pages"]["slow"], big["pages"]["slow"] = (
        figures(400, "admin list"),
        figures(420, "admin list"),
    )
    small["pages"]["write"] = figures(20, "write", p95=30)
    big["pages"]["write"] = figures(21, "write", p95=90)
    rows = {row["page"]: row for row in run.verdicts(small, big)}
    assert (rows["fast"]["met_ms"], rows["fast"]["met_ratio"]) == (True, True)
    assert (rows["grows"]["met_ms"], rows["grows"]["ratio"], rows["grows"]["met_ratio"]) == (
        True,
        10.0,
        False,
    )
    assert (rows["slow"]["met_ms"], rows["slow"]["met_ratio"]) == (False, True)
    assert (rows["write p50"]["target_ms"], rows["write p50"]["met_ratio"]) == (300.0, True)
    assert (rows["write p95"]["ratio"], rows["write p95"]["met_ratio"]) == (3.0, False)
    run.print_table([small, big], list(rows.values()))
    out = capsys.readouterr().out
    assert "<= 300 ms MISSED" in out and "ratio MISSED" in out and "10.00" in out


def test_a_page_slower_than_the_limit_is_measured_once(monkeypatch):
    calls = []
    monkeypatch.setattr(run, "SLOW_SECONDS", 0.0)
    figures = run.timed(lambda: calls.append(1) or 200, 5)
    assert len(calls) == 2 and len(figures["runs_ms"]) == 1 and figures["status"] == 200
    monkeypatch.setattr(run, "SLOW_SECONDS", 60.0)
    assert len(run.timed(lambda: 200, 3)["runs_ms"]) == 3


def test_a_probe_reports_the_part_it_timed():
    figures = run.timed(lambda: run.Probe(200, 7.0, 4), 3)
    assert (figures["median_ms"], figures["p95_ms"], figures["queries"]) == (7.0, 7.0, 4)


def test_the_p95_of_the_runs():
    assert run.p95([float(n) for n in range(1, 41)]) == pytest.approx(38.05)
    assert run.p95([3.0]) == 3.0


def test_sizes_too_small_for_the_dispatcher_claims_are_refused():
    with pytest.raises(SystemExit):
        run.parse_args(["--sizes", "100,200"])
    assert run.parse_args(["--quick"]).sizes == [2_000, 50_000]


def test_the_shapes_are_chosen_by_name_all_by_default():
    assert run.parse_args([]).shapes == SHAPES
    assert run.parse_args(["--shapes", "names,api"]).shapes == ("names", "api")
    with pytest.raises(SystemExit):
        run.parse_args(["--shapes", "names,nothing"])
