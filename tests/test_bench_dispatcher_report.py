"""The dispatcher bench's phase report: what settled other than sent is shown, not hidden."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bench import dispatcher

T0 = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


class FakeCounts:
    def __init__(self, counts):
        self._counts = counts

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


def test_the_table_prints_a_line_per_kind_of_row_not_sent(capsys):
    phase = {
        "phase": "drain",
        "messages": 3,
        "lateness_p50_s": 1.0,
        "lateness_p99_s": 2.0,
        "duplicates": 0,
        "lost": 0,
        "retried": 0,
        "not_sent": [
            {
                "status": "unknown",
                "code": "",
                "count": 1,
                "accepted_by_provider": 0,
                "example": "read timeout",
            }
        ],
    }
    config = {"worker_pool": "2 x (2 slots, 6 threads)", "bound_messages_per_s": 80.0}
    dispatcher.print_dispatcher_table(
        {
            "provider": {"latency_s": 0.05, "error_rate": 0.005},
            "drain": phase,
            "paced": {**phase, "phase": "paced", "not_sent": []},
            "sized_drain": {**phase, "phase": "sized", "not_sent": []},
            "main": config,
            "sized": config,
            "peak_rss_mb": {"worker": [100.0]},
        }
    )
    out = capsys.readouterr().out
    assert "drain: 1 unknown (no code; 0 of them accepted by the provider): read timeout" in out
    assert "paced:" not in out
