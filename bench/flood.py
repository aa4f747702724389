"""The floods: ``make bench BENCH_ARGS="--only flood"`` (and in the default run).

What the hardening of issue 25 promised: 16 parallel clients sending wrong client secrets to
``POST /api/oauth/zapier/token``, or wrong passwords for ever-changing addresses to
``POST /accounts/login/``, must not slow the API down for everyone else. While a flood runs
(wrk, 16 connections), one client calls ``GET /api/zapier/me`` with a valid token every
``PROBE_INTERVAL_S`` seconds, one request at a time; its latency percentiles are the figure
(target: p99 under 50 ms). The gunicorn is the Procfile's with 3 workers, the setup in which
the issue measured ``/me`` at 5.5-5.9 s when every secret check ran PBKDF2. Floods:

* none: ``/me`` alone, for comparison;
* wrong secrets: each connection sends its next request as soon as it is answered (the
  issue's flood got ~3.5 requests/s through PBKDF2; this one gets what the workers can serve,
  first 401s, then 429s once the client's failure limit is reached);
* wrong passwords, new addresses: the login form (with a valid CSRF cookie and token) with a
  different address in every request, all from one network (a random 10.x.y.z per run, sent as
  ``X-Forwarded-For`` with ``NUM_PROXIES=1``, so an earlier run's counters in the bench's Redis
  do not count): first while the network's budget of password checks for addresses without
  standing is being spent (each check is PBKDF2; 16 threads that wait for every answer, until
  the first 429), then past it (wrk; 429s without a check);
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
import secrets
import statistics
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

from bench.common import Tree, children, wait_http, web
from bench.load import WRK_DIR, wrk_line

TOKEN = "/api/oauth/zapier/token"
LOGIN = "/accounts/login/"
ME = "/api/zapier/me"
FLOOD_CONNECTIONS = 16
WEB_WORKERS = 3
PROBE_INTERVAL_S = 0.05
TARGET_P99_MS = 50.0
SPEND_LIMIT_S = 300.0  # the login flood's budget, spent at PBKDF2's pace, takes about 10-30 s


def _client_id(tree: Tree) -> str:
    from oauth2_provider.models import get_application_model

    return get_application_model().objects.using(tree.alias).get(name="Bench").client_id


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def probe(tree: Tree, seconds: float, stop: threading.Event | None = None) -> dict:
    """``GET /me`` one at a time for ``seconds`` (or until ``stop`` is set); latency
    percentiles in ms, statuses."""
    request = urllib.request.Request(
        tree.base + ME, headers={"Authorization": f"Bearer {tree.token}"}
    )
    latencies: list[float] = []
    statuses: dict[int | str, int] = {}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not (stop is not None and stop.is_set()):
        started = time.perf_counter()
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                response.read()
                status = response.status
        except urllib.error.HTTPError as exc:
            status = exc.code
        except (TimeoutError, urllib.error.URLError):
            status = "timeout"  # counted with the time waited: the worst of the figure
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


def login_form(base: str) -> tuple[str, str]:
    """A CSRF cookie and the login form's token that goes with it (``GET /accounts/login/``)."""
    with urllib.request.urlopen(base + LOGIN, timeout=30) as response:
        cookies = response.headers.get_all("Set-Cookie") or []
        page = response.read().decode()
    cookie = next(c.split(";", 1)[0] for c in cookies if c.startswith("csrftoken="))
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    if found is None:
        raise ValueError("the login page has no CSRF token")
    token = found.group(1)
    return cookie, token


def flood(url: str, seconds: float, *, body: str | None, headers: str = "") -> dict:
    """wrk: ``FLOOD_CONNECTIONS`` connections posting ``body`` to ``url`` (GET without one);
    ``__N__`` in ``body`` differs in every request; ``headers``: "K: V|K: V"."""
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
    env["BENCH_HEADERS"] = headers
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    return {
        "requests_per_s": float(wrk_line(r"Requests/sec:\s+([\d.]+)", out)),
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
    result["worker_cpu_s"] = round(cpu, 2)
    result["worker_cpu_ms_per_request"] = round(1000 * cpu / flooded, 2)
    return {**figures, "flood": result}


def spend_login_budget(tree: Tree, master_pid: int, form: dict[str, str]) -> dict:
    """The login flood until its network's budget is spent: ``FLOOD_CONNECTIONS`` threads post
    wrong passwords for new addresses, one request at a time each, until one is answered 429
    (or ``SPEND_LIMIT_S`` passed), while ``/me`` is probed. Each request waits for its answer
    (wrk would give up after 2 s and leave the request queued in the workers)."""
    statuses: dict[int | str, int] = {}
    lock, spent = threading.Lock(), threading.Event()
    headers = dict(h.split(": ", 1) for h in form["headers"].split("|"))
    deadline = time.monotonic() + SPEND_LIMIT_S
    sent = iter(range(10**9))

    def post() -> None:
        while not spent.is_set() and time.monotonic() < deadline:
            with lock:
                n = next(sent)
            data = form["body"].replace("__N__", f"spend-{n}").encode()
            request = urllib.request.Request(tree.base + LOGIN, data=data, headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=120) as response:
                    response.read()
                    status: int | str = response.status
            except urllib.error.HTTPError as exc:
                status = exc.code
            except (TimeoutError, urllib.error.URLError):
                status = "timeout"
            with lock:
                statuses[status] = statuses.get(status, 0) + 1
            if status == 429:
                spent.set()

    cpu_before, started = workers_cpu_s(master_pid), time.monotonic()
    threads = [threading.Thread(target=post) for _ in range(FLOOD_CONNECTIONS)]
    for thread in threads:
        thread.start()
    time.sleep(0.5)
    figures = probe(tree, SPEND_LIMIT_S, stop=spent)
    spent.set()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    cpu = workers_cpu_s(master_pid) - cpu_before
    answered = sum(statuses.values()) or 1
    load = {
        "requests_per_s": round(answered / elapsed, 1),
        "seconds": round(elapsed, 1),
        "statuses": statuses,
        "worker_cpu_s": round(cpu, 2),
        "worker_cpu_ms_per_request": round(1000 * cpu / answered, 2),
    }
    return {**figures, "flood": load}


def run_flood_bench(tree: Tree, var_dir: Path, seconds: float, targets: list) -> dict:
    # NUM_PROXIES=1: the login flood names its network in X-Forwarded-For (everything else,
    # sent without the header, is counted by its socket address as before).
    env = {**tree.env, "WEB_CONCURRENCY": str(WEB_WORKERS), "NUM_PROXIES": "1"}
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
    network = "10." + ".".join(str(secrets.randbelow(254) + 1) for _ in range(3))
    levels = {}
    with web(flooded, var_dir) as master:
        wait_http(f"{tree.base}/healthz")
        probe(tree, 1)  # warm every worker up
        levels["/me alone"] = probe(tree, seconds)
        levels["wrong secrets"] = probe_during(tree, master.pid, seconds, token, body=body)
        cookie, csrf = login_form(tree.base)
        login = {
            "body": urlencode(
                {
                    "csrfmiddlewaretoken": csrf,
                    "username": "flood-__N__@bench.example",
                    "password": "wrong-password",
                }
            ),
            "headers": f"Cookie: {cookie}|X-Forwarded-For: {network}",
        }
        levels["login: spending budget"] = spend_login_budget(tree, master.pid, login)
        levels["login: past budget"] = probe_during(
            tree, master.pid, seconds, tree.base + LOGIN, **login
        )
        levels["control: 404s"] = probe_during(tree, master.pid, seconds, unknown, body=None)
    for level, what in (
        ("wrong secrets", "wrong client secrets"),
        ("login: past budget", "wrong passwords for new addresses (past the network's budget)"),
    ):
        targets.append(
            {
                "name": f"GET /me p99 ms during 16 connections of {what}",
                "value": levels[level]["p99_ms"],
                "target": f"< {TARGET_P99_MS}",
                "met": levels[level]["p99_ms"] < TARGET_P99_MS,
            }
        )
    print(f"\nFloods ({FLOOD_CONNECTIONS} connections, {WEB_WORKERS} web workers)")
    print(
        f"{'flood':<22}{'req/s':>7}{'CPU s':>7}{'CPU ms/req':>11}{'/me p50':>9}{'p99':>9}"
        f"{'max':>9}  flood statuses"
    )
    for name, figures in levels.items():
        load = figures.get("flood", {})
        print(
            f"{name:<22}{load.get('requests_per_s', 0):>7.0f}{load.get('worker_cpu_s', 0):>7.1f}"
            f"{load.get('worker_cpu_ms_per_request', 0):>11.2f}{figures['p50_ms']:>9.2f}"
            f"{figures['p99_ms']:>9.2f}{figures['max_ms']:>9.2f}  {load.get('statuses', '')}"
        )
    return {
        "web_workers": WEB_WORKERS,
        "flood_connections": FLOOD_CONNECTIONS,
        "login_network": network,
        "levels": levels,
    }
