"""The bench's write path measures its levels in rounds, and takes ratios within a round."""

from __future__ import annotations

from argparse import Namespace

from bench import load, run


def test_levels_run_in_rounds_and_ratios_are_taken_within_each_round(monkeypatch):
    calls = []
    # The machine slows down by half between the second and the third round: level after
    # level, L2 would be measured fast and L4 slow; in rounds, both see the same minutes.
    speed = {"L2": [1000, 1000, 500], "L4": [400, 400, 200]}

    def fake_wrk(url, script, seconds, args, name, **env):
        calls.append((name, seconds))
        if seconds == args.warmup:
            return load.LoadResult(name, 1, 1, 1, 1, 0, 0)
        measured = sum(1 for n, s in calls if n == name and s == args.duration) - 1
        return load.LoadResult(name, speed[name][measured], 1.0, 2.0, 10, 0, 0)

    monkeypatch.setattr(load, "wrk", fake_wrk)
    args = Namespace(warmup=1, duration=5, repeat=3)
    (l2, l4), rounds = load.measure_in_rounds(
        [("u", "write.lua", "L2", {}), ("u", "write.lua", "L4", {})], args
    )
    assert calls == [("L2", 1), ("L4", 1)] + [("L2", 5), ("L4", 5)] * 3
    assert (l2.requests_per_s, l2.runs) == (1000, [1000, 1000, 500])
    assert (l4.requests_per_s, l4.runs) == (400, [400, 400, 200])
    assert load.median_ratio(rounds, 1, 0) == 0.4


def test_a_median_ratio_of_an_even_number_of_rounds_is_the_mean_of_the_middle_two():
    def result(rps):
        return load.LoadResult("x", rps, 1, 1, 1, 0, 0)

    rounds = [[result(100), result(30)], [result(100), result(50)]]
    assert load.median_ratio(rounds, 1, 0) == 0.4


def paced_run(monkeypatch, measured, *, non_2xx=0):
    """``at_fixed_rate`` at 180 req/s over fake wrk runs: the calibration probe lands within
    3 % at once, then each measured run's (req/s, p99) comes from ``measured``. Returns the
    result and wrk's (seconds, delay) calls."""
    calls, measured = [], iter(measured)

    def fake_wrk(url, script, seconds, args, name, **env):
        calls.append((seconds, env["BENCH_DELAY_MS"]))
        if seconds == 4:
            return load.LoadResult(name, 181, 10.0, 20.0, 700, 0, 0)
        rps, p99 = next(measured)
        return load.LoadResult(name, rps, 12.0, p99, rps * 10, non_2xx, 0)

    monkeypatch.setattr(load, "wrk", fake_wrk)
    args = Namespace(warmup=1, duration=10, repeat=3, connections=8)
    return load.at_fixed_rate("u", "write.lua", 180.0, args, "L4 at 80%"), calls


def test_the_paced_level_is_calibrated_then_run_repeat_times_and_its_p99_is_the_median_run(
    monkeypatch,
):
    # The measured runs' p99 are 22, 31 (a stall of the shared VM in that run) and 24 ms.
    paced, calls = paced_run(monkeypatch, [(180, 22.0), (176, 31.0), (179, 24.0)], non_2xx=1)
    # The delay follows each run's pace: 176 req/s for 180 asked shortens it.
    assert calls == [(4, "44"), (10, "44"), (10, "44"), (10, "43")]
    assert (paced.requests_per_s, paced.p99_ms) == (179, 24.0)
    assert paced.runs == [180, 176, 179]
    assert paced.p99_runs == [22.0, 31.0, 24.0]
    assert paced.non_2xx == 3


def test_a_paced_run_that_went_off_the_rate_does_not_count_and_the_delay_is_corrected(
    monkeypatch,
):
    # The machine sped up after the calibration: the first run offered 200 req/s for 180
    # asked (the p99 of a run at 89 % of the maximum); the delay is lengthened and run again.
    paced, calls = paced_run(monkeypatch, [(200, 60.0), (178, 24.0), (182, 26.0), (179, 25.0)])
    assert calls == [(4, "44"), (10, "44"), (10, "49"), (10, "48"), (10, "49")]
    assert (paced.runs, paced.off_pace_runs) == ([178, 182, 179], [200])
    assert (paced.p99_ms, paced.name) == (25.0, "L4 at 80%")


def test_when_no_paced_run_keeps_the_rate_all_count_and_the_level_says_so(monkeypatch):
    def fake_wrk(url, script, seconds, args, name, **env):
        return load.LoadResult(name, 150 if seconds != 4 else 181, 12.0, 30.0, 1500, 0, 0)

    monkeypatch.setattr(load, "wrk", fake_wrk)
    args = Namespace(warmup=1, duration=10, repeat=2, connections=8)
    paced = load.at_fixed_rate("u", "write.lua", 180.0, args, "L4 at 80%")
    assert paced.runs == [150, 150, 150, 150]  # 2 x repeat runs, none within 5 %
    assert paced.name == "L4 at 80% (pace not kept)" and paced.off_pace_runs == []


WRK_OUTPUT = """Running 3s test @ http://127.0.0.1:8000/api/zapier/send-review-request
  1 threads and 8 connections
  Latency Distribution
     50%   24.10ms
     75%   27.00ms
     90%   30.00ms
     99%    1.02s
  906 requests in 3.00s, 0.99MB read
  Socket errors: connect 0, read 1, write 0, timeout 2
  Non-2xx or 3xx responses: 4
Requests/sec:    301.80
Transfer/sec:    337.46KB
Replayed responses: 5
"""


def test_wrk_output_is_read_with_the_replays_write_lua_counted():
    result = load.parse_wrk(WRK_OUTPUT, "L4")
    assert (result.requests_per_s, result.p50_ms, result.p99_ms) == (301.8, 24.1, 1020.0)
    assert (result.requests, result.non_2xx, result.socket_errors) == (906, 4, 3)
    assert result.replayed == 5


def test_runs_in_rounds_add_up_their_replays(monkeypatch):
    def fake_wrk(url, script, seconds, args, name, **env):
        return load.LoadResult(name, 100, 1.0, 2.0, 10, 0, 0, replayed=1)

    monkeypatch.setattr(load, "wrk", fake_wrk)
    args = Namespace(warmup=1, duration=5, repeat=3)
    (level,), _ = load.measure_in_rounds([("u", "write.lua", "L4", {})], args)
    assert level.replayed == 3  # the measured runs' (the warm-up is not a measured run)


def test_quick_shortens_every_phase_but_explicit_options_win():
    quick = run.parse_args(["--quick", "--repeat", "3"])
    assert (quick.duration, quick.warmup, quick.repeat, quick.messages) == (3, 1, 3, 400)
    assert quick.skip_cache_off
    full = run.parse_args([])
    assert (full.duration, full.repeat, full.messages, full.skip_cache_off) == (10, 3, 20000, False)
