"""Change points in an ordered series of targets: where a figure (QPS, cpu/o, instructions per event) changed.

Two gates, so that noise alone never makes a change point:

1. **Candidates: e-divisive means** (Matteson and James, 2014), as Apache Otava and MongoDB use it. Every target
   brings its samples (repetitions, or a count's pairs); a split between two targets is scored by the energy
   distance between the samples before and after it,

       Q = m k / (m + k) * (2/(m k) Σ|x - y|^α  -  1/C(m,2) Σ|x - x'|^α  -  1/C(k,2) Σ|y - y'|^α),

   the best split of the series is taken, and the search goes on in each part (the part whose best split scores
   highest first). A split is only kept when a permutation test says so: the samples of its part shuffled
   `permutations` times (seeded: the same series gives the same answer), its p-value is the share of shuffles
   whose best split scored at least as high. The search stops at the first split that is not significant.
   Splits fall between targets only, never between two samples of one target. A deterministic figure
   (instructions per event, whose pairs repeat to about 0.01 %) has no noise to shuffle against, and a short
   series of them could never pass the test (four targets of two pairs: p ≥ 2/70): there the split is kept when
   the verdict of step 2 decides it, and the search stops at the first it does not.
2. **Confirmation by dbsweep's own verdict** between the two targets on either side of the split (the caller's
   `compare`: the same rule, floor and interval as every other verdict). A candidate whose neighbours are
   `faster` or `slower` is a change point; one they call `same` or `unsure` is a weak candidate, reported
   apart and labelled as such (a gradual drift, or a change too small to decide here).

Written here rather than taken from a package: Otava's pins old numpy and scipy and pulls cloud clients;
`ruptures` has no significance test and would need one written around it anyway.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dbsweep.verdicts.stats import Verdict

ALPHA = 1.0  # the distance's exponent: 1 is the energy distance (any 0 < α < 2 detects any change of distribution)
# A split's permutation p-value must be at most this. With two samples per target, a clean split of six targets
# reaches about 0.002 (2 of the 924 ways to halve twelve samples); one sample per target can never be significant.
SIGNIFICANCE = 0.01
PERMUTATIONS = 499  # shuffles per test: p-values in steps of 1/500
SEED = 20141001  # fixed: the permutation test gives the same p-value for the same series


@dataclass(frozen=True)
class Candidate:
    """A split of the series: the target at `index` is the first of the new regime."""

    index: int
    q: float  # the split's energy statistic (larger: the parts differ more)
    p_value: float | None  # the permutation test's (None: a deterministic figure, kept by its verdict)


@dataclass(frozen=True)
class Comparison:
    """dbsweep's pairwise verdict of the target after a split against the one before it."""

    verdict: Verdict
    ratio: float | None  # after / before on the figure judged
    low: float | None = None  # the ratio's interval, when the figure has one
    high: float | None = None


@dataclass(frozen=True)
class ChangePoint:
    """A candidate with its neighbours' verdict: `confirmed` when that verdict is faster or slower."""

    index: int
    before: str  # the last target of the old regime
    after: str  # the first of the new
    p_value: float | None
    comparison: Comparison

    @property
    def confirmed(self) -> bool:
        return self.comparison.verdict in ("faster", "slower")


def _prefix(d: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """2-D prefix sums with a zero row and column: the sum of d[a:b, c:e] in four lookups."""
    s = np.zeros((d.shape[0] + 1, d.shape[1] + 1))
    s[1:, 1:] = d.cumsum(0).cumsum(1)
    return s


def _block(s: npt.NDArray[np.float64], a: int, b: int, c: int, e: int) -> float:
    return float(s[b, e] - s[a, e] - s[b, c] + s[a, c])


def _best_split(d: npt.NDArray[np.float64], cuts: Sequence[int]) -> tuple[int, float]:
    """The cut (a sample offset within the part) with the largest Q, and that Q; `d` is the part's distances."""
    n = d.shape[0]
    s = _prefix(d)
    best, best_q = -1, -np.inf
    for t in cuts:
        m, k = t, n - t
        between = _block(s, 0, t, t, n)
        within_x = _block(s, 0, t, 0, t) / 2
        within_y = _block(s, t, n, t, n) / 2
        e = 2 * between / (m * k)
        e -= within_x / (m * (m - 1) / 2) if m > 1 else 0.0
        e -= within_y / (k * (k - 1) / 2) if k > 1 else 0.0
        q = m * k / (m + k) * e
        if q > best_q:
            best, best_q = t, q
    return best, float(best_q)


def e_divisive(
    groups: Sequence[Sequence[float]],
    *,
    alpha: float = ALPHA,
    significance: float = SIGNIFICANCE,
    permutations: int = PERMUTATIONS,
    seed: int = SEED,
    accept: Callable[[int], bool] | None = None,
) -> list[Candidate]:
    """The significant splits of a series whose points are `groups` of samples (one group per target, in the
    series' order), by index of the first target after each split, in order. With `accept`, a split (the index
    of the target after it) is kept when `accept` says so instead of by the permutation test."""
    if any(len(g) == 0 for g in groups):
        raise ValueError("every target of a series needs at least one sample")
    if not 0 < alpha < 2:
        raise ValueError(f"alpha must be between 0 and 2, not {alpha}")
    values = np.array([v for g in groups for v in g], dtype=float)
    starts = np.cumsum([0, *(len(g) for g in groups)])  # sample offset of each target; the last is the total
    d_all = np.abs(values[:, None] - values[None, :]) ** alpha
    rng = np.random.default_rng(seed)
    parts = [(0, len(groups))]  # ranges of targets [first, end) not yet split
    found: list[Candidate] = []
    while True:
        # The part whose best split scores highest: (q, part index, target after the split, samples, cuts).
        best: tuple[float, int, int, tuple[int, int], list[int]] | None = None
        for i, (first, end) in enumerate(parts):
            if end - first < 2:
                continue
            lo, hi = int(starts[first]), int(starts[end])
            cuts = [int(starts[t]) - lo for t in range(first + 1, end)]
            cut, q = _best_split(d_all[lo:hi, lo:hi], cuts)
            if best is None or q > best[0]:
                best = (q, i, first + 1 + cuts.index(cut), (lo, hi), cuts)
        if best is None:
            break
        q, i, target, (lo, hi), cuts = best
        if accept is not None:
            if not accept(target):
                break
            p_value = None
        else:
            # Shuffled samples, cut at the same places between targets: how often does noise split as well?
            d = d_all[lo:hi, lo:hi]
            at_least = sum(
                _best_split(d[np.ix_(p, p)], cuts)[1] >= q - 1e-12 * abs(q)
                for p in (rng.permutation(hi - lo) for _ in range(permutations))
            )
            p_value = (at_least + 1) / (permutations + 1)
            if p_value > significance:
                break
        found.append(Candidate(target, q, p_value))
        first, end = parts[i]
        parts[i : i + 1] = [(first, target), (target, end)]
    return sorted(found, key=lambda c: c.index)


def change_points(
    labels: Sequence[str],
    groups: Sequence[Sequence[float]],
    compare: Callable[[int], Comparison],
    *,
    deterministic: bool = False,
    significance: float = SIGNIFICANCE,
    permutations: int = PERMUTATIONS,
) -> list[ChangePoint]:
    """Every candidate of the series with dbsweep's verdict of the target after it against the one before it
    (`compare(index)`): confirmed ones are change points, the others weak candidates. A `deterministic` figure
    keeps a split when that verdict decides it (no permutation test): it has no weak candidates."""
    if len(labels) != len(groups):
        raise ValueError(f"{len(labels)} targets but {len(groups)} groups of samples")
    compared: dict[int, Comparison] = {}

    def verdict(i: int) -> Comparison:
        if i not in compared:
            compared[i] = compare(i)
        return compared[i]

    def decided(i: int) -> bool:
        return verdict(i).verdict in ("faster", "slower")

    found = e_divisive(
        groups, significance=significance, permutations=permutations, accept=decided if deterministic else None
    )
    return [ChangePoint(c.index, labels[c.index - 1], labels[c.index], c.p_value, verdict(c.index)) for c in found]
