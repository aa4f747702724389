"""The services' result types (reviews.services): every result, outcome and reason a service
returns is a ``StrEnum`` whose values are the strings logs, metrics, stored rows and command output
carry: pinned here, byte for byte."""

from __future__ import annotations

import enum
import json

import pytest

from events.services import DeliveryResult
from reviews.click_filter import IgnoredReason
from reviews.services import (
    ContactAddOutcome,
    ProviderEventResult,
    ProviderOutcome,
    SendResult,
)

VALUES = {
    ContactAddOutcome: ["scheduled", "already_active", "cooldown", "opted_out"],
    SendResult: ["skipped", "sent", "failed", "retry", "unknown", "cancelled", "held"],
    ProviderOutcome: ["accepted", "delivered", "failed"],
    ProviderEventResult: [
        "sent",
        "delivered",
        "failed",
        "opted_out",
        "unchanged",
        "ignored",
        "not_found",
        "lookup_failed",
        "still_unknown",
    ],
    IgnoredReason: ["head_request", "no_user_agent", "scanner_user_agent", "too_soon_after_send"],
    DeliveryResult: ["delivered", "retried", "failed", "removed", "skipped"],
}


@pytest.mark.parametrize("kind", list(VALUES), ids=lambda kind: kind.__name__)
def test_result_types_are_string_enums_with_their_wire_values(kind):
    assert issubclass(kind, enum.StrEnum)
    assert [member.value for member in kind] == VALUES[kind]
    for member in kind:
        assert member == member.value
        assert (str(member), f"{member}", json.dumps(member)) == (
            member.value,
            member.value,
            f'"{member.value}"',
        )
