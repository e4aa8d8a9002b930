"""The Insert Benchmark end to end through the orchestrator: all ten steps, the SLA table, resume."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from ..conftest import dbsweep

pytestmark = pytest.mark.server

STUDY = """\
name = "ib"
engine = "postgres"
base = "a"
workspace = "{ws}"
[suite]
name = "ibench"
clients = [2]
load_rows = 20000
write_rows = 5000
rw_seconds = 2
maintenance_seconds = 1
[[targets]]
name = "a"
source = "system"
config = "cx10a_c2r24"
[[targets]]
name = "b"
source = "system"
config = "cx10a_sb1g_c2r24"
"""

STEPS = ["l.i0", "l.x", "l.i1", "l.i2", "qr100", "qp100", "qr500", "qp500", "qr1000", "qp1000"]


def test_ibench_study_runs_every_step_prints_three_tables_and_resumes(tmp: Path) -> None:
    study = tmp / "ib.toml"
    study.write_text(STUDY.format(ws=tmp / "ws"))
    r = dbsweep("run", study)
    assert "20 cells done, 0 failed" in r.stdout, r.stdout
    for title in ("throughput per step", "throughput relative to the base (a)", "background insert rate"):
        assert title in r.stdout
    db = sqlite3.connect(tmp / "ws" / "results.db")
    rows = db.execute(
        "SELECT t.name, c.step, c.clients, r.qps, r.summary FROM cells c JOIN targets t ON t.id = c.target_id "
        "JOIN step_results r ON r.cell_id = c.id ORDER BY c.id"
    ).fetchall()
    assert [s for n, s, *_ in rows if n == "a"] == STEPS
    summaries = {(n, s): json.loads(j) for n, s, _, _, j in rows}
    for (name, step), s in summaries.items():
        assert s["clients"] == 2 and s["rate"] > 0, (name, step)
        if step.startswith("q"):
            # 2 clients x the step's rate: a tiny table on an idle server keeps up, so the SLA holds.
            assert s["target_rate"] == 2 * int(step[2:]) and s["sla_ok"] is True, (name, step, s["achieved_rate"])
            assert s["queries"] > 0 and s["ops_name"] == "queries"
    # Deletes matched inserts: the queue keeps its length through l.i1 and l.i2.
    after_lx = summaries[("a", "l.x")]["rows_after"]
    assert summaries[("a", "l.i1")]["rows_after"] == after_lx == summaries[("a", "l.i2")]["rows_after"]
    # Per operation kind histograms and per-second rates are stored.
    kinds = {k for (k,) in db.execute("SELECT DISTINCT kind FROM histograms")}
    assert {"insert", "delete", "query"} <= kinds
    (n,) = db.execute("SELECT count(*) FROM rate_samples").fetchone()
    assert n >= 2 * 6 * 2  # a line per second of each read-write step
    # The wait after l.i2 ran before qr100, and only there.
    maint = [(name, step) for (name, step), s in summaries.items() if "maintenance_before" in s]
    assert maint == [("a", "qr100"), ("b", "qr100")]

    # Lose the last two read-write steps of b (as a crash would): the resume rebuilds b's tables by
    # running l.i0 to l.i2 again, unrecorded, then runs only what is missing.
    lost = [
        (cell_id,)
        for (cell_id,) in db.execute(
            "SELECT c.id FROM cells c JOIN targets t ON t.id = c.target_id "
            "WHERE t.name = 'b' AND c.step IN ('qr1000', 'qp1000')"
        )
    ]
    assert len(lost) == 2
    for table in ("step_results", "samples", "rate_samples", "histograms", "measures", "per_op", "host_samples"):
        db.executemany(f"DELETE FROM {table} WHERE cell_id = ?", lost)
    db.executemany("DELETE FROM server_stats WHERE cell_id = ?", lost)
    db.executemany("DELETE FROM cells WHERE id = ?", lost)
    db.commit()
    r2 = dbsweep("run", study)
    assert "2 cells done, 0 failed" in r2.stdout, r2.stdout
    for step in ("l.i0", "l.x", "l.i1", "l.i2"):
        assert f"b r1: {step} again, to rebuild the tables" in r2.stderr
