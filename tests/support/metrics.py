"""Reading a sample out of the Prometheus text format that /metrics serves."""

from __future__ import annotations


def sample(text: str, name: str, **labels: str) -> float:
    """The value of one sample in Prometheus' text format (0 when absent)."""
    wanted = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        series, _, value = line.rpartition(" ")
        metric, _, label_text = series.partition("{")
        if metric == name and ",".join(sorted(label_text.rstrip("}").split(","))) == wanted:
            return float(value)
    return 0.0
