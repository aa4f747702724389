"""manage.py create_business, and django-oauth-toolkit's createapplication for the business it
made, on SQLite and PostgreSQL."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest
from django.contrib.auth import authenticate
from django.core.management import CommandError, call_command
from oauth2_provider.models import get_application_model

from accounts.models import User
from reviews.models import ReviewSite
from tests.support.processes import ROOT, service_env

pytestmark = pytest.mark.django_db

PASSWORD = "a long enough passphrase"


def _create(*args: str) -> str:
    out = io.StringIO()
    call_command("create_business", *args, stdout=out)
    return out.getvalue().strip()


def test_create_business_prints_the_id_of_a_new_owner_with_review_sites():
    printed = _create(
        "--email",
        "Owner@Example.com",
        "--password",
        PASSWORD,
        "--business-name",
        "Acme Plumbing",
        "--time-zone",
        "America/Chicago",
        "--region",
        "gb",
        "--review-url",
        "https://g.page/r/acme/review",
        "--review-url",
        "https://www.trustpilot.com/review/acme.example",
    )
    owner = User.objects.get(id=printed)
    assert owner.email == "owner@example.com"
    assert (owner.business_name, owner.time_zone, owner.default_region) == (
        "Acme Plumbing",
        "America/Chicago",
        "GB",
    )
    assert authenticate(username="owner@example.com", password=PASSWORD) == owner
    sites = list(owner.review_sites.values_list("kind", "label", "position"))
    assert sites == [("google", "Google", 0), ("trustpilot", "Trustpilot", 1)]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--time-zone", "Mars/Base"], "time_zone: Mars/Base is not an IANA time zone"),
        (["--region", "ZZ"], "default_region: ZZ is not a two-letter region"),
        (["--review-url", "https://www.yelp.com/biz/acme"], "url: Yelp does not allow"),
        (["--review-url", "not a url"], "url: Enter a valid URL."),
    ],
)
def test_create_business_rejects_bad_arguments_without_creating_anything(args, message):
    with pytest.raises(CommandError, match=message):
        _create("--email", "o@example.com", "--password", PASSWORD, "--business-name", "B", *args)
    assert not User.objects.exists()
    assert not ReviewSite.objects.exists()


def test_create_business_refuses_a_duplicate_email_and_a_weak_password():
    _create("--email", "o@example.com", "--password", PASSWORD, "--business-name", "B")
    with pytest.raises(CommandError, match="already exists"):
        _create("--email", "O@example.com", "--password", PASSWORD, "--business-name", "C")
    with pytest.raises(CommandError, match="password: This password is too short"):
        _create("--email", "p@example.com", "--password", "abc", "--business-name", "C")


@pytest.mark.django_db(transaction=True)
def test_create_business_from_the_shell_gives_one_line_and_non_zero_exit(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "create_business",
            "--email",
            "x@example.com",
            "--password",
            PASSWORD,
            "--business-name",
            "X",
            "--time-zone",
            "Nowhere/Land",
        ],
        cwd=ROOT,
        env=service_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "CommandError: time_zone: Nowhere/Land is not an IANA time zone "
        "(for example Europe/London or America/New_York)."
    ]
    assert "Traceback" not in result.stderr


def test_createapplication_registers_an_oauth_client_for_an_owner():
    owner_id = _create("--email", "o@example.com", "--password", PASSWORD, "--business-name", "B")
    out = io.StringIO()
    call_command(
        "createapplication",
        "confidential",
        "authorization-code",
        "--name",
        "Zapier",
        "--user",
        owner_id,
        "--client-id",
        "zapier-client",
        "--client-secret",
        "a-very-long-client-secret-value",
        "--redirect-uris",
        "https://zapier.com/dashboard/auth/oauth/return/App123CLIAPI/",
        stdout=out,
    )
    assert "created successfully" in out.getvalue()
    app = get_application_model().objects.get(client_id="zapier-client")
    assert str(app.user_id) == owner_id
    assert app.redirect_uris == "https://zapier.com/dashboard/auth/oauth/return/App123CLIAPI/"


# --- Setup commands: staff need no business, one spelling of options --------------------------


def test_create_business_takes_hyphenated_and_underscored_options():
    first = _create(
        "--email",
        "one@example.com",
        "--password",
        PASSWORD,
        "--business-name",
        "One",
        "--time-zone",
        "Europe/London",
        "--review-url",
        "https://g.page/r/one/review",
    )
    second = _create(
        "--email",
        "two@example.com",
        "--password",
        PASSWORD,
        "--business_name",
        "Two",
        "--time_zone",
        "Europe/Paris",
        "--review_url",
        "https://g.page/r/two/review",
    )
    one, two = User.objects.get(id=first), User.objects.get(id=second)
    assert (one.business_name, one.time_zone, one.review_sites.count()) == (
        "One",
        "Europe/London",
        1,
    )
    assert (two.business_name, two.time_zone, two.review_sites.count()) == (
        "Two",
        "Europe/Paris",
        1,
    )


def test_create_business_without_a_review_url_still_works_and_says_requests_wait():
    owner = User.objects.get(
        id=_create("--email", "nosite@example.com", "--password", PASSWORD, "--business-name", "N")
    )
    assert not owner.review_sites.exists()
