"""Send a failed or unknown message again, through the normal claim path."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from reviews.models import Channel, Message
from reviews.services import ResendRefused, message_resend


class Command(BaseCommand):
    help = (
        "Resend a message whose status is failed or unknown. An unknown SMS may already have "
        "been delivered: it needs --force."
    )

    def add_arguments(self, parser):
        parser.add_argument("message_id")
        parser.add_argument(
            "--force",
            action="store_true",
            help="Resend an unknown SMS even though the person may already have it.",
        )

    def handle(self, *args, message_id, force=False, **options):
        try:
            current = Message.objects.filter(pk=message_id).values_list("status", "channel").first()
        except ValidationError:  # not a UUID
            raise CommandError(f"No message {message_id}.") from None
        if force and current == (Message.Status.UNKNOWN, Channel.SMS):
            self.stderr.write(
                self.style.WARNING(
                    "Warning: this SMS may already have been delivered; resending it can send "
                    "the person a second text."
                )
            )
        try:
            message = message_resend(message_id=message_id, force=force)
        except ResendRefused as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"message {message.pk} is pending again (due now); a worker will send it shortly"
        )
