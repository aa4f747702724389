"""The account (its owner, the ``User`` every business row is keyed by), its locations and its
members, and the invitations that bring members in.

An account is its owner: ``User`` rows with no ``account`` (``role`` owner). A member is a
``User`` pointing at the owner (``account``), a manager or a viewer of some of its
``locations``; who reaches what is one rule, in ``accounts.access``. A ``Location`` is one place
of the business (name, time zone, position); the first by ``position`` is the account's
default, and a row of another app with no location (a NULL) belongs to it.
"""

from __future__ import annotations

import uuid
import zoneinfo
from datetime import timedelta
from typing import Any, ClassVar

from django.contrib.auth.base_user import AbstractBaseUser, BaseUserManager
from django.contrib.auth.models import PermissionsMixin
from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower
from django.utils import timezone

from .validators import validate_region, validate_time_zone


class UserManager(BaseUserManager["User"]):
    use_in_migrations = True

    @classmethod
    def normalize_email(cls, email: str | None) -> str:
        # The whole address, not just the domain: e-mail is the login and must be unique
        # regardless of how the owner typed it.
        return (email or "").strip().lower()

    def with_email(self, email: str | None) -> models.QuerySet[User]:
        """The users with this e-mail, however it was typed (at most one)."""
        return self.filter(email__iexact=self.normalize_email(email))

    def get_by_natural_key(self, username: str | None) -> User:
        return self.with_email(username).get()

    def _create_user(self, email: str, password: str | None, **extra: Any) -> User:
        if not email:
            raise ValueError("An e-mail address is required")
        user = self.model(email=self.normalize_email(email), **extra)
        user.set_password(password)
        user.full_clean(exclude=["password"])
        user.save(using=self._db)
        return user

    def create_user(self, email: str, password: str | None = None, **extra: Any) -> User:
        extra.setdefault("is_staff", False)
        extra.setdefault("is_superuser", False)
        return self._create_user(email, password, **extra)

    def create_superuser(self, email: str, password: str | None = None, **extra: Any) -> User:
        extra.setdefault("is_staff", True)
        extra.setdefault("is_superuser", True)
        if not extra["is_staff"] or not extra["is_superuser"]:
            raise ValueError("A superuser needs is_staff and is_superuser")
        return self._create_user(email, password, **extra)


class Role(models.TextChoices):
    OWNER = "owner", "Owner"  # every location, the members, the settings, connected apps
    MANAGER = "manager", "Manager"  # their locations: requests, contacts, feedback, wording, sites
    VIEWER = "viewer", "Viewer"  # their locations, read only


MEMBER_ROLES = (Role.MANAGER, Role.VIEWER)


class User(AbstractBaseUser, PermissionsMixin):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    email = models.EmailField("e-mail address", max_length=254, unique=True)
    business_name = models.CharField(max_length=200, blank=True)
    time_zone = models.CharField(
        max_length=64,
        default="UTC",
        validators=[validate_time_zone],
        help_text="IANA time zone of the business, e.g. America/New_York.",
    )
    default_region = models.CharField(
        max_length=2,
        default="US",
        validators=[validate_region],
        help_text="Region used to read phone numbers written without a country code, e.g. US.",
    )
    is_staff = models.BooleanField(
        default=False, help_text="Designates whether the user can log into the admin site."
    )
    is_active = models.BooleanField(default=True)
    date_joined = models.DateTimeField(default=timezone.now)
    # The team. NULL for an owner (the account itself); a member points at the owner, and goes
    # with the account.
    account = models.ForeignKey(
        "self",
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="members",
        help_text="The account (its owner) this member belongs to; empty for an owner.",
    )
    # db_default: a release without this column's code still inserts owners during a deploy.
    role = models.CharField(
        max_length=10, choices=Role.choices, default=Role.OWNER, db_default=Role.OWNER
    )
    locations: models.ManyToManyField[Location, Any] = models.ManyToManyField(
        "Location",
        blank=True,
        related_name="members",
        help_text="A manager's or viewer's locations (an owner reaches every location).",
    )

    objects = UserManager()

    EMAIL_FIELD = "email"
    USERNAME_FIELD = "email"
    # Nothing beyond the e-mail and password: staff (createsuperuser) have no business, and
    # owners get their business name from create_business or the admin.
    REQUIRED_FIELDS: ClassVar[list[str]] = []

    class Meta:
        ordering = ["email"]
        constraints = [
            # Belt and braces: the manager lower-cases, the database refuses case variants.
            models.UniqueConstraint(Lower("email"), name="accounts_user_email_ci_unique"),
            # An owner is an account; a member belongs to one.
            models.CheckConstraint(
                condition=(Q(role=Role.OWNER) & Q(account__isnull=True))
                | (Q(role__in=MEMBER_ROLES) & Q(account__isnull=False)),
                name="accounts_user_owner_xor_member",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.business_name} <{self.email}>" if self.business_name else self.email

    def clean(self) -> None:
        super().clean()
        self.email = type(self).objects.normalize_email(self.email)
        if self.default_region:
            self.default_region = self.default_region.upper()

    @property
    def tzinfo(self) -> zoneinfo.ZoneInfo:
        return zoneinfo.ZoneInfo(self.time_zone)

    @property
    def display_name(self) -> str:
        return self.business_name or self.email

    @property
    def account_id_or_own(self) -> uuid.UUID:
        """The id of the account this user acts in: the owner's own, or a member's owner's."""
        return self.account_id or self.pk

    @property
    def is_member(self) -> bool:
        return self.account_id is not None


class Location(models.Model):
    """One place of a business: its name, time zone and place in the account's list.

    The first by ``position`` is the account's default location: a review request, review site
    or other row with no location belongs to it (rows written before locations existed, or by a
    release without them during a deploy). What a location sends (its review sites, sender
    name, postal address, sending window, wording) lives with the reviews app, which falls back
    to the account's for what a location leaves unset.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey(  # indexed by accounts_location_account_name_unique
        User, on_delete=models.CASCADE, related_name="account_locations", db_index=False
    )
    name = models.CharField(max_length=100)
    time_zone = models.CharField(
        max_length=64,
        validators=[validate_time_zone],
        help_text="IANA time zone of the location, e.g. America/New_York.",
    )
    position = models.PositiveSmallIntegerField(
        default=0, help_text="Order in the account's list; the first is the default location."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["account", "position", "created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["account", "name"], name="accounts_location_account_name_unique"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        super().clean()
        self.name = " ".join((self.name or "").split())

    @property
    def tzinfo(self) -> zoneinfo.ZoneInfo:
        return zoneinfo.ZoneInfo(self.time_zone)

    @staticmethod
    def default_name(account: User) -> str:
        """The name of an account's first location: the business's, else the login."""
        return (account.business_name.strip() or account.email)[:100]


class Invitation(models.Model):
    """An owner's invitation of a manager or viewer, by e-mail. The link
    (``services.invitation_url``) carries a signature of the id and works once, for
    ``VALID_FOR`` after ``created_at``; inviting the address again replaces it."""

    VALID_FOR = timedelta(days=7)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account = models.ForeignKey(  # indexed by accounts_invitation_account_email_unique
        User, on_delete=models.CASCADE, related_name="invitations", db_index=False
    )
    email = models.EmailField("e-mail address", max_length=254)
    role = models.CharField(max_length=10, choices=[(r.value, r.label) for r in MEMBER_ROLES])
    locations = models.ManyToManyField(Location, blank=True, related_name="invitations")
    invited_by = models.ForeignKey(
        User, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    accepted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["account", "-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["account", "email"], name="accounts_invitation_account_email_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"Invitation of {self.email} ({self.role})"

    @property
    def expires_at(self):
        return self.created_at + self.VALID_FOR

    def expired(self, *, now=None) -> bool:
        return (now or timezone.now()) >= self.expires_at
