"""reviews 0005: contacts re-keyed by their e-mail's IDNA form, run forwards from 0004 on rows
the code before it stored."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.support.migrations import migrate

BEFORE_REKEY = [("reviews", "0004_covered_foreign_key_indexes")]
REKEY = [("reviews", "0005_email_key_idna")]
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
FULL_WIDTH_EXAMPLE = "\uff45\uff58\uff41\uff4d\uff50\uff4c\uff45"  # "example", full-width
FULL_WIDTH_DOT_COM_EXAMPLE = FULL_WIDTH_EXAMPLE + "\uff0e\uff43\uff4f\uff4d"  # all full-width


@pytest.fixture
def old_apps(latest_after_the_module, transactional_db):
    """The schema just before the re-key (the latest again after the module)."""
    return migrate(BEFORE_REKEY)


def make_contact(apps, owner, email, *, age_days, **fields):
    """A contact stored as the code before the re-key stored it (key: NFC, lower case)."""
    contact = apps.get_model("reviews", "Contact").objects.create(
        owner_id=owner.pk, email=email, email_normalized=email.lower(), **fields
    )
    created = T0 - timedelta(days=age_days)
    type(contact).objects.filter(pk=contact.pk).update(created_at=created)
    return contact


def make_request(apps, contact, status, **fields):
    ended = {} if status in {"scheduled", "sent"} else {"ended_at": T0, "ended_reason": "clicked"}
    request = apps.get_model("reviews", "ReviewRequest").objects.create(
        owner_id=contact.owner_id,
        contact_id=contact.pk,
        scheduled_for=T0,
        status=status,
        **ended,
        **fields,
    )
    apps.get_model("reviews", "Message").objects.create(
        review_request_id=request.pk,
        step=0,
        channel="email",
        status="pending" if status == "scheduled" else "sent",
        due_at=T0,
    )
    return request


def make_owner(apps, email):
    return apps.get_model("accounts", "User").objects.create(email=email, password="!")


def test_rekey_merges_two_spellings_of_one_mailbox_into_the_older_contact(old_apps, capsys):
    owner = make_owner(old_apps, "owner@example.com")
    older = make_contact(
        old_apps,
        owner,
        "x@bücher.de",
        age_days=30,
        first_name="Jane",
        metadata={"from": "older", "shop": "a"},
    )
    newer = make_contact(
        old_apps,
        owner,
        "X@xn--bcher-kva.de",
        age_days=2,
        last_name="Smith",
        phone="+14155552671",
        company_name="Acme",
        metadata={"from": "newer", "order": 7},
        email_opted_out_at=T0,
        email_opt_out_source="email_unsubscribe",
    )
    ended = make_request(old_apps, older, "completed", sent_at=T0)
    kept_active = make_request(old_apps, older, "scheduled")
    duplicate = make_request(old_apps, newer, "sent", sent_at=T0)
    old_apps.get_model("reviews", "OptOutEvent").objects.create(
        owner_id=owner.pk,
        contact_id=newer.pk,
        channel="email",
        action="opt_out",
        source="email_unsubscribe",
        address=newer.email,
    )
    # Another owner's contact with the same mailbox is theirs: re-keyed, not merged.
    stranger = make_contact(
        old_apps, make_owner(old_apps, "other@example.com"), "x@bücher.de", age_days=1
    )
    plain = make_contact(old_apps, owner, "Bob@Example.com", age_days=5)

    apps = migrate(REKEY)

    Contact = apps.get_model("reviews", "Contact")
    ReviewRequest = apps.get_model("reviews", "ReviewRequest")
    assert set(Contact.objects.filter(owner_id=owner.pk).values_list("pk", flat=True)) == {
        older.pk,
        plain.pk,
    }
    merged = Contact.objects.get(pk=older.pk)
    assert merged.email == "x@bücher.de"  # the older contact's address, as typed
    assert merged.email_normalized == "x@xn--bcher-kva.de"
    assert (merged.first_name, merged.last_name, merged.company_name) == ("Jane", "Smith", "Acme")
    assert merged.phone == "+14155552671"
    assert merged.metadata == {"from": "older", "shop": "a", "order": 7}
    assert (merged.email_opted_out_at, merged.email_opt_out_source) == (T0, "email_unsubscribe")
    assert set(ReviewRequest.objects.filter(contact_id=older.pk).values_list("pk", flat=True)) == {
        ended.pk,
        kept_active.pk,
        duplicate.pk,
    }
    # One active request per contact: the newer contact's is ended, its open messages with it.
    assert ReviewRequest.objects.get(pk=kept_active.pk).status == "scheduled"
    cancelled = ReviewRequest.objects.get(pk=duplicate.pk)
    assert (cancelled.status, cancelled.ended_reason) == ("cancelled", "cancelled")
    assert cancelled.ended_at is not None
    event = apps.get_model("reviews", "OptOutEvent").objects.get()
    assert event.contact_id == older.pk
    assert Contact.objects.get(pk=stranger.pk).email_normalized == "x@xn--bcher-kva.de"
    assert Contact.objects.get(pk=plain.pk).email_normalized == "bob@example.com"
    assert "Contacts re-keyed: 2; merged into an older contact: 1." in capsys.readouterr().out


def test_rekey_moves_the_active_request_of_a_newer_contact_and_keeps_every_opt_out(
    old_apps, capsys
):
    owner = make_owner(old_apps, "owner@example.com")
    older = make_contact(
        old_apps,
        owner,
        "x@example.com",
        age_days=10,
        phone="+14155552671",
        sms_opted_out_at=T0,
        sms_opt_out_source="sms_reply",
        email_opted_out_at=T0,
        email_opt_out_source="owner",
    )
    newest = make_contact(old_apps, owner, f"x@{FULL_WIDTH_DOT_COM_EXAMPLE}", age_days=1)
    newer = make_contact(
        old_apps,
        owner,
        f"x@{FULL_WIDTH_EXAMPLE}.com",
        age_days=3,
        phone="+14155550100",
        email_opted_out_at=T0 - timedelta(days=3),
        email_opt_out_source="email_complaint",
    )
    moved = make_request(old_apps, newer, "scheduled")
    cancelled = make_request(old_apps, newest, "scheduled")

    apps = migrate(REKEY)

    Contact = apps.get_model("reviews", "Contact")
    ReviewRequest = apps.get_model("reviews", "ReviewRequest")
    Message = apps.get_model("reviews", "Message")
    kept = Contact.objects.get()
    assert kept.pk == older.pk
    assert kept.email_normalized == "x@example.com"
    assert kept.phone == "+14155552671"  # the older contact's phone is kept
    assert (kept.sms_opted_out_at, kept.sms_opt_out_source) == (T0, "sms_reply")
    # Two opt-outs of one channel: the earlier.
    assert (kept.email_opted_out_at, kept.email_opt_out_source) == (
        T0 - timedelta(days=3),
        "email_complaint",
    )
    # The older of the newer contacts' active requests goes first and stays active.
    assert ReviewRequest.objects.get(pk=moved.pk).status == "scheduled"
    assert ReviewRequest.objects.get(pk=cancelled.pk).status == "cancelled"
    assert Message.objects.get(review_request_id=cancelled.pk).status == "cancelled"
    assert Message.objects.get(review_request_id=moved.pk).status == "pending"
    assert set(ReviewRequest.objects.values_list("contact_id", flat=True)) == {older.pk}
    assert "Contacts re-keyed: 0; merged into an older contact: 2." in capsys.readouterr().out


def test_rekey_leaves_ascii_keys_alone_and_keeps_refused_domains(old_apps, capsys):
    owner = make_owner(old_apps, "owner@example.com")
    ascii_contact = make_contact(old_apps, owner, "Jane.Smith@Example.COM", age_days=1)
    # Accepted before the new rules; kept, keyed as before (lower case).
    local = make_contact(old_apps, owner, "ops@localhost", age_days=1)
    symbol = make_contact(old_apps, owner, "X@\u2603.com", age_days=1)

    apps = migrate(REKEY)

    keys = dict(apps.get_model("reviews", "Contact").objects.values_list("pk", "email_normalized"))
    assert keys == {
        ascii_contact.pk: "jane.smith@example.com",
        local.pk: "ops@localhost",
        symbol.pk: "x@\u2603.com",
    }
    assert "Contacts re-keyed: 0; merged into an older contact: 0." in capsys.readouterr().out
