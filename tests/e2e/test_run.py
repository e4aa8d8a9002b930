"""End to end on a real Postgres through the command line: run, report, a second run that has nothing to do,
Ctrl-C, a step with many errors, a workspace the server cannot reach. (A SIGKILL and its resume, and a setting
the server refuses, are engine contracts: contract/test_resume.py, contract/test_rejected_config.py.)"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from ..conftest import (
    DBSWEEP,
    ROOT,
    alive,
    children_of,
    dbsweep,
    done_cells,
    processes_under,
    start_run,
    wait_for,
    write_study,
)

pytestmark = pytest.mark.server


def _db(study_dir: Path) -> sqlite3.Connection:
    return sqlite3.connect(study_dir / "ws" / "results.db")


def test_run_report_and_second_run_does_nothing(tmp: Path) -> None:
    study = write_study(tmp, clients=[1, 2])
    r = dbsweep("run", study)
    assert "6 cells done, 0 failed" in r.stdout
    rep = dbsweep("report", study).stdout
    for text in ("a", "b", "point-query", "load (rows/s)", "rQPS"):
        assert text in rep
    db = _db(tmp)
    rows = db.execute(
        "SELECT t.name, c.step, c.clients, r.qps, r.operations, r.seconds FROM cells c "
        "JOIN targets t ON t.id = c.target_id JOIN step_results r ON r.cell_id = c.id"
    ).fetchall()
    assert len(rows) == 6
    for name, step, clients, qps, ops, secs in rows:
        assert qps > 0 and ops > 0, (name, step, clients)
        assert abs(qps - ops / secs) < 1e-6 * qps
    # Per-second samples for every timed step; a latency histogram for every step (the load's: its INSERTs).
    (n_samples,) = db.execute(
        "SELECT count(*) FROM samples s JOIN cells c ON c.id = s.cell_id WHERE c.step = 'point-query_range=100'"
    ).fetchone()
    assert n_samples >= 4 * 2
    (n_hist,) = db.execute("SELECT count(*) FROM histograms").fetchone()
    assert n_hist == 6
    # The report's rQPS is the ratio of the stored QPS.
    qps = {(n, s, c): q for n, s, c, q, _, _ in rows}
    expected = qps[("b", "point-query_range=100", 2)] / qps[("a", "point-query_range=100", 2)]
    table = rep[rep.index("QPS and QPS relative to the base") :].splitlines()  # below the answer, which names it too
    assert f"{expected:.2f}" in table[[i for i, ln in enumerate(table) if "point-query" in ln][1]]
    # Provenance names the engine, its flags, the config diff and the host.
    prov = json.loads(db.execute("SELECT data FROM provenance LIMIT 1").fetchone()[0])
    assert prov["engine"]["server_version"].startswith("15")
    assert "-O2" in prov["engine"]["cflags"]
    assert "shared_buffers" in prov["config"]["diff"]
    assert any(s["name"] == "shared_buffers" for s in prov["config"]["effective_settings"])
    assert prov["host"]["cpus_logical"] >= 1
    # Every step carries its hardware cost per operation, the samplers' view and the server's statistics.
    per_op = db.execute(
        "SELECT c.step, p.metric, p.value FROM per_op p JOIN cells c ON c.id = p.cell_id WHERE c.status = 'done'"
    ).fetchall()
    cpu = [v for step, metric, v in per_op if metric == "cpu/o" and step == "point-query_range=100"]
    assert len(cpu) == 4 and all(v is not None and 1 < v < 10_000 for v in cpu), cpu  # microseconds per query
    assert {m for _, m, _ in per_op} >= {"cpu/o", "cs/o", "client_cpu/o", "host_cpu/o"}
    measures = [json.loads(d) for (d,) in db.execute("SELECT data FROM measures")]
    assert len(measures) == 6 and all(m["db_bytes"] > 0 and m["server_cpu_s"] > 0 for m in measures)
    views = {v for (v,) in db.execute("SELECT DISTINCT view FROM server_stats")}
    assert {"pg_stat_database", "pg_stat_bgwriter", "pg_stat_user_tables", "sizes"} <= views
    (n_host,) = db.execute("SELECT count(*) FROM host_samples").fetchone()
    assert n_host >= 6
    # How noisy the machine was: each step's steal share, the canary before the one round, the host's tuning.
    assert all(isinstance(m["host_st_pct"], float) and 0 <= m["host_st_pct"] <= 100 for m in measures)
    canaries = db.execute("SELECT run_id, repetition, iterations, seconds, cpu_seconds FROM canaries").fetchall()
    assert len(canaries) == 1, canaries
    run_id, repetition, iterations, seconds, cpu_seconds = canaries[0]
    assert (run_id, repetition) == (1, 1) and iterations > 0 and seconds > 0 and cpu_seconds > 0
    assert set(prov["host"]["tuning"]) == {"governors", "boost", "smt", "huge_pages", "virtual"}
    assert "Canary before each round" in rep and "r1 " in rep
    # A second run has nothing to do and changes nothing.
    before = db.execute("SELECT count(*), max(id) FROM cells").fetchone()
    r2 = dbsweep("run", study)
    assert "Nothing to run" in r2.stdout
    assert db.execute("SELECT count(*), max(id) FROM cells").fetchone() == before
    assert db.execute("SELECT count(*) FROM canaries").fetchone() == (1,)  # no round ran, so no canary
    st = dbsweep("status", study).stdout
    assert "done 6, failed 0, pending 0" in st
    # Data directories of finished targets are removed.
    assert not list((tmp / "ws" / "data").glob("*/*/r1/pgdata"))


def test_run_of_one_target_leaves_the_other_for_a_later_run(tmp: Path) -> None:
    study = write_study(tmp, seconds=1)  # which cells ran is the point, not what they measured
    bad = dbsweep("run", study, "--target", "c", check=False)
    assert bad.returncode != 0 and "no target 'c'" in bad.stderr and "have: a, b" in bad.stderr
    assert not done_cells(tmp)
    first = dbsweep("run", study, "--target", "b")
    assert "2 cells done, 0 failed" in first.stdout
    assert {(c[1], c[5]) for c in done_cells(tmp)} == {("b", "done")}
    assert "done 2, failed 0, pending 2" in dbsweep("status", study).stdout
    second = dbsweep("run", study)
    assert "2 cells done, 0 failed" in second.stdout
    assert "run 1 continues: 2 of 4 cells done, 2 to run" in second.stderr
    assert {(c[1], c[5]) for c in done_cells(tmp)} == {("a", "done"), ("b", "done")}


def test_ctrl_c_stops_everything_and_resumes(tmp: Path) -> None:
    study = write_study(tmp, seconds=20, warmup=1)
    proc = start_run(study)
    try:
        wait_for(lambda: len(done_cells(tmp)) >= 1)
        wait_for(lambda: bool(processes_under(tmp)))
        time.sleep(1)
        children = children_of(proc)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out
    assert "interrupted" in out
    # Nothing survives an orderly interrupt: checked at once, not after a grace period.
    assert not processes_under(tmp)
    assert children and not alive(children)


def test_step_with_many_errors_fails_with_its_first_errors(tmp: Path) -> None:
    # Target b may spill only 256 kB of a sort to disk, so every ORDER BY and DISTINCT over 10,000 rows fails
    # on the server (53400); the load (its index build uses maintenance_work_mem) and the VACUUM do not.
    configs = tmp / "configs" / "postgres"
    configs.mkdir(parents=True)
    (configs / "cx10a_c2r24.conf").write_text((ROOT / "configs/postgres/cx10a_c2r24.conf").read_text())
    (configs / "nospill.conf").write_text("work_mem = 64kB\ntemp_file_limit = 256kB\n")
    study = write_study(tmp, config_b="nospill", seconds=1, steps='["read-only_range=10000"]')
    env = {**os.environ, "DBSWEEP_CONFIGS": str(tmp / "configs"), "COLUMNS": "200"}
    r = subprocess.run([*DBSWEEP, "run", str(study)], cwd=ROOT, capture_output=True, text=True, env=env, timeout=600)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "3 cells done, 1 failed" in out
    assert re.search(r"\d+ of \d+ events failed \(\d+%, more than 1%\); first errors: 53400: ", out), out
    assert "temporary file size exceeds temp_file_limit" in out
    st = subprocess.run([*DBSWEEP, "status", str(study)], cwd=ROOT, capture_output=True, text=True, env=env)
    assert "done 3, failed 1, pending 0" in st.stdout


def test_private_workspace_is_a_clear_error(tmp: Path) -> None:
    if os.geteuid() != 0:
        return  # the server runs as ourselves, so any workspace we can write works
    private = tmp / "private"
    private.mkdir(mode=0o700)
    study = write_study(tmp, workspace=str(private / "ws"))
    r = dbsweep("run", study, check=False)
    assert r.returncode == 1
    # Failures go to stderr; stdout keeps only the results.
    assert f"cannot reach {private}/ws/data" in r.stderr and "is private (mode 700)" in r.stderr
