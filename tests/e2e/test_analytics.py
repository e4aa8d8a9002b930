"""The analytics suite end to end through the command line, on Debian's SQLite library (two targets, two configs):
the data set derived from TPC-H loaded and three of its queries timed, every cell whole, and the report's own
tables (the load's phases, each query's seconds and time relative to the base, the sum and geometric mean) in the
terminal, markdown and JSON (one repetition keeps it short: the geometric mean's verdict then stays unsure). Every
engine's load and all 44 queries: contract/test_analytics_client.py."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from ..conftest import dbsweep

pytestmark = pytest.mark.server

VERDICTS = {"faster", "slower", "same", "unsure"}

STUDY = """\
name = "an"
engine = "sqlite"
base = "wal"
workspace = "{ws}"
repeats = 1

[suite]
name = "analytics"
data = "tpch"
scale = 0.01
steps = ["q01", "q06", "q13"]
query_repeats = 2
warmup_runs = 1

[[targets]]
name = "wal"
source = "system"
config = "wal_normal"

[[targets]]
name = "rollback"
source = "system"
config = "rollback"
"""


def test_an_analytic_study_runs_and_reports_times_phases_and_the_geometric_mean(tmp: Path) -> None:
    study = tmp / "an.toml"
    study.write_text(STUDY.format(ws=tmp / "ws"))
    assert "derived from TPC-H, scale 0.01" in dbsweep("validate", study).stdout
    run = dbsweep("run", study)
    assert "Run 1: 8 cells done, 0 failed." in run.stdout, run.stdout
    for title in ("the load, seconds per phase", "seconds per query run", "all queries, per target"):
        assert title in run.stdout, title
    assert "3 of 3" in run.stdout and "ClickBench" in run.stdout

    out = json.loads(dbsweep("report", study, "--format", "json").stdout)
    tables = {t["key"]: t for t in out["suite_tables"]}
    load = {r["target"]: r for r in tables["analytics-load"]["rows"]}
    assert load["rollback"]["rows"] == 86_805 and all(load["wal"][k] >= 0 for k in ("load", "keys", "analyze"))
    # The load's rate is over its three phases: the total is their sum.
    assert load["wal"]["total"] == pytest.approx(sum(load["wal"][k] for k in ("load", "keys", "analyze")), rel=1e-6)
    queries = [(r["query"], r["target"]) for r in tables["analytics-queries"]["rows"]]
    assert queries == [(q, t) for q in ("q01", "q06", "q13") for t in ("wal", "rollback")]
    summary = {r["target"]: r for r in tables["analytics-summary"]["rows"]}
    assert summary["rollback"]["queries run"] == "3 of 3" and summary["rollback"]["verdict"] in VERDICTS
    rows = {(r["step"], r["target"]): r for r in out["rows"]}
    assert rows[("q01", "wal")]["query_s"] > 0 and rows[("q01", "wal")]["n_reps"] == 1

    # Each stored run says what it ran and what it got: the same answer from both targets (the configs change
    # how the file is written, not what a query returns).
    db = sqlite3.connect(tmp / "ws" / "results.db")
    cells = [json.loads(x) for (x,) in db.execute("SELECT summary FROM step_results")]
    q13 = [c for c in cells if c.get("step") == "q13"]
    assert len(q13) == 2 and len({c["result_hash"] for c in q13}) == 1
    assert all(c["set"] == "tpch" and len(c["runs_s"]) == 2 and len(c["warmup_s"]) == 1 for c in q13)
    assert {c["rows"] for c in cells if c.get("step") == "q01"} == {4}

    md = dbsweep("report", study, "--format", "markdown").stdout
    assert "time / base (95% CI)" in md and "geomean / base (95% CI)" in md
