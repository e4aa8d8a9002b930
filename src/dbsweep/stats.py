"""Statistics over repetitions: medians and relative QPS. Pure functions, no I/O."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

# rQPS colour thresholds, as in the seeds' reports.
SLOWER_AT = 0.95
FASTER_AT = 1.05


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def relative(value: float, base: float) -> float | None:
    """value / base; None when the base is zero (no meaningful ratio)."""
    if base == 0:
        return None
    return value / base


def spread(values: Sequence[float]) -> float | None:
    """Coefficient of variation of the repetitions (None with fewer than two)."""
    if len(values) < 2:
        return None
    m = statistics.fmean(values)
    return statistics.stdev(values) / m if m else None


def colour(rqps: float | None) -> str:
    if rqps is None:
        return "grey"
    if rqps <= SLOWER_AT:
        return "red"
    if rqps >= FASTER_AT:
        return "green"
    return "grey"
