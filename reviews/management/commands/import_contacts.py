"""Import contacts from a CSV or .xlsx file: ``import_contacts FILE --owner EMAIL``."""

from __future__ import annotations

import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from accounts.models import User
from reviews.services import ImportFileError, contacts_import
from reviews.services.imports import read_rows


class Command(BaseCommand):
    help = (
        "Import contacts from a CSV file or an Excel .xlsx workbook for one business. Every row "
        "goes through contact_add (dedup, cooldown and opt-outs apply); bad rows are reported "
        "with their row number and the import goes on. Exit status 0 when the file was read, "
        "even if rows failed."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "file", help="CSV or .xlsx file with a header line (Email, First name, ...)"
        )
        parser.add_argument("--owner", required=True, help="The business's login e-mail")
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="Validate and report what would happen; write and send nothing.",
        )
        parser.add_argument(
            "--no-progress", action="store_true", help="No progress bar (e.g. in cron jobs)."
        )

    def handle(self, *args, file, owner, dry_run=False, no_progress=False, **options):
        business = User.objects.with_email(owner).first()
        if business is None:
            raise CommandError(f"No business with the e-mail {owner}.")
        try:
            raw = Path(file).read_bytes()
        except OSError as exc:
            raise CommandError(f"Cannot read {file}: {exc.strerror or exc}") from None
        try:
            console = Console(file=sys.stderr)
            disable = no_progress or not console.is_terminal
            # Sizing the bar parses the whole file once more: only when there is a bar.
            total = None if disable else sum(1 for _ in read_rows(raw)[1])
            with Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=console,
                disable=disable,
                transient=False,
            ) as bar:
                task = bar.add_task("Checking" if dry_run else "Importing", total=total)
                report = contacts_import(
                    owner=business,
                    raw=raw,
                    dry_run=dry_run,
                    progress=lambda done: bar.update(task, completed=done),
                )
        except ImportFileError as exc:
            raise CommandError(str(exc)) from None

        write = self.stdout.write
        if dry_run:
            write("Dry run: nothing was written or sent.")
        mapped = ", ".join(f"{h} → {k}" for h, k in report.columns.fields.items())
        write(f"Columns: {mapped}")
        if report.columns.unknown:
            write(self.style.WARNING(f"Ignored columns: {', '.join(report.columns.unknown)}"))
        for issue in report.issues:
            if issue.imported:
                write(f"row {issue.row}: skipped: {issue.reason}")
            else:
                write(self.style.ERROR(f"row {issue.row}: error: {issue.reason}"))
        write(f"{business.email}: {report.summary()} ({report.seconds:.1f} s)")
