"""Re-key stored contacts' e-mail with the dedup key of ``contact_input.normalize.email_key``.

The key used to be the address lower-cased (NFC); it is now the address as mail systems route
it: NFKC, the domain as its IDNA A-label, lower case. So ``x@bücher.de`` and
``x@xn--bcher-kva.de`` (or a full-width ``example.com`` and the plain one) are one key, and two
stored contacts of one owner may turn out to be one mailbox. Those are merged into the older
(``created_at``, then ``id``):

* its review requests and opt-out audit rows are moved to the older contact;
* one active request per contact: if both have one, the older contact's stays and the newer's
  is cancelled, with its messages not yet handed to a provider (they would have been a second
  request to one mailbox);
* opt-outs are the union (of two opt-outs of one channel the earlier is kept);
* the older contact's details win; the ones it lacks (names, company, phone, metadata keys)
  are taken from the newer, which is then deleted.

The key function is imported, not copied: the keys written here must equal the keys the
running code computes for new input, or a contact would no longer be found by its own address.
It is pure (no models), so importing it has none of the problems of importing models.

Prints how many contacts were re-keyed and merged. The reverse leaves the keys as they are
(the old code reads them; only the dedup of other spellings is lost); merges are not undone.
"""

from collections import defaultdict

from django.db import migrations
from django.utils import timezone

from contact_input.normalize import email_key

ACTIVE_STATUSES = ["scheduled", "sending", "sent", "delivered"]
CANCELLABLE_MESSAGE_STATUSES = ["planned", "pending", "queued"]
FILLED_FROM_NEWER = ("first_name", "last_name", "company_name")


def rekey_contacts(apps, schema_editor):
    Contact = apps.get_model("reviews", "Contact")
    db = schema_editor.connection.alias
    contacts = Contact.objects.using(db)

    # Only rows whose key changes can join another row: the old keys were unique per owner.
    changed = {}
    rows = contacts.exclude(email="").values_list("id", "owner_id", "email", "email_normalized")
    for pk, owner_id, email, old_key in rows.order_by("id").iterator(chunk_size=2000):
        new_key = email_key(email)
        if new_key != old_key:
            changed[pk] = (owner_id, new_key)
    if not changed:
        print("\n  Contacts re-keyed: 0; merged into an older contact: 0.")
        return

    groups = defaultdict(set)
    for pk, owner_key in changed.items():
        groups[owner_key].add(pk)
    # Unchanged rows already holding a new key belong to that key's group.
    by_owner = defaultdict(set)
    for owner_id, new_key in groups:
        by_owner[owner_id].add(new_key)
    for owner_id, keys in by_owner.items():
        holders = contacts.filter(owner_id=owner_id, email_normalized__in=keys)
        for pk, key in holders.values_list("id", "email_normalized"):
            if pk not in changed:
                groups[(owner_id, key)].add(pk)

    now = timezone.now()
    merged = 0
    kept = {}
    for (_owner, new_key), pks in groups.items():
        members = sorted(contacts.filter(pk__in=pks), key=lambda c: (c.created_at, str(c.pk)))
        keep, newer = members[0], members[1:]
        for other in newer:
            _merge(apps, db, keep=keep, other=other, now=now)
            merged += 1
        if keep.pk in changed:
            kept[keep.pk] = new_key

    # Two steps, so that no row takes a key another row still holds until its own update.
    for pk in kept:
        contacts.filter(pk=pk).update(email_normalized=f"~rekey~{pk}")
    for pk, new_key in kept.items():
        contacts.filter(pk=pk).update(email_normalized=new_key)
    rekeyed = sum(1 for pk in changed if pk in kept)
    print(f"\n  Contacts re-keyed: {rekeyed}; merged into an older contact: {merged}.")


def _merge(apps, db, *, keep, other, now):
    """Move ``other``'s requests and audit rows to ``keep``, fold its details in, delete it."""
    ReviewRequest = apps.get_model("reviews", "ReviewRequest")
    Message = apps.get_model("reviews", "Message")
    OptOutEvent = apps.get_model("reviews", "OptOutEvent")
    requests = ReviewRequest.objects.using(db)

    if requests.filter(contact=keep, status__in=ACTIVE_STATUSES).exists():
        for duplicate in requests.filter(contact=other, status__in=ACTIVE_STATUSES):
            Message.objects.using(db).filter(
                review_request=duplicate, status__in=CANCELLABLE_MESSAGE_STATUSES
            ).update(status="cancelled", cancelled_at=now, updated_at=now)
            duplicate.status = "cancelled"
            duplicate.cancelled_at = now
            duplicate.ended_at = now
            duplicate.ended_reason = "cancelled"
            duplicate.ended_detail = (
                f"Merged into contact {keep.pk}: the same mailbox, which already had an "
                "active request."
            )
            duplicate.save(
                update_fields=[
                    "status",
                    "cancelled_at",
                    "ended_at",
                    "ended_reason",
                    "ended_detail",
                    "updated_at",
                ]
            )
    requests.filter(contact=other).update(contact=keep, updated_at=now)
    OptOutEvent.objects.using(db).filter(contact=other).update(contact=keep)

    for channel in ("sms", "email"):
        at, source = f"{channel}_opted_out_at", f"{channel}_opt_out_source"
        theirs = getattr(other, at)
        if theirs is not None and (getattr(keep, at) is None or theirs < getattr(keep, at)):
            setattr(keep, at, theirs)
            setattr(keep, source, getattr(other, source))
    for name in FILLED_FROM_NEWER:
        if not getattr(keep, name) and getattr(other, name):
            setattr(keep, name, getattr(other, name))
    keep.metadata = {**(other.metadata or {}), **(keep.metadata or {})}
    phone = other.phone if not keep.phone else ""
    other.delete()
    if phone:
        keep.phone = phone  # free now: the phone is unique per owner
    keep.save()


class Migration(migrations.Migration):
    dependencies = [
        ("reviews", "0004_covered_foreign_key_indexes"),
    ]

    operations = [
        migrations.RunPython(rekey_contacts, migrations.RunPython.noop, elidable=False),
    ]
