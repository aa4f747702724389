"""Try an inbound SMS locally (STOP, START, HELP...) without Twilio: the same code path as the
signed Twilio webhook, from the service it calls on."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from contact_input.normalize import normalize_phone
from reviews.models import Contact
from reviews.services import sms_reply_record
from reviews.sms_keywords import Intent, sms_reply_text


class Command(BaseCommand):
    help = (
        "Record an inbound SMS as if Twilio had posted it to /webhooks/twilio/inbound/ (opt-out, "
        "opt-in, help), and print what the webhook would answer. The opt-out audit marks it "
        "simulated. For trying the embedded default without Twilio credentials."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--from",
            dest="from_number",
            required=True,
            help="The sender, e.g. +14155552671 (a contact's mobile number).",
        )
        parser.add_argument("--body", required=True, help='The text, e.g. "STOP".')
        parser.add_argument(
            "--to",
            default="",
            help="Our number it was sent to (TWILIO_FROM_NUMBER by default); shown only.",
        )
        parser.add_argument(
            "--region",
            default="US",
            help="How to read a --from without a country code (default: %(default)s).",
        )

    def handle(self, *args, **options):
        try:
            sender = normalize_phone(options["from_number"], options["region"].upper())
        except ValidationError as exc:
            raise CommandError(f"--from: {' '.join(exc.messages)}") from None
        if not sender:
            raise CommandError("--from: give the sender's number.")
        body = options["body"]
        to = options["to"] or settings.TWILIO_FROM_NUMBER or "(our number)"
        intent = sms_reply_record(
            from_number=sender, body=body, message_sid=f"simulated-{uuid.uuid4().hex}"
        )
        write = self.stdout.write
        write(f"Inbound SMS from {sender} to {to}: {body!r}")
        write(f"Read as: {intent.value.replace('_', ' ')}")
        contacts = list(Contact.objects.filter(phone=sender).select_related("owner"))
        if not contacts:
            write("No contact has this number: nothing changed.")
        for contact in contacts:
            state = "opted out of SMS" if contact.sms_opted_out_at else "can receive SMS"
            write(f"  {contact.display_name} ({contact.owner.email}): {state}")
        reply = sms_reply_text(
            body,
            intent,
            help_text=settings.SMS_HELP_TEXT,
            twilio_answers_standard=settings.TWILIO_ANSWERS_STANDARD_KEYWORDS,
        )
        if reply:
            write(f"Reply: {reply}")
        elif intent == Intent.NONE:
            write("Reply: none (the text asks for nothing we act on)")
        else:
            write("Reply: none from us (Twilio answers its standard keywords itself)")
