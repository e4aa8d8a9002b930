"""Verdicts on instructions per operation: each target's count against the base's, per step, with the floor
below which a difference is not reported and where that floor came from.

A count is deterministic only as far as the work is: the backends' work for the same statements repeats to
about 0.01 %, but background processes also wake by the clock (a WAL writer, a background writer), and how many
times they woke depends on how long the run took, which a busy machine changes. So when both sides' background
processes did almost nothing per operation (under BACKGROUND_SHARE of the work), the verdict is on the
foreground's count, the work done for the client; otherwise on every process's. The floor is the largest of:
the default (0.2 %), three times the spread of either side's pairs (of the figure judged), and twice the A-A
difference `dbsweep calibrate` measured for the step (two identical targets, each from its own load).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from dbsweep.verdicts import stats

FloorSource = Literal["default", "pairs", "calibrate"]
Basis = Literal["foreground", "all processes"]
CALIBRATED_FACTOR = 2.0  # a change must be this many times the A-A difference to count
BACKGROUND_SHARE = 0.05  # background work below this share of the total is mostly the clock's wake-ups


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
    basis: Basis = "all processes"  # which count was judged
    # Judged on every process: the foreground's own verdict beside it, when both sides have one. Background work
    # can hide the opposite change in the thread that serves the client (11.8's updates: -18 % in all, +11 %
    # in the foreground against 10.5).
    foreground: InstrVerdict | None = None

    @property
    def decided(self) -> bool:
        return self.verdict is not None and stats.decided(self.verdict)


def _figures(count: Mapping[str, Any], basis: Basis) -> tuple[float, float]:
    """(instructions per event, spread) of the count on `basis`."""
    if basis == "foreground":
        return float(count["foreground_per_event"]), float(count.get("foreground_spread") or 0)
    return float(count["per_event"]), float(count.get("spread") or 0)


def basis_of(base: Mapping[str, Any], target: Mapping[str, Any]) -> Basis:
    """The foreground's count when both sides have one and their background work is negligible."""
    for c in (base, target):
        share = c.get("foreground_share")
        if not c.get("foreground_per_event") or share is None or float(share) < 1 - BACKGROUND_SHARE:
            return "all processes"
    return "foreground"


def floor_for(spreads: tuple[float, float], aa: float | None = None) -> tuple[float, FloorSource]:
    """The smallest difference worth a verdict for this pair of counts, and what set it."""
    floor, source = stats.INSTRUCTION_FLOOR, "default"
    pairs = 3 * max(spreads)
    if pairs > floor:
        floor, source = pairs, "pairs"
    if aa is not None and CALIBRATED_FACTOR * aa > floor:
        floor, source = CALIBRATED_FACTOR * aa, "calibrate"
    return floor, source  # type: ignore[return-value]


def judge(base: Mapping[str, Any] | None, target: Mapping[str, Any] | None, aa: float | None = None) -> InstrVerdict:
    """The verdict of two stored counts (`per_event`, `spread`, `foreground_*`, `error`)."""
    if not base or not target:
        return InstrVerdict(None, None, stats.INSTRUCTION_FLOOR, "default", error="not counted")
    for side, name in ((base, "the base"), (target, "the target")):
        if side.get("error") or not side.get("per_event") or float(side["per_event"]) <= 0:
            why = side.get("error") or "no count"
            return InstrVerdict(None, None, stats.INSTRUCTION_FLOOR, "default", error=f"{name}: {why}")
    basis = basis_of(base, target)
    fg = None
    if basis == "all processes" and base.get("foreground_per_event") and target.get("foreground_per_event"):
        fg = _judged(base, target, "foreground", aa, None)
    return _judged(base, target, basis, aa, fg)


def _judged(
    base: Mapping[str, Any], target: Mapping[str, Any], basis: Basis, aa: float | None, fg: InstrVerdict | None
) -> InstrVerdict:
    (b, sb), (t, st) = _figures(base, basis), _figures(target, basis)
    floor, source = floor_for((sb, st), aa)
    return InstrVerdict(
        t / b,
        stats.instruction_verdict(b, t, floor=floor),
        floor,
        source,
        base.get("foreground_share"),
        target.get("foreground_share"),
        basis=basis,
        foreground=fg,
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
        if not count.get("per_event") or not other.get("per_event"):
            continue
        basis = basis_of(count, other)
        (pa, _), (pb, _) = _figures(count, basis), _figures(other, basis)
        if pa > 0 and pb > 0:
            out[step] = abs(pb / pa - 1)
    return out
