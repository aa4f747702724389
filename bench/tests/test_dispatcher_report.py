"""The dispatcher bench's phase report: what settled other than sent is shown, not hidden."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import pytest

from bench import dispatcher
from reviews.models import Channel, Message
from tests.factories import ReviewRequestFactory, UserFactory
from tests.support.fake_providers import Call

T0 = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


class FakeCounts:
    def __init__(self, counts, calls=()):
        self._counts = counts
        self.calls = list(calls)

    def counts(self):
        return self._counts


def _row(pk, status, *, sent=None, code="", error=""):
    return {
        "pk": pk,
        "status": status,
        "due_at": T0,
        "queued_at": T0,
        "sending_at": T0 + timedelta(seconds=1) if status != "pending" else None,
        "sent_at": T0 + timedelta(seconds=sent) if sent else None,
        "attempts": 1,
        "last_error_code": code,
        "last_error": error,
    }


def test_rows_that_settled_unknown_or_failed_are_reported_with_their_code_and_the_provider():
    rows = {
        "a": _row("a", "sent", sent=2),
        "b": _row("b", "sent", sent=3),
        "c": _row("c", "unknown", code="", error="connection to Twilio failed mid-request"),
        "d": _row("d", "unknown", code="", error="connection to Twilio failed mid-request"),
        "e": _row("e", "failed", code="21211", error="invalid number"),
    }
    fake = FakeCounts({"a": 1, "b": 2, "c": 1})
    report = dispatcher._phase_report("drain", list(rows), rows, fake, bound=80.0)

    assert report["statuses"] == {"sent": 2, "unknown": 2, "failed": 1}
    assert (report["lost"], report["duplicates"]) == (0, 1)
    assert report["not_sent"] == [
        {
            "status": "unknown",
            "code": "",
            "count": 2,
            "accepted_by_provider": 1,
            "example": "connection to Twilio failed mid-request",
        },
        {
            "status": "failed",
            "code": "21211",
            "count": 1,
            "accepted_by_provider": 0,
            "example": "invalid number",
        },
    ]


def _table_row(**extra) -> dict:
    """A phase as ``_phase_report`` leaves it, for the table."""
    return {
        "phase": "drain",
        "messages": 3,
        "lateness_p50_s": 1.0,
        "lateness_p99_s": 2.0,
        "duplicates": 0,
        "lost": 0,
        "retried": 0,
        "not_sent": [],
        **extra,
    }


def _printed(capsys, drain: dict, paced: dict, sized: dict) -> str:
    config = {"worker_pool": "2 x (2 slots, 6 threads)", "bound_messages_per_s": 80.0}
    dispatcher.print_dispatcher_table(
        {
            "provider": {"latency_s": 0.05, "error_rate": 0.005},
            "drain": drain,
            "paced": {**paced, "phase": "paced"},
            "sized_drain": {**sized, "phase": "sized"},
            "main": config,
            "sized": config,
            "peak_rss_mb": {"worker": [100.0]},
        }
    )
    return capsys.readouterr().out


def test_the_table_prints_a_line_per_kind_of_row_not_sent(capsys):
    unknown = {
        "status": "unknown",
        "code": "",
        "count": 1,
        "accepted_by_provider": 0,
        "example": "read timeout",
    }
    out = _printed(capsys, _table_row(not_sent=[unknown]), _table_row(), _table_row())
    assert "drain: 1 unknown (no code; 0 of them accepted by the provider): read timeout" in out
    assert "paced:" not in out


def test_the_table_prints_where_the_machine_spent_its_cpu_and_a_slot_its_time(capsys):
    measured = _table_row(
        cpu_ms_per_message={"workers": 3.0, "postgres": 2.4, "harness": 0.9, "busy": 6.5},
        machine_busy=0.9,
        to_provider_ms_p50=5.0,
        to_provider_ms_p99=18.9,
    )
    out = _printed(capsys, measured, _table_row(), measured)
    assert (
        "drain: machine CPU per message 6.50 ms = workers 3.00 + PostgreSQL 2.40 + harness "
        "(fake provider, poll) 0.90 + the rest (beat, Redis, kernel) 0.20; machine busy 90%"
    ) in out
    assert "sized: machine CPU per message" in out
    assert "drain: claim to the request's arrival at the provider p50 5.0 ms, p99 18.9 ms" in out
    assert "paced: machine CPU" not in out


def test_machine_cpu_counts_this_process_and_the_machine():
    before = dispatcher.machine_cpu([])
    deadline = time.process_time() + 0.2
    while time.process_time() < deadline:
        pass  # burn 0.2 s of this process's CPU
    after = dispatcher.machine_cpu([])
    assert after["harness"] - before["harness"] >= 0.15
    assert after["busy"] - before["busy"] >= 0.15
    assert after["workers"] == before["workers"] == 0


@pytest.fixture
def quick_settle(monkeypatch):
    monkeypatch.setattr(dispatcher, "POLL_SECONDS", 0.01)
    monkeypatch.setattr(dispatcher, "STALL_SECONDS", 2.0)


def _phase(owner, count):
    """``count`` due SMS rows, as a phase's preload leaves them."""
    ids = [
        str(
            Message.objects.create(
                review_request=ReviewRequestFactory(contact__owner=owner),
                step=0,
                channel=Channel.SMS,
                status=Message.Status.PENDING,
                due_at=T0,
            ).pk
        )
        for _ in range(count)
    ]
    return ids, Message.objects.filter(pk__in=ids)


@pytest.mark.django_db
def test_settle_returns_once_the_phase_is_done_though_an_earlier_row_is_still_in_flight(
    quick_settle,
):
    owner = UserFactory()
    _, earlier = _phase(owner, 1)
    earlier.update(status=Message.Status.QUEUED)  # an earlier phase's stuck row
    ids, rows = _phase(owner, 3)
    rows.update(status=Message.Status.SENT, sent_at=T0)

    started = time.monotonic()
    settled = dispatcher._settle(ids, timeout=60)
    assert time.monotonic() - started < 1.0  # not after STALL_SECONDS without movement
    assert sorted(settled) == sorted(ids)
    assert {row["status"] for row in settled.values()} == {"sent"}


@pytest.mark.django_db
def test_settle_waits_for_the_phases_rows_and_gives_up_when_nothing_moves(quick_settle):
    owner = UserFactory()
    ids, rows = _phase(owner, 3)
    rows.filter(pk__in=ids[:2]).update(status=Message.Status.SENT, sent_at=T0)

    started = time.monotonic()
    settled = dispatcher._settle(ids, timeout=60)
    assert time.monotonic() - started >= 2.0  # STALL_SECONDS with the last row pending
    assert settled[ids[2]]["status"] == "pending"


def test_the_time_from_claim_to_the_provider_is_taken_from_both_records():
    rows = {"a": _row("a", "sent", sent=2), "b": _row("b", "sent", sent=3)}
    claimed = rows["a"]["sending_at"].timestamp()
    calls = [
        Call("twilio", "a", "+1", "x", True, 201, at=claimed + 0.004),
        Call("twilio", "b", "+1", "x", False, 503, at=claimed + 0.001),  # refused: not counted
        Call("twilio", "b", "+1", "x", True, 201, at=claimed + 0.010),
    ]
    report = dispatcher._phase_report("sized", list(rows), rows, FakeCounts({}, calls), 80.0)
    assert (report["to_provider_ms_p50"], report["to_provider_ms_p99"]) == (10.0, 10.0)


def test_the_rate_while_the_backlog_lasted_leaves_out_the_tail_of_retries():
    rows = {}
    for n in range(100):  # ten a second, then one row that waited 4 s for its retry
        pk = f"m{n}"
        rows[pk] = {**_row(pk, "sent", sent=1), "sent_at": T0 + timedelta(seconds=n / 10)}
    rows["m99"]["sent_at"] = T0 + timedelta(seconds=9.8 + 4)
    report = dispatcher._phase_report("drain", list(rows), rows, FakeCounts({}), bound=10.0)
    assert report["messages_per_s"] == round(100 / 13.8, 1)  # queued at T0, last sent at 13.8 s
    assert report["steady_messages_per_s"] == 10.0
    assert report["steady_ratio_to_bound"] == 1.0


def test_the_cpu_of_children_that_exited_counts_for_their_parent():
    """PostgreSQL's backends come and go (a worker's connection is recycled every minute):
    one that exits mid-phase must not take its CPU out of PostgreSQL's count."""
    before = dispatcher.cpu_seconds(os.getpid(), reaped_children=True)
    own = dispatcher.cpu_seconds(os.getpid())
    subprocess.run(
        [sys.executable, "-c", "import time\nt = time.process_time() + 0.3\n"
         "while time.process_time() < t: pass"],
        check=True,
    )  # fmt: skip
    assert dispatcher.cpu_seconds(os.getpid(), reaped_children=True) - before >= 0.25
    assert dispatcher.cpu_seconds(os.getpid()) - own < 0.25
