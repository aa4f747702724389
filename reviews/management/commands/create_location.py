"""Add a location to a business: ``create_location --owner EMAIL --name NAME [--review-url URL
...] [--time-zone TZ]``; prints the new location's id."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from accounts.models import User
from accounts.services import location_create
from core.errors import validation_error_line
from reviews.services import review_site_add


class Command(BaseCommand):
    help = "Add a location (with its review sites) to a business and print the location's id."

    def add_arguments(self, parser):
        parser.add_argument("--owner", required=True, help="The business owner's e-mail")
        parser.add_argument("--name", required=True, help="The location's name, e.g. Downtown")
        parser.add_argument(
            "--time-zone",
            "--time_zone",
            default="",
            help="IANA zone, e.g. America/Chicago (default: the business's)",
        )
        parser.add_argument(
            "--review-url",
            "--review_url",
            action="append",
            default=[],
            help="A public review page of this location (repeat for several sites); without "
            "one, its review requests wait until a site is added",
        )

    def handle(self, *args, **options):
        owner = User.objects.with_email(options["owner"]).filter(account__isnull=True).first()
        if owner is None:
            raise CommandError(f"No business owner with the e-mail {options['owner']}.")
        try:
            with transaction.atomic():
                location = location_create(
                    account=owner, name=options["name"], time_zone=options["time_zone"] or None
                )
                for position, url in enumerate(options["review_url"]):
                    review_site_add(
                        owner=owner, url=url, position=position, location_id=location.pk
                    )
        except ValidationError as exc:
            raise CommandError(validation_error_line(exc)) from None
        self.stdout.write(str(location.id))
