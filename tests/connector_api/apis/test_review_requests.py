"""POST /api/<platform>/send-review-request through HTTP with real bearer tokens, and GET
.../send-review-request/fields: Zapier input fields for every key the send endpoint accepts."""

from __future__ import annotations

import json
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

import jsonschema
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from contact_input.normalize import CONTACT_FIELD_KEYS
from reviews.models import BusinessSettings, Contact, ReviewRequest
from reviews.services import (
    messages_dispatch_due,
)
from tests.support.delivery import step
from tests.support.oauth import issue_tokens

pytestmark = pytest.mark.django_db

URL = "/api/zapier/send-review-request"
NOON_IN_NEW_YORK = datetime(2026, 6, 10, 16, 0, tzinfo=UTC)
BODY_KEYS = {
    "id",
    "contact_id",
    "contact_name",
    "contact_email",
    "contact_phone",
    "scheduled_for",
    "status",
    "message",
    "location_id",
    "location_name",
}


@pytest.fixture
def now(time_machine):
    time_machine.move_to(NOON_IN_NEW_YORK, tick=False)
    return NOON_IN_NEW_YORK


def post(client, body, **extra):
    return client.post(URL, body, format="json", **extra)


def assert_invalid(response, *fields: str) -> dict:
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["error"] == "invalid_request"
    assert set(body["fields"]) == set(fields)
    for name in fields:
        assert f"{name}:" in body["error_description"]
    return body


# --- success --------------------------------------------------------------------------------------


def test_new_contact_answers_201_with_exactly_the_spec_fields(api, now):
    response = post(
        api,
        {
            "first_name": "Jane",
            "last_name": "Smith",
            "email": "jane@example.com",
            "mobile_phone_number": "(415) 555-2671",
            "company_name": "Acme",
            "delay_hours": 0,
            "metadata": {"source": "shopify"},
        },
    )
    assert response.status_code == 201
    body = response.json()
    assert set(body) == BODY_KEYS
    request = ReviewRequest.objects.get()
    assert body == {
        "id": str(request.id),
        "contact_id": str(request.contact_id),
        "contact_name": "Jane Smith",
        "contact_email": "jane@example.com",
        "contact_phone": "+14155552671",
        "scheduled_for": "2026-06-10T16:00:00Z",
        "status": "scheduled",
        "message": (
            "Review request scheduled for Jane Smith by SMS at 2026-06-10 16:00 UTC. Then up to "
            "2 follow-ups by e-mail, stopped as soon as they click or opt out."
        ),
        "location_id": str(request.location_id),
        "location_name": request.location.name,
    }
    assert request.location is not None  # the account's only location
    assert request.owner == api.owner
    assert request.contact.metadata == {"source": "shopify"}
    assert request.contact.company_name == "Acme"


def test_unknown_contact_fields_are_null_and_the_name_may_be_empty(api, now):
    body = post(api, {"email": "jane@example.com"}).json()
    assert body["contact_name"] == ""
    assert body["contact_phone"] is None
    body = post(api, {"mobile_phone_number": "+12125550123"}).json()
    assert body["contact_email"] is None


def test_same_contact_again_answers_200_with_the_existing_request(api, now):
    first = post(api, {"first_name": "Jane", "email": "jane@example.com"}).json()
    response = post(api, {"email": "JANE@example.com", "last_name": "Smith"})
    assert response.status_code == 200
    body = response.json()
    assert set(body) == BODY_KEYS
    assert body["id"] == first["id"]
    assert body["contact_name"] == "Jane Smith"
    assert body["status"] == "scheduled"
    assert "already has a review request scheduled" in body["message"]
    assert ReviewRequest.objects.count() == 1


def test_delay_hours_as_a_string_of_digits_is_accepted(api, now):
    body = post(api, {"email": "jane@example.com", "delay_hours": "24"}).json()
    assert body["scheduled_for"] == "2026-06-11T16:00:00Z"


def test_unknown_fields_are_ignored(api, now):
    response = post(api, {"email": "jane@example.com", "favourite_colour": "blue", "id": "x"})
    assert response.status_code == 201


def test_null_values_count_as_not_given(api, now):
    response = post(
        api,
        {
            "email": "jane@example.com",
            "mobile_phone_number": None,
            "first_name": None,
            "delay_hours": None,
            "metadata": None,
        },
    )
    assert response.status_code == 201


def test_a_json_number_is_accepted_as_a_phone_number(api, now):
    assert post(api, {"mobile_phone_number": 4155552671}).json()["contact_phone"] == (
        "+14155552671"
    )


def test_each_owner_sees_only_their_own_contacts(api, other_owner, api_client, now):
    mine = post(api, {"email": "jane@example.com"}).json()
    access, _ = issue_tokens(other_owner, scope="write")
    api_client.credentials(HTTP_AUTHORIZATION=f"Bearer {access}")
    theirs = post(api_client, {"email": "jane@example.com"})
    assert theirs.status_code == 201
    assert theirs.json()["contact_id"] != mine["contact_id"]


# --- one mailbox, one contact; names as people read them -----------------------------------------

FULL_WIDTH_EXAMPLE = "\uff45\uff58\uff41\uff4d\uff50\uff4c\uff45"  # "example", full-width


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("x@bücher.de", "x@xn--bcher-kva.de"),
        ("x@xn--bcher-kva.de", "X@BÜCHER.DE"),
        (f"x@{FULL_WIDTH_EXAMPLE}.com", "x@example.com"),
    ],
)
def test_two_spellings_of_one_mailbox_are_one_contact_and_one_request(api, now, first, second):
    created = post(api, {"email": first})
    assert created.status_code == 201, created.content
    again = post(api, {"email": second})
    assert again.status_code == 200, again.content
    assert again.json()["id"] == created.json()["id"]
    assert "already has a review request scheduled" in again.json()["message"]
    assert Contact.objects.count() == 1
    assert ReviewRequest.objects.count() == 1
    # The address shown is as typed (the latest spelling, as for any update of a contact).
    assert created.json()["contact_email"] == first
    assert again.json()["contact_email"] == second


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("a@localhost", "public domain"),
        ("a@LOCALHOST", "public domain"),
        ("a@intranet", "public domain"),
        ("a@shop.localhost", "public domain"),
        ("user@[127.0.0.1]", "not an IP address"),
        ("user@[IPv6:::1]", "not an IP address"),
        ("user@192.168.0.10", "not an IP address"),
    ],
)
def test_an_address_without_a_public_domain_is_refused_with_a_clear_400(api, now, value, message):
    body = assert_invalid(post(api, {"email": value}), "email")
    assert message in body["error_description"]
    assert not Contact.objects.exists()


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\u202eJane", "Jane"),  # RIGHT-TO-LEFT OVERRIDE
        ("Ja\u200bne\u200d", "Jane"),  # zero-width space and joiner
        ("\ufeffJane", "Jane"),  # byte-order mark
        ("Jane\ue000", "Jane"),  # private use
        ("Ja\x00ne\x07", "Jane"),  # control characters
        ("Jane\t\n  Marie", "Jane Marie"),
        ("\uff2a\uff41\uff4e\uff45", "Jane"),  # full-width letters (NFKC)
    ],
)
def test_names_lose_invisible_and_direction_changing_characters(api, now, raw, shown):
    response = post(api, {"email": "jane@example.com", "first_name": raw, "company_name": raw})
    assert response.status_code == 201, response.content
    assert response.json()["contact_name"] == shown
    contact = Contact.objects.get()
    assert (contact.first_name, contact.company_name) == (shown, shown)


def test_a_name_of_only_invisible_characters_is_treated_as_absent(api, now):
    post(api, {"email": "jane@example.com", "first_name": "Jane", "last_name": "Smith"})
    response = post(
        api, {"email": "jane@example.com", "first_name": "\u200b\u202e\ufeff", "last_name": " "}
    )
    assert response.status_code == 200, response.content
    assert response.json()["contact_name"] == "Jane Smith"  # not overwritten with nothing
    assert Contact.objects.get().first_name == "Jane"


# --- validation -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"first_name": "Jane"},
        {"email": "", "mobile_phone_number": "   "},
        {"email": None, "mobile_phone_number": None},
    ],
)
def test_missing_both_email_and_phone_is_400_naming_both(api, body):
    assert_invalid(post(api, body), "email", "mobile_phone_number")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("email", "not-an-email"),
        ("email", "a" * 245 + "@example.com"),
        ("email", ["jane@example.com"]),
        ("mobile_phone_number", "555-1234"),
        ("mobile_phone_number", "+12001230101"),
        ("mobile_phone_number", "+1 415 555 2671" + "-" * 18),
        ("mobile_phone_number", True),
        ("first_name", "x" * 101),
        ("first_name", {"a": 1}),
        ("first_name", ["Jane"]),
        ("last_name", "x" * 101),
        ("company_name", "x" * 201),
        ("delay_hours", 1.5),
        ("delay_hours", "1.5"),
        ("delay_hours", -1),
        ("delay_hours", "-1"),
        ("delay_hours", True),
        ("delay_hours", "soon"),
        ("delay_hours", 8761),
        ("delay_hours", [1]),
        ("metadata", [1, 2]),
        ("metadata", "source=shopify"),
        ("metadata", {"k": "x" * 16_400}),
        ("metadata", {"k": "nul\x00"}),
    ],
)
def test_each_invalid_field_is_400_naming_it(api, field, value):
    body = {"email": "jane@example.com", field: value}
    if field == "email":
        body["mobile_phone_number"] = "+14155552671"
    assert_invalid(post(api, body), field)
    assert not Contact.objects.exists()


def test_every_invalid_field_is_named_at_once(api):
    body = assert_invalid(
        post(api, {"email": "nope", "delay_hours": "x", "metadata": []}),
        "email",
        "delay_hours",
        "metadata",
    )
    assert body["error_description"].startswith("Invalid request. ")


@pytest.mark.parametrize(
    ("raw", "content_type"),
    [
        ("{not json", "application/json"),
        ('{"email": "jane@example.com",}', "application/json"),
        ("[1, 2]", "application/json"),
        ('"jane@example.com"', "application/json"),
        ("null", "application/json"),
        ('{"email": "jane@example.com", "metadata": {"x": NaN}}', "application/json"),
        ('{"email": "jane@example.com", "metadata": {"x": 1e400}}', "application/json"),
        ("[" * 100_000 + "]" * 100_000, "application/json"),
        (b'{"email": "\xff@example.com"}', "application/json"),
        ("email=jane@example.com", "application/x-www-form-urlencoded"),
        ("email: jane@example.com", "text/plain"),
    ],
)
def test_a_body_that_is_not_a_json_object_is_400_invalid_request(api, raw, content_type):
    response = api.post(URL, raw, content_type=content_type)
    assert response.status_code == 400, response.content
    assert response.json()["error"] == "invalid_request"
    assert response.json()["error_description"]
    assert not Contact.objects.exists()


def test_a_body_over_one_megabyte_is_413(api):
    body = json.dumps({"email": "jane@example.com", "metadata": {"pad": "x" * 1_150_000}})
    assert len(body) > 1.1e6
    response = api.post(URL, body, content_type="application/json")
    assert response.status_code == 413
    assert response.json()["error"] == "request_too_large"
    assert not Contact.objects.exists()


def test_a_body_just_under_one_megabyte_is_parsed(api):
    body = json.dumps({"email": "jane@example.com", "metadata": {"pad": "x" * 1_040_000}})
    response = api.post(URL, body, content_type="application/json")
    assert_invalid(response, "metadata")  # parsed, then refused by the 16 KB metadata limit


# --- auth and routing -----------------------------------------------------------------------------


def test_without_a_token_it_is_401(api_client):
    response = post(api_client, {"email": "jane@example.com"})
    assert response.status_code == 401
    assert response.json()["error"] == "unauthorized"
    assert not Contact.objects.exists()


def test_a_read_only_token_is_403_insufficient_scope(api_client, owner):
    access, _ = issue_tokens(owner, scope="read")
    api_client.credentials(HTTP_AUTHORIZATION=f"Bearer {access}")
    response = post(api_client, {"email": "jane@example.com"})
    assert response.status_code == 403
    assert response.json()["error"] == "insufficient_scope"
    assert not Contact.objects.exists()


def test_trailing_slash_is_not_redirected(api):
    response = post(api, {"email": "jane@example.com"}, follow=False)
    slash = api.post(URL + "/", {"email": "jane@example.com"}, format="json")
    assert response.status_code == 201
    assert slash.status_code == 404
    assert "Location" not in slash


def test_unknown_platform_is_404(api):
    assert api.post("/api/nope/send-review-request", {}, format="json").status_code == 404


def test_get_is_405(api):
    response = api.get(URL)
    assert response.status_code == 405
    assert response.json()["error"] == "method_not_allowed"


# --- query budget ---------------------------------------------------------------------------------


# Counted on PostgreSQL inside the test transaction, where each atomic block adds a SAVEPOINT
# and a RELEASE (in production those are one BEGIN/COMMIT and are not counted). "Warm" is the
# steady state of a busy connection: the token and the business settings come from the cache,
# and last_used_at was written less than a second ago. The benchmark (docs/benchmarks.md)
# measures these paths; a budget that grows here shows up there as lost throughput.


@contextmanager
def assert_max_queries(budget: int, *, sqlite_extra: int = 0):
    """At most ``budget`` statements on PostgreSQL, not counting the rate limiter's own counter
    (a statement only in the embedded default, without Redis). On SQLite new rows go in as one
    INSERT per model (no data-modifying CTEs) and no advisory lock is taken: ``sqlite_extra``."""
    if connection.vendor == "sqlite":
        budget += sqlite_extra
    with CaptureQueriesContext(connection) as captured:
        yield
    queries = [
        q["sql"]
        for q in captured.captured_queries
        if "connector_api_ratelimitcounter" not in q["sql"]
    ]
    assert len(queries) <= budget, "\n".join([f"{len(queries)} > {budget} queries:", *queries])


@pytest.fixture
def prepared(now, other_owner):
    """The write path's statements prepared on this database session, as on a busy connection:
    the budgets count a request's statements, not the session's one-time PREPAREs. Requests of
    another business, so ``api``'s token and settings stay cold. (Without it a budget held only
    when earlier tests in the process had happened to prepare the same statements.)"""
    from rest_framework.test import APIClient

    access, _ = issue_tokens(other_owner)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {access}")
    keyed = {"HTTP_IDEMPOTENCY_KEY": "prepare"}
    for body, extra, status in (
        ({"email": "someone@example.com", "mobile_phone_number": "4155552672"}, {}, 201),
        ({"email": "someone-else@example.com"}, keyed, 201),
        ({"email": "someone-else@example.com"}, keyed, 201),  # the replay
    ):
        assert post(client, body, **extra).status_code == status


@pytest.fixture
def warm(api, now, prepared):
    """One request first: caches the token and the settings, and opens the touch gate."""
    BusinessSettings.for_owner(api.owner)
    assert post(api, {"email": "warm-up@example.com"}).status_code == 201
    return api


def test_adding_a_new_contact_stays_within_its_query_budget(api, now, prepared):
    BusinessSettings.for_owner(api.owner)
    # cold: token, last_used_at, settings, savepoint, the 2 advisory locks, the matching
    # contacts (FOR UPDATE), one insert of contact, request and messages, release
    with assert_max_queries(9, sqlite_extra=1):
        response = post(api, {"email": "jane@example.com", "mobile_phone_number": "4155552671"})
    assert response.status_code == 201


def test_a_warm_new_contact_needs_no_token_settings_or_touch_query(warm):
    # savepoint, advisory lock, matching contacts, one insert (contact, request, messages),
    # release
    with assert_max_queries(5, sqlite_extra=1):
        response = post(warm, {"email": "jane@example.com"})
    assert response.status_code == 201


def test_a_duplicate_stays_within_its_query_budget(warm):
    post(warm, {"email": "jane@example.com", "mobile_phone_number": "4155552671"})
    # savepoint, 2 advisory locks, matching contact, update, blocking request, release
    with assert_max_queries(7):
        response = post(warm, {"email": "jane@example.com", "first_name": "Jane"})
    assert response.status_code == 200


def test_a_new_contact_with_an_idempotency_key_stays_within_its_query_budget(warm):
    # the 5 above, plus claiming the key (one INSERT ... ON CONFLICT), and the transaction
    # that stores the response with the work (a savepoint here, BEGIN/COMMIT in production)
    with assert_max_queries(9, sqlite_extra=1):
        response = post(warm, {"email": "jane@example.com"}, HTTP_IDEMPOTENCY_KEY="k-1")
    assert response.status_code == 201


def test_an_idempotent_replay_stays_within_its_query_budget(warm):
    post(warm, {"email": "jane@example.com"}, HTTP_IDEMPOTENCY_KEY="k-1")
    # the claim's INSERT (a conflict) and reading the stored response
    with assert_max_queries(2):
        response = post(warm, {"email": "jane@example.com"}, HTTP_IDEMPOTENCY_KEY="k-1")
    assert response["Idempotent-Replayed"] == "true"


def test_quiet_hours_shift_is_explained(api, time_machine):
    time_machine.move_to(datetime(2026, 6, 10, 6, 30, tzinfo=UTC), tick=False)
    body = post(api, {"first_name": "Jane", "mobile_phone_number": "+14155552671"}).json()
    assert body["scheduled_for"] == "2026-06-10T15:00:00Z"
    assert "Moved from 2026-06-10 06:30 UTC" in body["message"]
    assert "(America/Los_Angeles)" in body["message"]


def test_cooldown_answers_200_with_the_ended_request_and_its_status(api, time_machine):
    time_machine.move_to(datetime(2026, 6, 1, 16, 0, tzinfo=UTC), tick=False)
    first = post(api, {"email": "jane@example.com"}).json()
    request = ReviewRequest.objects.get(pk=first["id"])
    at = datetime(2026, 6, 2, 16, 0, tzinfo=UTC)
    for status in ("sending", "sent", "clicked"):
        request.transition(status, at=at, reason="clicked")
    request.save()
    time_machine.move_to(at + timedelta(days=30), tick=False)

    response = post(api, {"email": "jane@example.com"})
    assert response.status_code == 200
    assert response.json()["id"] == first["id"]
    assert response.json()["status"] == "clicked"
    assert "90-day cooldown" in response.json()["message"]


@pytest.mark.parametrize(
    ("body", "content_type"),
    [("{not json", "application/json"), ("a=b", "text/plain"), ("[1, 2]", "application/json")],
)
def test_a_request_without_a_token_is_401_whatever_its_body(api_client, body, content_type):
    # Authentication runs before the body is parsed: no token, no parsing, no side effect.
    response = api_client.post(URL, body, content_type=content_type)
    assert response.status_code == 401
    assert response.json()["error"] == "unauthorized"


def test_a_national_number_is_read_in_the_owners_region(api, now):
    """The API parses the body with the owner's default region before ``contact_add`` (which
    takes the parsed input only)."""
    api.owner.default_region = "GB"
    api.owner.save(update_fields=["default_region"])
    response = post(api, {"mobile_phone_number": "07400 123456"})
    assert response.status_code == 201, response.content
    assert response.json()["contact_phone"] == "+447400123456"


FIELDS_URL = "/api/zapier/send-review-request/fields"


# zapier-platform-schema's PlainInputFieldSchema (packages/schema/lib/schemas/
# PlainInputFieldSchema.js and PlainFieldSchema.js): the keys, types and limits it allows.
PLAIN_INPUT_FIELD_SCHEMA = {
    "type": "object",
    "required": ["key"],
    "additionalProperties": False,
    "properties": {
        "key": {"type": "string", "minLength": 1},
        "label": {"type": "string", "minLength": 1},
        "type": {
            "enum": [
                "string",
                "text",
                "integer",
                "number",
                "boolean",
                "datetime",
                "file",
                "password",
                "copy",
                "code",
                "json",
            ]
        },
        "required": {"type": "boolean"},
        "default": {"type": "string", "minLength": 1},
        "list": {"type": "boolean"},
        "dict": {"type": "boolean"},
        "children": {"type": "array", "minItems": 1},
        "helpText": {"type": "string", "minLength": 1, "maxLength": 1000},
        "placeholder": {"type": "string", "minLength": 1},
        "altersDynamicFields": {"type": "boolean"},
        "computed": {"type": "boolean"},
        "inputFormat": {"type": "string", "pattern": "^.*{{input}}.*$"},
        "search": {"type": "string"},
        "dynamic": {},
        "choices": {},
        "meta": {"type": "object"},
        "canPaginate": {"type": "boolean"},
    },
}


# packages/schema/lib/constants.js: INCOMPATIBLE_FIELD_SCHEMA_KEYS
INCOMPATIBLE = [
    ("children", "list"),
    ("children", "dict"),
    ("children", "type"),
    ("children", "placeholder"),
    ("children", "helpText"),
    ("children", "default"),
    ("dict", "list"),
    ("dynamic", "dict"),
    ("dynamic", "choices"),
]


def fields_of(client) -> list[dict]:
    response = client.get(FIELDS_URL)
    assert response.status_code == 200, response.content
    assert set(response.json()) == {"fields"}
    return response.json()["fields"]


def test_every_field_is_valid_for_zapiers_input_field_schema(api):
    fields = fields_of(api)
    for field in fields:
        jsonschema.validate(field, PLAIN_INPUT_FIELD_SCHEMA)
        for first, second in INCOMPATIBLE:
            assert not (field.get(first) and field.get(second)), (field["key"], first, second)
        assert {"key", "label", "type", "required", "helpText"} <= set(field)
        assert field["required"] is False
    keys = [field["key"] for field in fields]
    assert len(keys) == len(set(keys))


def test_the_fields_are_exactly_the_keys_the_endpoint_accepts(api):
    """Every documented key is parsed by the send endpoint (a bad value is named in its 400),
    and a key that is not documented is ignored."""
    keys = {field["key"] for field in fields_of(api)}
    assert keys == CONTACT_FIELD_KEYS
    bad = ["not", "a", "value"]
    for key in sorted(keys):
        response = api.post(URL, {"email": "jane@example.com", key: bad}, format="json")
        assert response.status_code == 400, (key, response.content)
        assert set(response.json()["fields"]) == {key}, key
    response = api.post(URL, {"email": "jane@example.com", "nickname": bad}, format="json")
    assert response.status_code == 201, response.content


def test_each_field_is_accepted_and_used_by_the_send_endpoint(api):
    samples = {
        "first_name": "Jane",
        "last_name": "Smith",
        "email": "jane@example.com",
        "mobile_phone_number": "(415) 555-2671",
        "company_name": "Acme",
        "delay_hours": "5",
        "metadata": {"order_id": "1001"},
    }
    assert set(samples) == {field["key"] for field in fields_of(api)}
    response = api.post(URL, samples, format="json")
    assert response.status_code == 201, response.content
    contact = Contact.objects.get()
    assert (contact.first_name, contact.last_name, contact.company_name) == (
        "Jane",
        "Smith",
        "Acme",
    )
    assert (contact.email, contact.phone) == ("jane@example.com", "+14155552671")
    assert contact.metadata == {"order_id": "1001"}
    request = contact.review_requests.get()
    assert (request.scheduled_for - request.created_at).total_seconds() > 4 * 3600


def test_the_email_or_phone_rule_is_explained_on_both_fields(api):
    by_key = {field["key"]: field for field in fields_of(api)}
    for key in ("email", "mobile_phone_number"):
        assert "e-mail or a mobile phone number is required" in by_key[key]["helpText"]


def test_delay_defaults_to_the_business_default_as_a_string(api):
    by_key = {field["key"]: field for field in fields_of(api)}
    assert by_key["delay_hours"]["type"] == "integer"
    assert by_key["delay_hours"]["default"] == "0"
    policy = BusinessSettings.for_owner(api.owner)
    policy.default_delay_hours = 48
    policy.save()
    by_key = {field["key"]: field for field in fields_of(api)}
    assert by_key["delay_hours"]["default"] == "48"


def test_metadata_is_a_key_value_field(api):
    by_key = {field["key"]: field for field in fields_of(api)}
    assert by_key["metadata"]["dict"] is True
    assert "list" not in by_key["metadata"]


def test_a_read_token_is_enough_and_a_write_only_token_is_not(api_client, owner):
    read, _ = issue_tokens(owner, scope="read")
    api_client.credentials(HTTP_AUTHORIZATION=f"Bearer {read}")
    assert api_client.get(FIELDS_URL).status_code == 200
    write, _ = issue_tokens(owner, scope="write")
    api_client.credentials(HTTP_AUTHORIZATION=f"Bearer {write}")
    response = api_client.get(FIELDS_URL)
    assert response.status_code == 403
    assert response.json()["error"] == "insufficient_scope"


def test_the_fields_without_a_token_are_401(api_client):
    response = api_client.get(FIELDS_URL)
    assert response.status_code == 401
    assert response.json()["error"] == "unauthorized"


def test_fields_stay_within_their_query_budget(api, django_assert_max_num_queries):
    BusinessSettings.for_owner(api.owner)
    # token, business settings, the connection's last_used_at (at most once a second), and the
    # rate-limit counter (database store: no REDIS_URL)
    with django_assert_max_num_queries(4):
        fields_of(api)


def test_the_api_answers_scheduled_and_says_the_request_waits_for_a_site(
    siteless, time_machine, mailoutbox
):
    time_machine.move_to(NOON_IN_NEW_YORK, tick=False)
    client = APIClient()
    access, _ = issue_tokens(siteless, scope="read write")
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {access}")
    response = client.post(
        "/api/zapier/send-review-request",
        {"first_name": "Jane", "email": "jane@example.com"},
        format="json",
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "scheduled"
    assert body["scheduled_for"] == "2026-06-10T16:00:00Z"
    assert "Waiting for a review site" in body["message"]

    request = ReviewRequest.objects.get(pk=body["id"])
    first = step(request, 0)
    assert (first.status, first.due_at) == ("planned", None)
    assert first.waiting_for_review_site
    assert messages_dispatch_due().claimed == []
    assert mailoutbox == []
