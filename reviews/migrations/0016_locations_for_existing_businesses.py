"""Every existing business becomes an account with one location.

For each owner (a user of no account who is not staff, or who has business rows: settings, a
review site or a contact) without a location: one location named after the business (its
e-mail when it has no name), in the owner's time zone, first in its list, so the account's
default; every review site of the owner is attached to it. Its templates, sender name, postal
address and sending window stay the account's (``BusinessSettings``, templates with no
location), which a location without its own uses. Review requests are not touched: a request
with no location belongs to the account's default location, this one. Nothing changes for the
business. Prints how many locations were created and sites attached.

The reverse puts every request and site back to no location and deletes the locations (with
location-specific wording and settings, which the previous release has no place for; of two
sites with one link at two locations, the first stays). It refuses while a contact has active
requests at two locations: the previous release allows one per contact (end one first).
"""

from django.db import migrations
from django.db.models import Count, Exists, OuterRef, Q, Subquery

BATCH = 1000
ACTIVE_STATUSES = ["scheduled", "sending", "sent", "delivered"]


def locations_create(apps, schema_editor):
    User = apps.get_model("accounts", "User")
    Location = apps.get_model("accounts", "Location")
    ReviewSite = apps.get_model("reviews", "ReviewSite")
    BusinessSettings = apps.get_model("reviews", "BusinessSettings")
    Contact = apps.get_model("reviews", "Contact")
    db = schema_editor.connection.alias

    def has(model):
        return Exists(model.objects.using(db).filter(owner_id=OuterRef("pk")))

    owners = (
        User.objects.using(db)
        .filter(account__isnull=True)
        .filter(Q(is_staff=False) | has(BusinessSettings) | has(ReviewSite) | has(Contact))
        .exclude(Exists(Location.objects.using(db).filter(account_id=OuterRef("pk"))))
        .order_by("pk")
        .values_list("pk", "business_name", "email", "time_zone")
    )
    created = attached = 0
    last = None
    while True:
        batch = list((owners.filter(pk__gt=last) if last is not None else owners)[:BATCH])
        if not batch:
            break
        last = batch[-1][0]
        Location.objects.using(db).bulk_create(
            Location(
                account_id=pk,
                name=((name or "").strip() or email)[:100],
                time_zone=time_zone,
                position=0,
            )
            for pk, name, email, time_zone in batch
        )
        created += len(batch)
        first = Location.objects.using(db).filter(account_id=OuterRef("owner_id"))
        attached += (
            ReviewSite.objects.using(db)
            .filter(owner_id__in=[pk for pk, *_ in batch], location__isnull=True)
            .update(location=Subquery(first.order_by("position", "created_at").values("pk")[:1]))
        )
    print(f"\n  Locations created: {created}; review sites attached: {attached}.")


def locations_remove(apps, schema_editor):
    Location = apps.get_model("accounts", "Location")
    ReviewRequest = apps.get_model("reviews", "ReviewRequest")
    ReviewSite = apps.get_model("reviews", "ReviewSite")
    MessageTemplate = apps.get_model("reviews", "MessageTemplate")
    db = schema_editor.connection.alias
    doubled = (
        ReviewRequest.objects.using(db)
        .filter(status__in=ACTIVE_STATUSES)
        .values("contact_id")
        .annotate(n=Count("pk"))
        .filter(n__gt=1)
    )
    if doubled.exists():
        raise RuntimeError(
            f"{doubled.count()} contact(s) have active review requests at two locations; the "
            "previous release allows one per contact: cancel one of each first."
        )
    ReviewRequest.objects.using(db).filter(location__isnull=False).update(location=None)
    MessageTemplate.objects.using(db).filter(location__isnull=False).delete()
    seen = set()
    for pk, owner_id, url in (
        ReviewSite.objects.using(db)
        .order_by("owner_id", "location__position", "position", "created_at")
        .values_list("pk", "owner_id", "url")
    ):
        if (owner_id, url) in seen:
            ReviewSite.objects.using(db).filter(pk=pk).delete()
        seen.add((owner_id, url))
    ReviewSite.objects.using(db).filter(location__isnull=False).update(location=None)
    Location.objects.using(db).all().delete()


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0002_teams_and_locations"),
        ("reviews", "0015_location_request_indexes"),
    ]

    operations = [
        migrations.RunPython(locations_create, locations_remove, elidable=False),
    ]
