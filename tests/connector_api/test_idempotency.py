"""Idempotency-Key on POST send-review-request: retries replay, never double-create."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import DatabaseError, transaction
from django.utils import timezone

from connector_api import tasks
from connector_api.idempotency import (
    STALE_AFTER,
    idempotency_key_claim,
    idempotency_key_complete,
    idempotency_keys_purge,
    request_fingerprint,
)
from connector_api.models import IdempotencyKey
from reviews.models import ReviewRequest
from tests.support.oauth import issue_tokens
from tests.support.row_counts import statement_row_counts

pytestmark = pytest.mark.django_db

URL = "/api/zapier/send-review-request"
BODY = {"first_name": "Jane", "email": "jane@example.com", "delay_hours": "2"}


def post(client, body=BODY, key="order-1001", **extra):
    if key is not None:
        extra["HTTP_IDEMPOTENCY_KEY"] = key
    return client.post(URL, body, format="json", **extra)


def test_a_retry_with_the_same_key_and_body_replays_the_first_response(api):
    first = post(api)
    again = post(api)
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert again["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first
    assert ReviewRequest.objects.count() == 1


def test_replay_is_byte_for_byte_the_stored_response(api):
    first = post(api)
    assert post(api).content == first.content


def test_key_order_and_whitespace_of_the_body_do_not_matter(api):
    post(api, {"email": "jane@example.com", "first_name": "Jane"})
    again = api.post(
        URL,
        '{ "first_name" : "Jane",\n "email": "jane@example.com" }',
        content_type="application/json",
        HTTP_IDEMPOTENCY_KEY="order-1001",
    )
    assert again["Idempotent-Replayed"] == "true"


def test_the_same_key_with_another_body_is_422(api):
    post(api)
    response = post(api, {**BODY, "first_name": "Janet"})
    assert response.status_code == 422
    assert response.json()["error"] == "idempotency_key_reused"
    assert ReviewRequest.objects.count() == 1


def test_a_key_still_in_progress_is_409_with_retry_after(api):
    IdempotencyKey.objects.create(
        owner=api.owner,
        key="order-1001",
        endpoint="send-review-request",
        fingerprint=request_fingerprint(endpoint="send-review-request", data=BODY),
    )
    response = post(api)
    assert response.status_code == 409
    assert response.json()["error"] == "idempotency_in_progress"
    assert int(response["Retry-After"]) >= 1
    assert not ReviewRequest.objects.exists()


def test_a_stale_claim_whose_request_died_is_taken_over(api):
    IdempotencyKey.objects.create(
        owner=api.owner,
        key="order-1001",
        endpoint="send-review-request",
        fingerprint=request_fingerprint(endpoint="send-review-request", data=BODY),
        locked_at=timezone.now() - STALE_AFTER - timedelta(seconds=1),
    )
    response = post(api)
    assert response.status_code == 201
    row = IdempotencyKey.objects.get()
    assert row.state == IdempotencyKey.State.DONE
    assert json.loads(row.response_body) == response.json()


def test_a_claim_taken_over_meanwhile_is_left_to_its_new_holder(api):
    """The first run, slow past STALE_AFTER, finishes after a retry took its claim over: its
    response is not stored over the retry's claim (the retry stores its own)."""
    now = timezone.now()
    fingerprint = request_fingerprint(endpoint="send-review-request", data=BODY)
    first = idempotency_key_claim(
        owner=api.owner, key="order-1001", endpoint="send-review-request",
        fingerprint=fingerprint, now=now,
    )  # fmt: skip
    IdempotencyKey.objects.filter(pk=first.row.pk).update(locked_at=now + STALE_AFTER)
    idempotency_key_complete(claim=first.row, status=201, body={"id": "first"})
    row = IdempotencyKey.objects.get()
    assert (row.state, row.response_status, row.response_body) == ("in_progress", None, "")

    retry = IdempotencyKey.objects.get()
    idempotency_key_complete(claim=retry, status=201, body={"id": "retry"})
    row.refresh_from_db()
    assert (row.state, row.response_status) == ("done", 201)
    assert json.loads(row.response_body) == {"id": "retry"}


def test_a_validation_failure_is_not_stored_so_a_corrected_retry_works(api):
    bad = post(api, {"email": "not-an-email"})
    assert bad.status_code == 400
    assert not IdempotencyKey.objects.exists()
    good = post(api, {"email": "jane@example.com"})
    assert good.status_code == 201
    assert "Idempotent-Replayed" not in good


def test_a_server_error_leaves_no_stored_response(api, monkeypatch):
    def crash(**kwargs):
        raise RuntimeError("database went away")

    monkeypatch.setattr("connector_api.apis.review_requests.contact_add", crash)
    api.raise_request_exception = False
    assert post(api).status_code == 500
    assert not IdempotencyKey.objects.exists()

    monkeypatch.undo()
    retry = post(api)
    assert retry.status_code == 201
    assert "Idempotent-Replayed" not in retry


def test_the_response_is_stored_in_the_transaction_of_the_work(api, monkeypatch):
    """The contact, its request and the stored response commit together: if storing the
    response fails, the work is undone too, so a retry runs it afresh and answers what the
    first would have (201), instead of finding the contact and answering 200."""
    import connector_api.idempotency as idempotency

    def refused(**kwargs):
        raise DatabaseError("the response could not be stored")

    monkeypatch.setattr(idempotency, "idempotency_key_complete", refused)
    api.raise_request_exception = False
    assert post(api).status_code == 500
    assert not ReviewRequest.objects.exists()
    assert not IdempotencyKey.objects.exists()

    monkeypatch.undo()
    retry = post(api)
    assert retry.status_code == 201
    assert ReviewRequest.objects.count() == 1
    assert post(api).json() == retry.json()


def test_a_deduplicated_200_is_replayed_as_200(api):
    post(api, key="first")
    dedup = post(api, key="second")
    assert dedup.status_code == 200
    replay = post(api, key="second")
    assert replay.status_code == 200
    assert replay.json() == dedup.json()
    assert replay["Idempotent-Replayed"] == "true"


def test_keys_belong_to_one_owner(api, api_client, other_owner):
    post(api)
    access, _ = issue_tokens(other_owner, scope="write")
    api_client.credentials(HTTP_AUTHORIZATION=f"Bearer {access}")
    theirs = post(api_client)
    assert theirs.status_code == 201
    assert "Idempotent-Replayed" not in theirs
    assert ReviewRequest.objects.count() == 2


@pytest.mark.parametrize("key", ["x" * 256, "", "has space", "naïve"])
def test_a_key_that_is_too_long_or_not_visible_ascii_is_400(api, key):
    response = post(api, key=key)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_request"
    assert "Idempotency-Key" in response.json()["fields"]
    assert not ReviewRequest.objects.exists()


def test_a_key_of_255_characters_is_fine(api):
    assert post(api, key="k" * 255).status_code == 201


def test_without_a_key_every_request_runs(api):
    assert post(api, key=None).status_code == 201
    assert post(api, key=None).status_code == 200
    assert not IdempotencyKey.objects.exists()


def test_an_expired_key_is_forgotten(api):
    post(api)
    IdempotencyKey.objects.update(
        created_at=timezone.now() - timedelta(hours=settings.IDEMPOTENCY_KEY_TTL_HOURS)
    )
    response = post(api, {"email": "other@example.com"})
    assert response.status_code == 201
    assert "Idempotent-Replayed" not in response


def test_purge_deletes_keys_older_than_the_ttl_only(api):
    post(api, key="old")
    post(api, key="new", body={"email": "other@example.com"})
    IdempotencyKey.objects.filter(key="old").update(
        created_at=timezone.now() - timedelta(hours=72, seconds=1)
    )
    assert idempotency_keys_purge() == 1
    assert list(IdempotencyKey.objects.values_list("key", flat=True)) == ["new"]


def test_purge_deletes_in_bounded_batches(api, settings):
    settings.PURGE_BATCH_SIZE = 2
    for n in range(5):
        post(api, key=f"old-{n}", body={"email": f"old{n}@example.com"})
    post(api, key="new", body={"email": "new@example.com"})
    IdempotencyKey.objects.exclude(key="new").update(
        created_at=timezone.now() - timedelta(hours=72, seconds=1)
    )
    with statement_row_counts() as counts:
        assert idempotency_keys_purge() == 5
    assert max(counts) <= 2
    assert list(IdempotencyKey.objects.values_list("key", flat=True)) == ["new"]


def test_purge_task_runs_hourly_from_beat(api):
    schedule = settings.CELERY_BEAT_SCHEDULE["purge-idempotency-keys"]
    assert schedule["task"] == tasks.purge_idempotency_keys.name
    assert schedule["schedule"] <= 3600
    post(api)
    IdempotencyKey.objects.update(created_at=timezone.now() - timedelta(days=4))
    assert tasks.purge_idempotency_keys() == 1
    assert not IdempotencyKey.objects.exists()


# --- The claim and the stored response, each against its ORM twin -------------------------------
#
# On either database (the statements run on both): the statement, then its ORM twin, on the same
# rows, each in a savepoint rolled back after, must return the same row and leave the same rows.


def _key_fields(row: IdempotencyKey | None) -> dict | None:
    if row is None:
        return None
    return {f.attname: getattr(row, f.attname) for f in IdempotencyKey._meta.concrete_fields}


def _undone(run) -> tuple:
    """What ``run()`` returned and the keys after it, but their ids (a sequence is not rolled
    back, so the two runs' new rows get different ones); then undone."""
    with transaction.atomic():
        returned = _key_fields(run())
        rows = [_key_fields(row) for row in IdempotencyKey.objects.order_by("owner_id", "key")]
        if returned is not None:  # the row returned is the row stored, id included
            assert returned in rows
        transaction.set_rollback(True)
    return [{**row, "id": None} for row in [returned, *rows] if row is not None], returned is None


def _same_keys(statement, twin) -> tuple:
    by_statement, by_twin = _undone(statement), _undone(twin)
    assert by_statement == by_twin
    return by_statement


@pytest.mark.parametrize(
    ("case", "claimed"),
    [("a new key", True), ("the key exists", False), ("another owner's key", True)],
)
def test_claim_and_its_twin_claim_the_same_keys(owner, other_owner, case, claimed):
    now = timezone.now()
    IdempotencyKey.objects.create(
        owner=other_owner if case == "another owner's key" else owner,
        key="order-1001" if case != "a new key" else "order-1000",
        endpoint="send-review-request",
        fingerprint="f" * 64,
        locked_at=now - timedelta(minutes=1),
    )
    keys = {
        "owner": owner,
        "key": "order-1001",
        "endpoint": "send-review-request",
        "fingerprint": "a" * 64,
        "now": now,
    }
    rows, nothing_claimed = _same_keys(
        lambda: IdempotencyKey.objects.claim(**keys),
        lambda: IdempotencyKey.objects.claim_orm(**keys),
    )
    assert nothing_claimed != claimed
    assert len(rows) == 1 + claimed * 2  # the row returned, and the rows stored


@pytest.mark.parametrize(
    ("case", "stored"),
    [("the claim held", True), ("taken over", False), ("already done", False)],
)
def test_complete_and_its_twin_store_the_same_response(owner, case, stored):
    now = timezone.now()
    claim = IdempotencyKey.objects.create(
        owner=owner,
        key="order-1001",
        endpoint="send-review-request",
        fingerprint="f" * 64,
        created_at=now,
        locked_at=now,
    )
    if case == "taken over":
        IdempotencyKey.objects.filter(pk=claim.pk).update(locked_at=now + STALE_AFTER)
    if case == "already done":
        IdempotencyKey.objects.filter(pk=claim.pk).update(state=IdempotencyKey.State.DONE)
    before = [_key_fields(row) for row in IdempotencyKey.objects.all()]
    response = {"row": claim, "status": 201, "body": '{"id": "x"}', "now": now}

    rows, _ = _same_keys(
        lambda: IdempotencyKey.objects.complete(**response),
        lambda: IdempotencyKey.objects.complete_orm(**response),
    )
    assert (rows != [{**row, "id": None} for row in before]) == stored
