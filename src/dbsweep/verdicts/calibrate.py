"""Calibration: one target against itself (two copies, interleaved), to learn this machine's noise per
step and what the verdict can and cannot see here.

For each step it reports the CV of QPS and of cpu/o over the repetitions, the A-A verdicts (which must
come out `same`, not `faster` or `slower`), the verdicts the first 2, 3, ... rounds would have given (the
false-positive rate counts every one of them), and the smallest effect the verdict can detect with this
many repetitions at the measured CV. The reports show the CV of QPS a calibration measured beside every
QPS verdict of the study it copied (`measured_noise`).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from dbsweep.results.store import Store
from dbsweep.study import Study, Target, source_kind
from dbsweep.verdicts import by_repetition, judge, stats


def study_name(study: Study, target: Target) -> str:
    """The name the calibration of `target` is stored under, beside the study's own runs."""
    return f"{study.title}-calibrate-{target.slug}"[:80]


def copy_labels(target: Target) -> tuple[str, str]:
    return f"{target.label} (A)", f"{target.label} (B)"


def copies(
    study: Study,
    target: Target,
    steps: list[str] | None,
    repeats: int,
    placement: str | None,
    separate_build: bool = True,
) -> Study:
    """The calibration study: `target` twice, (A) as the base and (B), under the study's suite. With
    `separate_build`, a target built from source gets (B) from a second build of its own (`Target.build_copy`):
    every comparison of two builds sees what differs between two builds of one source, so the A-A pair must."""
    name_a, name_b = copy_labels(target)
    a = target.model_copy(update={"name": name_a})
    b = target.model_copy(update={"name": name_b})
    if separate_build and separately_built(target):
        b = b.model_copy(update={"build_copy": target.build_copy + 1})
    suite = study.suite.model_copy(update={"steps": steps}) if steps else study.suite
    measure = study.measure.model_copy(update={"placement": placement}) if placement else study.measure
    if steps:  # the steps asked for are counted, whatever measure.instruction_steps chose for the study
        measure = measure.model_copy(update={"instruction_steps": []})
    return study.model_copy(
        update={
            "name": study_name(study, target),
            "targets": [a, b],
            "base": a.label,
            "repeats": repeats,
            "suite": suite,
            "measure": measure,
        }
    )


def separately_built(target: Target) -> bool:
    """Whether a calibration of `target` can build its copy (B) again: only a build from source can."""
    return source_kind(target.source) not in (None, "system")


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


@dataclass(frozen=True)
class Measured:
    """What the latest calibration of a target in a store measured: its run, how many rounds each step had,
    and the CV of QPS per (step, clients)."""

    target: str
    run_id: int
    cv_qps: dict[tuple[str, int], tuple[float, int]]  # (step, clients) -> (CV, rounds)


def measured_noise(study: Study, store: Store, target: Target) -> Measured | None:
    """The CV of QPS per step that the latest `dbsweep calibrate` of `target` stored in `store` (the two copies'
    CVs averaged, as `analyse` reports them); None when the target was never calibrated there."""
    latest = store.latest_run(study_name(study, target))
    if latest is None:
        return None
    run_id = latest[0]
    qps = by_repetition(store.results(run_id))
    a, b = copy_labels(target)
    out: dict[tuple[str, int], tuple[float, int]] = {}
    for (name, step, clients), qa in qps.items():
        qb = qps.get((b, step, clients))
        if name != a or qb is None or min(len(qa), len(qb)) < 2:
            continue
        if (cv := _cv(qa, qb)) is not None:
            out[(step, clients)] = (cv, min(len(qa), len(qb)))
    return Measured(target.label, run_id, out) if out else None


def study_noise(study: Study, store: Store) -> Measured | None:
    """The latest calibration stored for the study's base, else for its first other target that has one."""
    for target in sorted(study.targets, key=lambda t: t.label != study.base):
        if (m := measured_noise(study, store, target)) is not None:
            return m
    return None


def false_positive_rate(noise: list[StepNoise]) -> tuple[float | None, int]:
    """Share of faster/slower among every A-A verdict (all steps, both metrics, every prefix)."""
    verdicts = [v for s in noise for v in s.prefix_verdicts]
    return (stats.false_positive_rate(verdicts) if verdicts else None), len(verdicts)
