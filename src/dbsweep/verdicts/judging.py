"""Verdicts of a stored run: each target against the base, per step and client count, from the
repetitions' QPS. Repetition r of every target ran in the same round, so rounds pair up.

With two repetitions or more a side, the verdict is the interval's (`stats.verdict`). With one, there is no
interval, and the verdict is `unsure` unless the change is far beyond the machine's measured noise (the
one-repetition rule, `one_repetition`): a study with `repeats = 1` still hears that an insert got 16 times
slower. The noise is, in this order, the A-A spread a `dbsweep calibrate` of the study measured for the step
(the CV of whole runs' QPS: what one repetition's value moves by), or else the step's own per-second variation
in this run (the CV of its measured seconds, the larger of the two sides'). Per-second variation does not see
what moves a whole run (another job through the whole step, another CPU frequency), so it counts as at least
SECONDS_FLOOR. A change is decided when its log ratio is at least ONE_REPETITION_FACTOR times the standard
deviation of the log ratio of two single values with that noise (sqrt(2) x sqrt(ln(1 + cv^2))): by Chebyshev's
inequality a difference that large comes from noise of that size at most 1/25 = 4 % of the time, whatever
the noise's distribution, as often as a 95 % interval is wrong; it must also be at least the minimum effect.
Below that the verdict stays `unsure`: one repetition never says `same`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from dbsweep.results.model import StoredCell
from dbsweep.study import Study
from dbsweep.verdicts import stats

CellId = tuple[str, str, int]  # target, step, clients
NoiseSource = Literal["calibrate", "seconds"]
Rule = Literal["interval", "one repetition"]
ONE_REPETITION_FACTOR = 5.0  # the change, in standard deviations of the noise of a single pair, that decides
SECONDS_FLOOR = 0.05  # per-second variation counts as at least this CV: a whole run moves by several per cent


@dataclass(frozen=True)
class Noise:
    """The noise of one repetition's value of a step: a CV, where it came from, and in words."""

    cv: float
    source: NoiseSource
    detail: str

    @property
    def bound(self) -> float:
        """The CV the one-repetition rule uses: per-second variation counts as at least SECONDS_FLOOR."""
        return max(self.cv, SECONDS_FLOOR) if self.source == "seconds" else self.cv

    @property
    def tag(self) -> str:
        return "cal" if self.source == "calibrate" else "per-second"


@dataclass(frozen=True)
class Judged:
    ci: stats.RatioCI | None
    verdict: stats.Verdict
    n_base: int
    n_target: int
    # How the verdict was reached: the interval of two or more repetitions, or the one-repetition rule, with the
    # noise it used and how many times that noise's standard deviation the change was.
    rule: Rule = "interval"
    noise: Noise | None = None
    multiple: float | None = None


def noise_multiple(ratio: float, noise: Noise) -> float | None:
    """|ln ratio| in standard deviations of the log ratio of two single values with `noise` (None without noise
    or ratio)."""
    sigma = math.sqrt(2.0 * math.log1p(noise.bound**2))
    if ratio <= 0 or sigma <= 0:
        return None
    return abs(math.log(ratio)) / sigma


def one_repetition(
    ratio: float, noise: Noise, *, min_effect: float, higher_is_better: bool = True
) -> tuple[stats.Verdict, float | None]:
    """The one-repetition rule (the module's docstring): the verdict of a ratio of two single values and how many
    times the noise it is."""
    k = noise_multiple(ratio, noise)
    if k is None or k < ONE_REPETITION_FACTOR or abs(ratio - 1) < min_effect:
        return "unsure", k
    return ("faster" if (ratio > 1) == higher_is_better else "slower"), k


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
    noise: Noise | None = None,
) -> Judged:
    """Ratio, interval and verdict of repetition -> value maps. Rounds pair up when at least two do;
    otherwise the interval is the unpaired one. No interval without values or with a base median <= 0. With one
    repetition on a side and `noise`, the one-repetition rule may decide."""
    reps_b, reps_t = sorted(base), sorted(target)
    b = [base[r] for r in reps_b]
    t = [target[r] for r in reps_t]
    ci: stats.RatioCI | None = None
    if b and t and stats.median(b) > 0:
        pairs = [reps_t.index(r) if r in target else -1 for r in reps_b]
        use = paired and sum(p >= 0 for p in pairs) >= 2
        ci = stats.ratio_ci(b, t, confidence=confidence, pairs=pairs if use else None)
    v = stats.verdict(ci, min_effect=min_effect, higher_is_better=higher_is_better)
    if ci is not None and min(len(b), len(t)) < 2 and noise is not None:
        v, k = one_repetition(ci.ratio, noise, min_effect=min_effect, higher_is_better=higher_is_better)
        return Judged(ci, v, len(b), len(t), "one repetition", noise, k)
    return Judged(ci, v, len(b), len(t))


def judge(
    base: Mapping[int, float],
    target: Mapping[int, float],
    study: Study,
    higher_is_better: bool = True,
    noise: Noise | None = None,
) -> Judged:
    """judge_values with the study's confidence and minimum effect."""
    m = study.measure
    return judge_values(
        base, target, confidence=m.confidence, min_effect=m.min_effect, higher_is_better=higher_is_better, noise=noise
    )


def calibrated_noise(
    step: str, clients: int, cv_qps: Mapping[tuple[str, int], tuple[float, int]], run: str
) -> Noise | None:
    """The A-A spread a calibration measured for the step, as the noise of one repetition."""
    got = cv_qps.get((step, clients))
    return Noise(got[0], "calibrate", f"{run} ({got[1]} rounds)") if got is not None else None


def seconds_noise(cvs: Iterable[float | None]) -> Noise | None:
    """The larger per-second CV of the two sides' single repetitions (None when either side has none)."""
    got = list(cvs)
    if not got or any(c is None for c in got):
        return None
    cv = max(c for c in got if c is not None)
    return Noise(cv, "seconds", f"the larger per-second CV of the two repetitions, {cv:.1%}")


def run_verdicts(
    study: Study,
    rows: list[StoredCell],
    calibrated: Mapping[tuple[str, int], tuple[float, int]] | None = None,
    seconds: Mapping[int, tuple[int, float]] | None = None,
) -> dict[CellId, Judged]:
    """Every non-base target's verdict on QPS, per step and client count; with one repetition, the noise a
    calibration measured (`calibrated`: (step, clients) -> (CV, rounds)) or else the cells' per-second CVs
    (`seconds`: `Store.second_spreads`) may decide."""
    values = by_repetition(rows)
    cells = {(r.target, r.step, r.clients, r.repetition): r.cell_id for r in rows}
    out: dict[CellId, Judged] = {}
    for (target, step, clients), reps in values.items():
        if target == study.base:
            continue
        base = values.get((study.base, step, clients))
        if not base:
            continue
        noise = calibrated_noise(step, clients, calibrated or {}, "calibration")
        if noise is None and seconds is not None:
            ids = [cells[(study.base, step, clients, r)] for r in base] + [
                cells[(target, step, clients, r)] for r in reps
            ]
            noise = seconds_noise((seconds.get(i) or (0, None))[1] for i in ids)
        out[(target, step, clients)] = judge(base, reps, study, noise=noise)
    return out


def unsure_targets(
    study: Study,
    rows: list[StoredCell],
    decided_by_instructions: Collection[tuple[str, str, int]] = (),
    calibrated: Mapping[tuple[str, int], tuple[float, int]] | None = None,
    seconds: Mapping[int, tuple[int, float]] | None = None,
) -> set[str]:
    """Targets with at least one cell whose verdict is still unsure (load and warm-ups aside). A cell in
    `decided_by_instructions` (target, step, clients) has its verdict from instruction counts already."""
    suite = study.bench
    return {
        t
        for (t, step, c), j in run_verdicts(study, rows, calibrated, seconds).items()
        if j.verdict == "unsure"
        and step in suite.step_names()
        and suite.in_verdicts(step)
        and (t, step, c) not in decided_by_instructions
    }
