"""``--against REF``: each figure of the new tree beside the old tree's, from the same run.

The trees are measured in turn within every round (new, old, new, old ...), so a ratio is
taken within a round, between runs a few seconds apart, and the figure's ratio is the median
of the rounds' ratios: a shared machine drifts by 20-30 % within minutes, which a ratio of two
medians taken over different minutes would carry.
"""

from __future__ import annotations

import statistics

from bench.load import LoadResult

# (figure as printed, LoadResult attribute)
WRITE_FIGURES = (("req/s", "requests_per_s"), ("p50 ms", "p50_ms"), ("p99 ms", "p99_ms"))


def compared(figure: str, new: list[float], old: list[float]) -> dict:
    """A measured figure: each tree's median over the rounds, and the median of the rounds'
    new/old ratios."""
    ratios = [n / o for n, o in zip(new, old, strict=True) if o]
    return {
        "figure": figure,
        "new": round(statistics.median(new), 2),
        "old": round(statistics.median(old), 2),
        "new_over_old": round(statistics.median(ratios), 3) if ratios else None,
        "new_runs": new,
        "old_runs": old,
    }


def counted(figure: str, new: list[int], old: list[int]) -> dict:
    """A count that must stay 0 (duplicates, lost): each tree's total over the rounds."""
    return {
        "figure": figure,
        "new": sum(new),
        "old": sum(old),
        "new_over_old": None,
        "new_runs": new,
        "old_runs": old,
    }


def write_figures(rounds: list[list[LoadResult]], pairs: dict[str, tuple[int, int]]) -> list:
    """``pairs``: for each level compared, its (new, old) index in a round."""
    figures = []
    for level, (new, old) in pairs.items():
        for label, attribute in WRITE_FIGURES:
            figures.append(
                compared(
                    f"{level} {label}",
                    [round(getattr(r[new], attribute), 2) for r in rounds],
                    [round(getattr(r[old], attribute), 2) for r in rounds],
                )
            )
    return figures


def drain_figures(drains: dict[str, list[dict]]) -> list[dict]:
    """From ``dispatcher.drain_rounds``: msg/s, duplicates and lost of every round's drain."""
    new, old = drains["new"], drains["old"]
    return [
        compared(
            "dispatcher drain msg/s",
            [d.get("messages_per_s", 0.0) for d in new],
            [d.get("messages_per_s", 0.0) for d in old],
        ),
        counted(
            "dispatcher drain duplicates",
            [d["duplicates"] for d in new],
            [d["duplicates"] for d in old],
        ),
        counted("dispatcher drain lost", [d["lost"] for d in new], [d["lost"] for d in old]),
    ]


def print_comparison(comparison: dict) -> None:
    trees = comparison["trees"]

    def name(tree: dict) -> str:
        changes = " + uncommitted changes" if tree["uncommitted_changes"] else ""
        return f"{tree['ref']} {tree['commit'][:10]}{changes}"

    print(f"\nNew ({name(trees['new'])}) against old ({name(trees['old'])})")
    print("(each tree's median over the rounds; new/old is the median of the rounds' ratios)")
    print(f"{'figure':<38}{'new':>10}{'old':>10}{'new/old':>9}  rounds new | old")
    for row in comparison["figures"]:
        ratio = "-" if row["new_over_old"] is None else f"{row['new_over_old']:.2f}"
        print(
            f"{row['figure']:<38}{row['new']:>10}{row['old']:>10}{ratio:>9}  "
            f"{row['new_runs']} | {row['old_runs']}"
        )
