"""Statistics over repetitions: medians, relative QPS and verdicts. Pure functions, no I/O.

Every comparison of a target with the base gets a ratio (rQPS: the target's median over the base's
median), a 95 % confidence interval for that ratio from the repetitions, and a verdict. `faster` or
`slower` means the interval excludes "no change" *and* the change is at least the minimum effect
(default 2 %). `same` means there is no change worth reporting: either a real change smaller than the
minimum effect, or an interval that includes "no change" while the measured change is under the
minimum effect (and the interval is not so wide, beyond 0.8 to 1.25, that it shows nothing) or the whole
interval lies within ± the minimum effect. For metrics where lower is
better (cpu/o and other per-operation costs) the direction flips: a ratio below 1 is `faster`.

`unsure` means the data cannot decide: fewer than two repetitions on a side, an interval that includes
"no change" while the measured change is larger than the minimum effect, or one too wide to say
anything. It looks like a change, or could be one, but is not shown; more repetitions would decide.
Comparing a target against itself labels at most about 5 % of steps `faster` or `slower` (the
interval's error rate), usually fewer, because the minimum effect gates them too.
"""

from __future__ import annotations

import math
import statistics
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

import numpy as np
import numpy.typing as npt
from scipy import special

# rQPS colour thresholds, as in the seeds' reports.
SLOWER_AT = 0.95
FASTER_AT = 1.05

Verdict = Literal["faster", "slower", "same", "unsure"]
VERDICTS: Final[tuple[Verdict, ...]] = ("faster", "slower", "same", "unsure")

# Below this many repetitions per side a bootstrap of medians resamples too few distinct values to
# be trusted (measured: 65 % coverage at n = 2, 90 % at n = 3 for a nominal 95 %); the t-interval on
# logs is exact for lognormal noise at any n >= 2, so it handles the tool's usual 2..10 repetitions.
BOOTSTRAP_MIN_N: Final = 20

FloatArray = npt.NDArray[np.float64]


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


@dataclass(frozen=True)
class RatioCI:
    """A target/base ratio with its confidence interval.

    `ratio` is the rQPS shown in tables (median over median). `estimate` is the centre the interval
    was built around (see `ratio_ci`); the two agree closely unless there are outliers or drift.
    `low`/`high` are None when there are too few repetitions for an interval. The interval always
    contains `estimate`.
    """

    ratio: float
    estimate: float
    low: float | None
    high: float | None
    confidence: float
    method: Literal["welch-log", "paired-log", "bca-median", "none"]
    n_base: int
    n_target: int

    @property
    def has_interval(self) -> bool:
        return self.low is not None and self.high is not None


def _checked(values: Sequence[float], name: str) -> FloatArray:
    a = np.asarray(values, dtype=np.float64)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"{name}: need at least one value")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: values must be finite")
    return a


def _t_interval(diff: float, se: float, df: float, confidence: float) -> tuple[float, float]:
    """exp(diff ± t·se): a t-interval on the log scale, mapped back to a ratio."""
    if se == 0.0:
        # No noise at all (e.g. deterministic counters): the interval is the point.
        return math.exp(diff), math.exp(diff)
    # stdtrit is the t quantile as a plain ufunc: much cheaper than scipy.stats.t.ppf.
    half = float(special.stdtrit(df, 0.5 + confidence / 2.0)) * se
    return math.exp(diff - half), math.exp(diff + half)


def _welch_log(lb: FloatArray, lt: FloatArray, confidence: float) -> tuple[float, float, float]:
    nb, nt = lb.size, lt.size
    vb = float(np.var(lb, ddof=1)) / nb
    vt = float(np.var(lt, ddof=1)) / nt
    diff = float(np.mean(lt) - np.mean(lb))
    se2 = vb + vt
    # Welch–Satterthwaite degrees of freedom; unequal variances are common (one build is noisier).
    df = se2 * se2 / (vb * vb / (nb - 1) + vt * vt / (nt - 1)) if se2 > 0 else float(nb + nt - 2)
    low, high = _t_interval(diff, math.sqrt(se2), df, confidence)
    return math.exp(diff), low, high


def _paired_log(lb: FloatArray, lt: FloatArray, pairs: Sequence[int], confidence: float) -> tuple[float, float, float]:
    if len(pairs) != lb.size:
        raise ValueError("pairs: need one entry per base repetition")
    used = [p for p in pairs if p >= 0]
    if len(set(used)) != len(used) or any(p >= lt.size for p in used):
        raise ValueError("pairs: target indices must be distinct and in range (-1 for no partner)")
    idx = np.asarray([i for i, p in enumerate(pairs) if p >= 0], dtype=np.intp)
    d = lt[np.asarray(used, dtype=np.intp)] - lb[idx]
    k = d.size
    if k < 2:
        return math.nan, math.nan, math.nan
    diff = float(np.mean(d))
    low, high = _t_interval(diff, float(np.std(d, ddof=1)) / math.sqrt(k), float(k - 1), confidence)
    return math.exp(diff), low, high


def _median_ratio(b: FloatArray, t: FloatArray, axis: int = -1) -> FloatArray:
    return np.asarray(np.median(t, axis=axis) / np.median(b, axis=axis), dtype=np.float64)


def _bca_median(b: FloatArray, t: FloatArray, confidence: float, seed: int, resamples: int) -> tuple[float, float]:
    with warnings.catch_warnings():
        # Ties can make BCa degenerate; that shows up as NaN and is handled by the caller.
        warnings.simplefilter("ignore")
        # Imported here: scipy.stats costs seconds of start-up that every other command would pay.
        from scipy import stats as sps

        res = sps.bootstrap(
            (b, t),
            _median_ratio,
            n_resamples=resamples,
            vectorized=True,
            confidence_level=confidence,
            method="BCa",
            rng=np.random.default_rng(seed),
        )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def ratio_ci(
    base: Sequence[float],
    target: Sequence[float],
    *,
    confidence: float = 0.95,
    seed: int = 0,
    pairs: Sequence[int] | None = None,
    resamples: int = 9999,
) -> RatioCI:
    """rQPS = median(target) / median(base) with a `confidence` interval from the repetitions.

    Method, by case (benchmark noise is multiplicative, so all intervals are built on logs):

    - With `pairs` (repetitions interleaved in rounds, A B then B A): a paired t-interval on the
      per-round log ratios. `pairs[i]` is the index in `target` of the repetition from the same
      round as `base[i]`, or -1 when that round has no target value. Drift of the machine between
      rounds cancels in each round's ratio, so the interval is narrower than an unpaired one.
    - Fewer than BOOTSTRAP_MIN_N repetitions on a side (the usual 2..10): Welch's t-interval for the
      difference of mean logs, i.e. for the ratio of geometric means, which equals the ratio of
      medians under lognormal noise. It is exact for lognormal noise with any n >= 2 and still
      honest at n = 2 (wide, with 1 degree of freedom). A percentile bootstrap of the medians is
      not: it can only produce a handful of distinct medians, and on lognormal noise its 95 %
      interval covered the truth 65 % of the time at n = 2 and 90 % at n = 3.
    - Otherwise: a BCa bootstrap (scipy.stats.bootstrap, seeded with `seed`, `resamples` draws) of
      the ratio of medians, which is robust to the odd outlier repetition once n is large enough.

    The result is deterministic for the same inputs and seed. With fewer than two repetitions on a
    side (or fewer than two pairs), or with a non-positive value, there is no interval
    (`low`/`high` are None). Raises ValueError for empty or non-finite inputs or a base median <= 0.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be between 0 and 1")
    b = _checked(base, "base")
    t = _checked(target, "target")
    mb, mt = float(np.median(b)), float(np.median(t))
    if mb <= 0:
        raise ValueError("base median must be positive for a ratio")
    ratio = mt / mb
    est, low, high = ratio, math.nan, math.nan
    method: Literal["welch-log", "paired-log", "bca-median", "none"] = "none"
    if b.size >= 2 and t.size >= 2 and np.all(b > 0) and np.all(t > 0):
        lb, lt = np.log(b), np.log(t)
        if pairs is not None:
            est, low, high = _paired_log(lb, lt, pairs, confidence)
            method = "paired-log"
        elif min(b.size, t.size) < BOOTSTRAP_MIN_N:
            est, low, high = _welch_log(lb, lt, confidence)
            method = "welch-log"
        else:
            low, high = _bca_median(b, t, confidence, seed, resamples)
            method = "bca-median"
            if not (math.isfinite(low) and math.isfinite(high)):
                # Degenerate bootstrap (heavy ties): the log t-interval is still valid.
                est, low, high = _welch_log(lb, lt, confidence)
                method = "welch-log"
    if not (math.isfinite(low) and math.isfinite(high)):
        return RatioCI(ratio, ratio, None, None, confidence, "none", int(b.size), int(t.size))
    # Keep the estimate inside its interval (BCa does not guarantee it); this only widens.
    return RatioCI(ratio, est, min(low, est), max(high, est), confidence, method, int(b.size), int(t.size))


# An interval wider than this says too little to call a step `same`, whatever its centre: with two
# repetitions on a noisy machine it can span 0.5 to 2.
SAME_WITHIN: Final = (0.8, 1.25)


def verdict(ci: RatioCI | None, min_effect: float = 0.02, higher_is_better: bool = True) -> Verdict:
    """`faster`, `slower`, `same` or `unsure` for a ratio and its interval (see the module docstring).

    The size of the change is taken from `ci.estimate`, the centre of the interval, so that size and
    significance come from the same estimator; it equals the median ratio for the bootstrap and is
    close to it otherwise.
    """
    if ci is None or ci.low is None or ci.high is None:
        return "unsure"
    low, high, effect = ci.low, ci.high, abs(ci.estimate - 1.0)
    if low > 1.0 or high < 1.0:
        if effect < min_effect:
            return "same"  # real, but smaller than anyone should care about
        went_up = low > 1.0
        return "faster" if went_up == higher_is_better else "slower"
    if low >= 1.0 - min_effect and high <= 1.0 + min_effect:
        return "same"  # shown to be within the minimum effect
    if effect < min_effect and low >= SAME_WITHIN[0] and high <= SAME_WITHIN[1]:
        return "same"
    return "unsure"


def decided(v: str) -> bool:
    """True for a verdict that needs no more repetitions (anything but `unsure`)."""
    if v not in VERDICTS:
        raise ValueError(f"not a verdict: {v!r}")
    return v != "unsure"


@dataclass(frozen=True)
class GroupSummary:
    min: float
    max: float
    mean: float
    median: float
    stddev: float | None  # sample standard deviation; None with fewer than two values
    n: int


def summarise(values: Sequence[float]) -> GroupSummary:
    """min, max, mean, median and sample stddev of a group of rQPS values."""
    if not values:
        raise ValueError("summarise: no values")
    return GroupSummary(
        min=float(min(values)),
        max=float(max(values)),
        mean=statistics.fmean(values),
        median=median(values),
        stddev=statistics.stdev(values) if len(values) >= 2 else None,
        n=len(values),
    )


def min_detectable_effect(cv: float, n: int, confidence: float = 0.95, power: float = 0.8) -> float:
    """Smallest relative change that `n` repetitions per side detect with probability `power`.

    Normal approximation on logs: the noise's log-scale sd is sigma = sqrt(ln(1 + cv²)), the
    difference of mean logs has standard error sigma·sqrt(2/n), and a shift d is detected (two-sided,
    at `confidence`) with probability `power` when d >= (q_conf + q_power)·se. The quantiles are
    Student t with 2(n-1) degrees of freedom rather than normal, which matters at the small n used
    here (at n = 3 the normal version would promise an effect about 25 % smaller than can be seen).
    Returned as exp(d) - 1, the larger of the speed-up and slow-down sizes. inf for n < 2.
    """
    if cv < 0 or n < 0:
        raise ValueError("cv and n must be non-negative")
    if not (0.0 < confidence < 1.0 and 0.0 < power < 1.0):
        raise ValueError("confidence and power must be between 0 and 1")
    if n < 2:
        return math.inf
    sigma = math.sqrt(math.log1p(cv * cv))
    df = 2.0 * (n - 1)
    q = float(special.stdtrit(df, 0.5 + confidence / 2.0)) + float(special.stdtrit(df, power))
    return math.expm1(q * sigma * math.sqrt(2.0 / n))


def false_positive_rate(verdicts: Sequence[str]) -> float:
    """Share of `faster`/`slower` verdicts; for A-A calibration runs, where every one is false."""
    if not verdicts:
        raise ValueError("false_positive_rate: no verdicts")
    return sum(v in ("faster", "slower") for v in verdicts) / len(verdicts)


# Instruction counts of a read repeat to about 0.01 %; a change smaller than this floor is never reported.
INSTRUCTION_FLOOR = 0.002


def instruction_verdict(base: float, target: float, spread: float = 0.0, floor: float = INSTRUCTION_FLOOR) -> Verdict:
    """Verdict on instructions per operation: fewer is faster. Counts are deterministic, so no interval is
    needed: a change beyond the floor (or three times the measured spread, if larger) is real."""
    if base <= 0 or target <= 0:
        raise ValueError("instruction counts must be positive")
    ratio = target / base
    if abs(ratio - 1) < max(floor, 3 * spread):
        return "same"
    return "faster" if ratio < 1 else "slower"
