"""manage.py create_oauth_client: registers a platform's client and prints what its app needs."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.hashers import check_password
from django.core.management import CommandError, call_command
from oauth2_provider.models import get_application_model

pytestmark = pytest.mark.django_db

Application = get_application_model()
REDIRECT = "https://zapier.com/dashboard/auth/oauth/return/App123CLIAPI/"


def run(*args: str, capsys) -> str:
    call_command("create_oauth_client", *args)
    return capsys.readouterr().out


def test_prints_the_client_id_the_secret_once_and_the_platform_urls(capsys, settings):
    settings.SITE_URL = "https://reviews.example.com"
    out = run(
        "--name", "Zapier", "--client-id", "zapier", "--redirect-uri", REDIRECT, capsys=capsys
    )
    client = Application.objects.get(client_id="zapier")
    assert (client.name, client.redirect_uris) == ("Zapier", REDIRECT)
    assert client.client_type == "confidential"
    assert client.authorization_grant_type == "authorization-code"
    assert "Client id:      zapier" in out
    secret = re.search(r"Client secret:  (\S+)", out).group(1)
    assert check_password(secret, client.client_secret)  # only the hash is stored
    assert secret not in client.client_secret
    assert "Authorize URL:  https://reviews.example.com/api/oauth/zapier/authorize" in out
    assert "Token URL:      https://reviews.example.com/api/oauth/zapier/token" in out


def test_the_client_id_is_generated_when_not_given(capsys):
    out = run("--name", "Make", "--redirect-uri", REDIRECT, capsys=capsys)
    client = Application.objects.get(name="Make")
    assert len(client.client_id) >= 20
    assert f"Client id:      {client.client_id}" in out


@pytest.mark.parametrize(
    "uri", ["http://zapier.com/return/", "not a uri"], ids=["plain-http", "not-a-uri"]
)
def test_a_redirect_uri_the_provider_would_refuse_saves_nothing(uri):
    with pytest.raises(CommandError, match="redirect_uris"):
        call_command("create_oauth_client", "--name", "Zapier", "--redirect-uri", uri)
    assert not Application.objects.exists()


def test_a_taken_client_id_is_refused(capsys):
    run("--name", "Zapier", "--client-id", "zapier", "--redirect-uri", REDIRECT, capsys=capsys)
    with pytest.raises(CommandError, match="client_id"):
        call_command(
            "create_oauth_client",
            "--name",
            "Again",
            "--client-id",
            "zapier",
            "--redirect-uri",
            REDIRECT,
        )
    assert Application.objects.count() == 1


def test_django_oauth_toolkits_createapplication_still_works(capsys):
    call_command(
        "createapplication",
        "confidential",
        "authorization-code",
        "--name",
        "Zapier",
        "--client-id",
        "zapier2",
        "--redirect-uris",
        REDIRECT,
    )
    assert Application.objects.filter(client_id="zapier2", name="Zapier").exists()
