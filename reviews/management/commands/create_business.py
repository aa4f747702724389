"""Create a business owner: ``create_business --email E --password P --business-name N``, with
its first location (named after the business, in its time zone) holding its review sites."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from core.errors import validation_error_line
from reviews.services import business_create


class Command(BaseCommand):
    help = "Create a business owner (who can then connect Zapier) and print its id."

    def add_arguments(self, parser):
        # Options are spelled with hyphens, as in every command of this project; the underscore
        # spellings are accepted too (what Django's own commands derive from field names).
        parser.add_argument("--email", required=True)
        parser.add_argument("--password", required=True)
        parser.add_argument("--business-name", "--business_name", required=True)
        parser.add_argument(
            "--time-zone",
            "--time_zone",
            default="UTC",
            help="IANA zone, e.g. America/Chicago",
        )
        parser.add_argument("--region", default="US", help="Default phone region, e.g. US or GB")
        parser.add_argument(
            "--review-url",
            "--review_url",
            action="append",
            default=[],
            help="A public review page of the business (repeat for several sites); without "
            "one, its review requests wait until a site is added",
        )

    def handle(self, *args, **options):
        try:
            owner = business_create(
                email=options["email"],
                password=options["password"],
                business_name=options["business_name"],
                time_zone=options["time_zone"],
                default_region=options["region"],
                review_urls=options["review_url"],
            )
        except ValidationError as exc:
            raise CommandError(validation_error_line(exc)) from None
        self.stdout.write(str(owner.id))
