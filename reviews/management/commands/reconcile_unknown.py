"""Ask providers about messages whose outcome is unknown; never resends anything."""

from __future__ import annotations

from datetime import timedelta

from django.core.management.base import BaseCommand, CommandParser

from reviews.services import messages_reconcile_unknown


class Command(BaseCommand):
    help = (
        "Look up messages in status unknown at their provider (Twilio, the outbox) and record "
        "what it reports; give up (failed, resendable) on those it has no record of, and on "
        "those no provider can be asked about after --max-age-hours. Prints a table."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--older-than-minutes",
            type=int,
            default=None,
            help="Only rows unknown for at least this long "
            "(default UNKNOWN_RECONCILE_AFTER_MINUTES).",
        )
        parser.add_argument(
            "--max-age-hours",
            type=int,
            default=None,
            help="Give up on rows no provider can be asked about after this long "
            "(default UNKNOWN_MAX_AGE_HOURS).",
        )
        parser.add_argument("--limit", type=int, default=200)

    def handle(
        self,
        *args: str,
        older_than_minutes: int | None = None,
        max_age_hours: int | None = None,
        limit: int = 200,
        **options: object,
    ) -> None:
        rows = messages_reconcile_unknown(
            older_than=timedelta(minutes=older_than_minutes)
            if older_than_minutes is not None
            else None,
            max_age=timedelta(hours=max_age_hours) if max_age_hours is not None else None,
            limit=limit,
        )
        if not rows:
            self.stdout.write("no unknown messages to reconcile")
            return
        header = f"{'message':<36}  {'channel':<7}  {'to':<24}  {'unknown for':<12}  result"
        self.stdout.write(header)
        self.stdout.write("-" * len(header))
        for row in rows:
            age = str(row.unknown_for).split(".")[0]
            detail = f"  ({row.detail})" if row.detail else ""
            self.stdout.write(
                f"{row.message_id:<36}  {row.channel:<7}  {row.to[:24]:<24}  {age:<12}  "
                f"{row.result}{detail}"
            )
        counts: dict[str, int] = {}
        for row in rows:
            counts[row.result] = counts.get(row.result, 0) + 1
        self.stdout.write(", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
