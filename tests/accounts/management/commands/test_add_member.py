"""add_member: a login of the account for some of its locations."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import authenticate
from django.core.management import CommandError, call_command

from accounts.models import User
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


def test_add_member_creates_a_login_of_the_account_for_its_locations(owner):
    run("create_location", "--owner", owner.email, "--name", "Harbour")
    printed = run(
        "add_member",
        "--owner",
        owner.email,
        "--email",
        "Manager@Example.com",
        "--password",
        PASSWORD,
        "--role",
        "manager",
        "--location",
        "Harbour",
    )
    member = User.objects.get(pk=printed)
    assert (member.email, member.account, member.role) == ("manager@example.com", owner, "manager")
    assert [loc.name for loc in member.locations.all()] == ["Harbour"]
    assert authenticate(username="manager@example.com", password=PASSWORD) == member


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--location", "Nowhere"], "no location named Nowhere"),
        (["--email", "owner@example.com"], "already has a login"),
        (["--password", "short"], "password"),
        (["--role", "owner"], "invalid choice"),
    ],
)
def test_add_member_refuses_bad_input(owner, args, message):
    base = {"--email": "m@example.com", "--password": PASSWORD, "--role": "viewer"}
    base.update(dict(zip(args[::2], args[1::2], strict=True)))
    flat = [part for pair in base.items() for part in pair]
    with pytest.raises(CommandError, match=message):
        run("add_member", "--owner", owner.email, *flat)
    assert not User.objects.filter(account=owner).exists()
