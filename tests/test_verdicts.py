"""Verdicts of a stored run, and --until-decided adding interleaved repetitions to unsure cells."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from dbsweep import verdicts
from dbsweep.study import load_study

from .conftest import dbsweep, write_study


def _rows(values: dict[str, list[float]]) -> list[dict[str, object]]:
    return [
        {"target": t, "step": "point-query_range=100", "clients": 1, "repetition": i + 1, "qps": v}
        for t, vs in values.items()
        for i, v in enumerate(vs)
    ]


def test_verdicts_from_rows(tmp: Path) -> None:
    study = load_study(write_study(tmp))
    slow = {"a": [1000.0, 1010.0, 990.0, 1005.0], "b": [900.0, 905.0, 893.0, 899.0]}
    j = verdicts.run_verdicts(study, _rows(slow))[("b", "point-query_range=100", 1)]
    assert j.verdict == "slower" and j.ci is not None and j.ci.high is not None and j.ci.high < 1
    assert j.ci.method == "paired-log"  # repetitions of the same round pair up
    same = {"a": [1000.0, 1002.0, 998.0], "b": [1001.0, 999.0, 1000.5]}
    assert verdicts.run_verdicts(study, _rows(same))[("b", "point-query_range=100", 1)].verdict == "same"
    one = {"a": [1000.0], "b": [700.0]}
    assert verdicts.run_verdicts(study, _rows(one))[("b", "point-query_range=100", 1)].verdict == "unsure"
    assert verdicts.unsure_targets(study, _rows(one)) == {"b"}


def test_until_decided_adds_rounds_up_to_the_cap(tmp: Path) -> None:
    # A against itself with a 0.1 % minimum effect: too fine for this machine's noise in 2 s steps, so
    # the verdict stays unsure (or, rarely, is decided early) and repetitions are added two at a time.
    study = write_study(tmp, repeats=2, seconds=1, warmup=0, config_b="cx10a_c2r24")
    study.write_text(study.read_text() + "\n[measure]\nmin_effect = 0.001\nmax_repeats = 4\n")
    r = dbsweep("run", study, "--until-decided")
    db = sqlite3.connect(tmp / "ws" / "results.db")
    reps = {
        (t, rep)
        for t, rep in db.execute(
            "SELECT t.name, c.repetition FROM cells c JOIN targets t ON t.id = c.target_id "
            "WHERE c.status = 'done' AND c.step = 'point-query_range=100'"
        )
    }
    if "Every verdict is decided after 2 repetitions" in r.stdout:
        assert reps == {(t, n) for t in "ab" for n in (1, 2)}
        return
    assert "adding repetitions 3..4" in r.stdout, r.stdout
    assert reps == {(t, n) for t in "ab" for n in (1, 2, 3, 4)}
    assert "Still unsure after 4 repetitions" in r.stdout or "decided after 4 repetitions" in r.stdout
