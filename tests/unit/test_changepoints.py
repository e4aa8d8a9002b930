"""Change points in a series of targets: e-divisive candidates with a permutation test, confirmed by the
pairwise verdict of the targets on either side."""

from __future__ import annotations

import numpy as np
import pytest

from dbsweep.verdicts.changepoints import Comparison, change_points, e_divisive


def series(levels: list[float], samples: int = 3, cv: float = 0.01, seed: int = 1) -> list[list[float]]:
    """One group of noisy samples per target, around each level."""
    rng = np.random.default_rng(seed)
    return [list(level * (1 + cv * rng.standard_normal(samples))) for level in levels]


def test_a_step_at_the_fourth_target_is_found_there() -> None:
    groups = series([100, 100, 100, 110, 110, 110])
    (c,) = e_divisive(groups)
    assert c.index == 3 and c.p_value <= 0.05


def test_six_identical_targets_have_no_change_point() -> None:
    """Noise alone makes a candidate about once in a hundred series; dbsweep's verdict between its neighbours
    (here `same`, as identical builds read) keeps it from being a change point."""
    candidates = [e_divisive(series([100] * 6, seed=seed)) for seed in range(40)]
    assert sum(len(c) for c in candidates) <= 2
    for seed in range(40):
        found = change_points(
            [f"t{i}" for i in range(6)], series([100] * 6, seed=seed), lambda i: Comparison("same", 1.0)
        )
        assert not [cp for cp in found if cp.confirmed]


def test_two_changes_are_both_found() -> None:
    groups = series([100, 100, 100, 120, 120, 120, 120, 90, 90, 90])
    assert [c.index for c in e_divisive(groups)] == [3, 7]


def test_a_deterministic_count_with_its_pairs_splits_where_it_changed() -> None:
    # Instructions per event: two pairs per count, repeating to about 0.01 %.
    counts = [41_300, 41_302, 41_299, 45_100, 45_098, 45_101]
    groups = [[v, v * 1.00005] for v in counts]
    assert [c.index for c in e_divisive(groups)] == [3]


def test_the_same_series_gives_the_same_answer() -> None:
    groups = series([100, 101, 103, 104, 108, 108, 109])
    assert e_divisive(groups) == e_divisive(groups)


def test_a_candidate_is_confirmed_only_by_a_decided_pairwise_verdict() -> None:
    labels = ["13.0", "13.1", "13.2", "14.0", "14.1", "14.2"]
    groups = series([100, 100, 100, 110, 110, 110])
    asked: list[int] = []

    def decided(i: int) -> Comparison:
        asked.append(i)
        return Comparison("slower", 1.1, 1.05, 1.15)

    (cp,) = change_points(labels, groups, decided)
    assert asked == [3] and (cp.before, cp.after) == ("13.2", "14.0") and cp.confirmed
    (weak,) = change_points(labels, groups, lambda i: Comparison("unsure", 1.1))
    assert not weak.confirmed and weak.index == 3  # a weak candidate: reported apart, never a change point


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one sample"):
        e_divisive([[1.0], []])
    with pytest.raises(ValueError, match="alpha"):
        e_divisive([[1.0], [2.0]], alpha=2.0)
    with pytest.raises(ValueError, match="2 targets but 1 groups"):
        change_points(["a", "b"], [[1.0]], lambda i: Comparison("same", 1.0))
    assert e_divisive([[1.0, 1.1]]) == []  # one target: nothing to split


def test_a_deterministic_figure_is_split_where_its_verdict_decides() -> None:
    """Four counts of two pairs each can never pass the permutation test (p >= 2/70); the floor's verdict keeps
    the split instead, and stops the search where it does not decide."""
    labels = ["a", "b", "c", "d"]
    counts = [50_054, 50_053, 54_900, 54_902]
    groups = [[v, v * 1.00005] for v in counts]
    assert e_divisive(groups) == []

    def floor(i: int) -> Comparison:
        ratio = counts[i] / counts[i - 1]
        return Comparison("slower" if ratio > 1.002 else "faster" if ratio < 0.998 else "same", ratio)

    (cp,) = change_points(labels, groups, floor, deterministic=True)
    assert (cp.index, cp.p_value, cp.confirmed) == (2, None, True)
    flat = [[v, v] for v in (50_054, 50_053, 50_054, 50_055)]
    assert change_points(labels, flat, lambda i: Comparison("same", 1.0), deterministic=True) == []
