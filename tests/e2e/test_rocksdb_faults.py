"""The fault matrix of tests/contract/test_fault_matrix.py for the engine whose own tool is the client (RocksDB's
db_bench, which the contract tests leave out): Ctrl-C of a run that inherited SIGINT as ignored still stops it
with status 130, keeping every finished cell; a kept database that is no longer the loaded one starts its
repetition afresh on the next run; a full disk fails the cells naming it and gives the space back; a SIGKILL of
dbsweep while valgrind counts db_bench leaves no process and no half count. A killed
db_bench is in test_rocksdb.py."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
from pathlib import Path

import pytest

from ..conftest import (
    DBSWEEP,
    ROOT,
    alive,
    children_of,
    cmdline,
    dbsweep,
    done_cells,
    names,
    wait_for,
    wait_no_processes,
)
from ..contract.test_fault_matrix import small_disk

pytestmark = pytest.mark.server

STUDY = """\
name = "rx"
engine = "rocksdb"
base = "lru"
workspace = "{workspace}"

[suite]
name = "dbbench"
steps = ["fillseq", "readrandom"]
keys = {keys}
read_seconds = 20
clients = [1]
cache_mb = 64

[[targets]]
name = "lru"
source = "system"
config = "lru"

[[targets]]
name = "hcc"
source = "system"
config = "hyper_clock"
"""


def _study(tmp: Path, workspace: Path, keys: int = 50000) -> Path:
    path = tmp / "rx.toml"
    path.write_text(STUDY.format(workspace=workspace, keys=keys))
    return path


def _sigint_ignored() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_ctrl_c_inherited_as_ignored_still_stops_then_a_replaced_database_starts_afresh(tmp: Path) -> None:
    study = _study(tmp, tmp / "ws")
    proc = subprocess.Popen(
        [*DBSWEEP, "run", str(study)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=_sigint_ignored,
        env={**os.environ, "COLUMNS": "200"},
    )
    try:
        wait_for(lambda: len(done_cells(tmp)) >= 1 or proc.poll() is not None)
        wait_for(lambda: "db_bench" in names(children_of(proc)) or proc.poll() is not None, timeout=60)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, out
    assert "interrupted" in out and "Traceback" not in out
    assert not wait_no_processes(tmp, timeout=30)
    before = done_cells(tmp)
    assert [(c[1], c[2], c[5]) for c in before] == [("lru", "fillseq", "done")], before

    # Another, empty database where the loaded one was.
    db = next((tmp / "ws" / "data").glob("*/lru/r1")) / "data" / "db"
    shutil.rmtree(db)
    db.mkdir()
    r = dbsweep("run", study, check=False)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    said = " ".join(r.stderr.split())
    assert "lru r1: the kept data directory" in said and "starting this repetition afresh" in said, out
    after = done_cells(tmp)
    assert after[:1] == before
    assert sorted((c[1], c[2], c[5]) for c in after) == [
        ("hcc", "fillseq", "done"),
        ("hcc", "readrandom", "done"),
        ("lru", "fillseq", "done"),
        ("lru", "readrandom", "done"),
    ]


def test_a_full_disk_fails_the_cells_naming_it_and_gives_the_space_back(tmp: Path) -> None:
    with small_disk(tmp / "disk", 32) as disk:
        study = _study(tmp, disk / "ws", keys=400000)  # 400,000 values of 400 bytes: five times the disk
        r = dbsweep("run", study, check=False)
        out = r.stdout + r.stderr
        assert r.returncode == 1, out
        assert "Traceback" not in out
        with sqlite3.connect(disk / "ws" / "results.db") as db:
            stored = db.execute("SELECT status, error FROM cells ORDER BY id").fetchall()
        assert len(stored) == 4 and {st for st, _ in stored} == {"failed"}, stored
        first = [e for _, e in stored if not e.startswith("not run: ")]
        assert first and all(e.startswith(f"the disk holding {disk}/ws/data/") for e in first), first
        assert all(" ran out of space (" in e for e in first), first
        assert not [p for p in (disk / "ws" / "data").rglob("r1") if any(p.iterdir())], "a full data dir was kept"


def test_sigkill_of_dbsweep_during_a_count_leaves_nothing_running_and_no_count(tmp: Path) -> None:
    if not shutil.which("valgrind"):
        pytest.skip("needs valgrind")
    study = _study(tmp, tmp / "ws")
    study.write_text(study.read_text() + "\n[measure]\ninstructions = true\ninstruction_seconds = 2\n")
    proc = subprocess.Popen(
        [*DBSWEEP, "run", str(study), "--counts-only", "--target", "lru"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:

        def counting() -> bool:
            return any("valgrind" in " ".join(cmdline(p)) for p in alive(children_of(proc))) or proc.poll() is not None

        wait_for(counting, timeout=300)
        children = alive(children_of(proc))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    wait_for(lambda: not alive(children), timeout=60)
    assert not wait_no_processes(tmp, timeout=30)
    with sqlite3.connect(tmp / "ws" / "results.db") as db:
        rows = db.execute("SELECT step, per_event, error FROM instructions").fetchall()
    for step, per_event, error in rows:
        assert error or (per_event and per_event > 0), (step, per_event, error)
    assert "done 0, failed 0, pending 4" in dbsweep("status", study).stdout
