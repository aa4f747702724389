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

import contextlib
import json
import os
import subprocess
import time
from pathlib import Path

from bench.common import OWNER_EMAIL, PYTHON, Tree, peak_rss_mb, process, run_manage

WORKER_CONCURRENCY = 24  # provider slots in all (the bound's numerator)
# One process per core: each process's threads share one GIL, and a send costs milliseconds of
# CPU (database statements, Celery, the Twilio SDK), so a single process tops out at one core.
WORKER_PROCESSES = 2
# Threads per process beyond its provider slots (DELIVERY_PROVIDER_CONCURRENCY): they claim,
# render and record while the slots are with the provider, so a slot is never idle for that.
SPARE_THREADS = 4
# The sized configuration: few enough slots that the bound (80 msg/s) is under the CPU ceiling.
SIZED_PROCESSES = 2
SIZED_SLOTS = 2  # per process
SIZED_MESSAGES = 4000
PROVIDER_LATENCY = 0.05
PROVIDER_ERROR_RATE = 0.005
PACED_SECONDS = 30
STALL_SECONDS = 30  # no row left the in-flight states for this long: what remains is stuck

TARGETS = {"throughput_over_bound": 0.9, "lateness_p99_s": 5.0}

# Final statuses of a row the provider took, and the statuses of a row still on its way.
SENT_STATUSES = ("sent", "delivered")
IN_FLIGHT_STATUSES = ("pending", "queued", "sending")
LEASED_STATUSES = ("queued", "sending")  # the predicate of the index reviews_message_in_flight
POLL_SECONDS = 1.0


# Run by the tree's own code, like ``_NO_QUIET_HOURS``: each tree's models match its own
# database (the harness's may have columns the old tree's tables lack, e.g. a request's location).
_PRELOAD = """
import json
from datetime import timedelta

from django.utils import timezone

from accounts.models import User
from reviews.models import Channel, Contact, Message, ReviewRequest

owner = User.objects.get(email={email!r})
first_due = timezone.now() + timedelta(seconds={delay!r})
first_phone = Contact.objects.filter(owner=owner).count() + 1  # numbers unique across phases
contacts = Contact.objects.bulk_create(
    [
        Contact(owner=owner, first_name="Bench", phone=f"+1555{{n:07d}}")
        for n in range(first_phone, first_phone + {count!r})
    ],
    batch_size=2000,
)
requests = ReviewRequest.objects.bulk_create(
    [
        ReviewRequest(
            owner=owner,
            contact=contact,
            scheduled_for=first_due + timedelta(seconds=n * {spacing!r}),
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
print(json.dumps([str(message.pk) for message in messages]))
"""


def _preload(tree: Tree, count: int, *, delay: float, spacing: float) -> list[str]:
    """``count`` contacts of the bench owner with one pending SMS each, due ``delay`` s from now
    and then every ``spacing`` s, written by ``tree``'s own code into its database; their ids."""
    script = _PRELOAD.format(email=OWNER_EMAIL, delay=delay, count=count, spacing=spacing)
    return json.loads(run_manage(tree, "shell", "-c", script).strip().splitlines()[-1])


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else 0.0


def _settle(ids: list[str], timeout: float, using: str = "default") -> dict:
    """Wait until every message left the in-flight states, or none has for ``STALL_SECONDS``
    (or ``timeout`` passed); return their final rows.

    The poll shares the two cores with what it measures, so it is cheap: the number of rows
    in flight in the whole table (two counts over the dispatcher's own partial indexes), once
    a second. Only when that number is down to the rows in flight that are not this phase's
    does it check the phase's rows by id. Asking for the phase's ids every half second cost
    the harness 0.4 ms of CPU per message sent, and the drain 7 % of its msg/s."""
    from reviews.models import Message

    messages = Message.objects.using(using)

    def in_flight() -> int:
        pending = messages.filter(status=Message.Status.PENDING).count()
        return pending + messages.filter(status__in=LEASED_STATUSES).count()

    def phase_in_flight() -> int:
        return messages.filter(pk__in=ids, status__in=IN_FLIGHT_STATUSES).count()

    # Rows in flight that are not this phase's (an earlier phase's stuck rows), counted once.
    # In this order, a row that settles between the two counts makes ``others`` larger, never
    # smaller: the precise check below then runs a little early, and the wait cannot miss
    # its end.
    others = in_flight() - phase_in_flight()
    deadline = time.monotonic() + timeout
    remaining, moved_at = None, time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - moved_at < STALL_SECONDS:
        count = in_flight()
        if count <= others and phase_in_flight() == 0:
            break
        if count != remaining:
            remaining, moved_at = count, time.monotonic()
        time.sleep(POLL_SECONDS)
    return {
        str(row["pk"]): row
        for row in messages.filter(pk__in=ids).values(
            "pk",
            "status",
            "due_at",
            "queued_at",
            "sending_at",
            "sent_at",
            "attempts",
            "last_error_code",
            "last_error",
        )
    }


def _phase_report(name: str, ids: list[str], rows: dict, fake, bound: float) -> dict:

    sent = [r for r in rows.values() if r["status"] in SENT_STATUSES]
    lateness = [(r["sent_at"] - r["due_at"]).total_seconds() for r in sent]
    counts = fake.counts()
    duplicates = sum(max(0, counts.get(message_id, 0) - 1) for message_id in ids)
    statuses: dict[str, int] = {}
    for row in rows.values():
        statuses[row["status"]] = statuses.get(row["status"], 0) + 1
    unsettled = sum(statuses.get(s, 0) for s in IN_FLIGHT_STATUSES)
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
        "not_sent": _not_sent(rows, counts),
    }
    # Claim to recorded outcome, inside one send task: the provider's latency plus our own
    # statements around it. The bound assumes a slot is busy for the provider's latency only.
    in_task = [
        1000 * (r["sent_at"] - r["sending_at"]).total_seconds() for r in sent if r["sending_at"]
    ]
    report["send_ms_p50"] = round(_percentile(in_task, 0.50), 1)
    report["send_ms_p99"] = round(_percentile(in_task, 0.99), 1)
    # Claim to the request's arrival at the provider: what a provider slot carries besides the
    # provider's own latency (the slot is taken just before the claim and given back when the
    # answer is in). Both clocks are this machine's wall clock.
    arrived = {c.our_message_id: c.at for c in fake.calls if c.accepted}
    to_provider = [
        1000 * (arrived[str(r["pk"])] - r["sending_at"].timestamp())
        for r in sent
        if r["sending_at"] and str(r["pk"]) in arrived
    ]
    report["to_provider_ms_p50"] = round(_percentile(to_provider, 0.50), 1)
    report["to_provider_ms_p99"] = round(_percentile(to_provider, 0.99), 1)
    if sent:
        start = min(r["queued_at"] for r in sent if r["queued_at"])
        end = max(r["sent_at"] for r in sent)
        seconds = max((end - start).total_seconds(), 1e-6)
        report["seconds"] = round(seconds, 1)
        report["messages_per_s"] = round(len(sent) / seconds, 1)
        report["ratio_to_bound"] = round(len(sent) / seconds / bound, 2)
        # While the backlog lasted: the middle 90 % of the sends, without the first sweep's
        # start and the tail of rows that waited out a retry's backoff (1-4 s here) after the
        # rest had gone. Shown beside the end-to-end figure, which the target is taken on.
        times = sorted(r["sent_at"] for r in sent)
        low, high = len(times) // 20, len(times) - 1 - len(times) // 20
        if high > low and times[high] > times[low]:
            steady = (high - low) / (times[high] - times[low]).total_seconds()
            report["steady_messages_per_s"] = round(steady, 1)
            report["steady_ratio_to_bound"] = round(steady / bound, 2)
    return report


def _not_sent(rows: dict, counts: dict) -> list[dict]:
    """Rows that settled other than sent (``unknown``, ``failed``, ...), grouped by status and
    error code, with whether the fake provider had accepted them and one error text: an
    unknown outcome is neither lost nor a duplicate, but it needs reconciling, and the run's
    worker logs go with its temporary directory."""
    groups: dict[tuple[str, str], dict] = {}
    for message_id, row in rows.items():
        if row["status"] in SENT_STATUSES + IN_FLIGHT_STATUSES:
            continue
        group = groups.setdefault(
            (row["status"], row["last_error_code"]),
            {
                "status": row["status"],
                "code": row["last_error_code"],
                "count": 0,
                "accepted_by_provider": 0,
                "example": row["last_error"][:300],
            },
        )
        group["count"] += 1
        group["accepted_by_provider"] += counts.get(message_id, 0) > 0
    return sorted(groups.values(), key=lambda g: -g["count"])


def cpu_seconds(pid: int, *, reaped_children: bool = False) -> float:
    """User + system CPU time of one process so far (``/proc/<pid>/stat``); with
    ``reaped_children``, plus that of its children that have exited and been waited for."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = int(fields[11]) + int(fields[12])  # utime, stime
    if reaped_children:
        ticks += int(fields[13]) + int(fields[14])  # cutime, cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def _worker_env(tree: Tree, fake) -> dict:
    return {
        **tree.env,
        "TWILIO_ACCOUNT_SID": "ACbench",
        "TWILIO_AUTH_TOKEN": "bench-token",
        "TWILIO_FROM_NUMBER": "+15005550006",
        "TWILIO_API_BASE_URL": fake.twilio_base_url,
        # Transient rejections (the fake's error rate) come back within the run.
        "DELIVERY_RETRY_BASE_SECONDS": "1",
        "DELIVERY_RETRY_MAX_SECONDS": "4",
        "LOG_LEVEL": "WARNING",
    }


def _workers(stack, tree: Tree, fake, var_dir: Path, *, processes: int, slots: int, tag: str):
    """``processes`` worker processes of ``tree``, each with ``slots`` provider slots and
    ``SPARE_THREADS`` more threads, and beat, sending to ``fake``.

    The broker's queues are emptied first: what is left there (the write path's dispatch
    kicks, or with ``--against`` the other tree's tasks, as both trees share one Redis
    database) is not this drain's work."""
    threads = slots + SPARE_THREADS
    env = {**_worker_env(tree, fake), "DELIVERY_PROVIDER_CONCURRENCY": str(slots)}
    celery = [PYTHON, "-m", "celery", "--app", "config"]
    purge = subprocess.run(
        [*celery, "purge", "--force", "--queues", "celery,dispatch"],
        cwd=tree.root,
        env=env,
        capture_output=True,
        text=True,
    )
    if purge.returncode != 0:
        raise SystemExit(f"{tree.name} tree: celery purge failed:\n{purge.stderr[-3000:]}")

    def worker_cmd(n: int) -> list[str]:
        return [
            *celery, "worker", "--loglevel", "WARNING",
            "--queues", "celery,dispatch", "--pool", "threads", "--concurrency", str(threads),
            "--hostname", f"bench-{tag}-{n}@%h",
        ]  # fmt: skip

    def start(cmd: list[str], log: str):
        return stack.enter_context(process(cmd, env, var_dir / log, cwd=tree.root))

    workers = [start(worker_cmd(n), f"worker-{tag}-{n}.log") for n in range(processes)]
    start([*celery, "beat", "--loglevel", "WARNING"], f"beat-{tag}.log")
    time.sleep(3)  # workers and beat up before anything is due
    return workers


def _drain(tree: Tree, count: int, workers, fake, bound: float) -> dict:
    cpu_before = machine_cpu(workers)
    ids = _preload(tree, count, delay=0, spacing=0)
    rows = _settle(ids, timeout=count / 5 + 120, using=tree.alias)
    report = _phase_report("drain", ids, rows, fake, bound)
    cpu = {key: value - cpu_before[key] for key, value in machine_cpu(workers).items()}
    # Worker CPU per message: with the cores available, this caps msg/s whatever the
    # concurrency. The rest of the machine's CPU per message, by who spent it, says what
    # else competes for the same two cores.
    report["worker_cpu_ms_per_message"] = round(1000 * cpu["workers"] / max(count, 1), 1)
    report["cpu_ms_per_message"] = {
        key: round(1000 * value / max(count, 1), 2) for key, value in cpu.items() if key != "wall"
    }
    report["machine_busy"] = round(cpu["busy"] / max(cpu["wall"] * (os.cpu_count() or 1), 1e-6), 2)
    return report


def machine_cpu(workers) -> dict[str, float]:
    """CPU seconds spent so far, by whom: the worker processes, PostgreSQL (every
    ``postgres`` process: the workers' backends, the harness's, the background writer and
    WAL writer), this harness (the fake provider and the poll run in it), and the machine in
    all (``busy``, from ``/proc/stat``: beat, Redis and the kernel are the rest), with the wall
    clock (``wall``). A backend that exits during a phase (a worker's connection recycled
    after ``CONN_MAX_AGE``, every minute of a drain) keeps counting: the postmaster has reaped
    it, and its CPU is in the postmaster's children's time."""
    postgres = 0.0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() == "postgres":
                    postgres += cpu_seconds(int(entry.name), reaped_children=True)
            except OSError:
                continue  # exited meanwhile
    ticks = [int(field) for field in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = ticks[3] + ticks[4]  # idle, iowait (and steal, the eighth, is not ours)
    return {
        "workers": sum(cpu_seconds(worker.pid) for worker in workers),
        "postgres": postgres,
        "harness": cpu_seconds(os.getpid()),
        "busy": (sum(ticks[:7]) - idle) / os.sysconf("SC_CLK_TCK"),
        "wall": time.monotonic(),
    }


def _config(processes: int, slots: int) -> dict:
    concurrency = processes * slots
    return {
        "worker_pool": f"{processes} x ({slots} slots, {slots + SPARE_THREADS} threads)",
        "concurrency": concurrency,
        "bound_messages_per_s": round(concurrency / PROVIDER_LATENCY, 1),
    }


def _main_config(args) -> tuple[int, int, dict]:
    """The headline configuration: ``--worker-concurrency`` slots in ``--worker-processes``."""
    processes = max(1, getattr(args, "worker_processes", None) or WORKER_PROCESSES)
    concurrency = getattr(args, "worker_concurrency", None) or WORKER_CONCURRENCY
    slots = max(1, concurrency // processes)
    return processes, slots, _config(processes, slots)


# Run by the tree's own code (its settings model may have columns the harness's lacks, or not
# have some it has), so that its own cache of the settings is invalidated too.
_NO_QUIET_HOURS = f"""
from accounts.models import User
from reviews.models import BusinessSettings
owner = User.objects.get(email={OWNER_EMAIL!r})
policy, _ = BusinessSettings.objects.get_or_create(owner=owner)
policy.send_window_applies_to = BusinessSettings.WindowAppliesTo.NONE
policy.save()
"""


def _no_quiet_hours(tree: Tree) -> None:
    """The bench owner in ``tree``'s database gets no quiet hours (see the module docstring)."""
    run_manage(tree, "shell", "-c", _NO_QUIET_HOURS)


def _fake_provider():
    from tests.support.fake_providers import FakeProviders

    return FakeProviders(latency=PROVIDER_LATENCY, error_rate=PROVIDER_ERROR_RATE, seed=7)


def run_dispatcher_bench(tree: Tree, var_dir: Path, args, targets: list) -> dict:
    """Run the phases on ``tree``; append the dispatcher targets to ``targets``; return the
    report.

    Two configurations, one after the other, on the same provider: the headline one
    (``--worker-concurrency`` slots in ``--worker-processes`` processes: drain of N, then paced)
    and a *sized* one (``SIZED_PROCESSES`` x ``SIZED_SLOTS``: a drain of at most
    ``SIZED_MESSAGES``), whose bound is below this machine's CPU ceiling, so its ratio shows
    whether the dispatching itself (sweeps, kicks, the queue cap) leaves send slots idle.
    """
    processes, slots, main = _main_config(args)
    sized = _config(SIZED_PROCESSES, SIZED_SLOTS)
    _no_quiet_hours(tree)
    with _fake_provider() as fake:
        with contextlib.ExitStack() as stack:
            workers = _workers(
                stack, tree, fake, var_dir, processes=processes, slots=slots, tag="main"
            )
            bound = main["bound_messages_per_s"]
            drain = _drain(tree, args.messages, workers, fake, bound)

            # Steady load the dispatcher can carry: lateness then measures dispatching, not a
            # queue that grows for the whole phase.
            rate = 0.8 * min(bound, drain.get("messages_per_s") or bound)
            paced_ids = _preload(tree, int(rate * PACED_SECONDS), delay=2, spacing=1 / rate)
            paced_rows = _settle(paced_ids, timeout=PACED_SECONDS * 5 + 120, using=tree.alias)
            paced = _phase_report("paced", paced_ids, paced_rows, fake, bound)
            paced["offered_rate"] = round(rate, 1)
            main["peak_rss_mb"] = [peak_rss_mb(worker.pid) for worker in workers]
        with contextlib.ExitStack() as stack:
            workers = _workers(
                stack,
                tree,
                fake,
                var_dir,
                processes=SIZED_PROCESSES,
                slots=SIZED_SLOTS,
                tag="sized",
            )
            count = min(args.messages, SIZED_MESSAGES)
            bound = sized["bound_messages_per_s"]
            sized_drain = _drain(tree, count, workers, fake, bound)
            sized_drain["phase"] = "sized"
            sized["peak_rss_mb"] = [peak_rss_mb(worker.pid) for worker in workers]

    report = {
        "provider": {"latency_s": PROVIDER_LATENCY, "error_rate": PROVIDER_ERROR_RATE},
        "main": main,
        "sized": sized,
        "drain": drain,
        "paced": paced,
        "sized_drain": sized_drain,
        "peak_rss_mb": {"worker": main["peak_rss_mb"] + sized["peak_rss_mb"]},
    }
    phases = (drain, paced, sized_drain)
    targets += [
        {
            "name": f"dispatcher throughput / bound, drain ({main['worker_pool']})",
            "value": drain.get("ratio_to_bound", 0),
            "target": f">= {TARGETS['throughput_over_bound']}",
            "met": drain.get("ratio_to_bound", 0) >= TARGETS["throughput_over_bound"],
        },
        {
            "name": f"dispatcher throughput / bound, sized ({sized['worker_pool']})",
            "value": sized_drain.get("ratio_to_bound", 0),
            "target": f">= {TARGETS['throughput_over_bound']}",
            "met": sized_drain.get("ratio_to_bound", 0) >= TARGETS["throughput_over_bound"],
        },
        {
            "name": "dispatcher lateness p99 s (paced at 80% of what the drain achieved)",
            "value": paced["lateness_p99_s"],
            "target": f"<= {TARGETS['lateness_p99_s']}",
            "met": paced["lateness_p99_s"] <= TARGETS["lateness_p99_s"],
        },
        {
            "name": "duplicates (all phases)",
            "value": sum(p["duplicates"] for p in phases),
            "target": "== 0",
            "met": sum(p["duplicates"] for p in phases) == 0,
        },
        {
            "name": "lost (all phases)",
            "value": sum(p["lost"] for p in phases),
            "target": "== 0",
            "met": sum(p["lost"] for p in phases) == 0,
        },
    ]
    print_dispatcher_table(report)
    return report


def drain_rounds(trees: list[Tree], var_dir: Path, args) -> dict:
    """``--against``: ``args.repeat`` rounds of one drain of ``args.messages`` per tree, in
    turn (new, old, new, old ...), each by fresh workers of the headline configuration started
    from that tree, into one fake provider. Returns each tree's drains in round order (only
    the drain: the paced and sized phases run without ``--against``)."""
    processes, slots, main = _main_config(args)
    for tree in trees:
        _no_quiet_hours(tree)
    drains: dict[str, list[dict]] = {tree.name: [] for tree in trees}
    with _fake_provider() as fake:
        for n in range(args.repeat):
            for tree in trees:
                with contextlib.ExitStack() as stack:
                    tag = f"{tree.name}-{n}"
                    workers = _workers(
                        stack, tree, fake, var_dir, processes=processes, slots=slots, tag=tag
                    )
                    drain = _drain(tree, args.messages, workers, fake, main["bound_messages_per_s"])
                    drain["peak_rss_mb"] = [peak_rss_mb(worker.pid) for worker in workers]
                drains[tree.name].append(drain)
    return {
        "provider": {"latency_s": PROVIDER_LATENCY, "error_rate": PROVIDER_ERROR_RATE},
        "main": main,
        "drains": drains,
    }


def print_dispatcher_table(report: dict) -> None:
    provider = report["provider"]
    print(
        f"\nDispatcher (fake Twilio: {provider['latency_s'] * 1000:.0f} ms, "
        f"{provider['error_rate']:.1%} errors; bound = send slots / latency)"
    )
    print(
        f"{'phase':<8}{'workers':>30}{'bound':>7}{'messages':>9}{'msg/s':>7}{'/bound':>7}"
        f"{'late p50':>10}{'late p99':>10}{'dups':>5}{'lost':>5}{'retried':>8}{'cpu ms':>8}"
    )
    rows = (
        (report["drain"], report["main"]),
        (report["paced"], report["main"]),
        (report["sized_drain"], report["sized"]),
    )
    for phase, config in rows:
        print(
            f"{phase['phase']:<8}{config['worker_pool']:>30}"
            f"{config['bound_messages_per_s']:>7.0f}{phase['messages']:>9}"
            f"{phase.get('messages_per_s', 0):>7.0f}{phase.get('ratio_to_bound', 0):>7.2f}"
            f"{phase['lateness_p50_s']:>9.2f}s{phase['lateness_p99_s']:>9.2f}s"
            f"{phase['duplicates']:>5}{phase['lost']:>5}{phase['retried']:>8}"
            f"{phase.get('send_ms_p50', ''):>8}{phase.get('worker_cpu_ms_per_message', ''):>8}"
        )
    print(
        "  send ms: p50 from claim to recorded outcome (provider latency + our statements); "
        "cpu ms: worker CPU per message (PostgreSQL, beat and the fake provider not included)"
    )
    for phase, _ in rows:
        if "steady_messages_per_s" in phase:
            print(
                f"  {phase['phase']}: {phase['steady_messages_per_s']:.0f} msg/s "
                f"({phase['steady_ratio_to_bound']:.2f} of the bound) while the backlog lasted "
                "(the middle 90 % of the sends: no start, no tail of retries in backoff)"
            )
        if "to_provider_ms_p50" in phase:
            print(
                f"  {phase['phase']}: claim to the request's arrival at the provider p50 "
                f"{phase['to_provider_ms_p50']} ms, p99 {phase['to_provider_ms_p99']} ms (a slot's "
                "time besides the provider's latency)"
            )
        cpu = phase.get("cpu_ms_per_message")
        if cpu:
            rest = cpu["busy"] - cpu["workers"] - cpu["postgres"] - cpu["harness"]
            print(
                f"  {phase['phase']}: machine CPU per message {cpu['busy']:.2f} ms = workers "
                f"{cpu['workers']:.2f} + PostgreSQL {cpu['postgres']:.2f} + harness (fake "
                f"provider, poll) {cpu['harness']:.2f} + the rest (beat, Redis, kernel) "
                f"{rest:.2f}; machine busy {phase['machine_busy']:.0%}"
            )
    print(f"  peak RSS per worker process (MB): {report['peak_rss_mb']['worker']}")
    for phase, _ in rows:
        for group in phase.get("not_sent", []):
            print(
                f"  {phase['phase']}: {group['count']} {group['status']} "
                f"({group['code'] or 'no code'}; {group['accepted_by_provider']} of them accepted "
                f"by the provider): {group['example']}"
            )
