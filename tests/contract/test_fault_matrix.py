"""Faults every engine must survive, written once: Ctrl-C of a run that inherited SIGINT as ignored (started in
the background of a script) still stops it with status 130, keeps every finished cell and leaves no process;
a kept data directory that no longer holds what its cells need (a file replaced or removed) makes the next run
start that repetition afresh, saying so, instead of failing its cells again and again; a full disk fails the
cells with one sentence naming it, gives the space back and leaves nothing running (where a small filesystem
can be mounted); a SIGKILL of dbsweep while valgrind counts leaves no process and no half count. Killed
servers, backends and clients, a SIGKILL of dbsweep mid-step and stale PID files are the contract's too:
test_disturbance.py, test_resume.py, test_stale.py. RocksDB's db_bench: e2e/test_rocksdb_faults.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ..conftest import (
    alive,
    children_of,
    dbsweep,
    done_cells,
    interrupt_with_sigint_ignored,
    names,
    run_on_a_full_disk,
    sigkill_during_count,
    small_disk,
    wait_no_processes,
    write_study,
)
from .engines import Support

pytestmark = pytest.mark.server


def test_ctrl_c_inherited_as_ignored_still_stops_then_a_damaged_kept_directory_starts_afresh(
    engine_name: str, support: Support, tmp: Path
) -> None:
    a, b = support.configs
    study = write_study(tmp, engine=engine_name, config_a=a, config_b=b, seconds=5, warmup=1)
    # Once target a's load is done and its point-query step runs.
    code, out, children = interrupt_with_sigint_ignored(
        study, lambda p: len(done_cells(tmp)) >= 1 and {"dbsweep-load", support.process_name} <= names(children_of(p))
    )
    assert code == 130, out
    assert "interrupted" in out and "Traceback" not in out
    assert not wait_no_processes(tmp, timeout=30)
    assert children and not alive(children)
    before = done_cells(tmp)
    assert [(c[1], c[2], c[5]) for c in before] == [("a", "load", "done")], before

    kept = next((tmp / "ws" / "data").glob("*/a/r1"))
    datadir = next(d for d in kept.iterdir() if d.is_dir() and d.name in ("pgdata", "data"))
    support.damage(datadir)
    # Target a alone: its kept directory is the one damaged; b never started, so its cells would run as in any
    # first run.
    r = dbsweep("run", study, "--target", "a", check=False)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    said = " ".join(r.stderr.split())  # as read, whatever the terminal's width did to the lines
    assert "a r1: the kept data directory" in said and "starting this repetition afresh" in said, out
    after = done_cells(tmp)
    assert after[:1] == before, "a finished cell was changed"
    assert sorted((c[1], c[2], c[5]) for c in after) == [
        ("a", "load", "done"),
        ("a", "point-query_range=100", "done"),
    ]


def test_a_full_disk_fails_the_cells_naming_it_and_gives_the_space_back(
    engine_name: str, support: Support, tmp: Path
) -> None:
    a, b = support.configs
    with small_disk(tmp / "disk", 64) as disk:
        study = write_study(
            tmp, engine=engine_name, config_a=a, config_b=b, rows=400000, seconds=2, warmup=1, workspace=disk / "ws"
        )
        run_on_a_full_disk(study, disk)


def test_sigkill_of_dbsweep_during_a_count_leaves_nothing_running_and_no_count(
    engine_name: str, support: Support, tmp: Path
) -> None:
    if not shutil.which("valgrind"):
        pytest.skip("needs valgrind")
    a, b = support.configs
    study = write_study(tmp, engine=engine_name, config_a=a, config_b=b, rows=5000, seconds=1, warmup=0)
    counts = "\n[measure]\ninstructions = true\ninstruction_seconds = 2\ninstruction_pairs = 1\n"
    study.write_text(study.read_text() + counts)
    sigkill_during_count(study, "a", tmp)
