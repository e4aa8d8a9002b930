"""The verdict statistics on synthetic data of known effect and noise (seeded, no timing)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps

from dbsweep.verdicts import stats
from dbsweep.verdicts.stats import RatioCI, ratio_ci, verdict

# 4000 so that the 5 % error rate is estimated to +-0.35 %: the 0.06 bound is then ~3 SE away.
SIMS = 4000


def sigma(cv: float) -> float:
    """Log-scale sd of lognormal noise with coefficient of variation `cv`."""
    return math.sqrt(math.log1p(cv * cv))


def samples(
    rng: np.random.Generator, sims: int, n: int, cv: float, effect: float = 1.0, drift_cv: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """`sims` (base, target) pairs of n repetitions each; target = effect x base level.

    drift_cv adds a per-round level shared by round i of base and target (the machine drifting).
    """
    drift = rng.normal(0.0, sigma(drift_cv), (sims, n)) if drift_cv else 0.0
    base = 1000.0 * np.exp(drift + rng.normal(0.0, sigma(cv), (sims, n)))
    target = 1000.0 * effect * np.exp(drift + rng.normal(0.0, sigma(cv), (sims, n)))
    return base, target


def run(
    base: np.ndarray, target: np.ndarray, *, paired: bool = False, **kw: float | int
) -> tuple[list[RatioCI], list[str]]:
    pairs = list(range(base.shape[1])) if paired else None
    me = float(kw.pop("min_effect", 0.02))
    cis = [ratio_ci(b, t, pairs=pairs, **kw) for b, t in zip(base, target, strict=True)]
    return cis, [verdict(ci, min_effect=me) for ci in cis]


def coverage(cis: list[RatioCI], truth: float) -> float:
    return float(np.mean([ci.low is not None and ci.high is not None and ci.low <= truth <= ci.high for ci in cis]))


# --- A-A: a target against itself ---------------------------------------------------------------


@pytest.mark.parametrize("n", [3, 5, 10])
@pytest.mark.parametrize("paired", [False, True], ids=["unpaired", "paired-drift"])
def test_a_a_false_positives_and_coverage(n: int, paired: bool) -> None:
    rng = np.random.default_rng(1000 + n + (100 if paired else 0))
    # Paired runs get a drift twice the noise: pairing must cancel it, not just tolerate it.
    base, target = samples(rng, SIMS, n, cv=0.06, drift_cv=0.12 if paired else 0.0)
    cis, verdicts = run(base, target, paired=paired)
    assert all(ci.method == ("paired-log" if paired else "welch-log") for ci in cis)
    assert stats.false_positive_rate(verdicts) <= 0.06
    assert coverage(cis, 1.0) >= 0.93


def test_a_a_bootstrap_path_covers() -> None:
    # n >= BOOTSTRAP_MIN_N uses the BCa bootstrap of the median ratio; fewer sims, it is slower.
    rng = np.random.default_rng(7)
    n = stats.BOOTSTRAP_MIN_N + 10
    base, target = samples(rng, 300, n, cv=0.06)
    cis, verdicts = run(base, target, resamples=1999)
    assert all(ci.method == "bca-median" for ci in cis)
    assert coverage(cis, 1.0) >= 0.91
    assert stats.false_positive_rate(verdicts) <= 0.06


def test_pairing_cancels_drift() -> None:
    # Drift (10 %) swamps a 5 % speed-up unless round i of base and target are compared directly.
    rng = np.random.default_rng(11)
    base, target = samples(rng, 500, 5, cv=0.01, effect=1.05, drift_cv=0.10)
    _, paired = run(base, target, paired=True)
    _, unpaired = run(base, target)
    assert paired.count("faster") / 500 >= 0.90
    assert unpaired.count("faster") / 500 <= 0.5


# --- known effects ----------------------------------------------------------------------------


def test_ten_percent_slowdown_is_slower() -> None:
    rng = np.random.default_rng(21)
    base, target = samples(rng, 500, 5, cv=0.02, effect=0.90)
    cis, verdicts = run(base, target)
    assert verdicts.count("slower") / 500 >= 0.90
    assert "faster" not in verdicts
    assert coverage(cis, 0.90) >= 0.93


def test_five_percent_speedup_is_faster() -> None:
    rng = np.random.default_rng(22)
    base, target = samples(rng, 500, 5, cv=0.01, effect=1.05)
    _, verdicts = run(base, target)
    assert verdicts.count("faster") / 500 >= 0.90
    assert "slower" not in verdicts


def test_change_below_min_effect_is_same() -> None:
    # Clearly real (CV 0.2 %) but only 1 %: below the 2 % minimum effect.
    rng = np.random.default_rng(23)
    base, target = samples(rng, 200, 5, cv=0.002, effect=1.01)
    cis, verdicts = run(base, target, min_effect=0.02)
    assert set(verdicts) == {"same"}
    # ...and it is the min-effect gate doing it: most intervals exclude 1.
    assert np.mean([ci.low is not None and ci.low > 1.0 for ci in cis]) >= 0.9


def test_lower_is_better_flips_direction() -> None:
    rng = np.random.default_rng(24)
    base, target = samples(rng, 300, 5, cv=0.02, effect=0.90)  # e.g. cpu/o went down 10 %
    cis, _ = run(base, target)
    flip = {"faster": "slower", "slower": "faster", "same": "same", "unsure": "unsure"}
    up = [verdict(ci) for ci in cis]
    down = [verdict(ci, higher_is_better=False) for ci in cis]
    assert down == [flip[v] for v in up]
    assert down.count("faster") / 300 >= 0.90


def test_unsure_when_noise_hides_a_large_change() -> None:
    # 5 % change under 6 % noise with 3 repetitions: not shown either way, so more are needed.
    rng = np.random.default_rng(25)
    base, target = samples(rng, 500, 3, cv=0.06, effect=1.05)
    _, verdicts = run(base, target)
    assert verdicts.count("unsure") / 500 >= 0.5
    assert verdicts.count("slower") / 500 <= 0.01


# --- verdict rules on hand-made intervals -------------------------------------------------------


def ci(est: float, low: float | None, high: float | None) -> RatioCI:
    return RatioCI(est, est, low, high, 0.95, "welch-log", 5, 5)


@pytest.mark.parametrize(
    ("c", "hib", "expected"),
    [
        (ci(1.10, 1.05, 1.15), True, "faster"),
        (ci(1.10, 1.05, 1.15), False, "slower"),
        (ci(0.90, 0.85, 0.95), True, "slower"),
        (ci(0.90, 0.85, 0.95), False, "faster"),
        (ci(1.01, 1.005, 1.015), True, "same"),  # significant, below min effect
        (ci(1.00, 0.99, 1.01), True, "same"),  # interval inside +-2 %
        (ci(1.01, 0.90, 1.12), True, "same"),  # wide, but the change itself is under 2 %
        (ci(1.08, 0.97, 1.20), True, "unsure"),  # looks like +8 %, not shown
        (ci(0.93, 0.80, 1.05), False, "unsure"),
        (ci(1.05, None, None), True, "unsure"),  # too few repetitions
        (None, True, "unsure"),
    ],
)
def test_verdict_rules(c: RatioCI | None, hib: bool, expected: str) -> None:
    assert verdict(c, min_effect=0.02, higher_is_better=hib) == expected


def test_decided() -> None:
    assert [stats.decided(v) for v in ("faster", "slower", "same", "unsure")] == [True, True, True, False]
    with pytest.raises(ValueError):
        stats.decided("quicker")


def test_false_positive_rate() -> None:
    assert stats.false_positive_rate(["faster", "same", "slower", "unsure"]) == 0.5
    assert stats.false_positive_rate(["same", "unsure"]) == 0.0
    with pytest.raises(ValueError):
        stats.false_positive_rate([])


# --- the interval itself ------------------------------------------------------------------------


def test_ratio_is_median_over_median_and_interval_matches_welch() -> None:
    base, target = [100.0, 104.0, 98.0, 120.0], [110.0, 112.0, 109.0, 111.0]
    r = ratio_ci(base, target)
    assert r.ratio == pytest.approx(110.5 / 102.0)
    assert r.method == "welch-log"
    ref = sps.ttest_ind(np.log(target), np.log(base), equal_var=False).confidence_interval(0.95)
    assert r.low == pytest.approx(math.exp(ref.low))
    assert r.high == pytest.approx(math.exp(ref.high))
    assert r.low is not None and r.high is not None
    assert r.low <= r.estimate <= r.high


def test_paired_interval_matches_paired_t_and_skips_missing_partners() -> None:
    base = [100.0, 104.0, 98.0, 120.0]
    target = [110.0, 119.0, 112.0]  # round 2's target repetition failed
    r = ratio_ci(base, target, pairs=[0, 1, -1, 2])
    assert r.method == "paired-log"
    assert r.ratio == pytest.approx(112.0 / 102.0)  # medians still use every repetition
    d = np.log([110.0, 119.0, 112.0]) - np.log([100.0, 104.0, 120.0])
    ref = sps.ttest_1samp(d, 0.0).confidence_interval(0.95)
    assert r.low == pytest.approx(math.exp(ref.low))
    assert r.high == pytest.approx(math.exp(ref.high))
    with pytest.raises(ValueError):
        ratio_ci(base, target, pairs=[0, 1, 2])  # wrong length
    with pytest.raises(ValueError):
        ratio_ci(base, target, pairs=[0, 0, 1, 2])  # a target used twice


def test_deterministic() -> None:
    rng = np.random.default_rng(5)
    small = rng.lognormal(0, 0.05, (2, 5))
    assert ratio_ci(small[0], small[1], seed=3) == ratio_ci(small[0], small[1], seed=3)
    large = rng.lognormal(0, 0.05, (2, 40))
    a = ratio_ci(large[0], large[1], seed=3, resamples=999)
    b = ratio_ci(large[0], large[1], seed=3, resamples=999)
    assert a.method == "bca-median"
    assert a == b
    assert ratio_ci(large[0], large[1], seed=4, resamples=999) != a  # the seed is really used


def test_too_few_repetitions_give_no_interval() -> None:
    r = ratio_ci([100.0], [110.0, 111.0, 109.0])
    assert (r.low, r.high, r.method) == (None, None, "none")
    assert r.ratio == pytest.approx(1.10)
    assert verdict(r) == "unsure"
    assert verdict(ratio_ci([100.0, 101.0], [110.0])) == "unsure"


def test_noiseless_and_invalid_inputs() -> None:
    # Deterministic counters (e.g. instructions/op) have no noise: the interval is the point.
    r = ratio_ci([50.0, 50.0, 50.0], [55.0, 55.0, 55.0])
    assert (r.low, r.high) == (pytest.approx(1.1), pytest.approx(1.1))
    assert verdict(r) == "faster"
    assert verdict(ratio_ci([50.0, 50.0], [50.0, 50.0])) == "same"
    assert ratio_ci([1.0, 2.0, 3.0], [0.0, 2.0, 3.0]).low is None  # no logs of zero
    for bad in ([], [float("nan"), 1.0]):
        with pytest.raises(ValueError):
            ratio_ci(bad, [1.0, 2.0])
    with pytest.raises(ValueError):
        ratio_ci([0.0, 0.0, 1.0], [1.0, 2.0])  # base median 0: no ratio
    with pytest.raises(ValueError):
        ratio_ci([1.0, 2.0], [1.0, 2.0], confidence=1.0)


# --- summaries and colours ----------------------------------------------------------------------


def test_summarise_fixed_values() -> None:
    s = stats.summarise([1.3, 0.9, 1.1, 1.0])
    assert (s.min, s.max, s.n) == (0.9, 1.3, 4)
    assert s.mean == pytest.approx(1.075)
    assert s.median == pytest.approx(1.05)
    # sum of squared deviations 0.0875, / 3 = 0.029166..., sqrt:
    assert s.stddev == pytest.approx(0.17078251276599)
    one = stats.summarise([0.97])
    assert (one.min, one.max, one.mean, one.median, one.stddev, one.n) == (0.97, 0.97, 0.97, 0.97, None, 1)
    with pytest.raises(ValueError):
        stats.summarise([])


def test_colour_thresholds() -> None:
    assert [stats.colour(x) for x in (None, 0.90, 0.95, 0.96, 1.0, 1.049, 1.05, 1.2)] == [
        "grey",
        "red",
        "red",
        "grey",
        "grey",
        "grey",
        "green",
        "green",
    ]


# --- calibration ------------------------------------------------------------------------------


def test_min_detectable_effect_monotone() -> None:
    by_n = [stats.min_detectable_effect(0.05, n) for n in range(2, 21)]
    assert all(a > b for a, b in itertools.pairwise(by_n))
    by_cv = [stats.min_detectable_effect(cv, 5) for cv in (0.0, 0.01, 0.02, 0.05, 0.1)]
    assert by_cv[0] == 0.0
    assert all(a < b for a, b in itertools.pairwise(by_cv))
    assert stats.min_detectable_effect(0.05, 1) == math.inf
    # Stricter confidence or higher power both need a larger effect.
    assert stats.min_detectable_effect(0.05, 5, confidence=0.99) > stats.min_detectable_effect(0.05, 5)
    assert stats.min_detectable_effect(0.05, 5, power=0.9) > stats.min_detectable_effect(0.05, 5)


def test_min_detectable_effect_matches_simulation() -> None:
    # At the predicted effect, about `power` of the intervals should exclude 1.
    cv, n = 0.05, 5
    mde = stats.min_detectable_effect(cv, n)
    rng = np.random.default_rng(31)
    base, target = samples(rng, SIMS, n, cv=cv, effect=1.0 + mde)
    cis, _ = run(base, target)
    detected = np.mean([ci.low is not None and ci.low > 1.0 for ci in cis])
    assert 0.72 <= detected <= 0.88
