"""Load generation with wrk: one run, runs in rounds, and runs paced at a fixed rate."""

from __future__ import annotations

import os
import re
import secrets
import statistics
import subprocess
from dataclasses import dataclass, field, replace

from bench.common import ROOT

WRK_DIR = ROOT / "bench" / "wrk"


@dataclass
class LoadResult:
    name: str
    requests_per_s: float
    p50_ms: float
    p99_ms: float
    requests: int
    non_2xx: int
    socket_errors: int
    # Responses that were replays of an earlier request (``Idempotent-Replayed``, counted by
    # write.lua): every request sends a new key, so any is a fault of the load generator.
    replayed: int = 0
    runs: list[float] = field(default_factory=list)
    p99_runs: list[float] = field(default_factory=list)
    off_pace_runs: list[float] = field(default_factory=list)


_UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}


def _ms(value: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s|m)", value.strip())
    if match is None:
        raise ValueError(f"not a wrk duration: {value!r}")
    number, unit = match.groups()
    return float(number) * _UNITS[unit]


def wrk_line(pattern: str, output: str) -> str:
    """The first group of ``pattern`` (multiline) in wrk's output, which always prints it."""
    match = re.search(pattern, output, re.M)
    if match is None:
        raise ValueError(f"no {pattern!r} in wrk's output")
    return match.group(1)


def parse_wrk(output: str, name: str) -> LoadResult:
    rps = float(wrk_line(r"Requests/sec:\s+([\d.]+)", output))
    p50 = _ms(wrk_line(r"^\s+50%\s+(\S+)", output))
    p99 = _ms(wrk_line(r"^\s+99%\s+(\S+)", output))
    total = int(wrk_line(r"(\d+) requests in", output))
    non_2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", output)
    errors = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output
    )
    replayed = re.search(r"^Replayed responses: (\d+)$", output, re.M)
    return LoadResult(
        name=name,
        requests_per_s=rps,
        p50_ms=p50,
        p99_ms=p99,
        requests=total,
        non_2xx=int(non_2xx.group(1)) if non_2xx else 0,
        socket_errors=sum(int(g) for g in errors.groups()) if errors else 0,
        replayed=int(replayed.group(1)) if replayed else 0,
    )


def wrk(url: str, script: str, seconds: float, args, name: str, **env: str) -> LoadResult:
    run_env = {**os.environ, "BENCH_RUN": secrets.token_hex(4), **env}
    cmd = [
        "wrk",
        f"-t{args.wrk_threads}",
        f"-c{args.connections}",
        f"-d{max(1, round(seconds))}s",
        "--latency",
        "-s",
        str(WRK_DIR / script),
        url,
    ]
    result = subprocess.run(cmd, env=run_env, capture_output=True, text=True, check=True)
    return parse_wrk(result.stdout, name)


def measure(url: str, script: str, args, name: str, **env: str) -> LoadResult:
    """Warm up, then ``args.repeat`` runs; the median run (by req/s) is the result."""
    return measure_in_rounds([(url, script, name, env)], args)[0][0]


def measure_in_rounds(
    levels: list[tuple[str, str, str, dict]], args
) -> tuple[list[LoadResult], list[list[LoadResult]]]:
    """Warm every level up, then ``args.repeat`` rounds that each run every level once, in
    order. A shared VM speeds up and slows down by 20-30 % within minutes; measured level
    after level, that drift landed between L2 and L4 and moved their ratio (one run put L2 at
    464 req/s and L4 at 280, L4/L2 0.60, while L1 fell 29 %). In rounds, each level's runs
    are spread over the same minutes, and a ratio can be taken within each round.

    Returns each level's median run (by req/s, with every run's req/s in ``runs``) and the
    runs round by round."""
    for url, script, name, env in levels:
        wrk(url, script, args.warmup, args, name, **env)
    rounds = [
        [wrk(url, script, args.duration, args, name, **env) for url, script, name, env in levels]
        for _ in range(args.repeat)
    ]
    results = []
    for index in range(len(levels)):
        runs = sorted((round_[index] for round_ in rounds), key=lambda r: r.requests_per_s)
        median = replace(runs[len(runs) // 2])
        median.runs = [round(round_[index].requests_per_s, 1) for round_ in rounds]
        median.non_2xx = sum(r.non_2xx for r in runs)
        median.socket_errors = sum(r.socket_errors for r in runs)
        median.replayed = sum(r.replayed for r in runs)
        results.append(median)
    return results, rounds


def median_ratio(
    rounds: list[list[LoadResult]], top: int, bottom: int, figure: str = "requests_per_s"
) -> float:
    """The median over rounds of level ``top``'s ``figure`` (req/s by default) over level
    ``bottom``'s in that round."""
    return statistics.median(getattr(r[top], figure) / getattr(r[bottom], figure) for r in rounds)


# A paced run counts when it offered within this share of the asked rate.
PACE_TOLERANCE = 0.05


def at_fixed_rate(url: str, script: str, rate: float, args, name: str, **env: str) -> LoadResult:
    """wrk paced by a per-connection delay, calibrated until it offers ``rate`` requests/s,
    then ``args.repeat`` runs at that pace; the run with the median p99 is the result (every
    counted run's req/s in ``runs``, its p99 in ``p99_runs``).

    wrk waits ``delay`` ms before each request on each connection, so one connection offers
    1000 / (delay + latency) requests/s; short calibration runs correct for the latency.
    A p99 over one 10 s run is its ~20 slowest requests: one stall of the shared VM moves it
    by several milliseconds, so it is taken like the levels' req/s, as a median of runs.

    The pace follows the latency: when the machine speeds up after the calibration, the same
    delay offers more (one run went at 162 req/s for 135 asked, 96 % of the maximum instead
    of 80 %). So the delay is corrected after every run, and a run that went more than
    ``PACE_TOLERANCE`` off the rate does not count (its req/s is kept in ``off_pace_runs``);
    at most ``2 x repeat`` runs in all. If none kept the pace, all of them count.
    """
    delay = 1000.0 * args.connections / rate
    for _ in range(3):
        probe = wrk(url, script, 4, args, name, BENCH_DELAY_MS=str(int(delay)), **env)
        if abs(probe.requests_per_s - rate) / rate < 0.03:
            break
        delay = _repaced(delay, probe.requests_per_s, rate)
    runs: list[LoadResult] = []
    off_pace: list[LoadResult] = []
    for _ in range(2 * args.repeat):
        measured = wrk(
            url, script, args.duration, args, name, BENCH_DELAY_MS=str(int(delay)), **env
        )
        (runs if abs(measured.requests_per_s / rate - 1) <= PACE_TOLERANCE else off_pace).append(
            measured
        )
        if len(runs) == args.repeat:
            break
        delay = _repaced(delay, measured.requests_per_s, rate)
    counted = runs or off_pace
    result = replace(sorted(counted, key=lambda r: r.p99_ms)[len(counted) // 2])
    if not runs:
        result.name += " (pace not kept)"
    result.runs = [round(r.requests_per_s, 1) for r in counted]
    result.p99_runs = [r.p99_ms for r in counted]
    result.off_pace_runs = [round(r.requests_per_s, 1) for r in off_pace] if runs else []
    result.non_2xx = sum(r.non_2xx for r in counted)
    result.socket_errors = sum(r.socket_errors for r in counted)
    result.replayed = sum(r.replayed for r in runs + off_pace)  # every run sent requests
    return result


def _repaced(delay: float, achieved: float, rate: float) -> float:
    """wrk's delay scaled by how far a run's pace was from ``rate``."""
    return max(0.0, delay * achieved / rate)
