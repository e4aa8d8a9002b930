"""Verdicts of stored repetitions (hand-made rows, no run): paired by round, and unsure with one repetition."""

from __future__ import annotations

import importlib
from pathlib import Path

from dbsweep import verdicts
from dbsweep.results.model import StoredCell
from dbsweep.study import load_study

from ..conftest import write_study


def _rows(values: dict[str, list[float]]) -> list[StoredCell]:
    """Stored cells of point-query at one client: target -> QPS of repetition 1, 2, ..."""
    return [
        StoredCell(t, "point-query_range=100", 1, i + 1, v, v, int(v * 10), 10.0, 0, 100.0, 400.0, "queries", n)
        for n, (t, i, v) in enumerate((t, i, v) for t, vs in values.items() for i, v in enumerate(vs))
    ]


def test_verdicts_from_rows(tmp_path: Path) -> None:
    study = load_study(write_study(tmp_path))
    slow = {"a": [1000.0, 1010.0, 990.0, 1005.0], "b": [900.0, 905.0, 893.0, 899.0]}
    j = verdicts.run_verdicts(study, _rows(slow))[("b", "point-query_range=100", 1)]
    assert j.verdict == "slower" and j.ci is not None and j.ci.high is not None and j.ci.high < 1
    assert j.ci.method == "paired-log"  # repetitions of the same round pair up
    same = {"a": [1000.0, 1002.0, 998.0], "b": [1001.0, 999.0, 1000.5]}
    assert verdicts.run_verdicts(study, _rows(same))[("b", "point-query_range=100", 1)].verdict == "same"
    one = {"a": [1000.0], "b": [700.0]}
    assert verdicts.run_verdicts(study, _rows(one))[("b", "point-query_range=100", 1)].verdict == "unsure"
    assert verdicts.unsure_targets(study, _rows(one)) == {"b"}


def test_the_package_gives_the_judging_module_s_functions() -> None:
    judge = importlib.import_module("dbsweep.verdicts.judging")
    assert verdicts.judge_values is judge.judge_values
    assert verdicts.run_verdicts is judge.run_verdicts and verdicts.unsure_targets is judge.unsure_targets
