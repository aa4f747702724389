"""Raw contact fields parsed as every caller of ``reviews.services.contact_add`` parses them
first: ``clean_contact_input`` with the owner's default region (the API's serializer, the CSV
import). Tests then call the real service with what this returns. ``csv_bytes``: the lines of
a CSV file as an upload holds them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from accounts.models import User
from contact_input.normalize import ContactInput, clean_contact_input


def contact_input(owner: User, data: Mapping[str, Any]) -> ContactInput:
    """``data`` (raw values, as a request body or a CSV row holds them) parsed for ``owner``;
    ``ValidationError`` naming each bad field, as the API answers it."""
    return clean_contact_input(data, default_region=owner.default_region)


def csv_bytes(*lines: str) -> bytes:
    return ("\n".join(lines) + "\n").encode()
