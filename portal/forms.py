"""Forms of the owner portal: they parse input; the models' ``full_clean()`` (run by the services)
has the last word, and its errors are shown next to the same-named fields."""

from __future__ import annotations

import re
import zoneinfo
from functools import cache
from typing import Any

import phonenumbers
from django import forms
from django.core.exceptions import ValidationError
from django.db.models import Field, Model

from accounts.models import MEMBER_ROLES, Location, User
from contact_input.normalize import MAX_DELAY_HOURS
from reviews.models import (
    MAX_FOLLOW_UPS,
    BusinessSettings,
    LocationSettings,
    MessageTemplate,
    ReviewRequest,
)

from .selectors import DEFAULT_PERIOD, PERIODS, SEARCH_MAX_LENGTH


class PortalForm(forms.Form):
    label_suffix = ""

    def add_service_error(self, error: ValidationError) -> None:
        """Show a service's ``ValidationError`` next to the fields it names (or above the form
        for anything else)."""
        if not hasattr(error, "error_dict"):
            self.add_error(None, error)
            return
        for name, messages in error.message_dict.items():
            self.add_error(name if name in self.fields else None, messages)


# --- Dashboard ------------------------------------------------------------------------------------


class RequestFilterForm(PortalForm):
    q = forms.CharField(
        label="Search",
        required=False,
        max_length=SEARCH_MAX_LENGTH,
        help_text="Name, e-mail or phone number",
        widget=forms.TextInput(attrs={"type": "search", "autocomplete": "off"}),
    )
    status = forms.ChoiceField(
        label="Status",
        required=False,
        choices=[("", "All statuses"), *ReviewRequest.Status.choices],
    )
    period = forms.ChoiceField(
        label="Numbers for",
        required=False,
        choices=[(key, label) for key, (label, _) in PERIODS.items()],
    )

    def values(self) -> dict[str, str]:
        """The filters to apply; anything invalid (a tampered URL) falls back to no filter."""
        self.is_valid()
        cleaned = getattr(self, "cleaned_data", {})
        return {
            "q": cleaned.get("q", "") if "q" not in self.errors else "",
            "status": cleaned.get("status", "") if "status" not in self.errors else "",
            "period": (cleaned.get("period") if "period" not in self.errors else "")
            or DEFAULT_PERIOD,
        }


# --- Business settings ----------------------------------------------------------------------------


Choice = tuple[str, str]  # (value, label)
ChoiceGroup = tuple[str, list[Choice]]  # (group label, its choices): an <optgroup>


@cache
def time_zone_groups() -> list[ChoiceGroup]:
    """Canonical IANA zones (Region/City), grouped by region as a <select> shows them."""
    zones = sorted(
        z
        for z in zoneinfo.available_timezones()
        if "/" in z and not z.startswith(("Etc/", "SystemV/", "US/", "posix/", "right/"))
    )
    groups: dict[str, list[Choice]] = {}
    for zone in zones:
        region = zone.partition("/")[0]
        groups.setdefault(region, []).append((zone, zone.replace("_", " ")))
    return list(groups.items())


@cache
def time_zone_choices() -> list[Choice | ChoiceGroup]:
    """UTC, then the canonical zones grouped by region."""
    return [("UTC", "UTC"), *time_zone_groups()]


@cache
def region_choices() -> list[tuple[str, str]]:
    return [
        (code, f"{code} (+{phonenumbers.country_code_for_region(code)})")
        for code in sorted(phonenumbers.SUPPORTED_REGIONS)
    ]


_OFFSET = re.compile(r"^(\d{1,5})\s*([dh]?)$")


class FollowUpOffsetsField(forms.CharField):
    """Follow-up times as people write them: days, comma-separated ("3, 7"), or hours with an
    ``h`` ("36h"); stored as whole hours after the first message (``[72, 168]``)."""

    def to_python(self, value: Any) -> list[int]:  # type: ignore[override]  # hours, not text
        text = (super().to_python(value) or "").strip()
        if not text:
            return []
        hours = []
        for part in (p.strip().lower() for p in text.split(",")):
            match = _OFFSET.match(part.replace("days", "d").replace("day", "d"))
            if not match:
                raise ValidationError(
                    "Write days separated by commas, e.g. 3, 7 (or hours with h, e.g. 36h).",
                    code="invalid",
                )
            number, unit = int(match[1]), match[2] or "d"
            hours.append(number if unit == "h" else number * 24)
        return hours

    def prepare_value(self, value: Any) -> str:
        if isinstance(value, list):
            return ", ".join(str(h // 24) if h % 24 == 0 else f"{h}h" for h in value)
        return value or ""


def _help(model: type[Model], name: str) -> str:
    """The model field's help text, so that the form says what the model does."""
    field = model._meta.get_field(name)
    assert isinstance(field, Field)  # a field of the model's own, not a reverse relation
    return str(field.help_text)


class BusinessSettingsForm(PortalForm):
    """The owner's profile and sending policy; names are the model fields', so the models'
    validation errors land next to the right input."""

    business_name = forms.CharField(
        label="Business name",
        max_length=200,
        help_text="Named in every SMS and e-mail, and on your review page.",
        widget=forms.TextInput(attrs={"autocomplete": "organization"}),
    )
    sender_name = forms.CharField(
        label="E-mail sender name",
        max_length=100,
        required=False,
        help_text=_help(BusinessSettings, "sender_name"),
    )
    postal_address = forms.CharField(
        label="Postal address",
        max_length=300,
        required=False,
        help_text=_help(BusinessSettings, "postal_address"),
        widget=forms.Textarea(attrs={"rows": 3, "autocomplete": "street-address"}),
    )
    time_zone = forms.ChoiceField(
        label="Time zone",
        help_text="Your business's clock: quiet hours fall back to it when a contact's phone "
        "number says nothing about theirs.",
    )
    default_region = forms.ChoiceField(
        label="Phone numbers without a country code are from",
        help_text="Country code used to read numbers such as (415) 555-2671.",
    )
    initial_channel = forms.ChoiceField(
        label="First message",
        choices=BusinessSettings.InitialChannel.choices,
        widget=forms.RadioSelect,
    )
    default_delay_hours = forms.IntegerField(
        label="Wait before the first message (hours)",
        min_value=0,
        max_value=MAX_DELAY_HOURS,
        help_text="When your app does not say how long to wait, e.g. 2 to ask once the job "
        "is done. 0: right away (within quiet hours).",
    )
    follow_up_offsets_hours = FollowUpOffsetsField(
        label="Follow-ups",
        required=False,
        max_length=100,
        help_text=f"Days after the first message, separated by commas, e.g. 3, 7 (hours with "
        f"h, e.g. 36h). At most {MAX_FOLLOW_UPS}; empty for none. They stop as soon as the "
        "contact clicks or opts out. Changes apply to requests added from now on.",
    )
    follow_up_other_channel = forms.BooleanField(
        label="Send follow-ups by the other channel",
        required=False,
        help_text=_help(BusinessSettings, "follow_up_other_channel"),
    )
    cooldown_days = forms.IntegerField(
        label="Do not ask the same person again for (days)",
        min_value=0,
        max_value=3650,
        help_text=_help(BusinessSettings, "cooldown_days"),
    )
    send_window_start = forms.TimeField(
        label="Send from",
        widget=forms.TimeInput(attrs={"type": "time"}, format="%H:%M"),
        help_text="Quiet hours: messages wait for this window, on the contact's clock.",
    )
    send_window_end = forms.TimeField(
        label="Send until",
        widget=forms.TimeInput(attrs={"type": "time"}, format="%H:%M"),
        help_text="An end before the start spans midnight.",
    )
    send_window_applies_to = forms.ChoiceField(
        label="Quiet hours apply to",
        choices=BusinessSettings.WindowAppliesTo.choices,
    )

    notify_feedback = forms.BooleanField(
        label="E-mail me when a contact leaves private feedback",
        required=False,
        help_text="Every private feedback is also listed on the Feedback page.",
    )

    def __init__(self, *args: Any, current_time_zone: str = "UTC", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        zones = time_zone_choices()
        known = {z for _, group in time_zone_groups() for z, _ in group} | {"UTC"}
        if current_time_zone not in known:  # a legacy name set by staff stays selectable
            zones = [(current_time_zone, current_time_zone), *zones]
        time_zone, region = self.fields["time_zone"], self.fields["default_region"]
        assert isinstance(time_zone, forms.ChoiceField) and isinstance(region, forms.ChoiceField)
        time_zone.choices = zones
        region.choices = region_choices()

    @staticmethod
    def initial_for(owner: User, policy: BusinessSettings) -> dict[str, object]:
        initial = {
            name: getattr(owner, name) for name in ("business_name", "time_zone", "default_region")
        }
        for name in BusinessSettingsForm.base_fields:
            if name not in initial:
                initial[name] = getattr(policy, name)
        return initial


class LocationSettingsForm(PortalForm):
    """What one location sends differently from the account; blank: the account's (shown as
    each field's placeholder). Names are ``LocationSettings``' fields."""

    sender_name = forms.CharField(
        label="E-mail sender name",
        max_length=100,
        required=False,
        help_text=_help(LocationSettings, "sender_name"),
    )
    postal_address = forms.CharField(
        label="Postal address",
        max_length=300,
        required=False,
        help_text=_help(LocationSettings, "postal_address"),
        widget=forms.Textarea(attrs={"rows": 3, "autocomplete": "street-address"}),
    )
    send_window_start = forms.TimeField(
        label="Send from",
        required=False,
        widget=forms.TimeInput(attrs={"type": "time"}, format="%H:%M"),
        help_text="Its own quiet hours, on the contact's clock; empty: the account's.",
    )
    send_window_end = forms.TimeField(
        label="Send until",
        required=False,
        widget=forms.TimeInput(attrs={"type": "time"}, format="%H:%M"),
        help_text="An end before the start spans midnight.",
    )
    send_window_applies_to = forms.ChoiceField(
        label="Quiet hours apply to",
        required=False,
        choices=[("", "As the account"), *BusinessSettings.WindowAppliesTo.choices],
    )

    def __init__(self, *args: Any, account: BusinessSettings, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # What a blank field means, in the field itself.
        for name in ("sender_name", "postal_address"):
            fallback = getattr(account, name) or (
                account.owner.display_name if name == "sender_name" else ""
            )
            if fallback:
                self.fields[name].widget.attrs["placeholder"] = fallback

    @staticmethod
    def initial_for(own: LocationSettings | None) -> dict[str, object]:
        if own is None:
            return {}
        return {name: getattr(own, name) for name in LocationSettingsForm.base_fields}


# --- Review sites ---------------------------------------------------------------------------------


class ReviewSiteForm(PortalForm):
    url = forms.URLField(
        label="Review link",
        max_length=500,
        assume_scheme="https",
        help_text="The page where customers write a review, e.g. your Google review link "
        "(g.page/r/...). Yelp cannot be added: Yelp forbids asking for reviews.",
        widget=forms.URLInput(attrs={"placeholder": "https://g.page/r/.../review"}),
    )
    label = forms.CharField(
        label="Button text",
        max_length=80,
        required=False,
        help_text="Optional: we name Google, Facebook and Trustpilot links ourselves.",
    )


# --- Message wording ------------------------------------------------------------------------------


class MessageTemplateForm(PortalForm):
    subject = forms.CharField(
        label="Subject",
        max_length=200,
        required=False,
        help_text="Merge fields work here too.",
    )
    body = forms.CharField(
        label="Message",
        help_text=_help(MessageTemplate, "body"),
        widget=forms.Textarea(attrs={"rows": 8}),
        strip=False,
    )

    def __init__(self, *args: Any, channel: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if channel != "email":
            del self.fields["subject"]
            self.fields["body"].help_text = (
                "Plain text with merge fields (below). Name your business; "
                '"Reply STOP to opt out" is added when the text offers no way to stop.'
            )
            self.fields["body"].widget.attrs["rows"] = 5
        else:
            self.fields["subject"].required = True
            self.fields["body"].help_text = (
                "Plain text with merge fields (below); paragraphs are separated by an empty "
                "line. We add your address and an unsubscribe link at the bottom."
            )


# --- Team and locations ---------------------------------------------------------------------------


class LocationsField(forms.ModelMultipleChoiceField):
    """The account's locations, as checkboxes, each labelled with its name."""

    widget = forms.CheckboxSelectMultiple


ROLE_CHOICES = [
    (
        "manager",
        "Manager: sees and cancels requests, reads feedback, edits review sites and wording "
        "of their locations",
    ),
    ("viewer", "Viewer: sees everything of their locations, changes nothing"),
]
assert [value for value, _ in ROLE_CHOICES] == list(MEMBER_ROLES)


class MemberForm(PortalForm):
    """A member's role and locations (inviting adds the e-mail address)."""

    role = forms.ChoiceField(label="Role", choices=ROLE_CHOICES, widget=forms.RadioSelect)
    locations = LocationsField(
        label="Locations",
        queryset=Location.objects.none(),
        help_text="What they see and act on. The owner reaches every location.",
    )

    def __init__(self, *args: Any, account: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["locations"]
        assert isinstance(field, LocationsField)
        field.queryset = Location.objects.filter(account=account).order_by("position", "created_at")

    def location_ids(self) -> list[Any]:
        return [location.pk for location in self.cleaned_data["locations"]]


class InvitationForm(MemberForm):
    email = forms.EmailField(
        label="E-mail address",
        max_length=254,
        help_text="We e-mail them a link, valid for 7 days, to choose a password and join.",
        widget=forms.EmailInput(attrs={"autocomplete": "off"}),
    )
    field_order = ("email", "role", "locations")


class LocationForm(PortalForm):
    """A location's name and time zone; names are ``Location``'s fields."""

    name = forms.CharField(label="Name", max_length=100)
    time_zone = forms.ChoiceField(
        label="Time zone",
        help_text="Its clock: the times it shows, and quiet hours when a contact's phone number "
        "says nothing about theirs.",
    )

    def __init__(self, *args: Any, current_time_zone: str = "UTC", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        zones = time_zone_choices()
        known = {z for _, group in time_zone_groups() for z, _ in group} | {"UTC"}
        if current_time_zone not in known:
            zones = [(current_time_zone, current_time_zone), *zones]
        field = self.fields["time_zone"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = zones
