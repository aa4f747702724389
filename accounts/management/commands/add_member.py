"""Add a member to a business: ``add_member --owner EMAIL --email EMAIL --password PASSWORD
--role manager|viewer [--location NAME ...]``; prints the member's id. (Owners invite members
by e-mail instead; this is staff's way, with a password chosen here.)"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from accounts.models import MEMBER_ROLES, Location, User
from accounts.services import member_add
from core.errors import validation_error_line


class Command(BaseCommand):
    help = "Add a manager or viewer of some locations to a business and print the member's id."

    def add_arguments(self, parser):
        parser.add_argument("--owner", required=True, help="The business owner's e-mail")
        parser.add_argument("--email", required=True, help="The member's login")
        parser.add_argument("--password", required=True)
        parser.add_argument("--role", required=True, choices=[str(r) for r in MEMBER_ROLES])
        parser.add_argument(
            "--location",
            action="append",
            default=[],
            help="A location the member reaches, by name (repeat for several)",
        )

    def handle(self, *args, **options):
        owner = User.objects.with_email(options["owner"]).filter(account__isnull=True).first()
        if owner is None:
            raise CommandError(f"No business owner with the e-mail {options['owner']}.")
        names = options["location"]
        locations = dict(
            Location.objects.filter(account=owner, name__in=names).values_list("name", "pk")
        )
        missing = [name for name in names if name not in locations]
        if missing:
            raise CommandError(f"{owner.email} has no location named {', '.join(missing)}.")
        try:
            member = member_add(
                account=owner,
                email=options["email"],
                password=options["password"],
                role=options["role"],
                location_ids=list(locations.values()),
            )
        except ValidationError as exc:
            raise CommandError(validation_error_line(exc)) from None
        self.stdout.write(str(member.id))
