"""Contact input: the fields the service accepts and one set of parsing rules for every entry point.

The connector API and the CSV import parse raw values with ``clean_contact_input`` and hand
the result to ``reviews.services.contact_add``, which takes nothing else: so an e-mail address, a
phone number or a delay is read the same way wherever it came from. ``CONTACT_FIELDS`` is the
single list of accepted keys; the API's input serializer and its ``/fields`` endpoint are built
from it, so what the endpoint documents and what it accepts cannot drift apart.

Every function here is pure (no database) and raises ``django.core.exceptions.ValidationError``
with a message a person can act on.
"""

from __future__ import annotations

import enum
import ipaddress
import json
import math
import re
import unicodedata
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import idna
import phonenumbers
from django.core.exceptions import ValidationError
from django.core.validators import EmailValidator

from .region_names import REGION_NAMES

MAX_NAME_LENGTH = 100
MAX_COMPANY_LENGTH = 200
MAX_EMAIL_LENGTH = 254  # RFC 5321 path limit; also Django's EmailField default
MAX_PHONE_INPUT_LENGTH = 32  # what a person may type, spaces and punctuation included
MAX_DELAY_HOURS = 8760  # one year
MAX_METADATA_BYTES = 16 * 1024  # UTF-8 size of the compact JSON
MAX_METADATA_DEPTH = 10


class FieldKind(enum.StrEnum):
    TEXT = "text"
    EMAIL = "email"
    PHONE = "phone"
    HOURS = "hours"
    OBJECT = "object"


@dataclass(frozen=True)
class ContactField:
    """One accepted input key, described for people (labels, help) and for parsers (kind)."""

    key: str
    label: str
    kind: FieldKind
    help_text: str
    placeholder: str = ""
    max_length: int | None = None


NEED_EMAIL_OR_PHONE = "Give an e-mail address or a mobile phone number (or both)."

CONTACT_FIELDS: tuple[ContactField, ...] = (
    ContactField(
        "first_name",
        "First name",
        FieldKind.TEXT,
        "The contact's first name, used to greet them.",
        "Jane",
        MAX_NAME_LENGTH,
    ),
    ContactField(
        "last_name",
        "Last name",
        FieldKind.TEXT,
        "The contact's last name.",
        "Smith",
        MAX_NAME_LENGTH,
    ),
    ContactField(
        "email",
        "E-mail",
        FieldKind.EMAIL,
        "E-mail address for the review request. An e-mail or a mobile phone number is "
        "required; give both to let follow-ups use the other channel. A contact with the same "
        "e-mail is updated, not duplicated.",
        "jane@example.com",
        MAX_EMAIL_LENGTH,
    ),
    ContactField(
        "mobile_phone_number",
        "Mobile phone number",
        FieldKind.PHONE,
        "Mobile number for an SMS request. E.164 (+14155552671) is best; national formats "
        "such as (415) 555-2671 are read with the business's default country. An e-mail or a "
        "mobile phone number is required. A contact with the same number is updated, not "
        "duplicated.",
        "+14155552671",
        MAX_PHONE_INPUT_LENGTH,
    ),
    ContactField(
        "company_name",
        "Company name",
        FieldKind.TEXT,
        "The contact's company, if any.",
        "Acme Inc.",
        MAX_COMPANY_LENGTH,
    ),
    ContactField(
        "delay_hours",
        "Delay (hours)",
        FieldKind.HOURS,
        f"Whole hours to wait before sending, from 0 to {MAX_DELAY_HOURS} (one year). SMS "
        "that would arrive at night wait for the next morning in the contact's time zone.",
        "24",
    ),
    ContactField(
        "metadata",
        "Metadata",
        FieldKind.OBJECT,
        "Your own key/value data about where the contact came from (e.g. order id). "
        "Kept with the contact and merged on later updates; at most 16 KB.",
    ),
)
CONTACT_FIELD_KEYS: frozenset[str] = frozenset(f.key for f in CONTACT_FIELDS)
_FIELDS_BY_KEY = {f.key: f for f in CONTACT_FIELDS}


@dataclass(frozen=True)
class ContactInput:
    """Clean, normalised contact input. Empty strings mean "not given"."""

    first_name: str = ""
    last_name: str = ""
    company_name: str = ""
    email: str = ""  # as given (trimmed, NFC), for display and sending
    email_normalized: str = ""  # the dedup key
    phone: str = ""  # E.164
    delay_hours: int | None = None  # None: the business's default delay
    metadata: dict[str, Any] = field(default_factory=dict)


def clean_contact_input(data: Mapping[str, Any], *, default_region: str) -> ContactInput:
    """Parse raw input (unknown keys are ignored) or raise ``ValidationError`` naming each field.

    ``default_region`` (e.g. ``"US"``) reads phone numbers written without a country code.
    """
    errors: dict[str, list[str]] = {}
    values: dict[str, Any] = {}
    for spec in CONTACT_FIELDS:
        try:
            values[spec.key] = parse_field(
                spec.key, data.get(spec.key), default_region=default_region
            )
        except ValidationError as exc:
            errors[spec.key] = exc.messages

    email, email_key = values.get("email") or ("", "")
    phone = values.get("mobile_phone_number") or ""
    if not email and not phone and "email" not in errors and "mobile_phone_number" not in errors:
        errors["email"] = [NEED_EMAIL_OR_PHONE]
        errors["mobile_phone_number"] = [NEED_EMAIL_OR_PHONE]
    if errors:
        raise ValidationError(errors)
    return ContactInput(
        first_name=values["first_name"],
        last_name=values["last_name"],
        company_name=values["company_name"],
        email=email,
        email_normalized=email_key,
        phone=phone,
        delay_hours=values["delay_hours"],
        metadata=values["metadata"],
    )


def parse_field(key: str, value: Any, *, default_region: str) -> Any:
    """Parse one input value by its field's kind (``ValidationError`` if it is bad).

    E-mail gives ``(address, key)``; the others their clean value; "not given" is ``""``,
    ``None`` (delay) or ``{}`` (metadata).
    """
    spec = _FIELDS_BY_KEY[key]
    if spec.kind == FieldKind.TEXT:
        return clean_name(value, spec.max_length or 0)
    if spec.kind == FieldKind.EMAIL:
        return normalize_email(value)
    if spec.kind == FieldKind.PHONE:
        return normalize_phone(value, default_region)
    if spec.kind == FieldKind.HOURS:
        return parse_delay_hours(value)
    return parse_metadata(value)


# --- Single values --------------------------------------------------------------------------------


def clean_text(value: Any, max_length: int) -> str:
    """One line of text: NFC, whitespace runs collapsed to one space, no control characters.

    ``None`` and blank mean "not given" (``""``).
    """
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValidationError("Must be text.", code="invalid_type")
    if _has_surrogate(value):
        # Lone UTF-16 surrogates (JSON "\ud800") cannot be encoded as UTF-8 for the database.
        raise ValidationError("Must be valid Unicode text.", code="invalid_unicode")
    text = " ".join(unicodedata.normalize("NFC", value).split())
    if any(unicodedata.category(ch) == "Cc" for ch in text):
        # NUL in particular: PostgreSQL cannot store it in a text column.
        raise ValidationError("Must not contain control characters.", code="control_character")
    if len(text) > max_length:
        raise ValidationError(
            f"Must be at most {max_length} characters (got {len(text)}).", code="max_length"
        )
    return text


# Names and companies: control (Cc), format (Cf: bidi overrides such as U+202E, zero-width
# characters, the BOM) and private-use (Co) characters are invisible or reorder what is shown
# around them, in the portal, the admin and the messages that greet the person.
_NAME_DROPPED_CATEGORIES = frozenset({"Cc", "Cf", "Co"})


def clean_name(value: Any, max_length: int) -> str:
    """A name (first, last, company): NFKC, invisible characters dropped, one line.

    Control, format and private-use characters are removed (whitespace among them, such as a
    tab or a newline, counts as a space); runs of whitespace become one space; compatibility
    forms become their plain letters (NFKC: full-width Latin letters are plain ones). A name
    that is empty afterwards means "not given" (``""``), as a blank one does. Idempotent.
    """
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValidationError("Must be text.", code="invalid_type")
    if _has_surrogate(value):
        raise ValidationError("Must be valid Unicode text.", code="invalid_unicode")
    kept = "".join(
        " " if ch.isspace() else ch
        for ch in value
        if ch.isspace() or unicodedata.category(ch) not in _NAME_DROPPED_CATEGORIES
    )
    text = " ".join(unicodedata.normalize("NFKC", kept).split())
    if len(text) > max_length:
        raise ValidationError(
            f"Must be at most {max_length} characters (got {len(text)}).", code="max_length"
        )
    return text


# No domain allow-list: Django's default lets ``user@localhost`` through.
_email_validator = EmailValidator(message="Is not a valid e-mail address.", allowlist=[])


def normalize_email(value: Any) -> tuple[str, str]:
    """Return ``(address as given, dedup key)``, both ``""`` when not given.

    The address as given (trimmed, NFC) is what is shown and sent to. The key is the address
    as mail systems route it (``email_key``): ``x@bücher.de``, ``x@xn--bcher-kva.de`` and
    ``X@BÜCHER.DE`` are one mailbox, so one contact. No provider-specific rules (Gmail dots,
    plus-addressing): those are different mailboxes elsewhere, and merging two real people is
    worse than keeping one person twice. Idempotent: ``normalize_email(key)[1] == key``.

    Refused: anything Django's ``EmailValidator`` refuses, and addresses that cannot reach a
    mailbox on the internet: a domain that is an IP address (``user@[127.0.0.1]``), has no dot
    (``user@intranet``) or is ``localhost`` (or under it), and a domain that is not a valid
    internationalised domain name (IDNA 2008).
    """
    address = clean_text(value, MAX_EMAIL_LENGTH)
    if not address:
        return "", ""
    if " " in address:
        raise ValidationError("Is not a valid e-mail address.", code="invalid")
    _, domain, a_label = _email_parts(address)
    host = a_label if a_label is not None else domain.lower()
    if "@" in address and host:
        _check_public_domain(host)
    _email_validator(address)
    if a_label is None:
        raise ValidationError(
            "Is not a valid e-mail address (the domain is not a valid domain name).",
            code="invalid",
        )
    key = email_key(address)
    _email_validator(key)
    if len(key) > MAX_EMAIL_LENGTH:
        raise ValidationError(
            f"Must be at most {MAX_EMAIL_LENGTH} characters with its domain written in ASCII "
            f"(got {len(key)}).",
            code="max_length",
        )
    return address, key


def email_key(address: str) -> str:
    """The dedup key of an e-mail address: what mail systems see as one mailbox.

    NFKC on the whole address (``example.com`` typed in full-width letters is
    ``example.com``), the domain as its ASCII form (IDNA 2008 with the UTS 46 mapping:
    ``bücher.de`` is ``xn--bcher-kva.de``), everything lower case. Also applied to stored
    contacts by the migration that introduced it (``reviews/migrations/0005_email_key_idna.py``):
    a stored address whose domain IDNA refuses (accepted before this rule) keeps its domain
    lower-cased.
    """
    if not address.strip():
        return ""
    local, domain, a_label = _email_parts(address.strip())
    return f"{local.lower()}@{a_label if a_label is not None else domain.lower()}"


def email_search_text(text: str) -> str:
    """What a search term looks like inside stored e-mail keys (``email_key``): NFKC, lower
    case, and each non-ASCII dot-separated label in its ASCII (IDNA) form where IDNA takes it,
    so a search for ``bücher.de`` finds ``x@xn--bcher-kva.de``."""
    local, at, domain = unicodedata.normalize("NFKC", text).rpartition("@")
    labels = [_ascii_label(label) or label.lower() for label in domain.split(".")]
    return f"{local.lower()}{at}{'.'.join(labels)}"


def _email_parts(address: str) -> tuple[str, str, str | None]:
    """``(local part, domain, domain's A-label form or None if IDNA refuses it)``, after NFKC."""
    local, _, domain = unicodedata.normalize("NFKC", address).rpartition("@")
    labels = []
    for label in domain.split("."):
        ascii_label = _ascii_label(label)
        if ascii_label is None:
            return local, domain, None
        labels.append(ascii_label)
    return local, domain, ".".join(labels)


def _ascii_label(label: str) -> str | None:
    """One domain label in ASCII, lower case; ``None`` if IDNA refuses it."""
    if label.isascii():
        # ASCII labels as they are (lower-cased): IDNA 2008 would refuse some that DNS and
        # mail take, such as ``ab--cd``.
        return label.lower()
    try:
        return idna.encode(label, uts46=True).decode("ascii")
    except (idna.IDNAError, UnicodeError):
        return None


def _check_public_domain(host: str) -> None:
    """Refuse a domain that no mailbox on the internet has: an IP address (``[127.0.0.1]``,
    ``192.168.0.10``), ``localhost`` or a name under it, a name without a dot."""
    try:
        ipaddress.ip_address(host)
        is_ip = True
    except ValueError:
        is_ip = host.startswith("[")
    if is_ip:
        raise ValidationError(
            "Must have a domain name, not an IP address (e.g. jane@example.com).",
            code="ip_domain",
        )
    if host == "localhost" or host.endswith(".localhost") or "." not in host:
        raise ValidationError(
            "Must have a public domain with a dot, such as example.com "
            "(not localhost or a local network name).",
            code="private_domain",
        )


_LEADING_00 = re.compile(r"^\s*00\s*")


def normalize_phone(value: Any, default_region: str) -> str:
    """Return the number in E.164 (``+14155552671``), ``""`` when not given.

    Any format ``phonenumbers`` reads is accepted: national with the business's
    ``default_region`` (``(415) 555-2671``), international with ``+`` or the region's own
    international prefix (``011`` from the US), and ``00`` followed by a country code, the
    international prefix of most of the world (``001 415 555 2671``, ``0044 20 7946 0958``).
    The number must be valid (``is_valid_number``), not merely possible. An extension is dropped:
    an SMS cannot use one. Idempotent: ``normalize_phone(e164, any_region) == e164``.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        # A JSON number (spreadsheets and automation platforms send digits as numbers): its
        # digits, and only its digits; phonenumbers would skip a minus sign as punctuation.
        if value < 0:
            raise ValidationError(
                "Is not a valid phone number (a negative number).", code="invalid"
            )
        value = str(value)
    text = clean_text(value, MAX_PHONE_INPUT_LENGTH)
    if not text:
        return ""
    candidates = [text]
    if _LEADING_00.match(text):
        candidates.append(_LEADING_00.sub("+", text, count=1))
    international = None  # a number read with its own country code, but not valid
    for candidate in candidates:
        try:
            number = phonenumbers.parse(candidate, default_region)
        except phonenumbers.NumberParseException:
            continue
        if phonenumbers.is_valid_number(number):
            return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)
        if candidate.startswith("+") and international is None:
            international = number
    if international is not None and international.country_code is not None:
        # It has a country code, so the default region is beside the point: the digits after
        # it do not make a number in use there (e.g. +44 7700 900xxx, reserved for fiction).
        region = phonenumbers.region_code_for_country_code(international.country_code)
        raise ValidationError(
            f"Is not a valid phone number: +{international.country_code} is "
            f"{_region_name(region)}, and {international.national_number} is not a number in "
            "use there; check the digits.",
            code="invalid",
        )
    raise ValidationError(
        f"Is not a valid phone number (numbers without a country code are read as "
        f"{default_region}; use the +country code format, e.g. +14155552671).",
        code="invalid",
    )


def _region_name(region: str) -> str:
    """ "United Kingdom (GB)", falling back to the bare code."""
    if not region or region in ("ZZ", "001"):
        return "an international service code"
    name = REGION_NAMES.get(region, "")
    return f"{name} ({region})" if name else region


_DIGITS = re.compile(r"[0-9]{1,12}")


def parse_delay_hours(value: Any) -> int | None:
    """A whole number of hours from 0 to 8760, as a JSON integer or a string of digits.

    Automation platforms send numbers as strings, so ``"24"`` is accepted; ``1.5``, ``"1.5"``,
    ``-1``, ``true`` and words are not. ``None`` or blank means "not given" (the business's
    default delay applies).
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValidationError("Must be a whole number of hours, like 24.", code="invalid")
    if isinstance(value, int):
        hours = value
    elif isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        if not _DIGITS.fullmatch(text):
            raise ValidationError(
                "Must be a whole number of hours from 0 to 8760, like 24.", code="invalid"
            )
        hours = int(text)
    else:
        raise ValidationError("Must be a whole number of hours, like 24.", code="invalid")
    if hours < 0 or hours > MAX_DELAY_HOURS:
        raise ValidationError(
            f"Must be between 0 and {MAX_DELAY_HOURS} hours (one year).", code="out_of_range"
        )
    return hours


def parse_metadata(value: Any) -> dict[str, Any]:
    """A JSON object of at most 16 KB (compact UTF-8 JSON); ``None`` means ``{}``."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValidationError(
            'Must be a JSON object, e.g. {"order_id": "1001"}.', code="invalid_type"
        )
    _check_json_value(value, depth=0)
    size = metadata_size(value)
    if size > MAX_METADATA_BYTES:
        raise ValidationError(
            f"Must be at most 16 KB as JSON (got {size} bytes).", code="too_large"
        )
    return value


def metadata_size(value: Mapping[str, Any]) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def _check_json_value(value: Any, *, depth: int) -> None:
    """Only what PostgreSQL's jsonb stores: no NUL characters, no NaN/Infinity, bounded nesting."""
    if depth > MAX_METADATA_DEPTH:
        raise ValidationError(
            f"Must not nest deeper than {MAX_METADATA_DEPTH} levels.", code="too_deep"
        )
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValidationError("Keys must be text.", code="invalid_key")
            _check_json_text(key)
            _check_json_value(item, depth=depth + 1)
    elif isinstance(value, list):
        for item in value:
            _check_json_value(item, depth=depth + 1)
    elif isinstance(value, str):
        _check_json_text(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValidationError("Numbers must be finite.", code="invalid_number")
    elif value is not None and not isinstance(value, (bool, int)):
        raise ValidationError("Must contain only JSON values.", code="invalid_type")


def _check_json_text(value: str) -> None:
    if "\x00" in value:
        raise ValidationError("Must not contain NUL characters.", code="control_character")
    if _has_surrogate(value):
        raise ValidationError("Must be valid Unicode text.", code="invalid_unicode")


def _has_surrogate(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def is_uuid(value: Any) -> bool:
    """Whether ``value`` reads as a UUID, as a UUID primary key's lookup will read it (a
    string that only looks like one would make that lookup fail instead of find nothing)."""
    try:
        uuid.UUID(str(value))
    except (ValueError, TypeError, AttributeError):
        return False
    return True
