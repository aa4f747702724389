"""Running bench-scale: each size in a child process on a fresh database (``--one``), each
page timed there, and the report of the sizes side by side against the targets."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlencode

from bench.common import (
    PYTHON,
    ROOT,
    Tree,
    add_service_options,
    fresh_database,
    run_manage,
    service_env,
)
from bench.scale import __doc__ as ABOUT
from bench.scale.data import HISTORY_DAYS, MANAGER_EMAIL, SMALL_BUSINESSES, load
from bench.scale.pages import SHAPES, Page, pages, resolve
from bench.trees import SEND, describe, seed, setup_harness

RESULTS_DIR = ROOT / "bench" / "results"
CLAIM = 100  # messages per measured dispatcher claim (the default DISPATCH_BATCH_SIZE)
WRITE_RUNS = 40  # the write path's runs: enough for a p95 (the 38th of 40)

# Targets at the big size (issues 26 and 38): median ms per kind of row (the write path: its
# p50 and its p95), and big/small ratio of every row.
TARGET_MS = {
    "portal": 150.0,
    "admin list": 300.0,
    "admin dashboard": 300.0,
    "api list": 100.0,
    "write": 300.0,
}
TARGET_RATIO = 1.5
DEFAULTS = {"sizes": [10_000, 1_000_000], "small_requests": 200, "repeat": 5}
QUICK = {"sizes": [2_000, 50_000], "small_requests": 20, "repeat": 3}
SLOW_SECONDS = 10.0  # a page whose warm-up takes longer is measured once, not --repeat times


class Probe(NamedTuple):
    """What a call timed by its own means returns: its status, ms and queries, and the URL
    of the page it timed."""

    status: int
    ms: float
    queries: int
    url: str = ""


def timed(call, repeat: int) -> dict:
    """One warm-up, then ``repeat`` runs (one if the warm-up took over ``SLOW_SECONDS``: a
    page that slow misses its target by far, and a 1M run should not spend an hour on it):
    median, p95 and max ms, the queries of the last run. ``call`` returns a status, or a
    ``Probe`` when it times a part of itself (the last of the pages it walks)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    started = time.perf_counter()
    warm = call()
    took = warm.ms / 1000 if isinstance(warm, Probe) else time.perf_counter() - started
    if took > SLOW_SECONDS:
        repeat = 1
    runs: list[float] = []
    queries = 0
    status: int | None = None
    for _ in range(repeat):
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            result = call()
            ms = (time.perf_counter() - started) * 1000
        if isinstance(result, Probe):
            status, ms, queries = result.status, result.ms, result.queries
        else:
            status, queries = result, len(captured)
        runs.append(ms)
    return {
        "median_ms": round(statistics.median(runs), 1),
        "p95_ms": round(p95(runs), 1),
        "max_ms": round(max(runs), 1),
        "queries": queries,
        "status": status,
        "runs_ms": [round(r, 1) for r in runs],
    }


def p95(runs: list[float]) -> float:
    """The 95th percentile (between the runs around it; the max of fewer than two runs)."""
    if len(runs) < 2:
        return max(runs)
    return statistics.quantiles(runs, n=20, method="inclusive")[18]


def follow(client, url: str, hops: int) -> Probe:
    """``url``'s first page, then ``hops`` of its ``?after=`` cursors, one after the other
    (each page's "older" link): the page the last one reaches, timed with its queries.
    Status 0 if a page before it has no older page (too few rows)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    response = client.get(url)
    ms, queries, reached = 0.0, 0, url
    for _ in range(hops):
        older = response.context["page"].older if response.status_code == 200 else ""
        if not older:
            return Probe(0, 0.0, 0, reached)
        reached = f"{url}{'&' if '?' in url else '?'}{urlencode({'after': older})}"
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            response = client.get(reached)
            ms = (time.perf_counter() - started) * 1000
        queries = len(captured)
    return Probe(response.status_code, ms, queries, reached)


def clients(owner_id: str, token: str) -> dict[str, Any]:
    """A test ``Client`` per kind of user: the owner, the manager with two locations, staff
    (a superuser made here) and the API (the owner's OAuth token)."""
    from django.test import Client

    from accounts.models import User

    staff = User.objects.filter(email="staff@bench.example").first()
    if staff is None:
        staff = User(email="staff@bench.example", is_staff=True, is_superuser=True)
        staff.set_unusable_password()
        staff.save()
    owner, manager, admin = Client(), Client(), Client()
    owner.force_login(User.objects.get(pk=owner_id))
    manager.force_login(User.objects.get(email=MANAGER_EMAIL))
    admin.force_login(staff)
    api = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    return {"owner": owner, "manager": manager, "staff": admin, "api": api}


def measure_page(page: Page, client, owner_id: str, repeat: int) -> dict:
    """One page's figures (``timed``), with its kind and resolved URL."""
    url = resolve(page.url, owner_id)
    if page.follow:
        figures = timed(lambda: follow(client, url, page.follow), repeat)
    else:
        figures = timed(lambda: client.get(url).status_code, repeat)
    return {"kind": page.kind, "shape": page.shape, "url": url, **figures}


def measure(tree: Tree, size: int, repeat: int, shapes: tuple[str, ...] = SHAPES) -> dict:
    from django.test import Client
    from django.test.utils import setup_test_environment

    setup_test_environment()  # "testserver" allowed; the Client's response context recorded
    by_who = clients(tree.owner_id, tree.token)
    results = {}
    for page in pages(tree.owner_id, size, shapes):
        results[page.name] = measure_page(page, by_who[page.who], tree.owner_id, repeat)
        figures = results[page.name]
        print(f"  {page.name}: {figures['median_ms']} ms ({figures['queries']})", flush=True)
    if "write" not in shapes:
        return results

    api = Client(HTTP_AUTHORIZATION=f"Bearer {tree.token}")
    sent = iter(range(10**6))

    def post() -> int:
        n = next(sent)
        body = {"first_name": "Bench", "email": f"write-{n}@bench.example", "delay_hours": 2}
        return api.post(SEND, body, content_type="application/json").status_code

    runs = max(repeat, WRITE_RUNS)
    results["write path (POST contact)"] = {"kind": "write", "shape": "write", **timed(post, runs)}

    claims = measure_claims(repeat)
    results[f"dispatcher claim ({CLAIM})"] = {"kind": "dispatcher", "shape": "write", **claims}
    return results


def measure_claims(repeat: int, claim: int = CLAIM) -> dict:
    """A dispatcher run claiming ``claim`` due messages, timed (``timed``: its status is the
    last run's count claimed). The claimed rows stay queued until the end, so the cap on
    queued rows is raised for the runs: at its default (500) the sixth claim of ``--repeat
    5`` found the queue full and claimed nothing. Nothing here sends: the claimed rows go back
    to pending, their tasks off the broker."""
    from django.test.utils import override_settings

    from config.celery import app as celery_app
    from reviews.models import Message
    from reviews.services import messages_dispatch_due

    def dispatch() -> int:
        return len(messages_dispatch_due(batch_size=claim, limit=claim).claimed)

    try:
        with override_settings(DISPATCH_MAX_QUEUED=claim * (repeat + 1)):
            return timed(dispatch, repeat)
    finally:
        Message.objects.filter(status=Message.Status.QUEUED).update(status=Message.Status.PENDING)
        celery_app.control.purge()


def run_one(args) -> None:
    """One size in this process, on ``--database-url``; results to ``--out``."""
    var_dir = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    env = service_env(
        settings_module="config.settings",
        database_url=args.database_url,
        redis_url=args.redis_url,
        secret_key=os.environ.get("BENCH_SECRET_KEY", "bench-scale-" + "x" * 50),
        var_dir=var_dir,
        port=0,
        web_workers=1,
    )
    tree = Tree(name=f"scale-{args.one}", root=ROOT, alias="default", env=env)
    run_manage(tree, "migrate", "--noinput")
    # This process is the service here (the pages run in it): all of its environment.
    os.environ.update(env)
    setup_harness(tree, None)
    seed(tree)
    print(f"size {args.one}: loading", flush=True)
    started = time.perf_counter()
    loaded = load(
        owner_id=tree.owner_id,
        size=args.one,
        small=SMALL_BUSINESSES,
        small_requests=args.small_requests,
        due=CLAIM * (args.repeat + 1),  # the warm-up's claim and each run's
    )
    loaded["total_seconds"] = round(time.perf_counter() - started, 1)
    print(f"size {args.one}: loaded in {loaded['total_seconds']} s; measuring", flush=True)
    measured = measure(tree, args.one, args.repeat, args.shapes)
    report = {"size": args.one, "load": loaded, "pages": measured}
    args.out.write_text(json.dumps(report, indent=2, default=str) + "\n")


# --- The report ---------------------------------------------------------------------------------


def verdicts(small: dict, big: dict) -> list[dict]:
    """Per row: the big size's median against its target, and the ratio big/small; the write
    path has two rows, its median (p50) and its p95."""
    rows = []
    for name, figure in big["pages"].items():
        stats = [("median_ms", name)]
        if figure["kind"] == "write":
            stats = [("median_ms", f"{name} p50"), ("p95_ms", f"{name} p95")]
        for stat, label in stats:
            base = small["pages"].get(name)
            ratio = round(figure[stat] / base[stat], 2) if base and base[stat] else None
            target = TARGET_MS.get(figure["kind"])
            rows.append(
                {
                    "page": label,
                    "key": name,
                    "stat": stat,
                    "target_ms": target,
                    "met_ms": None if target is None else figure[stat] <= target,
                    "ratio": ratio,
                    "met_ratio": None if ratio is None else ratio <= TARGET_RATIO,
                }
            )
    return rows


def print_table(sizes: list[dict], rows: list[dict]) -> None:
    small, big = sizes[0], sizes[-1]
    head = "".join(f"{format(s['size'], ',') + ' median/max ms (queries)':>34}" for s in sizes)
    width = max([38, *(len(row["page"]) + 2 for row in rows)])
    print(f"\n{'page':<{width}}{head}{'big/small':>11}  targets")
    for row in rows:
        key, stat = row.get("key", row["page"]), row.get("stat", "median_ms")
        cells = ""
        for size in sizes:
            f = size["pages"].get(key)
            if f is None:
                cells += f"{'-':>34}"
                continue
            odd = f["kind"] != "dispatcher" and f["status"] not in (200, 201)
            cell = f"{f[stat]:.1f} / {f['max_ms']:.1f} ({f['queries']})"
            if odd:
                cell += f" [HTTP {f['status']}]"
            cells += f"{cell:>34}"
        ratio = "" if row["ratio"] is None else f"{row['ratio']:.2f}"
        marks = []
        if row["target_ms"] is not None:
            marks.append(f"<= {row['target_ms']:.0f} ms {'met' if row['met_ms'] else 'MISSED'}")
        if row["met_ratio"] is not None:
            marks.append(f"ratio {'met' if row['met_ratio'] else 'MISSED'}")
        print(f"{row['page']:<{width}}{cells}{ratio:>11}  {', '.join(marks)}")
    print(
        f"\nLoad: {small['size']:,} in {small['load']['total_seconds']} s, "
        f"{big['size']:,} in {big['load']['total_seconds']} s "
        f"(+ {SMALL_BUSINESSES} small businesses each time)"
    )


def shape_list(text: str) -> tuple[str, ...]:
    chosen = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = sorted(set(chosen) - set(SHAPES))
    if unknown or not chosen:
        named = ", ".join(unknown) or repr(text)
        raise argparse.ArgumentTypeError(
            f"not a shape: {named} (one or more of {', '.join(SHAPES)})"
        )
    return chosen


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.scale", description=(ABOUT or "").split("\n\n")[0]
    )
    parser.add_argument(
        "--sizes",
        type=lambda text: [int(x) for x in text.split(",")],
        default=None,
        help="requests of the measured business, small,big (default 10000,1000000)",
    )
    parser.add_argument("--small-requests", type=int, default=None, help="per small business")
    parser.add_argument("--repeat", type=int, default=None, help="measured runs per page")
    parser.add_argument("--quick", action="store_true", help="sizes 2000,50000, 3 runs a page")
    parser.add_argument(
        "--shapes",
        type=shape_list,
        default=SHAPES,
        help="what to measure, comma-separated (default: all): pages (every portal and admin "
        "page), names (fragments found in ~0.01, ~0.2 and ~5 %% of contacts), phones "
        "(national, international, E.164), emails (an address, a domain), statuses (every "
        "status filter), cursors (the page reached through 50 ?after= cursors), api "
        "(the API's lists), write (the write path and a dispatcher claim)",
    )
    parser.add_argument("--out", type=Path, default=None)
    add_service_options(parser)
    # One size in this process (what the run starts per size), on a database it loads.
    parser.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--database-url", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for key, value in (QUICK if args.quick else DEFAULTS).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if min(args.sizes) < 2 * CLAIM * (args.repeat + 1):
        parser.error(f"sizes must be at least {2 * CLAIM * (args.repeat + 1)} with that --repeat")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.one is not None:
        run_one(args)
        return 0
    started = datetime.now(UTC)
    report: dict = {
        "started_at": started.isoformat(timespec="seconds"),
        "settings": {
            "sizes": args.sizes,
            "small_businesses": SMALL_BUSINESSES,
            "small_requests": args.small_requests,
            "history_days": HISTORY_DAYS,
            "repeat": args.repeat,
            "quick": args.quick,
            "shapes": list(args.shapes),
        },
        "tree": describe(ROOT, "working tree"),
        "sizes": [],
    }
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        for size in args.sizes:
            out = Path(tmp) / f"{size}.json"
            with fresh_database(args.admin_database_url, f"_scale{size}") as url:
                command = [PYTHON, "-m", "bench.scale", "--one", str(size), "--database-url"]
                command += [url, "--out", str(out), "--repeat", str(args.repeat)]
                command += ["--small-requests", str(args.small_requests)]
                command += ["--redis-url", args.redis_url, "--shapes", ",".join(args.shapes)]
                env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
                subprocess.run(command, cwd=ROOT, env=env, check=True)
            report["sizes"].append(json.loads(out.read_text()))
    rows = report["verdicts"] = verdicts(report["sizes"][0], report["sizes"][-1])
    report["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    print_table(report["sizes"], rows)
    out = args.out or RESULTS_DIR / f"{started:%Y-%m-%d}-scale.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(f"\nWrote {out}")
    return 0
