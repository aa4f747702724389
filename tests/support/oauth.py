"""Mint real OAuth clients and tokens for tests (stored hashed, exactly as the server does). The
``application`` fixture (a registered client) is loaded by tests/conftest.py."""

from __future__ import annotations

import secrets
from datetime import timedelta

import pytest
from django.utils import timezone
from oauth2_provider.models import (
    get_access_token_model,
    get_application_model,
    get_refresh_token_model,
    set_token_value,
)

from oauth_provider.models import Connection

CLIENT_SECRET = "test-client-secret-0123456789abcdef"
REDIRECT_URI = "https://zapier.com/dashboard/auth/oauth/return/App123CLIAPI/"


def make_application(*, user=None, client_id: str | None = None, **fields):
    Application = get_application_model()
    return Application.objects.create(
        name=fields.pop("name", "Zapier"),
        client_id=client_id or secrets.token_urlsafe(16),
        client_secret=fields.pop("client_secret", CLIENT_SECRET),
        client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris=REDIRECT_URI,
        user=user,
        **fields,
    )


def issue_tokens(user, *, scope: str = "read write", application=None, expires_in: int = 3600):
    """A new connection's token pair for ``user``; returns (raw access, raw refresh)."""
    application = application or make_application()
    connection = Connection.objects.create(user=user, application=application)
    access_raw, refresh_raw = secrets.token_urlsafe(30), secrets.token_urlsafe(30)
    access = get_access_token_model()(
        user=user,
        application=application,
        scope=scope,
        expires=timezone.now() + timedelta(seconds=expires_in),
    )
    set_token_value(access, access_raw)
    access.save()
    refresh = get_refresh_token_model()(
        user=user, application=application, access_token=access, token_family=connection.pk
    )
    set_token_value(refresh, refresh_raw)
    refresh.save()
    return access_raw, refresh_raw


@pytest.fixture
def application(db):
    return make_application()
