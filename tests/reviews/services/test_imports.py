"""The CSV import (reviews.services.imports): every row through contact_add, per-row errors, dry
run, header aliases."""

from __future__ import annotations

import io

import openpyxl
import pytest
from django.core.management import call_command

from reviews.models import Contact, Message, ReviewRequest
from reviews.services import ContactAddOutcome, ImportFileError, contacts_import
from reviews.services.imports import map_columns
from tests.support.contacts import csv_bytes

pytestmark = pytest.mark.django_db


def test_import_creates_contacts_and_one_request_each(owner):
    report = contacts_import(
        owner=owner,
        raw=csv_bytes(
            "First Name,Last Name,E-mail,Mobile",
            "Jane,Smith,jane@example.com,+14155552671",
            "Bob,Jones,bob@example.com,",
        ),
    )
    assert report.rows == 2 and report.errors == []
    assert report.scheduled == 2 and report.contacts_created == 2
    jane = Contact.objects.get(email_normalized="jane@example.com")
    assert jane.source == Contact.Source.IMPORT
    assert jane.phone == "+14155552671"
    assert ReviewRequest.objects.filter(owner=owner).count() == 2
    assert Message.objects.filter(status=Message.Status.PENDING).count() == 2


def test_import_reports_bad_rows_with_their_number_and_goes_on(owner):
    report = contacts_import(
        owner=owner,
        raw=csv_bytes(
            "email,phone,delay",
            "ok1@example.com,,",
            "not-an-email,,",
            ",,",
            ",12,",
            "ok2@example.com,,1.5",
            "ok3@example.com,,",
        ),
    )
    assert [(e.row, e.reason) for e in report.errors] == [
        (3, "E-mail: Is not a valid e-mail address."),
        (5, report.errors[1].reason),
        (6, "Delay (hours): Must be a whole number of hours from 0 to 8760, like 24."),
    ]
    assert report.errors[1].reason.startswith("Mobile phone number: Is not a valid phone number")
    assert report.blank == 1  # row 4 is empty: not an error
    assert set(Contact.objects.values_list("email", flat=True)) == {
        "ok1@example.com",
        "ok3@example.com",
    }
    assert "3 errors" in report.summary()


def test_import_dedups_repeated_rows_and_applies_the_cooldown(owner):
    report = contacts_import(
        owner=owner,
        raw=csv_bytes("Email", "jane@example.com", "JANE@example.com"),
    )
    assert report.scheduled == 1
    assert report.outcomes[ContactAddOutcome.ALREADY_ACTIVE] == 1
    assert report.notes[0].row == 3
    assert "already has a review request" in report.notes[0].reason
    assert Contact.objects.count() == 1
    assert ReviewRequest.objects.count() == 1


def test_import_reads_names_and_addresses_as_the_api_does(owner):
    report = contacts_import(
        owner=owner,
        raw=csv_bytes(
            "First Name,Company,Email",
            "\u202eJa\u200bne\ufeff,Acme\ue000 Inc,x@bücher.de",
            "\u200b,,X@xn--bcher-kva.de",
            "Bob,,bob@localhost",
        ),
    )
    assert report.scheduled == 1
    assert report.outcomes[ContactAddOutcome.ALREADY_ACTIVE] == 1
    assert [(e.row, e.reason.split(":")[0]) for e in report.errors] == [(4, "E-mail")]
    assert "public domain" in report.errors[0].reason
    contact = Contact.objects.get()
    assert (contact.first_name, contact.company_name) == ("Jane", "Acme Inc")
    assert contact.email_normalized == "x@xn--bcher-kva.de"


def test_import_never_writes_to_opted_out_channels(owner):
    contacts_import(owner=owner, raw=csv_bytes("Email", "jane@example.com"))
    contact = Contact.objects.get()
    ReviewRequest.objects.update(status="cancelled", ended_at=contact.created_at)
    Contact.objects.update(email_opted_out_at=contact.created_at)
    before = Message.objects.count()
    report = contacts_import(owner=owner, raw=csv_bytes("Email", "jane@example.com"))
    assert report.outcomes[ContactAddOutcome.OPTED_OUT] == 1
    assert "opted out of e-mail" in report.notes[0].reason
    assert Message.objects.count() == before


def test_dry_run_reports_the_same_and_writes_nothing(owner):
    raw = csv_bytes("Email,Company", "a@example.com,A", "a@example.com,A", "bad,")
    dry = contacts_import(owner=owner, raw=raw, dry_run=True)
    assert dry.scheduled == 1 and len(dry.notes) == 1 and len(dry.errors) == 1
    assert "would be" in dry.summary()
    assert not Contact.objects.exists() and not ReviewRequest.objects.exists()
    real = contacts_import(owner=owner, raw=raw)
    assert (real.scheduled, len(real.notes), len(real.errors)) == (1, 1, 1)


def test_metadata_column_is_json_and_unknown_columns_are_reported(owner):
    report = contacts_import(
        owner=owner,
        raw=csv_bytes(
            "email;metadata;Favourite colour",
            'a@example.com;{"order": "1001"};blue',
            "b@example.com;not json;red",
        ),
    )
    assert report.columns.unknown == ["Favourite colour"]
    assert Contact.objects.get(email="a@example.com").metadata == {"order": "1001"}
    assert report.errors[0].row == 3 and report.errors[0].reason.startswith("Metadata:")


def test_import_reads_excel_exports(owner):
    raw = "\ufeffE-mail\tFirst name\r\nzoe@example.com\tZoë\r\n".encode()
    report = contacts_import(owner=owner, raw=raw)
    assert report.errors == []
    assert Contact.objects.get().first_name == "Zoë"
    latin = "Email,First name\r\nrene@example.com,Ren\xe9\r\n".encode("cp1252")
    contacts_import(owner=owner, raw=latin)
    assert Contact.objects.get(email="rene@example.com").first_name == "René"


def test_a_row_with_too_many_cells_is_an_error(owner):
    report = contacts_import(owner=owner, raw=csv_bytes("email,first", "a@example.com,A,extra"))
    assert report.errors[0].row == 2
    assert "More cells" in report.errors[0].reason


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (("first_name", "Jane"), "needs an e-mail column"),
        (("Email,E-mail", "a@x.com,b@x.com"), "both read as E-mail"),
        (("",), "empty"),
    ],
)
def test_unusable_files_are_refused_whole(owner, lines, message):
    with pytest.raises(ImportFileError, match=message):
        contacts_import(owner=owner, raw=csv_bytes(*lines))
    assert not Contact.objects.exists()


def test_header_aliases():
    columns = map_columns(["First Name", "SURNAME", "Email Address", "Cell Phone", "Organisation"])
    assert columns.fields == {
        "First Name": "first_name",
        "SURNAME": "last_name",
        "Email Address": "email",
        "Cell Phone": "mobile_phone_number",
        "Organisation": "company_name",
    }


def test_rows_across_batches_are_all_imported(owner, monkeypatch):
    monkeypatch.setattr("reviews.services.imports.BATCH_SIZE", 3)
    done = []
    lines = ["email"] + [f"p{i}@example.com" for i in range(7)] + ["bad"]
    report = contacts_import(owner=owner, raw=csv_bytes(*lines), progress=done.append)
    assert report.scheduled == 7 and report.errors[0].row == 9
    assert done == [3, 6, 8]
    assert Contact.objects.count() == 7


def test_dry_run_across_batches_matches_the_import(owner, monkeypatch):
    monkeypatch.setattr("reviews.services.imports.BATCH_SIZE", 2)
    raw = csv_bytes(
        "email,mobile",
        "a@example.com,",
        "b@example.com,",
        "c@example.com,",
        "A@example.com,",
        ",+14155552671",
        "x@example.com,415 555 2671",
    )
    dry = contacts_import(owner=owner, raw=raw, dry_run=True)
    assert not Contact.objects.exists()
    assert [n.row for n in dry.notes] == [5, 7]
    assert "Repeats row 2" in dry.notes[0].reason
    real = contacts_import(owner=owner, raw=raw)
    assert (dry.scheduled, len(dry.notes)) == (real.scheduled, len(real.notes)) == (4, 2)


def test_import_costs_a_fixed_number_of_statements_per_row(owner, django_assert_max_num_queries):
    """The 10,000-row figure in docs/benchmarks.md rests on this: per fresh row a savepoint,
    the match, the new rows and the release (PostgreSQL: the two dedup locks, the match, then
    contact, request and messages in one statement; SQLite: no locks, one insert per model);
    the business's settings are read once per batch, not per row."""
    rows = 40
    lines = ["First Name,E-mail,Mobile"] + [
        f"Person{i},person{i}@example.com,+1415555{i:04d}" for i in range(rows)
    ]
    contacts_import(owner=owner, raw=csv_bytes("First Name,E-mail", "Warm,warm@example.com"))
    per_row = 6
    with django_assert_max_num_queries(per_row * rows + 4):
        report = contacts_import(owner=owner, raw=csv_bytes(*lines))
    assert report.scheduled == rows and report.errors == []


# --- Headers as people write them, and the report in row order -------------------------------


@pytest.mark.parametrize(
    ("header", "field"),
    [
        ("First Name", "first_name"),
        ("First name", "first_name"),
        ("Surname", "last_name"),
        ("Last name", "last_name"),
        ("E-mail", "email"),
        ("Email Address", "email"),
        ("Mobile", "mobile_phone_number"),
        ("Phone", "mobile_phone_number"),
        ("Cell", "mobile_phone_number"),
        ("Company", "company_name"),
        ("Delay (hours)", "delay_hours"),
        ("DELAY [HOURS]", "delay_hours"),
        ("delay_hours", "delay_hours"),
        ("Metadata (JSON)", "metadata"),
        ("  Mobile phone number: ", "mobile_phone_number"),
    ],
)
def test_every_header_the_docs_list_is_understood(header, field):
    assert map_columns(["Email", header] if field != "email" else [header]).fields[header] == field


def test_the_delay_column_is_used_and_a_bad_delay_is_a_row_error(owner, time_machine):
    time_machine.move_to("2026-06-10 16:00:00+00:00", tick=False)
    report = contacts_import(
        owner=owner,
        raw=csv_bytes(
            "Email,Delay (hours),Metadata (JSON),Shoe size",
            'late@example.com,24,"{""order"": ""1001""}",38',
            "bad@example.com,-5,,",
        ),
    )
    assert report.columns.unknown == ["Shoe size"]
    assert [(e.row, e.reason) for e in report.errors] == [
        (3, "Delay (hours): Must be a whole number of hours from 0 to 8760, like 24."),
    ]
    late = ReviewRequest.objects.get(contact__email_normalized="late@example.com")
    assert late.scheduled_for.isoformat() == "2026-06-11T16:00:00+00:00"
    assert late.contact.metadata == {"order": "1001"}
    assert not Contact.objects.filter(email_normalized="bad@example.com").exists()


def test_the_report_lists_errors_and_skipped_rows_in_row_order(owner, tmp_path, capsys):
    path = tmp_path / "contacts.csv"
    path.write_bytes(
        csv_bytes(
            "Email",
            "nope",
            "a@example.com",
            "A@example.com",
            "also-nope",
        )
    )
    call_command("import_contacts", str(path), "--owner", owner.email)
    out = capsys.readouterr().out
    rows = [line.split(":", 1)[0] for line in out.splitlines() if line.startswith("row ")]
    assert rows == ["row 2", "row 4", "row 5"]
    assert "row 4: skipped:" in out and "row 5: error:" in out


# --- Excel workbooks ------------------------------------------------------------------------------


def xlsx_bytes(*rows: tuple) -> bytes:
    book = openpyxl.Workbook()
    for row in rows:
        book.active.append(row)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def test_an_excel_workbook_imports_like_a_csv_file(owner, time_machine):
    time_machine.move_to("2026-06-10 16:00:00+00:00", tick=False)
    report = contacts_import(
        owner=owner,
        raw=xlsx_bytes(
            ("First Name", "Mobile", "E-mail", "Delay (hours)", "Shoe size"),
            ("Jane", 4155552671, None, 24, 38),  # numbers as Excel stores them
            ("Bob", None, "bob@example.com", 2.0, None),
            (None, None, None, None, None),
            ("Eve", None, "eve@example.com", -5, None),
        ),
    )
    assert report.columns.unknown == ["Shoe size"]
    assert (report.rows, report.blank, report.scheduled) == (3, 1, 2)
    assert [(e.row, e.reason) for e in report.errors] == [
        (5, "Delay (hours): Must be a whole number of hours from 0 to 8760, like 24."),
    ]
    jane = ReviewRequest.objects.get(contact__first_name="Jane")
    assert jane.contact.phone == "+14155552671"
    assert jane.scheduled_for.isoformat() == "2026-06-11T16:00:00+00:00"
    bob = ReviewRequest.objects.get(contact__first_name="Bob")
    assert bob.scheduled_for.isoformat() == "2026-06-10T18:00:00+00:00"


def test_a_broken_workbook_is_refused_as_a_whole(owner):
    with pytest.raises(ImportFileError, match="Excel file could not be read"):
        contacts_import(owner=owner, raw=b"PK\x03\x04 not really a workbook")
    assert not Contact.objects.exists()
