"""A location's public review sites (``ReviewSite``): where every review request sends people,
and whether a location lists any (no request leaves one that lists none)."""

from __future__ import annotations

import uuid
from collections.abc import Collection
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Exists, F, OuterRef, Q, Subquery
from django.db.models.lookups import Exact

from accounts.access import locations_q
from accounts.models import Location

from .locations import LocationPolicy, check_location, location_key


@dataclass(frozen=True)
class Unlisted:
    """The places that list no review site (``ReviewSite.unlisted``): those locations, and the
    accounts whose default location is one of them (their rows with no location are there)."""

    location_ids: frozenset[uuid.UUID]
    default_of: frozenset[uuid.UUID]

    def rows_q(self, *, owner: str = "owner", location: str = "location") -> Q:
        """The rows at these places (``owner`` and ``location``: the rows' paths to their
        account and location), as a condition on those two columns alone, which the requests'
        location index answers. Every place lists a site: it matches nothing, and Django runs
        no query for it."""
        return Q(**{f"{location}__in": sorted(self.location_ids)}) | Q(
            **{f"{location}__isnull": True, f"{owner}__in": sorted(self.default_of)}
        )


class ReviewSite(models.Model):
    """One public review site of a location. Every contact sees every site of the location
    their request is at, equally (no location: the account's default location).

    No gating on sentiment (Google policy, FTC 16 CFR 465, Trustpilot rules), and no Yelp:
    Yelp forbids soliciting reviews and demotes businesses that do.
    """

    class Kind(models.TextChoices):
        GOOGLE = "google", "Google"
        FACEBOOK = "facebook", "Facebook"
        TRUSTPILOT = "trustpilot", "Trustpilot"
        CUSTOM = "custom", "Other site"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(  # indexed by reviews_site_owner_location_url_unique
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="review_sites",
        db_index=False,
    )
    # NULL: the account's default location (a site added by a release without locations).
    location = models.ForeignKey(
        Location, on_delete=models.CASCADE, null=True, blank=True, related_name="review_sites"
    )
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.CUSTOM)
    label = models.CharField(max_length=80, help_text="Shown on the review page, e.g. Google.")
    url = models.URLField(max_length=500)
    position = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["owner", "position", "created_at"]
        constraints = [
            # A link once per location (two locations may share a brand's page).
            models.UniqueConstraint(
                "owner",
                location_key(),
                "url",
                name="reviews_site_owner_location_url_unique",
                violation_error_message="A review site with this link already exists at this "
                "location.",  # ReviewSite.DUPLICATE
            ),
        ]

    def __str__(self) -> str:
        return f"{self.label}: {self.url}"

    def clean(self) -> None:
        super().clean()
        if self.url and ReviewSite.kind_for_url(self.url) is None:
            raise ValidationError({"url": "Yelp does not allow asking customers for reviews."})
        check_location(self)
        if self.url and self.owner_id is not None and self._listed_at_its_location():
            raise ValidationError({"url": self.DUPLICATE})

    DUPLICATE = "A review site with this link already exists at this location."

    def _listed_at_its_location(self) -> bool:
        """Whether another site of the owner with this link is at this site's location (no
        location, on either: the default location's), which the unique constraint, comparing
        NULL as a location of its own, does not see."""
        order = list(
            Location.objects.filter(account_id=self.owner_id)
            .order_by("position", "created_at")
            .values_list("pk", flat=True)[:1]
        )
        default = order[0] if order else None
        place = self.location_id or default
        same = (
            locations_q([place], default_location_id=default, field="location")
            if place is not None
            else Q(location__isnull=True)
        )
        others = ReviewSite.objects.filter(same, owner_id=self.owner_id, url=self.url)
        return others.exclude(pk=self.pk).exists()

    @staticmethod
    def listed_by(owner_id: uuid.UUID) -> bool:
        """Whether the business lists at least one review site, at any location."""
        return ReviewSite.objects.filter(owner_id=owner_id).exists()

    @staticmethod
    def of_location(owner_id: uuid.UUID, location: LocationPolicy | None) -> models.QuerySet:
        """The sites of ``location`` (``None``: the account has no location yet, so all of
        them), in their order."""
        sites = ReviewSite.objects.filter(owner_id=owner_id)
        if location is not None:
            sites = sites.filter(location.rows_q())
        return sites.order_by("position", "created_at")

    @staticmethod
    def listed_at(owner_id: uuid.UUID, location: LocationPolicy | None) -> bool:
        """Whether ``location`` lists at least one review site: no review request or follow-up
        of it goes out before it does (``Message.hold_reason``)."""
        return ReviewSite.of_location(owner_id, location).exists()

    @staticmethod
    def unlisted(accounts: Collection[uuid.UUID] | None = None) -> Unlisted:
        """Where no review site is listed, among the locations of ``accounts`` (``None``: of
        every account): the locations that list none (no site at them and, for an account's
        default location, none with no location either), in one query over the locations.
        ``Unlisted.rows_q`` is then the rows at those places (a row with no location: at its
        account's default). The rule of ``listed_at``, for many rows at once: the admin's
        waiting filter and status."""
        first = Location.objects.filter(account=OuterRef("account")).order_by(
            "position", "created_at"
        )
        own_site = ReviewSite.objects.filter(location=OuterRef("pk"))
        unplaced_site = ReviewSite.objects.filter(owner=OuterRef("account"), location=None)
        places = (
            Location.objects.annotate(is_default=Exact(F("pk"), Subquery(first.values("pk")[:1])))
            .exclude(Q(Exists(own_site)) | Q(Exists(unplaced_site), is_default=True))
            .values_list("pk", "account_id", "is_default")
        )
        if accounts is not None:
            places = places.filter(account__in=sorted(accounts))
        rows = list(places)
        return Unlisted(
            location_ids=frozenset(pk for pk, _, _ in rows),
            default_of=frozenset(account for _, account, is_default in rows if is_default),
        )

    @staticmethod
    def kind_for_url(url: str) -> str | None:
        """The site kind a URL points at; None for sites we must never solicit (Yelp)."""
        host = (urlsplit(url).hostname or "").lower()
        labels = host.split(".")
        if "yelp" in labels:
            return None
        if "google" in labels or host in {"g.page", "goo.gl", "maps.app.goo.gl", "g.co"}:
            return ReviewSite.Kind.GOOGLE
        if host.endswith(("facebook.com", "fb.com", "fb.me")):
            return ReviewSite.Kind.FACEBOOK
        if host.endswith("trustpilot.com"):
            return ReviewSite.Kind.TRUSTPILOT
        return ReviewSite.Kind.CUSTOM
