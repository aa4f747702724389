"""Register a platform's OAuth client and print what its app needs: the client id, the secret
(once) and the authorize and token URLs."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.urls import reverse

from oauth_provider.services import oauth_client_create


class Command(BaseCommand):
    help = (
        "Register an OAuth client (confidential, authorization code) for a platform's app and "
        "print its client id, its secret (shown once: only a hash is kept), and the authorize "
        "and token URLs to configure in the app."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--name", required=True, help="Shown on the consent page, e.g. Zapier.")
        parser.add_argument(
            "--redirect-uri",
            "--redirect-uris",
            dest="redirect_uris",
            action="append",
            required=True,
            metavar="URI",
            help="The exact https redirect URI the platform shows (repeat for more than one).",
        )
        parser.add_argument("--client-id", default="", help="Default: generated.")
        parser.add_argument(
            "--platform",
            default=settings.CONNECTOR_PLATFORMS[0],
            choices=settings.CONNECTOR_PLATFORMS,
            help="Whose URLs to print (CONNECTOR_PLATFORMS; default: %(default)s).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        uris = [uri for value in options["redirect_uris"] for uri in value.split()]
        try:
            client, secret = oauth_client_create(
                name=options["name"], redirect_uris=uris, client_id=options["client_id"]
            )
        except ValidationError as exc:
            raise CommandError(
                " ".join(
                    f"{field}: {' '.join(messages)}" for field, messages in exc.message_dict.items()
                )
            ) from None
        platform = options["platform"]

        def url(name: str) -> str:
            site_url: str = settings.SITE_URL
            return site_url + reverse(f"oauth_provider:{name}", args=[platform])

        write = self.stdout.write
        write(f"OAuth client {client.name!r} created for {platform}.")
        write(f"  Client id:      {client.client_id}")
        write(f"  Client secret:  {secret}")
        write("                  (shown once: only a hash is kept; rotate it in the admin)")
        write(f"  Authorize URL:  {url('authorize')}")
        write(f"  Token URL:      {url('token')}")
        write(f"  Redirect URIs:  {' '.join(client.redirect_uris.split())}")
        write(f"  Scopes:         {' '.join(settings.OAUTH2_PROVIDER.get('SCOPES', {}))}")
