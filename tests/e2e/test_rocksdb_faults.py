"""The fault matrix of tests/contract/test_fault_matrix.py for the engine whose own tool is the client (RocksDB's
db_bench, which the contract tests leave out): Ctrl-C of a run that inherited SIGINT as ignored still stops it
with status 130, keeping every finished cell; a kept database that is no longer the loaded one starts its
repetition afresh on the next run; a full disk fails the cells naming it and gives the space back; a SIGKILL of
dbsweep while valgrind counts db_bench leaves no process and no half count. A killed
db_bench is in test_rocksdb.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ..conftest import (
    children_of,
    dbsweep,
    done_cells,
    interrupt_with_sigint_ignored,
    names,
    run_on_a_full_disk,
    sigkill_during_count,
    small_disk,
    wait_no_processes,
    write_dbbench_study,
)

pytestmark = pytest.mark.server


def _study(tmp: Path, workspace: Path, keys: int = 50000) -> Path:
    return write_dbbench_study(tmp, workspace=workspace, keys=keys, suite="read_seconds = 5\ncache_mb = 64")


def test_ctrl_c_inherited_as_ignored_still_stops_then_a_replaced_database_starts_afresh(tmp: Path) -> None:
    study = _study(tmp, tmp / "ws")
    code, out, _ = interrupt_with_sigint_ignored(
        study, lambda p: len(done_cells(tmp)) >= 1 and "db_bench" in names(children_of(p))
    )
    assert code == 130, out
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
        run_on_a_full_disk(_study(tmp, disk / "ws", keys=400000), disk)  # 400,000 values of 400 bytes: 5x the disk


def test_sigkill_of_dbsweep_during_a_count_leaves_nothing_running_and_no_count(tmp: Path) -> None:
    if not shutil.which("valgrind"):
        pytest.skip("needs valgrind")
    study = _study(tmp, tmp / "ws")
    study.write_text(study.read_text() + "\n[measure]\ninstructions = true\ninstruction_seconds = 2\n")
    sigkill_during_count(study, "lru", tmp)
