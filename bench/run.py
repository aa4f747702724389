"""``make bench``: the write path and the dispatcher, measured side by side with their baselines.

One run, one machine, loopback only, against PostgreSQL and Redis:

* write path (gunicorn with the Procfile's settings, ``DEBUG=False``, wrk as load generator):
  L1 a bare Django JSON view, L2 the same writes as one SQL statement (both in
  ``bench/views.py``), L4 the real ``POST /api/zapier/send-review-request`` (OAuth, rate limit,
  idempotency, dedup, message rows) with fresh contacts and with 30 % duplicates; then L4 at a
  fixed 80 % of its maximum rate for latency; L4 on a second gunicorn with the token cache off;
  peak RSS of every gunicorn worker;
* dispatcher (``bench/dispatcher.py``): N due messages drained by the real beat + workers into
  a fake provider on loopback, a paced phase for lateness, and a drain with few enough send
  slots that the CPU is not the limit;
* flood (``bench/flood.py``): ``GET /api/zapier/me`` latency while 16 connections send wrong
  client secrets to the token endpoint, or wrong passwords for ever-changing addresses to the
  login form (new tree only).

``--against REF`` measures a second tree, a temporary ``git worktree`` of REF ("old"), in the
same run: L4 fresh and with duplicates, and the dispatcher's drain, interleaved round by round
with the working tree ("new"), and prints each figure for both with the ratio new/old
(``bench/compare.py``). L1, L2, the paced level and the token-cache-off level are measured on
the new tree only; the dispatcher's paced and sized phases run only without ``--against``.

How to read the figures and what limits each one: ``docs/benchmarks.md``.

Every tree runs in a fresh database that is dropped afterwards. Prints tables and writes
``bench/results/<date>.json`` (or ``--out``). Targets are reported as met or missed, never
asserted; the run fails (exit status 1) only when the load generator's own check fails: a
write run answered with replays of earlier requests (``Idempotent-Replayed``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import secrets
import subprocess
import sys
import tempfile
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

from bench.common import (
    ROOT,
    Tree,
    add_service_options,
    children,
    free_port,
    fresh_database,
    peak_rss_mb,
    run_manage,
    service_env,
    wait_http,
    web,
)
from bench.compare import drain_figures, print_comparison, write_figures
from bench.dispatcher import drain_rounds, run_dispatcher_bench
from bench.flood import run_flood_bench
from bench.load import at_fixed_rate, measure, measure_in_rounds, median_ratio
from bench.trees import DUP_POOL, SEND, describe, seed, seed_duplicates, setup_harness, worktree

RESULTS_DIR = ROOT / "bench" / "results"

TARGETS = {"p99_ms_at_80_percent": 25.0}

# --quick: a smoke run of every part in a few minutes; its figures are not for comparing.
QUICK = {
    "duration": 3,
    "warmup": 1,
    "repeat": 2,
    "messages": 400,
    "flood_seconds": 8,
    "skip_cache_off": True,
}


def versions() -> dict:
    import django
    import rest_framework

    wrk_version = subprocess.run(["wrk", "-v"], capture_output=True, text=True).stdout
    return {
        "python": platform.python_version(),
        "django": django.get_version(),
        "djangorestframework": rest_framework.VERSION,
        "wrk": (wrk_version.split()[1] if wrk_version else "?"),
        "cpus": os.cpu_count(),
        "machine": platform.platform(),
    }


def print_write_table(report: dict) -> None:
    rows = report["write_path"]["levels"]
    print("\nWrite path (req/s is the median of the runs; latency of that run)")
    print(f"{'level':<42}{'req/s':>8}{'p50 ms':>8}{'p99 ms':>8}{'non-2xx':>8}{'replayed':>9}  runs")
    for row in rows:
        print(
            f"{row['name']:<42}{row['requests_per_s']:>8.0f}{row['p50_ms']:>8.2f}"
            f"{row['p99_ms']:>8.2f}{row['non_2xx']:>8}{row['replayed']:>9}  {row['runs']}"
            + (f" p99 {row['p99_runs']}" if row.get("p99_runs") else "")
            + (f" off pace {row['off_pace_runs']}" if row.get("off_pace_runs") else "")
        )
    for key, value in report["write_path"]["ratios"].items():
        print(f"  {key} = {value:.2f}")
    print(f"  peak RSS per gunicorn worker (MB): {report['write_path']['peak_rss_mb']}")
    if "old_peak_rss_mb" in report["write_path"]:
        print(f"  the old tree's (MB): {report['write_path']['old_peak_rss_mb']}")


def print_targets(report: dict) -> None:
    print("\nTargets")
    for target in report["targets"]:
        mark = "met" if target["met"] else "MISSED"
        print(f"  {target['name']}: {target['value']} (target {target['target']}) {mark}")


# --- Main ----------------------------------------------------------------------------------------


def write_path(new: Tree, args, old: Tree | None = None) -> dict:
    dup_env = {"BENCH_DUP_RATIO": "0.3", "BENCH_DUP_POOL": str(DUP_POOL)}

    def l4(tree: Tree, name: str, **env: str) -> tuple[str, str, str, dict]:
        headers = {"BENCH_HEADERS": f"Authorization: Bearer {tree.token}"}
        return (tree.base + SEND, "write.lua", name, {**headers, **env})

    levels = [
        (f"{new.base}/bench/l1", "get.lua", "L1 bare Django JSON view", {}),
        (
            f"{new.base}/bench/l2",
            "write.lua",
            "L2 same writes, one SQL statement",
            {"BENCH_HEADERS": f"X-Bench-Owner: {new.owner_id}"},
        ),
    ]
    pairs: dict[str, tuple[int, int]] = {}  # with an old tree: its level beside the new one's
    for kind, env in (("fresh", {}), ("30% dups", dup_env)):
        levels.append(l4(new, f"L4 send-review-request, {kind}", **env))
        if old is not None:
            pairs[f"L4 {kind}"] = (len(levels) - 1, len(levels))
            levels.append(l4(old, f"L4 send-review-request, {kind} [old]", **env))
    l4_fresh, l4_dups = 2, (4 if old is not None else 3)
    results, rounds = measure_in_rounds(levels, args)
    fresh = results[l4_fresh]
    paced = at_fixed_rate(
        new.base + SEND,
        "write.lua",
        0.8 * fresh.requests_per_s,
        args,
        "L4 fresh at 80% of its max",
        BENCH_HEADERS=f"Authorization: Bearer {new.token}",
    )
    return {
        "levels": [asdict(level) for level in [*results, paced]],
        # Each ratio is the median of the ratios within a round (runs minutes apart at most).
        "ratios": {
            "L4/L2 (fresh)": median_ratio(rounds, l4_fresh, 1),
            "L4/L2 (30% dups)": median_ratio(rounds, l4_dups, 1),
            "L2/L1": median_ratio(rounds, 1, 0),
        },
        "l4_fresh_requests_per_s": fresh.requests_per_s,
        "paced": {"target_rate": round(0.8 * fresh.requests_per_s, 1), "p99_ms": paced.p99_ms},
        "comparison": write_figures(rounds, pairs),
    }


def token_cache_off(new: Tree, var_dir: Path, args) -> dict:
    """The same endpoint with the token-lookup cache off: what the cache buys, in this run, on
    this machine (a second gunicorn, same settings otherwise)."""
    env = {**new.env, "OAUTH_TOKEN_CACHE_SECONDS": "0"}
    uncached = Tree(**{**vars(new), "name": "new-token-cache-off", "env": env})
    with web(uncached, var_dir):
        wait_http(f"{new.base}/healthz")
        return asdict(
            measure(
                new.base + SEND,
                "write.lua",
                args,
                "L4 fresh, token cache off",
                BENCH_HEADERS=f"Authorization: Bearer {new.token}",
            )
        )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=10, help="seconds per measured run")
    parser.add_argument("--warmup", type=float, default=3)
    parser.add_argument("--repeat", type=int, default=3, help="measured runs (rounds) per level")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--wrk-threads", type=int, default=1)
    parser.add_argument("--web-workers", type=int, default=4)
    parser.add_argument("--only", choices=["write", "dispatcher", "flood"], default=None)
    parser.add_argument(
        "--flood-seconds", type=float, default=15, help="flood: seconds of each /me probe"
    )
    parser.add_argument(
        "--skip-cache-off",
        action="store_true",
        help="write path: skip the extra L4 run with the token cache off",
    )
    parser.add_argument("--messages", type=int, default=20_000, help="dispatcher: due messages")
    parser.add_argument(
        "--worker-concurrency",
        type=int,
        default=None,
        help="dispatcher: provider slots in all workers (default 24)",
    )
    parser.add_argument(
        "--worker-processes",
        type=int,
        default=None,
        help="dispatcher: worker processes sharing those slots (default 2)",
    )
    parser.add_argument(
        "--against",
        metavar="GIT_REF",
        help="also measure this ref (a temporary git worktree) and compare it with this tree",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a smoke run: "
        + ", ".join(f"--{k.replace('_', '-')} {v}" for k, v in QUICK.items() if v is not True)
        + ", --skip-cache-off (options given explicitly win)",
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="results file (default bench/results/<date>.json)"
    )
    add_service_options(parser)
    args = parser.parse_args(argv)
    if args.quick:
        parser.set_defaults(**QUICK)
        args = parser.parse_args(argv)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = datetime.now(UTC)
    report: dict = {
        "started_at": started.isoformat(timespec="seconds"),
        "settings": {
            k: str(v) if isinstance(v, Path) else v
            for k, v in vars(args).items()
            if k != "admin_database_url"
        },
        "versions": versions(),
        "trees": {"new": describe(ROOT, "working tree")},
        "targets": [],
    }
    secret_key = secrets.token_urlsafe(50)
    with contextlib.ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-")))

        def tree(name: str, root: Path, settings_module: str, alias: str) -> Tree:
            var_dir = tmp / name
            var_dir.mkdir()
            env = service_env(
                settings_module=settings_module,
                database_url=stack.enter_context(
                    fresh_database(args.admin_database_url, f"_{name}")
                ),
                redis_url=args.redis_url,
                secret_key=secret_key,
                var_dir=var_dir,
                port=free_port(),
                web_workers=args.web_workers,
            )
            return Tree(name=name, root=root, alias=alias, env=env)

        new = tree("new", ROOT, "bench.settings", "default")
        old = None
        if args.against:
            # The old tree may be older than the baselines' URLconf: its processes run on its
            # own service settings, which is all that L4 and the dispatcher need.
            root = stack.enter_context(worktree(args.against, tmp / "old-tree"))
            old = tree("old", root, "config.settings", "old")
            report["trees"]["old"] = describe(root, args.against)
        trees = [new] if old is None else [new, old]
        for each in trees:
            run_manage(each, "migrate", "--noinput")
        setup_harness(new, old)
        for each in trees:
            seed(each)
        comparison = []
        if args.only in (None, "write"):
            with contextlib.ExitStack() as servers:
                gunicorns = {t.name: servers.enter_context(web(t, tmp / t.name)) for t in trees}
                for each in trees:
                    wait_http(f"{each.base}/healthz")
                    seed_duplicates(each)
                write = report["write_path"] = write_path(new, args, old)
                write["peak_rss_mb"] = [peak_rss_mb(p) for p in children(gunicorns["new"].pid)]
                if old is not None:
                    pids = children(gunicorns["old"].pid)
                    write["old_peak_rss_mb"] = [peak_rss_mb(p) for p in pids]
            comparison += write.pop("comparison")
            if not args.skip_cache_off:
                uncached = token_cache_off(new, tmp / "new", args)
                write["levels"].append(uncached)
                l4 = write["l4_fresh_requests_per_s"]
                write["ratios"]["L4 cached / L4 token cache off"] = l4 / uncached["requests_per_s"]
            paced = write["paced"]
            report["targets"].append(
                {
                    "name": "p99 ms at 80% of L4's max",
                    "value": paced["p99_ms"],
                    "target": f"<= {TARGETS['p99_ms_at_80_percent']}",
                    "met": paced["p99_ms"] <= TARGETS["p99_ms_at_80_percent"],
                }
            )
            print_write_table(report)
        if args.only in (None, "dispatcher"):
            if old is None:
                report["dispatcher"] = run_dispatcher_bench(new, tmp, args, report["targets"])
            else:
                rounds = report["dispatcher_rounds"] = drain_rounds(trees, tmp, args)
                comparison += drain_figures(rounds["drains"])
        if args.only in (None, "flood"):
            report["flood"] = run_flood_bench(
                new, tmp / "new", args.flood_seconds, report["targets"]
            )
        if old is not None:
            report["comparison"] = {"trees": report["trees"], "figures": comparison}
    report["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    if report["targets"]:
        print_targets(report)
    if "comparison" in report:
        print_comparison(report["comparison"])
    replayed = sum(level["replayed"] for level in report.get("write_path", {}).get("levels", []))
    report["replayed_responses"] = replayed
    out = args.out or RESULTS_DIR / f"{started:%Y-%m-%d}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, default=str) + "\n")
    print(f"\nWrote {out}")
    if replayed:
        print(
            f"\nFAILED: {replayed} write responses were replays of an earlier request "
            "(Idempotent-Replayed): the load generator sent an Idempotency-Key twice, so the "
            "write path's figures are not valid.",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
