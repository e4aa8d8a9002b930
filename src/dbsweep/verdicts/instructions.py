"""Verdicts on instructions per event: each target's count against the base's, per step, with the floor below
which a difference is not reported and where that floor came from.

A count is deterministic only as far as the work is: the backends' work for the same statements repeats to
about 0.01 %, but background processes also wake by the clock (a WAL writer, a background writer), and how many
times they woke depends on how long the run took, which a busy machine changes. So when every target's
background processes did almost nothing per event in a step (under BACKGROUND_SHARE of the work), the step is
judged on the foreground's count, the work done for the client; otherwise on every process's. The choice is the
step's, not each pair's: every target of a step is shown and judged on one figure (`basis`), so the table's
figure, the verdict beside it and `dbsweep why` are the same number. The floor is the largest of: the default
(0.2 %), three times the spread of either side's pairs (of the figure judged), and twice the A-A difference
`dbsweep calibrate` measured for the step (two identical targets, each from its own load).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from dbsweep.results.counts import Basis, Count
from dbsweep.results.store import Store
from dbsweep.study import Study
from dbsweep.verdicts import calibrate, stats

FloorSource = Literal["default", "pairs", "calibrate"]
CALIBRATED_FACTOR = 2.0  # a change must be this many times the A-A difference to count
BACKGROUND_SHARE = 0.05  # background work below this share of the total is mostly the clock's wake-ups

Counted = Count | Mapping[str, Any]  # a stored dict is read as a Count (bench scripts pass the store's dicts)


@dataclass(frozen=True)
class InstrVerdict:
    """A target's instructions per event against the base's for one step, and the two figures judged."""

    ratio: float | None  # target / base on `basis`; None when either side has no count
    verdict: stats.Verdict | None
    floor: float
    floor_source: FloorSource
    base_share: float | None = None  # the foreground's share of the base's work per event
    target_share: float | None = None
    error: str | None = None  # why there is no verdict
    basis: Basis = "all processes"  # which count was judged
    base_figure: float | None = None  # the base's instructions per event on `basis`
    target_figure: float | None = None
    # Judged on every process: the foreground's own verdict beside it, when both sides have one. Background work
    # can hide the opposite change in the thread that serves the client (11.8's updates: -18 % in all, +11 %
    # in the foreground against 10.5).
    foreground: InstrVerdict | None = None

    @property
    def decided(self) -> bool:
        return self.verdict is not None and stats.decided(self.verdict)


def as_count(c: Counted | None, target: str = "", step: str = "") -> Count | None:
    if c is None or isinstance(c, Count):
        return c
    return Count.from_stored(target, step, c)


def quiet_background(c: Count) -> bool:
    """Whether the count's background processes did under BACKGROUND_SHARE of the work."""
    return c.has_foreground and c.foreground_share is not None and c.foreground_share >= 1 - BACKGROUND_SHARE


def step_basis(counts: Iterable[Count]) -> Basis:
    """The figure a step is judged and shown on: the foreground's when every counted target has one and did
    next to no background work, else every process's."""
    ok = [c for c in counts if c.ok]
    return "foreground" if ok and all(quiet_background(c) for c in ok) else "all processes"


def floor_for(spreads: tuple[float, float], aa: float | None = None) -> tuple[float, FloorSource]:
    """The smallest difference worth a verdict for this pair of counts, and what set it."""
    floor, source = stats.INSTRUCTION_FLOOR, "default"
    pairs = 3 * max(spreads)
    if pairs > floor:
        floor, source = pairs, "pairs"
    if aa is not None and CALIBRATED_FACTOR * aa > floor:
        floor, source = CALIBRATED_FACTOR * aa, "calibrate"
    return floor, source  # type: ignore[return-value]


def judge(
    base: Counted | None, target: Counted | None, aa: float | None = None, basis: Basis | None = None
) -> InstrVerdict:
    """The verdict of two counts on `basis` (default: `step_basis` of the two)."""
    b, t = as_count(base), as_count(target)
    if b is None or t is None:
        return InstrVerdict(None, None, stats.INSTRUCTION_FLOOR, "default", error="not counted")
    for side, name in ((b, "the base"), (t, "the target")):
        if not side.ok:
            return InstrVerdict(
                None, None, stats.INSTRUCTION_FLOOR, "default", error=f"{name}: {side.error or 'no count'}"
            )
    chosen = basis or step_basis((b, t))
    if chosen == "foreground" and not (b.has_foreground and t.has_foreground):
        chosen = "all processes"
    fg = None
    if chosen == "all processes" and b.has_foreground and t.has_foreground:
        fg = _judged(b, t, "foreground", aa, None)
    return _judged(b, t, chosen, aa, fg)


def _judged(b: Count, t: Count, basis: Basis, aa: float | None, fg: InstrVerdict | None) -> InstrVerdict:
    vb, vt = b.figure(basis), t.figure(basis)
    assert vb is not None and vt is not None  # judge checked both sides
    floor, source = floor_for((b.spread_of(basis), t.spread_of(basis)), aa)
    return InstrVerdict(
        vt / vb,
        stats.instruction_verdict(vb, vt, floor=floor),
        floor,
        source,
        b.foreground_share,
        t.foreground_share,
        basis=basis,
        base_figure=vb,
        target_figure=vt,
        foreground=fg,
    )


def _typed(counts: Mapping[tuple[str, str], Counted]) -> dict[tuple[str, str], Count]:
    out: dict[tuple[str, str], Count] = {}
    for (t, s), c in counts.items():
        typed = as_count(c, t, s)
        assert typed is not None
        out[(t, s)] = typed
    return out


def bases(counts: Mapping[tuple[str, str], Counted]) -> dict[str, Basis]:
    """step -> the figure the step is judged and shown on, over every target counted in it."""
    typed = _typed(counts)
    steps = dict.fromkeys(s for _t, s in typed)
    return {s: step_basis(c for (_t, st), c in typed.items() if st == s) for s in steps}


def run_verdicts(
    counts: Mapping[tuple[str, str], Counted], base: str, aa: Mapping[str, float] | None = None
) -> dict[tuple[str, str], InstrVerdict]:
    """(target, step) -> verdict, for every target but the base that has a count of the step (or a failed one),
    each step judged on one figure for every target (`bases`)."""
    typed = _typed(counts)
    basis = bases(typed)
    out: dict[tuple[str, str], InstrVerdict] = {}
    for (target, step), count in typed.items():
        if target != base:
            out[(target, step)] = judge(typed.get((base, step)), count, (aa or {}).get(step), basis[step])
    return out


@dataclass(frozen=True)
class AADifference:
    """A calibration's two identical targets on one step: their instructions per event on the step's figure."""

    step: str
    basis: Basis
    a: float
    b: float

    @property
    def difference(self) -> float:
        return abs(self.b / self.a - 1)

    @property
    def floor(self) -> float:
        """The floor this difference sets for the step's verdicts (`floor_for`)."""
        return max(stats.INSTRUCTION_FLOOR, CALIBRATED_FACTOR * self.difference)


def aa_differences(counts: Mapping[tuple[str, str], Counted], a: str, b: str) -> list[AADifference]:
    """Per step counted on both, a calibration's A-A difference: two builds of one source (or one build twice)."""
    typed = _typed(counts)
    out: list[AADifference] = []
    for (target, step), count in typed.items():
        other = typed.get((b, step))
        if target != a or other is None or not count.ok or not other.ok:
            continue
        basis = step_basis((count, other))
        pa, pb = count.figure(basis), other.figure(basis)
        if pa and pb:
            out.append(AADifference(step, basis, pa, pb))
    return out


def calibrated_aa(counts: Mapping[tuple[str, str], Counted], a: str, b: str) -> dict[str, float]:
    """step -> |B/A - 1| of a calibration's two identical targets: the A-A difference of independent loads (and,
    by default, of two builds)."""
    return {d.step: d.difference for d in aa_differences(counts, a, b)}


def calibrated_floors(study: Study, store: Store) -> dict[str, float]:
    """step -> the A-A difference of instructions per event a `dbsweep calibrate` of the base measured (else of
    the first other target calibrated)."""
    for target in sorted(study.targets, key=lambda t: t.label != study.base):
        latest = store.latest_run(calibrate.study_name(study, target))
        if latest is None:
            continue
        a, b = calibrate.copy_labels(target)
        if aa := calibrated_aa(store.counts(latest[0]), a, b):
            return aa
    return {}
