"""The business owner. Every OAuth token and every contact belongs to one."""

from __future__ import annotations

import uuid
import zoneinfo
from typing import Any, ClassVar

from django.contrib.auth.base_user import AbstractBaseUser, BaseUserManager
from django.contrib.auth.models import PermissionsMixin
from django.db import models
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
