"""Calibration: one target against itself (two copies, interleaved), to learn this machine's noise per
step and what the verdict can and cannot see here.

For each step it reports the CV of QPS and of cpu/o over the repetitions, the A-A verdicts (which must
come out `same`, not `faster` or `slower`), the verdicts the first 2, 3, ... rounds would have given (the
false-positive rate counts every one of them), and the smallest effect the verdict can detect with this
many repetitions at the measured CV.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from dbsweep.results.store import Store
from dbsweep.study import Study, Target
from dbsweep.verdicts import by_repetition, judge, stats


def copies(study: Study, target: Target, steps: list[str] | None, repeats: int, placement: str | None) -> Study:
    """The calibration study: `target` twice, (A) as the base and (B), under the study's suite."""
    a = target.model_copy(update={"name": f"{target.label} (A)"})
    b = target.model_copy(update={"name": f"{target.label} (B)"})
    suite = study.suite.model_copy(update={"steps": steps}) if steps else study.suite
    measure = study.measure.model_copy(update={"placement": placement}) if placement else study.measure
    return study.model_copy(
        update={
            "name": f"{study.title}-calibrate-{target.slug}"[:80],
            "targets": [a, b],
            "base": a.label,
            "repeats": repeats,
            "suite": suite,
            "measure": measure,
        }
    )


@dataclass(frozen=True)
class StepNoise:
    step: str
    clients: int
    n: int
    qps: float
    cv_qps: float | None
    cv_cpu: float | None
    verdict_qps: str
    verdict_cpu: str
    prefix_verdicts: list[str]  # the QPS and cpu/o verdicts after the first 2, 3, ... rounds
    mde_qps: float | None
    mde_cpu: float | None


def _cv(a: dict[int, float], b: dict[int, float]) -> float | None:
    """The CV of one copy's repetitions, averaged over the two copies."""
    cvs = [c for c in (stats.spread(list(a.values())), stats.spread(list(b.values()))) if c is not None]
    return statistics.fmean(cvs) if cvs else None


def first_rounds(values: dict[int, float], n: int) -> dict[int, float]:
    """The values of rounds 1..n: what the verdict would have seen after n rounds."""
    return {r: v for r, v in values.items() if r <= n}


def analyse(study: Study, store: Store, run_id: int) -> list[StepNoise]:
    rows = store.results(run_id)
    qps = by_repetition(rows)
    per_op = store.per_op(run_id)
    cpu = by_repetition(rows, lambda r: per_op.get(r.cell_id, {}).get("cpu/o"))
    a, b = (t.label for t in study.targets)
    out: list[StepNoise] = []
    for (target, step, clients), qa in qps.items():
        if target != a or (b, step, clients) not in qps:
            continue
        qb = qps[(b, step, clients)]
        ca, cb = cpu.get((a, step, clients), {}), cpu.get((b, step, clients), {})
        n = min(len(qa), len(qb))
        prefix: list[str] = []
        for k in range(2, n + 1):
            prefix.append(judge(first_rounds(qa, k), first_rounds(qb, k), study).verdict)
            if ca and cb:
                prefix.append(judge(first_rounds(ca, k), first_rounds(cb, k), study, higher_is_better=False).verdict)
        cv_q, cv_c = _cv(qa, qb), (_cv(ca, cb) if ca and cb else None)
        out.append(
            StepNoise(
                step=step,
                clients=clients,
                n=n,
                qps=stats.median([*qa.values(), *qb.values()]),
                cv_qps=cv_q,
                cv_cpu=cv_c,
                verdict_qps=judge(qa, qb, study).verdict,
                verdict_cpu=judge(ca, cb, study, higher_is_better=False).verdict if ca and cb else "-",
                prefix_verdicts=prefix,
                mde_qps=stats.min_detectable_effect(cv_q, n) if cv_q is not None and n >= 2 else None,
                mde_cpu=stats.min_detectable_effect(cv_c, n) if cv_c is not None and n >= 2 else None,
            )
        )
    return out


def false_positive_rate(noise: list[StepNoise]) -> tuple[float | None, int]:
    """Share of faster/slower among every A-A verdict (all steps, both metrics, every prefix)."""
    verdicts = [v for s in noise for v in s.prefix_verdicts]
    return (stats.false_positive_rate(verdicts) if verdicts else None), len(verdicts)
