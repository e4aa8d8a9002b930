"""Verdicts on instruction counts: the figure judged (the foreground's or every process's), the floor and where
it came from, failed counts, and the A-A difference of a calibration."""

from __future__ import annotations

import pytest

from dbsweep.report import fmt
from dbsweep.verdicts import stats
from dbsweep.verdicts.instructions import aa_differences, calibrated_aa, judge, run_verdicts


def count(total: float, fg: float, spread: float = 0.0, fg_spread: float = 0.0) -> dict[str, object]:
    return {
        "per_event": total,
        "spread": spread,
        "foreground_per_event": fg,
        "foreground_spread": fg_spread,
        "foreground_share": fg / total,
        "error": None,
    }


def test_quiet_background_is_judged_on_the_foreground() -> None:
    # The totals differ by 0.5 % only through the background's clock-driven wake-ups (noisy), the foreground by
    # nothing: same, on the foreground, with the foreground's own (tiny) spread setting no floor.
    j = judge(count(100_000, 99_900, spread=0.004), count(100_500, 99_910, spread=0.004, fg_spread=0.0001))
    assert j.basis == "foreground" and j.verdict == "same" and j.ratio == pytest.approx(99_910 / 99_900)
    assert j.floor == stats.INSTRUCTION_FLOOR and j.floor_source == "default"
    slower = judge(count(100_000, 99_900), count(103_000, 102_900))
    assert slower.verdict == "slower" and slower.basis == "foreground"


def test_busy_background_is_judged_on_every_process() -> None:
    # A write step whose WAL writer does 10 % of the work: every process counts, and the pairs' spread sets the floor.
    j = judge(count(100_000, 90_000, spread=0.003), count(101_000, 90_100, spread=0.001))
    assert j.basis == "all processes" and j.ratio == pytest.approx(1.01)
    assert j.floor == pytest.approx(0.009) and j.floor_source == "pairs" and j.verdict == "slower"
    assert judge(count(100_000, 90_000, spread=0.004), count(101_000, 90_100)).verdict == "same"  # 1 % < 1.2 %


def test_a_busy_background_s_verdict_shows_the_foreground_s_when_it_differs() -> None:
    # 11.8.6's update-one against 10.5.23: every process 18 % cheaper (10.5's purge at shutdown), the thread
    # serving the client 10.7 % dearer.
    j = judge(count(100_200, 70_786, spread=0.002), count(82_037, 78_342, spread=0.001))
    assert j.basis == "all processes" and j.verdict == "faster"
    assert j.foreground is not None and j.foreground.verdict == "slower"
    assert j.foreground.ratio == pytest.approx(78_342 / 70_786)
    assert fmt.instr_verdict(j) == "faster -18.13% (fg slower +10.67%)"
    agree = judge(count(100_000, 90_000), count(80_000, 72_000))
    assert agree.foreground is not None and fmt.instr_verdict(agree) == "faster -20.00%"
    quiet = judge(count(100_000, 99_900), count(103_000, 102_900))
    assert quiet.basis == "foreground" and quiet.foreground is None


def test_a_calibrated_a_a_difference_raises_the_floor() -> None:
    j = judge(count(100_000, 90_000), count(101_000, 90_100), aa=0.006)
    assert j.floor == pytest.approx(0.012) and j.floor_source == "calibrate" and j.verdict == "same"


def test_missing_or_failed_counts_have_no_verdict() -> None:
    assert judge(None, count(1, 1)).verdict is None
    failed = {"per_event": None, "error": "valgrind cannot run it"}
    j = judge(count(100, 99), failed)
    assert j.verdict is None and j.error is not None and "valgrind cannot run it" in j.error and not j.decided


def test_run_verdicts_and_the_calibration_s_a_a() -> None:
    counts = {
        ("base", "point"): count(100_000, 99_950),
        ("t", "point"): count(90_000, 89_950),
        ("t", "load"): count(5_000, 4_000),
    }
    v = run_verdicts(counts, "base")
    assert set(v) == {("t", "point"), ("t", "load")}
    assert v[("t", "point")].verdict == "faster" and v[("t", "point")].decided
    assert v[("t", "load")].verdict is None  # the base has no count of the load
    aa = calibrated_aa({("A", "point"): count(100_000, 99_950), ("B", "point"): count(100_030, 99_960)}, "A", "B")
    assert aa == {"point": pytest.approx(10 / 99_950)}  # on the foreground: both backgrounds are quiet


def test_a_calibration_s_a_a_difference_and_the_floor_it_sets() -> None:
    counts = {("A", "point"): count(100_000, 99_950), ("B", "point"): count(100_300, 100_250)}
    (d,) = aa_differences(counts, "A", "B")
    assert (d.step, d.basis, d.a, d.b) == ("point", "foreground", 99_950, 100_250)
    assert d.difference == pytest.approx(300 / 99_950) and d.floor == pytest.approx(2 * 300 / 99_950)
    small = aa_differences({("A", "p"): count(100_000, 99_950), ("B", "p"): count(100_010, 99_960)}, "A", "B")
    assert small[0].floor == stats.INSTRUCTION_FLOOR  # never under the default
