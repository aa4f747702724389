"""The dashboards' rollup: how many events of each kind happened per owner and per UTC hour.

Derived data, never the source of truth: ``activity.services`` fills it from the base tables
(requests, messages, opt-out events), counting each event in the hour of its own timestamp (a
request in the hour it was sent, clicked...), so an hour's counts stop changing once its events
are written. ``ActivityRollupState`` says which hours it holds; every other hour is read from
the base tables. Hourly UTC buckets serve every time zone whose offset is a whole number of
hours (the staff dashboard's ``TIME_ZONE``, most owners' zones); the readers
(``activity.selectors``) read the base tables for the others.

Each row counts one location of its owner (``location``; NULL: the account's default location,
as on the requests it counts: the rollup groups by the requests' own column, so a reader keeps a
location's rows with ``accounts.access.locations_q``, as it keeps its requests). Opt-out events
belong to the whole account (a contact is the account's, and its opt-out stops every location's
messages): their rows have no location, and every location's reads count them.
``ActivityAccountRollup`` and ``ActivityAccountDailyRollup`` hold the same hours and days summed
over the account's locations, for the reads of the whole account (an account with 20 locations
has 20 rows an hour where they have one).

The first three models came from the reviews app and keep its tables (``Meta.db_table``) and their
constraints' and indexes' names: the move (``migrations/0001_initial.py`` here, reviews'
migration 0013 there) changed Django's state only, nothing in the database.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from accounts.models import Location
from reviews.models import Channel, location_key


class RollupCounts(models.Model):
    """What every level of the rollup counts: one owner's events of one metric (with its
    channel and detail) in a period each level names (``hour``, ``day``)."""

    class Metric(models.TextChoices):
        # One per series of activity.selectors.DAILY_SERIES (requests, by their timestamp).
        SCHEDULED = "scheduled", "Requests scheduled"
        SENT = "sent", "Requests sent"
        DELIVERED = "delivered", "Requests delivered (a receipt, or a click)"
        CLICKED = "clicked", "Requests clicked"
        FAILED = "failed", "Requests failed"
        OPTED_OUT = "opted_out", "Requests opted out"
        # Messages that failed (channel; detail: the error code).
        MESSAGE_FAILED = "message_failed", "Messages failed"
        # Opt-out audit events (channel; detail: the source).
        OPT_OUT = "opt_out", "Opt-outs"

    id = models.BigAutoField(primary_key=True)
    owner = models.ForeignKey(  # indexed by each level's keys, which lead with it or its period
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    metric = models.CharField(max_length=20, choices=Metric.choices)
    channel = models.CharField(max_length=10, choices=Channel.choices, blank=True)
    detail = models.CharField(max_length=64, blank=True, help_text="Error code or source.")
    count = models.PositiveIntegerField()

    class Meta:
        abstract = True


class LocationRollupCounts(RollupCounts):
    """The counts of one location of the owner (the levels a location's dashboards read)."""

    # NULL: the account's default location (the requests' own value, never resolved: it follows
    # the default as theirs does; ``activity.services.activity_rollup_pin_default`` pins it
    # when the default changes). Indexed, where set, by each level's location index.
    location = models.ForeignKey(
        Location, on_delete=models.CASCADE, null=True, blank=True, related_name="+", db_index=False
    )

    class Meta:
        abstract = True


class ActivityRollup(LocationRollupCounts):
    hour = models.DateTimeField(help_text="The start of the UTC hour counted.")

    class Meta:
        db_table = "reviews_activityrollup"
        constraints = [
            # Everyone's hours (the staff dashboard) and a refresh's window: ranges of ``hour``.
            models.UniqueConstraint(
                F("hour"),
                F("owner"),
                F("metric"),
                F("channel"),
                F("detail"),
                location_key(),
                name="reviews_rollup_hour_location_unique",
            ),
        ]
        indexes = [
            # One owner's hours (the portal's chart, the staff dashboard of one business; of
            # its default location, whose rows are mostly NULL).
            models.Index(fields=["owner", "hour"], name="reviews_rollup_owner_hour"),
            # One location's hours (the dashboards of a location other than the default).
            models.Index(
                fields=["location", "hour"],
                condition=Q(location__isnull=False),
                name="reviews_rollup_location_hour",
            ),
        ]

    def __str__(self) -> str:
        return (
            f"{self.metric} {self.channel} {self.detail} at {self.hour:%Y-%m-%d %H}h: {self.count}"
        )


class ActivityDailyRollup(LocationRollupCounts):
    """``ActivityRollup``'s hours summed per owner and UTC day (same metrics, channels and
    details), for the totals of long periods (the portal's all-time funnel reads ~730 rows a
    metric for two years instead of ~17,500). Kept by the same refresh and rebuild, from the
    hourly rows: a day's rows hold the hours of it the rollup closed, so readers take whole
    days only up to the day ``closed_until`` falls in, and that day's hours from the hourly
    rows."""

    day = models.DateField(help_text="The UTC day counted.")

    class Meta:
        db_table = "reviews_activitydailyrollup"
        constraints = [
            # One owner's days (the portal's long periods): a range of ``day``.
            models.UniqueConstraint(
                F("owner"),
                F("day"),
                F("metric"),
                F("channel"),
                F("detail"),
                location_key(),
                name="reviews_rollup_day_location_unique",
            ),
        ]
        indexes = [
            # A refresh's window: its days, for every owner.
            models.Index(fields=["day"], name="reviews_rollup_day"),
            # One location's days (a location other than the default).
            models.Index(
                fields=["location", "day"],
                condition=Q(location__isnull=False),
                name="reviews_rollup_location_day",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.metric} {self.channel} {self.detail} on {self.day}: {self.count}"


class ActivityAccountRollup(RollupCounts):
    """``ActivityRollup``'s hours summed over every location of the account (same metrics,
    channels and details): what the whole account's reads take (the owner's dashboards with
    every location, the staff dashboard), one row where ``ActivityRollup`` has one per
    location (20 locations: a twentieth of the rows). Kept by the same refresh and rebuild,
    from the hourly rows of the same window, so it holds exactly the hours they hold."""

    hour = models.DateTimeField(help_text="The start of the UTC hour counted.")

    class Meta:
        constraints = [
            # One owner's hours (the portal's chart, the staff dashboard of one business).
            models.UniqueConstraint(
                fields=["owner", "hour", "metric", "channel", "detail"],
                name="activity_account_hour_unique",
            ),
        ]
        indexes = [
            # Everyone's hours (the staff dashboard) and a refresh's window.
            models.Index(fields=["hour"], name="activity_account_hour"),
        ]

    def __str__(self) -> str:
        return (
            f"{self.metric} {self.channel} {self.detail} at {self.hour:%Y-%m-%d %H}h: {self.count}"
        )


class ActivityAccountDailyRollup(RollupCounts):
    """``ActivityAccountRollup``'s hours summed per UTC day, as ``ActivityDailyRollup`` sums
    ``ActivityRollup``'s: the whole account's long periods (the all-time funnel: ~730 rows a
    metric for two years, whatever the number of locations)."""

    day = models.DateField(help_text="The UTC day counted.")

    class Meta:
        constraints = [
            # One owner's days: a range of ``day``.
            models.UniqueConstraint(
                fields=["owner", "day", "metric", "channel", "detail"],
                name="activity_account_day_unique",
            ),
        ]
        indexes = [
            # A refresh's window: its days, for every owner.
            models.Index(fields=["day"], name="activity_account_day"),
        ]

    def __str__(self) -> str:
        return f"{self.metric} {self.channel} {self.detail} on {self.day}: {self.count}"


class ActivityRollupState(models.Model):
    """One row (``key`` "activity"): the hours ``ActivityRollup`` holds, ``[covered_from,
    closed_until)`` (``covered_from`` None: since the first event). Locked by each refresh.

    ``backfill_to``: the hours from it to ``covered_from`` are still to be re-derived, each
    refresh taking the newest of them (``activity.services``); None: nothing to re-derive. Set
    by the migration that gave the rollup its locations (0002) on the hours rolled up before
    it, which counted every location under NULL."""

    key = models.CharField(max_length=20, primary_key=True)
    covered_from = models.DateTimeField(null=True, blank=True)
    closed_until = models.DateTimeField()
    refreshed_at = models.DateTimeField()
    backfill_to = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "reviews_activityrollupstate"

    def __str__(self) -> str:
        return f"{self.key}: {self.covered_from or 'start'} to {self.closed_until}"
