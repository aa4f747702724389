"""The dispatcher benchmark: due SMS rows drained by the real beat + worker processes into a fake
Twilio on loopback (``tests/support/fake_providers.py``) with a fixed latency and error rate.

Two phases, one after the other, on the same processes:

* **drain**: N messages all due now. Throughput is compared with its physical limit, the
  provider-latency bound ``concurrency / latency`` (a worker thread can do no better than one
  send per provider round trip). Lateness here is mostly backlog, by construction.
* **paced**: messages due at a steady 80 % of what the drain achieved (at most 80 % of the
  bound) for ``PACED_SECONDS``. Lateness (``sent_at - due_at``) measures the dispatcher
  itself: sweep interval, kick, queue wait, not a backlog.

Both count duplicates (sends the fake accepted more than once for one message: must be 0) and
lost messages (rows still in flight once nothing has moved for ``STALL_SECONDS``, or marked sent
without the provider having accepted them: must be 0). The bench owner has no quiet hours, so a
transient rejection is retried within seconds (``DELIVERY_RETRY_*``), not at 08:00 local time.
"""

from __future__ import annotations

import itertools
import sys
import time
from datetime import timedelta
from pathlib import Path

from bench.run import PYTHON, children, peak_rss_mb, process

WORKER_CONCURRENCY = 24
PROVIDER_LATENCY = 0.05
PROVIDER_ERROR_RATE = 0.005
PACED_SECONDS = 30
STALL_SECONDS = 30  # no row left the in-flight states for this long: what remains is stuck

TARGETS = {"throughput_over_bound": 0.9, "lateness_p99_s": 5.0}

_PHONES = itertools.count(1)  # unique numbers across both phases (one owner)


def _preload(owner, count: int, *, first_due, spacing: float) -> list[str]:
    """``count`` contacts with one pending SMS each, due from ``first_due`` every ``spacing`` s."""
    from reviews.models import Channel, Contact, Message, ReviewRequest

    contacts = Contact.objects.bulk_create(
        [
            Contact(owner=owner, first_name="Bench", phone=f"+1555{next(_PHONES):07d}")
            for _ in range(count)
        ],
        batch_size=2000,
    )
    requests = ReviewRequest.objects.bulk_create(
        [
            ReviewRequest(
                owner=owner,
                contact=contact,
                scheduled_for=first_due + timedelta(seconds=n * spacing),
            )
            for n, contact in enumerate(contacts)
        ],
        batch_size=2000,
    )
    messages = Message.objects.bulk_create(
        [
            Message(
                review_request=request,
                step=0,
                channel=Channel.SMS,
                status=Message.Status.PENDING,
                due_at=request.scheduled_for,
            )
            for request in requests
        ],
        batch_size=2000,
    )
    return [str(message.pk) for message in messages]


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else 0.0


def _settle(ids: list[str], timeout: float) -> dict:
    """Wait until every message left the in-flight states, or none has for ``STALL_SECONDS``
    (or ``timeout`` passed); return their final rows."""
    from reviews.models import Message

    in_flight = [Message.Status.PENDING, Message.Status.QUEUED, Message.Status.SENDING]
    deadline = time.monotonic() + timeout
    remaining, moved_at = None, time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - moved_at < STALL_SECONDS:
        count = Message.objects.filter(pk__in=ids, status__in=in_flight).count()
        if count == 0:
            break
        if count != remaining:
            remaining, moved_at = count, time.monotonic()
        time.sleep(0.5)
    return {
        str(row["pk"]): row
        for row in Message.objects.filter(pk__in=ids).values(
            "pk", "status", "due_at", "queued_at", "sent_at", "attempts"
        )
    }


def _phase_report(name: str, ids: list[str], rows: dict, fake, bound: float) -> dict:
    from reviews.models import Message

    sent = [r for r in rows.values() if r["status"] in (Message.Status.SENT, "delivered")]
    lateness = [(r["sent_at"] - r["due_at"]).total_seconds() for r in sent]
    counts = fake.counts()
    duplicates = sum(max(0, counts.get(message_id, 0) - 1) for message_id in ids)
    statuses: dict[str, int] = {}
    for row in rows.values():
        statuses[row["status"]] = statuses.get(row["status"], 0) + 1
    unsettled = sum(statuses.get(s, 0) for s in ("pending", "queued", "sending"))
    never_accepted = [
        r for r in sent if counts.get(str(r["pk"]), 0) == 0
    ]  # sent without the provider accepting it would be a bookkeeping bug
    report = {
        "phase": name,
        "messages": len(ids),
        "statuses": statuses,
        "duplicates": duplicates,
        "lost": unsettled + len(never_accepted),
        "retried": sum(1 for r in rows.values() if r["attempts"] > 1),
        "lateness_p50_s": round(_percentile(lateness, 0.50), 2),
        "lateness_p99_s": round(_percentile(lateness, 0.99), 2),
    }
    if sent:
        start = min(r["queued_at"] for r in sent if r["queued_at"])
        end = max(r["sent_at"] for r in sent)
        seconds = max((end - start).total_seconds(), 1e-6)
        report["seconds"] = round(seconds, 1)
        report["messages_per_s"] = round(len(sent) / seconds, 1)
        report["ratio_to_bound"] = round(len(sent) / seconds / bound, 2)
    return report


def run_dispatcher_bench(env: dict, var_dir: Path, args, targets: list) -> dict:
    """Run both phases; append the dispatcher targets to ``targets``; return the report."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from django.utils import timezone

    from accounts.models import User
    from reviews.models import BusinessSettings
    from tests.support.fake_providers import FakeProviders

    concurrency = getattr(args, "worker_concurrency", None) or WORKER_CONCURRENCY
    bound = concurrency / PROVIDER_LATENCY
    owner = User.objects.get(email="owner@bench.example")
    policy, _ = BusinessSettings.objects.get_or_create(owner=owner)
    policy.send_window_applies_to = BusinessSettings.WindowAppliesTo.NONE
    policy.save()
    with FakeProviders(latency=PROVIDER_LATENCY, error_rate=PROVIDER_ERROR_RATE, seed=7) as fake:
        worker_env = {
            **env,
            "TWILIO_ACCOUNT_SID": "ACbench",
            "TWILIO_AUTH_TOKEN": "bench-token",
            "TWILIO_FROM_NUMBER": "+15005550006",
            "TWILIO_API_BASE_URL": fake.twilio_base_url,
            # Transient rejections (the fake's error rate) come back within the run.
            "DELIVERY_RETRY_BASE_SECONDS": "1",
            "DELIVERY_RETRY_MAX_SECONDS": "4",
            "LOG_LEVEL": "WARNING",
        }
        worker_cmd = [
            PYTHON, "-m", "celery", "--app", "config", "worker", "--loglevel", "WARNING",
            "--queues", "celery,dispatch", "--pool", "threads", "--concurrency", str(concurrency),
            "--hostname", "bench@%h",
        ]  # fmt: skip
        beat_cmd = [PYTHON, "-m", "celery", "--app", "config", "beat", "--loglevel", "WARNING"]
        with (
            process(worker_cmd, worker_env, var_dir / "worker.log") as worker,
            process(beat_cmd, worker_env, var_dir / "beat.log"),
        ):
            time.sleep(3)  # worker and beat up before anything is due
            drain_ids = _preload(owner, args.messages, first_due=timezone.now(), spacing=0)
            drain_rows = _settle(drain_ids, timeout=args.messages / 5 + 120)
            drain = _phase_report("drain", drain_ids, drain_rows, fake, bound)

            # Steady load the dispatcher can carry: lateness then measures dispatching, not a
            # queue that grows for the whole phase.
            rate = 0.8 * min(bound, drain.get("messages_per_s") or bound)
            paced_ids = _preload(
                owner,
                int(rate * PACED_SECONDS),
                first_due=timezone.now() + timedelta(seconds=2),
                spacing=1 / rate,
            )
            paced_rows = _settle(paced_ids, timeout=PACED_SECONDS * 5 + 120)
            paced = _phase_report("paced", paced_ids, paced_rows, fake, bound)
            paced["offered_rate"] = round(rate, 1)
            worker_rss = [peak_rss_mb(worker.pid), *[peak_rss_mb(p) for p in children(worker.pid)]]

    report = {
        "provider": {
            "latency_s": PROVIDER_LATENCY,
            "error_rate": PROVIDER_ERROR_RATE,
            "worker_pool": f"threads x {concurrency}",
            "bound_messages_per_s": round(bound, 1),
        },
        "drain": drain,
        "paced": paced,
        "peak_rss_mb": {"worker": worker_rss},
    }
    targets += [
        {
            "name": "dispatcher throughput / provider-latency bound (drain)",
            "value": drain.get("ratio_to_bound", 0),
            "target": f">= {TARGETS['throughput_over_bound']}",
            "met": drain.get("ratio_to_bound", 0) >= TARGETS["throughput_over_bound"],
        },
        {
            "name": "dispatcher lateness p99 s (paced at 80% of the bound)",
            "value": paced["lateness_p99_s"],
            "target": f"<= {TARGETS['lateness_p99_s']}",
            "met": paced["lateness_p99_s"] <= TARGETS["lateness_p99_s"],
        },
        {
            "name": "duplicates (drain + paced)",
            "value": drain["duplicates"] + paced["duplicates"],
            "target": "== 0",
            "met": drain["duplicates"] + paced["duplicates"] == 0,
        },
        {
            "name": "lost (drain + paced)",
            "value": drain["lost"] + paced["lost"],
            "target": "== 0",
            "met": drain["lost"] + paced["lost"] == 0,
        },
    ]
    print_dispatcher_table(report)
    return report


def print_dispatcher_table(report: dict) -> None:
    provider = report["provider"]
    print(
        f"\nDispatcher (fake Twilio: {provider['latency_s'] * 1000:.0f} ms, "
        f"{provider['error_rate']:.1%} errors; worker {provider['worker_pool']}; "
        f"bound {provider['bound_messages_per_s']:.0f} msg/s)"
    )
    print(
        f"{'phase':<8}{'messages':>9}{'msg/s':>8}{'/bound':>8}{'late p50':>10}{'late p99':>10}"
        f"{'dups':>6}{'lost':>6}{'retried':>9}"
    )
    for phase in (report["drain"], report["paced"]):
        print(
            f"{phase['phase']:<8}{phase['messages']:>9}{phase.get('messages_per_s', 0):>8.0f}"
            f"{phase.get('ratio_to_bound', 0):>8.2f}{phase['lateness_p50_s']:>9.2f}s"
            f"{phase['lateness_p99_s']:>9.2f}s{phase['duplicates']:>6}{phase['lost']:>6}"
            f"{phase['retried']:>9}"
        )
    print(f"  peak RSS of the worker (MB): {report['peak_rss_mb']['worker']}")
