"""Verdicts of a stored run: each target against the base, per step and client count, from the
repetitions' QPS. Repetition r of every target ran in the same round, so rounds pair up."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass

from dbsweep.results.model import StoredCell
from dbsweep.study import Study
from dbsweep.verdicts import stats

CellId = tuple[str, str, int]  # target, step, clients


@dataclass(frozen=True)
class Judged:
    ci: stats.RatioCI | None
    verdict: stats.Verdict
    n_base: int
    n_target: int


def _rate(r: StoredCell) -> float | None:
    return r.qps


def by_repetition(
    rows: Iterable[StoredCell], value: Callable[[StoredCell], float | None] = _rate
) -> dict[CellId, dict[int, float]]:
    """(target, step, clients) -> repetition -> value (the step's rate unless told), from stored cells."""
    out: dict[CellId, dict[int, float]] = {}
    for r in rows:
        v = value(r)
        if v is not None:
            out.setdefault((r.target, r.step, r.clients), {})[r.repetition] = float(v)
    return out


def judge_values(
    base: Mapping[int, float],
    target: Mapping[int, float],
    *,
    confidence: float,
    min_effect: float,
    higher_is_better: bool = True,
    paired: bool = True,
) -> Judged:
    """Ratio, interval and verdict of repetition -> value maps. Rounds pair up when at least two do;
    otherwise the interval is the unpaired one. No interval without values or with a base median <= 0."""
    reps_b, reps_t = sorted(base), sorted(target)
    b = [base[r] for r in reps_b]
    t = [target[r] for r in reps_t]
    ci: stats.RatioCI | None = None
    if b and t and stats.median(b) > 0:
        pairs = [reps_t.index(r) if r in target else -1 for r in reps_b]
        use = paired and sum(p >= 0 for p in pairs) >= 2
        ci = stats.ratio_ci(b, t, confidence=confidence, pairs=pairs if use else None)
    v = stats.verdict(ci, min_effect=min_effect, higher_is_better=higher_is_better)
    return Judged(ci, v, len(b), len(t))


def judge(
    base: Mapping[int, float], target: Mapping[int, float], study: Study, higher_is_better: bool = True
) -> Judged:
    """judge_values with the study's confidence and minimum effect."""
    m = study.measure
    return judge_values(
        base, target, confidence=m.confidence, min_effect=m.min_effect, higher_is_better=higher_is_better
    )


def run_verdicts(study: Study, rows: list[StoredCell]) -> dict[CellId, Judged]:
    """Every non-base target's verdict on QPS, per step and client count."""
    values = by_repetition(rows)
    out: dict[CellId, Judged] = {}
    for (target, step, clients), reps in values.items():
        if target == study.base:
            continue
        base = values.get((study.base, step, clients))
        if base:
            out[(target, step, clients)] = judge(base, reps, study)
    return out


def unsure_targets(
    study: Study, rows: list[StoredCell], decided_by_instructions: Collection[tuple[str, str, int]] = ()
) -> set[str]:
    """Targets with at least one cell whose verdict is still unsure (load and warm-ups aside). A cell in
    `decided_by_instructions` (target, step, clients) has its verdict from instruction counts already."""
    suite = study.bench
    return {
        t
        for (t, step, c), j in run_verdicts(study, rows).items()
        if j.verdict == "unsure"
        and step in suite.step_names()
        and suite.in_verdicts(step)
        and (t, step, c) not in decided_by_instructions
    }
