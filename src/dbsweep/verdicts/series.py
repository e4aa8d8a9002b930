"""A study's targets read as an ordered series (`series = true`): per step and figure, the value of each target and
where the series changed (`changepoints`).

The figures and their samples: QPS and cpu/o per repetition of each cell (per client count), and instructions
per event per pair of each count, on the figure the step is judged on (`instructions.bases`). A candidate is
confirmed by the same verdict as everywhere else, of the target after it against the one before it: `judge`
for QPS and cpu/o (the study's confidence and minimum effect), `instructions.judge` for counts (the floor).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from dbsweep.measure import functions
from dbsweep.measure.functions import FunctionChange
from dbsweep.measure.instructions import FUNCTIONS_KEPT
from dbsweep.results.counts import Count
from dbsweep.results.store import Store
from dbsweep.study import Study
from dbsweep.verdicts import changepoints, instructions
from dbsweep.verdicts.changepoints import ChangePoint, Comparison
from dbsweep.verdicts.judging import by_repetition, judge

Figure = Literal["instructions", "QPS", "cpu/o"]
WHY = 3  # functions shown per change point of a count


@dataclass(frozen=True)
class Series:
    """One step's figure over the series: each target's value (median of its samples) and the change points."""

    step: str
    clients: int | None  # None for instructions (counted at one client)
    figure: Figure
    labels: tuple[str, ...]
    values: tuple[float, ...]
    points: tuple[ChangePoint, ...]
    # For counts: change point index -> the functions that changed most across it (after against before).
    why: Mapping[int, tuple[FunctionChange, ...]] = field(default_factory=dict)
    # Each target's lowest and highest sample (repetitions, or a count's pairs): the interval a chart draws.
    lows: tuple[float, ...] = ()
    highs: tuple[float, ...] = ()

    @property
    def confirmed(self) -> list[ChangePoint]:
        return [p for p in self.points if p.confirmed]

    @property
    def weak(self) -> list[ChangePoint]:
        return [p for p in self.points if not p.confirmed]


def _measured(
    study: Study, labels: Sequence[str], values: Mapping[tuple[str, str, int], Mapping[int, float]], figure: Figure
) -> list[Series]:
    out: list[Series] = []
    keys = dict.fromkeys((step, clients) for (_t, step, clients) in values)
    for step, clients in keys:
        reps = [values.get((label, step, clients)) for label in labels]
        if any(not r for r in reps):
            continue  # a target without this cell: no series to read
        groups = [list(r.values()) for r in reps if r]

        def compare(i: int, reps: list[Mapping[int, float] | None] = reps) -> Comparison:
            before, after = reps[i - 1], reps[i]
            assert before and after
            j = judge(before, after, study, higher_is_better=figure == "QPS")
            ci = j.ci
            return Comparison(j.verdict, ci.ratio if ci else None, ci.low if ci else None, ci.high if ci else None)

        points = changepoints.change_points(labels, groups, compare)
        medians = tuple(statistics.median(g) for g in groups)
        lows, highs = tuple(min(g) for g in groups), tuple(max(g) for g in groups)
        out.append(Series(step, clients, figure, tuple(labels), medians, tuple(points), {}, lows, highs))
    return out


def _counted(labels: Sequence[str], counts: Mapping[tuple[str, str], Count], aa: Mapping[str, float]) -> list[Series]:
    out: list[Series] = []
    basis = instructions.bases(counts)
    for step in dict.fromkeys(s for (_t, s) in counts):
        got = [counts.get((label, step)) for label in labels]
        if any(c is None or not c.ok for c in got):
            continue
        typed = [c for c in got if c is not None]
        groups = [c.samples(basis[step]) for c in typed]

        def compare(i: int, typed: list[Count] = typed, step: str = step) -> Comparison:
            j = instructions.judge(typed[i - 1], typed[i], aa.get(step), basis[step])
            return Comparison(j.verdict or "unsure", j.ratio)

        points = changepoints.change_points(labels, groups, compare, deterministic=True)
        values = tuple(c.figure(basis[step]) or 0.0 for c in typed)
        why = {
            p.index: tuple(
                functions.diff(
                    (a := typed[p.index - 1]).profile(),
                    (b := typed[p.index]).profile(),
                    WHY,
                    kept=FUNCTIONS_KEPT,
                    folded=(a.folded, b.folded),
                )
            )
            for p in points
        }
        lows = tuple(min(g, default=v) for g, v in zip(groups, values, strict=True))
        highs = tuple(max(g, default=v) for g, v in zip(groups, values, strict=True))
        out.append(Series(step, None, "instructions", tuple(labels), values, tuple(points), why, lows, highs))
    return out


def analyse(study: Study, store: Store, run_id: int) -> list[Series]:
    """Every step's series of every figure the run has for all of the study's targets, in the study's order."""
    labels = [t.label for t in study.targets]
    rows = store.results(run_id)
    per_op = store.per_op(run_id)
    out = _counted(labels, store.counts(run_id), instructions.calibrated_floors(study, store))
    out += _measured(study, labels, by_repetition(rows), "QPS")
    out += _measured(study, labels, by_repetition(rows, lambda r: per_op.get(r.cell_id, {}).get("cpu/o")), "cpu/o")
    return out
