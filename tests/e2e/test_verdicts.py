"""--until-decided adds interleaved repetitions to unsure cells, up to the cap, in a real run."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ..conftest import dbsweep, write_study

pytestmark = pytest.mark.server


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
