"""Client secrets (oauth_provider.hashers): a keyed fast hash (checked in microseconds, not
PBKDF2's ~0.4 s), for generated and operator-set secrets alike; older PBKDF2 hashes upgraded at
their next successful use."""

from __future__ import annotations

import pytest
from django.contrib.auth.hashers import identify_hasher, make_password
from django.core.management import call_command
from oauth2_provider.models import get_application_model

from tests.oauth_provider.conftest import TOKEN, OAuthFlow, basic_auth, post_form
from tests.support.oauth import CLIENT_SECRET, make_application

pytestmark = pytest.mark.django_db

Application = get_application_model()


def algorithm(application) -> str | None:
    application.refresh_from_db()
    return identify_hasher(application.client_secret).algorithm


def refresh_with(flow: OAuthFlow, secret: str, *, basic: bool = False):
    """A token request that fails after client authentication (unknown refresh token): 400 means
    the client authenticated, 401 that it did not."""
    data = {"grant_type": "refresh_token", "refresh_token": "unknown"}
    if basic:
        return post_form(
            flow.server,
            TOKEN,
            data,
            HTTP_AUTHORIZATION=basic_auth(flow.application.client_id, secret),
        )
    return post_form(
        flow.server,
        TOKEN,
        {**data, "client_id": flow.application.client_id, "client_secret": secret},
    )


def test_a_new_clients_secret_is_stored_under_the_fast_keyed_hash(owner):
    application = make_application()
    assert application.client_secret.startswith("hmac_sha256$")
    assert CLIENT_SECRET not in application.client_secret
    flow = OAuthFlow(owner, application)
    assert flow.connect().access_token
    assert refresh_with(flow, CLIENT_SECRET + "x").status_code == 401
    assert refresh_with(flow, "").status_code == 401


def test_equal_secrets_hash_apart():
    first, second = make_application(), make_application()
    assert first.client_secret != second.client_secret


def test_an_operator_set_secret_is_hashed_the_same_way(owner, capsys):
    call_command(
        "createapplication",
        "confidential",
        "authorization-code",
        "--name=Ops",
        "--client-id=ops-client",
        "--client-secret=an operator's own long random secret 8c1f0e",
        "--redirect-uris=https://zapier.com/dashboard/auth/oauth/return/App123CLIAPI/",
    )
    application = Application.objects.get(client_id="ops-client")
    assert algorithm(application) == "hmac_sha256"
    flow = OAuthFlow(owner, application)
    assert refresh_with(flow, "an operator's own long random secret 8c1f0e").status_code == 400
    assert refresh_with(flow, "an operator's own long random secret 8c1f0f").status_code == 401


@pytest.mark.parametrize("basic", [False, True], ids=["form body", "HTTP Basic"])
def test_a_pbkdf2_hash_is_upgraded_at_the_next_successful_use(owner, basic):
    application = make_application(
        client_secret=make_password(CLIENT_SECRET, hasher="pbkdf2_sha256")
    )
    flow = OAuthFlow(owner, application)
    # A wrong secret is refused and changes nothing.
    assert refresh_with(flow, "wrong", basic=basic).status_code == 401
    assert algorithm(application) == "pbkdf2_sha256"
    # The right one authenticates (the request itself then fails on its refresh token) and the
    # stored hash is now the fast one, which keeps working.
    assert refresh_with(flow, CLIENT_SECRET, basic=basic).status_code == 400
    assert algorithm(application) == "hmac_sha256"
    assert flow.connect().access_token
    assert refresh_with(flow, "wrong", basic=basic).status_code == 401


def test_a_secret_key_rotation_keeps_clients_working_through_the_fallbacks(owner, settings):
    old_key = settings.SECRET_KEY
    application = make_application()
    old_hash = application.client_secret
    settings.SECRET_KEY = "a-new-secret-key-" + "x" * 50
    settings.SECRET_KEY_FALLBACKS = [old_key]
    flow = OAuthFlow(owner, application)
    assert refresh_with(flow, CLIENT_SECRET).status_code == 400
    application.refresh_from_db()
    assert application.client_secret != old_hash  # re-made under the new key
    settings.SECRET_KEY_FALLBACKS = []
    assert refresh_with(flow, CLIENT_SECRET).status_code == 400
    assert refresh_with(flow, "wrong").status_code == 401


def test_without_its_key_a_hash_verifies_nothing(owner, settings):
    application = make_application()
    settings.SECRET_KEY = "a-new-secret-key-" + "y" * 50
    assert refresh_with(OAuthFlow(owner, application), CLIENT_SECRET).status_code == 401
