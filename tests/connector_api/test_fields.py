"""GET /api/<platform>/send-review-request/fields: Zapier input fields for every accepted key."""

from __future__ import annotations

import jsonschema
import pytest

from contact_input.normalize import CONTACT_FIELD_KEYS
from reviews.models import BusinessSettings, Contact
from tests.support.oauth import issue_tokens

pytestmark = pytest.mark.django_db

URL = "/api/zapier/send-review-request/fields"
SEND_URL = "/api/zapier/send-review-request"

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
    response = client.get(URL)
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
        response = api.post(SEND_URL, {"email": "jane@example.com", key: bad}, format="json")
        assert response.status_code == 400, (key, response.content)
        assert set(response.json()["fields"]) == {key}, key
    response = api.post(SEND_URL, {"email": "jane@example.com", "nickname": bad}, format="json")
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
    response = api.post(SEND_URL, samples, format="json")
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
    assert api_client.get(URL).status_code == 200
    write, _ = issue_tokens(owner, scope="write")
    api_client.credentials(HTTP_AUTHORIZATION=f"Bearer {write}")
    response = api_client.get(URL)
    assert response.status_code == 403
    assert response.json()["error"] == "insufficient_scope"


def test_without_a_token_it_is_401(api_client):
    response = api_client.get(URL)
    assert response.status_code == 401
    assert response.json()["error"] == "unauthorized"


def test_fields_stay_within_their_query_budget(api, django_assert_max_num_queries):
    BusinessSettings.for_owner(api.owner)
    # token, business settings, the connection's last_used_at (at most once a second), and the
    # rate-limit counter (database store: no REDIS_URL)
    with django_assert_max_num_queries(4):
        fields_of(api)
