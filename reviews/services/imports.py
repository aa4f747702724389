"""Importing contacts from a CSV file or an Excel workbook (staff): every row through
``contact_add``.

The admin's import page and ``manage.py import_contacts`` both call ``contacts_import``. Each row
is parsed by ``clean_contact_input`` and handed to ``contact_add`` exactly as the connector API
parses and hands its JSON body, so the same normalisation, dedup, cooldown, opt-out and
one-active-request rules apply and a bad row fails with the same messages the API returns. A
bad row is reported (spreadsheet row number and reason) and the import goes on.

Speed without a transaction per row: rows are written in batches of ``BATCH_SIZE``, each batch
one transaction in which every row is its own savepoint (``contact_add``'s ``atomic`` nests), so
a failing row rolls back alone. Nothing is enqueued per row: ``contact_add`` only asks for a
dispatcher kick after commit when a message is due now, and that kick is published at most once
a second (``dispatcher_kick``); the beat dispatcher picks up everything that is due anyway.

A dry run does the same work, batch by batch, in transactions that are rolled back, so nothing
is written or sent and its report is what the import would do. One difference: as a batch's
work is undone, a row that repeats a person from an earlier batch is recognised by its
normalised e-mail or phone and reported as a repeat, not passed to ``contact_add`` again.

Why batches, not one transaction: ``contact_add`` takes two transaction-scoped advisory locks
per row on PostgreSQL (e-mail and phone), held until commit; 10,000 rows in one transaction
would exhaust the server's lock table (``max_locks_per_transaction``), and a short batch also
keeps concurrent API adds of the same people waiting for at most one batch.
"""

from __future__ import annotations

import csv
import io
import json
import re
import time
import zipfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from accounts.models import User
from contact_input.normalize import (
    CONTACT_FIELDS,
    NEED_EMAIL_OR_PHONE,
    ContactInput,
    clean_contact_input,
)

from ..models import BusinessSettings, Contact
from .contacts import ContactAddOutcome, contact_add

# A row as ``csv.DictReader`` yields it: header -> cell (``None`` for a cell missing from a short
# line), and the cells beyond the header, if any, as a list under the key ``None``.
Row = dict[str | None, str | list[str] | None]
Rows = Iterator[tuple[int, Row]]

BATCH_SIZE = 200  # rows per transaction: about 2 advisory locks each, held to commit
MAX_FILE_BYTES = 20 * 1024 * 1024
# What people call each field in the files they export (compared by letters and digits only,
# without case: "E-mail", "e_mail" and "EMAIL" are one header, and so are "Delay (hours)" and
# "delay_hours"). Every name the docs and the import page list is here.
HEADER_ALIASES: dict[str, tuple[str, ...]] = {
    "first_name": ("firstname", "first", "givenname", "forename"),
    "last_name": ("lastname", "last", "surname", "familyname"),
    "email": ("email", "emailaddress", "mail"),
    "mobile_phone_number": (
        "mobilephonenumber",
        "mobile",
        "mobilephone",
        "mobilenumber",
        "phone",
        "phonenumber",
        "cell",
        "cellphone",
        "telephone",
    ),
    "company_name": ("companyname", "company", "organization", "organisation"),
    "delay_hours": ("delayhours", "delay", "delayinhours", "hoursdelay"),
    "metadata": ("metadata", "metadatajson"),
}
_ALIAS_TO_FIELD = {alias: key for key, aliases in HEADER_ALIASES.items() for alias in aliases}
_LABELS = {spec.key: spec.label for spec in CONTACT_FIELDS}


class ImportFileError(Exception):
    """The file as a whole cannot be imported (not CSV, no usable header); nothing was read."""


def header_key(header: str) -> str:
    """A header as it is matched: letters and digits only, case folded (spaces, punctuation
    and brackets dropped)."""
    return re.sub(r"[\W_]+", "", (header or "").casefold())


@dataclass(frozen=True)
class ColumnMap:
    fields: dict[str, str]  # CSV header -> contact field key
    unknown: list[str]  # headers that match no field (ignored)


def map_columns(headers: Iterable[str]) -> ColumnMap:
    """Which column feeds which field; ``ImportFileError`` if two columns name one field or
    neither an e-mail nor a phone column exists."""
    fields: dict[str, str] = {}
    unknown: list[str] = []
    taken: dict[str, str] = {}
    for header in headers:
        key = _ALIAS_TO_FIELD.get(header_key(header))
        if key is None:
            if (header or "").strip():
                unknown.append(header)
            continue
        if key in taken:
            raise ImportFileError(
                f'Columns "{taken[key]}" and "{header}" are both read as {_LABELS[key]}; '
                "keep one of them."
            )
        taken[key] = header
        fields[header] = key
    if "email" not in taken and "mobile_phone_number" not in taken:
        raise ImportFileError(
            "The file needs an e-mail column (e.g. Email) or a mobile phone column (e.g. Mobile)"
            " in its first line."
        )
    return ColumnMap(fields=fields, unknown=unknown)


@dataclass(frozen=True)
class RowIssue:
    row: int  # the spreadsheet row number: the header is row 1
    reason: str
    imported: bool = False  # a note (imported, no new request), not an error


@dataclass
class ImportReport:
    owner: User
    dry_run: bool
    columns: ColumnMap
    rows: int = 0  # data rows read (blank lines not counted)
    blank: int = 0
    outcomes: Counter[ContactAddOutcome] = field(default_factory=Counter)
    # Dry run: the dedup keys of earlier batches (their rows were rolled back) -> row number.
    seen: dict[str, int] = field(default_factory=dict, repr=False)
    batch_seen: dict[str, int] = field(default_factory=dict, repr=False)
    contacts_created: int = 0
    errors: list[RowIssue] = field(default_factory=list)  # rows not imported
    notes: list[RowIssue] = field(default_factory=list)  # imported, but no new request
    seconds: float = 0.0
    policy: BusinessSettings | None = field(default=None, repr=False)  # read once per batch

    @property
    def scheduled(self) -> int:
        return self.outcomes[ContactAddOutcome.SCHEDULED]

    @property
    def imported(self) -> int:
        return self.rows - len(self.errors)

    @property
    def issues(self) -> list[RowIssue]:
        """Every row with something to report (errors and notes), in the file's row order."""
        return sorted([*self.errors, *self.notes], key=lambda issue: issue.row)

    def summary(self) -> str:
        def verb(count: int) -> str:
            if self.dry_run:
                return "would be"
            return "was" if count == 1 else "were"

        scheduled, skipped, errors = (
            self.scheduled,
            self.imported - self.scheduled,
            len(self.errors),
        )
        parts = [
            f"{self.rows} row{'s' if self.rows != 1 else ''} read",
            f"{scheduled} review request{'s' if scheduled != 1 else ''} {verb(scheduled)} "
            "scheduled",
        ]
        if skipped:
            parts.append(
                f"{skipped} {verb(skipped)} skipped (already active, cooldown or opted out)"
            )
        parts.append(f"{errors} error{'s' if errors != 1 else ''}")
        return ", ".join(parts) + "."


def read_rows(raw: bytes) -> tuple[list[str], Rows]:
    """The headers and ``(row number, row)`` pairs of a CSV file or an Excel workbook (.xlsx:
    a ZIP archive, told by its first bytes); ``ImportFileError`` when it is neither."""
    if len(raw) > MAX_FILE_BYTES:
        raise ImportFileError(f"The file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MB.")
    if raw.startswith(_ZIP_MAGIC):
        return read_xlsx(raw)
    return read_csv(raw)


_ZIP_MAGIC = b"PK\x03\x04"


def read_xlsx(raw: bytes) -> tuple[list[str], Rows]:
    """The first worksheet of an Excel workbook, as ``read_csv`` returns a file: the first row
    names the columns. Cells become the text a CSV export would hold: whole numbers without
    ``.0`` (a phone number typed as a number, a delay of 24), dates in ISO format."""
    # Imported here, not at the top: openpyxl takes ~0.1 s of CPU to import,
    # and every process loads this module (the admin imports the services) while only an
    # upload of a workbook needs it.
    import openpyxl
    from openpyxl.utils.exceptions import InvalidFileException

    try:
        book = openpyxl.load_workbook(io.BytesIO(raw), read_only=True, data_only=True)
    except (InvalidFileException, zipfile.BadZipFile, KeyError, OSError, ValueError) as exc:
        raise ImportFileError(
            f"This Excel file could not be read ({exc}); save it as CSV."
        ) from None
    sheet = book.worksheets[0] if book.worksheets else None
    rows = sheet.iter_rows(values_only=True) if sheet is not None else iter(())
    first = next(rows, None)
    headers = [_cell_text(value).strip() for value in (first or ())]
    if not any(headers):
        book.close()
        raise ImportFileError("The first row must name the columns (e.g. Email, First name).")

    def records() -> Rows:
        try:
            for number, values in enumerate(rows, start=2):
                cells = [_cell_text(value) for value in values]
                row: Row = dict(zip(headers, cells, strict=False))
                extra = [cell for cell in cells[len(headers) :] if cell.strip()]
                if extra:
                    row[None] = extra  # as csv does with cells beyond the header
                yield number, row
        finally:
            book.close()

    return headers, records()


def _cell_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)


def read_csv(raw: bytes) -> tuple[list[str], Rows]:
    """Decode (UTF-8, with or without a BOM; else Windows-1252, as Excel writes), detect the
    delimiter (comma, semicolon or tab) and return the headers and ``(row number, row)``
    pairs. ``ImportFileError`` when it is not a CSV file with a header line."""
    if b"\x00" in raw[:4096]:
        raise ImportFileError(
            "This is not a CSV text file, nor an Excel .xlsx workbook (an older .xls? Save it "
            "as CSV or .xlsx)."
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("cp1252", errors="replace")
    if not text.strip():
        raise ImportFileError("The file is empty.")
    first_line = text.split("\n", 1)[0]
    delimiter = max(",;\t", key=first_line.count)
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter)
    headers = [h.strip() for h in (reader.fieldnames or [])]
    if not any(headers):
        raise ImportFileError("The first line must name the columns (e.g. Email,First name).")
    reader.fieldnames = headers

    return headers, enumerate(reader, start=2)


def row_data(row: Mapping[str | None, Any], columns: ColumnMap) -> dict[str, Any]:
    """One CSV row as the API's input: mapped fields only, metadata parsed from JSON."""
    data: dict[str, Any] = {}
    for header, key in columns.fields.items():
        value = row.get(header)
        if value is None or not str(value).strip():
            continue
        data[key] = value
    if "metadata" in data:
        try:
            data["metadata"] = json.loads(data["metadata"])
        except ValueError:
            raise ValidationError(
                {"metadata": 'Must be a JSON object, e.g. {"order_id": "1001"}.'}
            ) from None
    return data


def describe_error(exc: ValidationError) -> str:
    """The API's field errors as one line: "E-mail: Is not a valid e-mail address."."""
    if not hasattr(exc, "error_dict"):
        return " ".join(exc.messages)
    items = exc.message_dict
    if items.get("email") == [NEED_EMAIL_OR_PHONE] and items.get("mobile_phone_number") == [
        NEED_EMAIL_OR_PHONE
    ]:
        return NEED_EMAIL_OR_PHONE
    return " ".join(
        f"{_LABELS.get(key, key)}: {' '.join(messages)}" for key, messages in items.items()
    )


def contacts_import(
    *,
    owner: User,
    raw: bytes,
    dry_run: bool = False,
    progress: Callable[[int], None] | None = None,
) -> ImportReport:
    """Import a CSV file (or an Excel .xlsx workbook) of contacts for ``owner``; returns the
    report.

    Raises ``ImportFileError`` (nothing done) when the file cannot be read as a whole. Row
    problems never stop the import: they are in ``report.errors`` with their row number.
    ``progress`` is called with the number of rows done, after each batch (and at the end).
    Runs outside a transaction (each batch is one).
    """
    started = time.perf_counter()
    headers, rows = read_rows(raw)
    report = ImportReport(owner=owner, dry_run=dry_run, columns=map_columns(headers))
    _import_rows(report, rows, progress=progress)
    report.seconds = time.perf_counter() - started
    return report


def _import_rows(
    report: ImportReport,
    rows: Rows,
    *,
    progress: Callable[[int], None] | None,
) -> None:
    batch: list[tuple[int, Row]] = []
    for item in rows:
        batch.append(item)
        if len(batch) >= BATCH_SIZE:
            _import_batch(report, batch)
            batch = []
            if progress:
                progress(report.rows + report.blank)
    if batch:
        _import_batch(report, batch)
    if progress:
        progress(report.rows + report.blank)


def _import_batch(report: ImportReport, batch: list[tuple[int, Row]]) -> None:
    # One transaction per batch; contact_add's own atomic() is a savepoint per row in it.
    with transaction.atomic():
        # Read once per batch: every row of it is scheduled under the same policy.
        report.policy = BusinessSettings.for_owner(report.owner)
        for number, row in batch:
            _import_row(report, number, row)
        if report.dry_run:
            transaction.set_rollback(True)  # a dry run writes nothing, sends nothing
    for key, number in report.batch_seen.items():
        report.seen.setdefault(key, number)
    report.batch_seen = {}


def _import_row(report: ImportReport, number: int, row: Row) -> None:
    values = [v for k, v in row.items() if k is not None and v is not None and str(v).strip()]
    if not values and not row.get(None):
        report.blank += 1
        return
    report.rows += 1
    if row.get(None):
        # csv puts cells beyond the header under the key None: a misplaced delimiter.
        report.errors.append(
            RowIssue(number, "More cells than column names: check the delimiters and quotes.")
        )
        return
    try:
        clean = clean_contact_input(
            row_data(row, report.columns), default_region=report.owner.default_region
        )
        if report.dry_run and _repeats_earlier_batch(report, number, clean):
            return
        result = contact_add(
            owner=report.owner, data=clean, source=Contact.Source.IMPORT, policy=report.policy
        )
    except ValidationError as exc:
        report.errors.append(RowIssue(number, describe_error(exc)))
        return
    report.outcomes[result.outcome] += 1
    report.contacts_created += result.contact_created
    if result.outcome != ContactAddOutcome.SCHEDULED:
        report.notes.append(RowIssue(number, result.message, imported=True))


def _repeats_earlier_batch(report: ImportReport, number: int, clean: ContactInput) -> bool:
    """Dry run: whether this row's person was in an earlier (rolled-back) batch; if so it is
    reported as the import would answer it (the contact updated, no second request)."""
    keys = [
        f"{kind}:{value}"
        for kind, value in (("e", clean.email_normalized), ("p", clean.phone))
        if value
    ]
    earlier = next((report.seen[key] for key in keys if key in report.seen), None)
    for key in keys:
        report.batch_seen.setdefault(key, number)
    if earlier is None:
        return False
    report.outcomes[ContactAddOutcome.ALREADY_ACTIVE] += 1
    report.notes.append(
        RowIssue(
            number,
            f"Repeats row {earlier} of this file: the contact would be updated, with no new "
            "review request.",
            imported=True,
        )
    )
    return True
