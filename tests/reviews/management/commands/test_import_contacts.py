"""manage.py import_contacts: the CSV import from the command line, its report, dry run and
refusals."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from reviews.models import Contact
from tests.support.contacts import csv_bytes

pytestmark = pytest.mark.django_db


def test_command_imports_and_prints_the_report(owner, tmp_path, capsys):
    path = tmp_path / "contacts.csv"
    path.write_bytes(csv_bytes("Email,Nickname", "a@example.com,Al", "nope,"))
    call_command("import_contacts", str(path), "--owner", owner.email.upper())
    out = capsys.readouterr().out
    assert "Ignored columns: Nickname" in out
    assert "row 3: error: E-mail: Is not a valid e-mail address." in out
    assert "2 rows read, 1 review request was scheduled" in out
    assert Contact.objects.count() == 1


def test_command_dry_run_writes_nothing(owner, tmp_path, capsys):
    path = tmp_path / "contacts.csv"
    path.write_bytes(csv_bytes("Email", "a@example.com"))
    call_command("import_contacts", str(path), "--owner", owner.email, "--dry-run")
    assert "Dry run: nothing was written or sent." in capsys.readouterr().out
    assert not Contact.objects.exists()


def test_command_refuses_unknown_owner_and_bad_files(owner, tmp_path):
    path = tmp_path / "contacts.csv"
    path.write_bytes(csv_bytes("Name", "x"))
    with pytest.raises(CommandError, match="No business"):
        call_command("import_contacts", str(path), "--owner", "nobody@example.com")
    with pytest.raises(CommandError, match="e-mail column"):
        call_command("import_contacts", str(path), "--owner", owner.email)
    with pytest.raises(CommandError, match="Cannot read"):
        call_command("import_contacts", str(tmp_path / "missing.csv"), "--owner", owner.email)
