"""``--against``: the new and the old tree's figures, with ratios taken within each round."""

from __future__ import annotations

from bench import compare
from bench.load import LoadResult


def level(rps: float, p99: float = 20.0) -> LoadResult:
    return LoadResult("L4", rps, 10.0, p99, int(rps * 10), 0, 0)


def test_the_ratio_is_the_median_of_the_rounds_ratios_not_a_ratio_of_medians():
    # The machine slowed down by half in the third round; within each round the new tree was
    # 10 % faster. Medians of each tree's runs (400 / 400) would hide that.
    rounds = [
        [level(440), level(400)],
        [level(440), level(400)],
        [level(220), level(200)],
    ]
    (rps, p50, p99) = compare.write_figures(rounds, {"L4 fresh": (0, 1)})

    assert rps["figure"] == "L4 fresh req/s"
    assert (rps["new"], rps["old"], rps["new_over_old"]) == (440, 400, 1.1)
    assert (rps["new_runs"], rps["old_runs"]) == ([440, 440, 220], [400, 400, 200])
    assert (p50["figure"], p50["new_over_old"]) == ("L4 fresh p50 ms", 1.0)
    assert p99["figure"] == "L4 fresh p99 ms"


def test_the_drain_is_compared_by_rate_and_its_duplicates_and_lost_are_added_up():
    def drain(rate, duplicates=0, lost=0):
        return {"messages_per_s": rate, "duplicates": duplicates, "lost": lost}

    figures = compare.drain_figures(
        {"new": [drain(100), drain(50, lost=1)], "old": [drain(80, duplicates=2), drain(50)]}
    )
    rate, duplicates, lost = figures
    assert (rate["new"], rate["old"], rate["new_over_old"]) == (75, 65, 1.125)
    assert (duplicates["new"], duplicates["old"], duplicates["new_over_old"]) == (0, 2, None)
    assert (lost["new"], lost["old"]) == (1, 0)


def test_the_comparison_table_names_both_trees_and_prints_every_figure(capsys):
    trees = {
        "new": {"ref": "working tree", "commit": "a" * 40, "uncommitted_changes": True},
        "old": {"ref": "main", "commit": "b" * 40, "uncommitted_changes": False},
    }
    figures = compare.write_figures([[level(330), level(300)]], {"L4 fresh": (0, 1)})
    compare.print_comparison({"trees": trees, "figures": figures})
    out = capsys.readouterr().out
    assert (
        "New (working tree aaaaaaaaaa + uncommitted changes) against old (main bbbbbbbbbb)" in out
    )
    assert "L4 fresh req/s" in out and "1.10" in out
