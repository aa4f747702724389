"""The token-endpoint flood: ``make bench BENCH_ARGS="--only flood"`` (and in the default run).

What the hardening of issue 25 promised: 16 parallel clients sending wrong client secrets to
``POST /api/oauth/zapier/token`` must not slow the API down for everyone else. While a flood
runs (wrk, 16 connections), one client calls ``GET /api/zapier/me`` with a valid token every
``PROBE_INTERVAL_S`` seconds, one request at a time; its latency percentiles are the figure
(target: p99 under 50 ms). The gunicorn is the Procfile's with 3 workers, the setup in which
the issue measured ``/me`` at 5.5-5.9 s when every secret check ran PBKDF2. Floods:

* none: ``/me`` alone, for comparison;
* wrong secrets: each connection sends its next request as soon as it is answered (the
  issue's flood got ~3.5 requests/s through PBKDF2; this one gets what the workers can serve,
  first 401s, then 429s once the client's failure limit is reached);
* the control: the same unpaced flood of ``GET`` to an unknown ``/api/`` path (a JSON 404),
  i.e. what 16 connections cost the workers whatever they ask for: the part of the figure
  that no work on the token endpoint can remove (sync workers serve one request at a time, so
  ``/me`` queues behind the flood's requests).

(No paced flood: wrk opens a connection before its delay, and a sync worker that accepted it
waits for the request, so a paced wrk measures idle connections holding workers, not the
token endpoint.)
"""

from __future__ import annotations

import contextlib
import os
import re
import statistics
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

from bench.common import Tree, children, wait_http, web
from bench.load import WRK_DIR

TOKEN = "/api/oauth/zapier/token"
ME = "/api/zapier/me"
FLOOD_CONNECTIONS = 16
WEB_WORKERS = 3
PROBE_INTERVAL_S = 0.05
TARGET_P99_MS = 50.0


def _client_id(tree: Tree) -> str:
    from oauth2_provider.models import get_application_model

    return get_application_model().objects.using(tree.alias).get(name="Bench").client_id


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def probe(tree: Tree, seconds: float) -> dict:
    """``GET /me`` one at a time for ``seconds``; latency percentiles in ms, statuses."""
    request = urllib.request.Request(
        tree.base + ME, headers={"Authorization": f"Bearer {tree.token}"}
    )
    latencies, statuses = [], {}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        started = time.perf_counter()
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                response.read()
                status = response.status
        except urllib.error.HTTPError as exc:
            status = exc.code
        latencies.append((time.perf_counter() - started) * 1000)
        statuses[status] = statuses.get(status, 0) + 1
        time.sleep(PROBE_INTERVAL_S)
    return {
        "requests": len(latencies),
        "statuses": statuses,
        "p50_ms": round(statistics.median(latencies), 2),
        "p99_ms": round(_percentile(latencies, 0.99), 2),
        "max_ms": round(max(latencies), 2),
    }


def flood(url: str, seconds: float, *, body: str | None) -> dict:
    """wrk: ``FLOOD_CONNECTIONS`` connections posting ``body`` to ``url`` (GET without one)."""
    cmd = [
        "wrk",
        "-t2",
        f"-c{FLOOD_CONNECTIONS}",
        f"-d{max(1, round(seconds))}s",
        "-s",
        str(WRK_DIR / "flood.lua"),
        url,
    ]
    env = dict(os.environ)
    if body is not None:
        env["BENCH_BODY"] = body
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    return {
        "requests_per_s": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
        "statuses": {int(s): int(n) for s, n in re.findall(r"^Status (\d+): (\d+)$", out, re.M)},
    }


def workers_cpu_s(master_pid: int) -> float:
    """CPU seconds (user + system) the gunicorn workers have used so far."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in children(master_pid):
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / ticks


def probe_during(tree: Tree, master_pid: int, seconds: float, url: str, **flood_args) -> dict:
    """``/me`` probed during a flood of ``url``; also the workers' CPU per flood request (the
    probe's few requests included), a figure the machine's other load hardly moves."""
    result: dict = {}
    flooding = threading.Thread(target=lambda: result.update(flood(url, seconds + 2, **flood_args)))
    cpu_before = workers_cpu_s(master_pid)
    flooding.start()
    time.sleep(1)  # the flood is on
    figures = probe(tree, seconds)
    flooding.join()
    cpu = workers_cpu_s(master_pid) - cpu_before
    flooded = sum(result.get("statuses", {}).values()) or 1
    result["worker_cpu_ms_per_request"] = round(1000 * cpu / flooded, 2)
    return {**figures, "flood": result}


def run_flood_bench(tree: Tree, var_dir: Path, seconds: float, targets: list) -> dict:
    env = {**tree.env, "WEB_CONCURRENCY": str(WEB_WORKERS)}
    flooded = Tree(**{**vars(tree), "name": f"{tree.name}-flood", "env": env})
    body = urlencode(
        {
            "grant_type": "refresh_token",
            "refresh_token": "x",
            "client_id": _client_id(tree),
            "client_secret": "wrong-" + "x" * 60,
        }
    )
    token, unknown = tree.base + TOKEN, tree.base + "/api/zapier/no-such-path"
    levels = {}
    with web(flooded, var_dir) as master:
        wait_http(f"{tree.base}/healthz")
        probe(tree, 1)  # warm every worker up
        levels["/me alone"] = probe(tree, seconds)
        levels["wrong secrets"] = probe_during(tree, master.pid, seconds, token, body=body)
        levels["control: 404s"] = probe_during(tree, master.pid, seconds, unknown, body=None)
    targets.append(
        {
            "name": "GET /me p99 ms during 16 connections of wrong client secrets",
            "value": levels["wrong secrets"]["p99_ms"],
            "target": f"< {TARGET_P99_MS}",
            "met": levels["wrong secrets"]["p99_ms"] < TARGET_P99_MS,
        }
    )
    print(f"\nToken-endpoint flood ({FLOOD_CONNECTIONS} connections, {WEB_WORKERS} web workers)")
    print(
        f"{'flood':<22}{'req/s':>7}{'CPU ms/req':>11}{'/me p50':>9}{'p99':>9}{'max':>9}"
        "  flood statuses"
    )
    for name, figures in levels.items():
        load = figures.get("flood", {})
        print(
            f"{name:<22}{load.get('requests_per_s', 0):>7.0f}"
            f"{load.get('worker_cpu_ms_per_request', 0):>11.2f}{figures['p50_ms']:>9.2f}"
            f"{figures['p99_ms']:>9.2f}{figures['max_ms']:>9.2f}  {load.get('statuses', '')}"
        )
    return {
        "web_workers": WEB_WORKERS,
        "flood_connections": FLOOD_CONNECTIONS,
        "levels": levels,
    }
