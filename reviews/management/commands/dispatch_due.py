"""Claim due messages now and hand them to workers: what beat runs every few seconds."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from reviews.services import messages_dispatch_due, messages_dispatch_preview


class Command(BaseCommand):
    help = (
        "Dispatch due messages now (beat does this every DISPATCH_INTERVAL_SECONDS). "
        "--dry-run lists what would be claimed and changes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="Only show what is due.")
        parser.add_argument("--limit", type=int, default=None, help="Claim at most this many.")

    def handle(self, *args, dry_run=False, limit=None, **options):
        if dry_run:
            shown = limit or 100
            preview = messages_dispatch_preview(limit=shown)
            more = f" (showing at most {shown})" if len(preview.due) >= shown else ""
            self.stdout.write(f"{len(preview.due)} due message(s) would be claimed{more}")
            for m in preview.due:
                self.stdout.write(
                    f"  {m.pk}  step {m.step}  {m.channel:<5}  due {m.due_at:%Y-%m-%d %H:%M:%S}Z  "
                    f"attempts {m.attempts}  request {m.review_request_id}"
                )
            self.stdout.write(
                f"{preview.queued_expired} queued past the lease would go back to pending; "
                f"{preview.sending_expired} sending past the lease would become unknown; "
                f"{preview.queued_now} queued now."
            )
            return
        result = messages_dispatch_due(limit=limit)
        self.stdout.write(
            f"claimed {len(result.claimed)}; back to pending (queued lease) {result.requeued}; "
            f"unknown (sending lease) {result.unknown}; not enqueued {result.enqueue_failed}"
        )
