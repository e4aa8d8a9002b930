"""Verdicts on instructions per operation: each target's count against the base's, per step, with the floor
below which a difference is not reported and where that floor came from.

A count is deterministic only as far as the work is: a read repeats to about 0.01 %, a write less (background
processes woken by the clock, not by the work). So the floor is the largest of: the default (0.2 %), three
times the spread of either side's pairs, and twice the A-A difference `dbsweep calibrate` measured for the
step (two identical targets, each from its own load) when the workspace has one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from dbsweep.verdicts import stats

FloorSource = Literal["default", "pairs", "calibrate"]
CALIBRATED_FACTOR = 2.0  # a change must be this many times the A-A difference to count


@dataclass(frozen=True)
class InstrVerdict:
    """A target's instructions per event against the base's for one step."""

    ratio: float | None  # target / base; None when either side has no count
    verdict: stats.Verdict | None
    floor: float
    floor_source: FloorSource
    base_share: float | None = None  # the foreground's share of the base's work per event
    target_share: float | None = None
    error: str | None = None  # why there is no verdict

    @property
    def decided(self) -> bool:
        return self.verdict is not None and stats.decided(self.verdict)


def floor_for(base: Mapping[str, Any], target: Mapping[str, Any], aa: float | None = None) -> tuple[float, FloorSource]:
    """The smallest difference worth a verdict for this pair of counts, and what set it."""
    floor, source = stats.INSTRUCTION_FLOOR, "default"
    pairs = 3 * max(float(base.get("spread") or 0), float(target.get("spread") or 0))
    if pairs > floor:
        floor, source = pairs, "pairs"
    if aa is not None and CALIBRATED_FACTOR * aa > floor:
        floor, source = CALIBRATED_FACTOR * aa, "calibrate"
    return floor, source  # type: ignore[return-value]


def judge(base: Mapping[str, Any] | None, target: Mapping[str, Any] | None, aa: float | None = None) -> InstrVerdict:
    """The verdict of two stored counts (`per_event`, `spread`, `foreground_share`, `error`)."""
    if not base or not target:
        return InstrVerdict(None, None, stats.INSTRUCTION_FLOOR, "default", error="not counted")
    for side, name in ((base, "the base"), (target, "the target")):
        if side.get("error") or not side.get("per_event") or float(side["per_event"]) <= 0:
            why = side.get("error") or "no count"
            return InstrVerdict(None, None, stats.INSTRUCTION_FLOOR, "default", error=f"{name}: {why}")
    floor, source = floor_for(base, target, aa)
    b, t = float(base["per_event"]), float(target["per_event"])
    return InstrVerdict(
        t / b,
        stats.instruction_verdict(b, t, floor=floor),
        floor,
        source,
        base.get("foreground_share"),
        target.get("foreground_share"),
    )


def run_verdicts(
    counts: Mapping[tuple[str, str], Mapping[str, Any]], base: str, aa: Mapping[str, float] | None = None
) -> dict[tuple[str, str], InstrVerdict]:
    """(target, step) -> verdict, for every target but the base that has a count of the step (or a failed one)."""
    out: dict[tuple[str, str], InstrVerdict] = {}
    for (target, step), count in counts.items():
        if target != base:
            out[(target, step)] = judge(counts.get((base, step)), count, (aa or {}).get(step))
    return out


def calibrated_aa(counts: Mapping[tuple[str, str], Mapping[str, Any]], a: str, b: str) -> dict[str, float]:
    """step -> |B/A - 1| of a calibration's two identical targets: the A-A difference of independent loads."""
    out: dict[str, float] = {}
    for (target, step), count in counts.items():
        other = counts.get((b, step))
        if target != a or not other or count.get("error") or other.get("error"):
            continue
        pa, pb = float(count.get("per_event") or 0), float(other.get("per_event") or 0)
        if pa > 0 and pb > 0:
            out[step] = abs(pb / pa - 1)
    return out
