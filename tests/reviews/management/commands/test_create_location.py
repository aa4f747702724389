"""create_location, and create_business's first location."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from accounts.models import Location
from reviews.models import ReviewSite
from reviews.services import business_create

pytestmark = pytest.mark.django_db

PASSWORD = "a long enough passphrase"


def run(command: str, *args: str) -> str:
    out = io.StringIO()
    call_command(command, *args, stdout=out)
    return out.getvalue().strip()


@pytest.fixture
def owner():
    return business_create(
        email="owner@example.com",
        password=PASSWORD,
        business_name="Acme Plumbing",
        time_zone="America/New_York",
        review_urls=["https://g.page/r/acme/review"],
    )


def test_create_location_prints_the_id_of_a_location_with_its_sites(owner):
    printed = run(
        "create_location",
        "--owner",
        "Owner@Example.com",
        "--name",
        "Harbour",
        "--review-url",
        "https://g.page/r/acme-harbour/review",
        "--review-url",
        "https://www.trustpilot.com/review/acme-harbour",
        "--time-zone",
        "America/Los_Angeles",
    )
    location = Location.objects.get(pk=printed)
    assert (location.account, location.name, location.time_zone, location.position) == (
        owner,
        "Harbour",
        "America/Los_Angeles",
        1,
    )
    assert list(
        ReviewSite.objects.filter(location=location).order_by("position").values_list("label")
    ) == [("Google",), ("Trustpilot",)]


def test_a_location_is_in_the_business_time_zone_by_default(owner):
    location = Location.objects.get(
        pk=run("create_location", "--owner", owner.email, "--name", "B")
    )
    assert location.time_zone == "America/New_York"
    assert not ReviewSite.objects.filter(location=location).exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--owner", "nobody@example.com", "--name", "X"], "No business owner"),
        (["--owner", "owner@example.com", "--name", "Acme Plumbing"], "already exists"),
        (["--owner", "owner@example.com", "--name", "X", "--time-zone", "Mars/Base"], "time_zone"),
        (
            ["--owner", "owner@example.com", "--name", "X", "--review-url", "https://yelp.com/b"],
            "Yelp",
        ),
    ],
)
def test_create_location_refuses_bad_input_and_creates_nothing(owner, args, message):
    with pytest.raises(CommandError, match=message):
        run("create_location", *args)
    assert Location.objects.filter(account=owner).count() == 1
