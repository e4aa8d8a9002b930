"""Verdicts of a stored run: each target against the base, per step and client count, from the
repetitions' QPS. Repetition r of every target ran in the same round, so rounds pair up."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dbsweep import stats
from dbsweep.study import Study

CellId = tuple[str, str, int]  # target, step, clients


@dataclass(frozen=True)
class Judged:
    ci: stats.RatioCI | None
    verdict: stats.Verdict
    n_base: int
    n_target: int


def by_repetition(rows: list[dict[str, Any]], key: str = "qps") -> dict[CellId, dict[int, float]]:
    """(target, step, clients) -> repetition -> value, from store.results()-like rows."""
    out: dict[CellId, dict[int, float]] = {}
    for r in rows:
        if r.get(key) is not None:
            out.setdefault((r["target"], r["step"], r["clients"]), {})[int(r["repetition"])] = float(r[key])
    return out


def judge(base: dict[int, float], target: dict[int, float], study: Study, higher_is_better: bool = True) -> Judged:
    reps_b, reps_t = sorted(base), sorted(target)
    b = [base[r] for r in reps_b]
    t = [target[r] for r in reps_t]
    pairs = [reps_t.index(r) if r in target else -1 for r in reps_b]
    ci: stats.RatioCI | None = None
    if len(b) >= 2 and len(t) >= 2 and min(b + t) > 0:
        paired = sum(1 for p in pairs if p >= 0) >= 2
        ci = stats.ratio_ci(b, t, confidence=study.measure.confidence, pairs=pairs if paired else None)
    v = stats.verdict(ci, min_effect=study.measure.min_effect, higher_is_better=higher_is_better)
    return Judged(ci, v, len(b), len(t))


def run_verdicts(study: Study, rows: list[dict[str, Any]]) -> dict[CellId, Judged]:
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


def unsure_targets(study: Study, rows: list[dict[str, Any]]) -> set[str]:
    """Targets with at least one cell whose verdict is still unsure (load and warm-ups aside)."""
    from dbsweep.suites import STEPS

    return {
        t
        for (t, step, _c), j in run_verdicts(study, rows).items()
        if j.verdict == "unsure" and step in STEPS and STEPS[step].in_summaries
    }
