"""Oracle's MySQL end to end, on the tests' cached source build (opt-in: DBSWEEP_SLOW_TESTS=1, as its contract
tests): a study through the command line whose target b writes every statement to the general log runs its
cells, counts both targets' instructions under valgrind in the one process that serves every client, and
reports b slower by its count, with the logging's functions among those that changed most; its counts run under
the normal scheduler (`Instance.lockstep`)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from .. import sourcebuilds
from ..conftest import dbsweep, logging_study

pytestmark = [
    pytest.mark.server,
    pytest.mark.skipif(shutil.which("valgrind") is None, reason="needs valgrind"),
]


# Its run may take up to half an hour beside other tests (the counts of a server started under valgrind): the
# run's own timeout, not pytest's ten minutes, is the limit.
@pytest.mark.timeout(1900)
def test_a_study_counts_a_logging_config_slower_and_says_why(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sourcebuilds.source_install("mysql")  # skipped, saying why, unless slow tests are asked for
    logged = "\ngeneral_log = ON\ngeneral_log_file = general.log\n"
    study = logging_study(tmp, monkeypatch, "mysql", "cz12a_c2r24", logged)
    run = dbsweep("run", study, timeout=1800)
    assert "4 cells done, 0 failed" in run.stdout, run.stdout + run.stderr
    data = json.loads(dbsweep("report", study, "--format", "json").stdout)
    got = {(x["target"], x["step"]): x for x in data["instructions"]}
    point = got[("b", "point-query_range=100")]
    assert point["error"] is None and point["verdict"] == "slower" and point["ratio"] > 1.01, point
    base_count = got[("a", "point-query_range=100")]
    assert 10_000 < base_count["per_event"] < 1_000_000, base_count  # one point query's work in mysqld
    assert got[("a", "load")]["per_event"] > 0
    # The general log formats each statement's line (measured here: vfprintf and its buffer on top, +10.8 %).
    top = " ".join(f["function"] for f in point["why"][:5]).lower()
    assert "log" in top or "printf" in top, point["why"][:5]
    assert point["why"][0]["delta_self"] > 0
    # Pinned to one CPU, but not at the fixed priority: MySQL does not get through a load in lockstep.
    db = sqlite3.connect(tmp / "ws" / "results.db")
    schedulings = {json.loads(d).get("scheduling") for (d,) in db.execute("SELECT data FROM instructions")}
    db.close()
    assert schedulings == {"normal"}, schedulings
