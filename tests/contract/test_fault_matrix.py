"""Faults every engine must survive, written once: Ctrl-C of a run that inherited SIGINT as ignored (started in
the background of a script) still stops it with status 130, keeps every finished cell and leaves no process;
a kept data directory that no longer holds what its cells need (a file replaced or removed) makes the next run
start that repetition afresh, saying so, instead of failing its cells again and again; a full disk fails the
cells with one sentence naming it, gives the space back and leaves nothing running (where a small filesystem
can be mounted); a SIGKILL of dbsweep while valgrind counts leaves no process and no half count. Killed
servers, backends and clients, a SIGKILL of dbsweep mid-step and stale PID files are the contract's too:
test_disturbance.py, test_resume.py, test_stale.py. RocksDB's db_bench: e2e/test_rocksdb_faults.py."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sqlite3
import subprocess
from collections.abc import Iterator
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
    write_study,
)
from .engines import Support

pytestmark = pytest.mark.server


def _sigint_ignored() -> None:
    # What bash does to a command it starts in the background of a script.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_ctrl_c_inherited_as_ignored_still_stops_then_a_damaged_kept_directory_starts_afresh(
    engine_name: str, support: Support, tmp: Path
) -> None:
    a, b = support.configs
    study = write_study(tmp, engine=engine_name, config_a=a, config_b=b, seconds=30, warmup=1)
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
        # Target a's load is done and its point-query step runs.
        wait_for(lambda: len(done_cells(tmp)) >= 1 or proc.poll() is not None)
        wait_for(
            lambda: {"dbsweep-load", support.process_name} <= names(children_of(proc)) or proc.poll() is not None,
            timeout=60,
        )
        children = children_of(proc)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, out
    assert "interrupted" in out and "Traceback" not in out
    assert not wait_no_processes(tmp, timeout=30)
    assert children and not alive(children)
    before = done_cells(tmp)
    assert [(c[1], c[2], c[5]) for c in before] == [("a", "load", "done")], before

    kept = next((tmp / "ws" / "data").glob("*/a/r1"))
    datadir = next(d for d in kept.iterdir() if d.is_dir() and d.name in ("pgdata", "data"))
    support.damage(datadir)
    r = dbsweep("run", study, check=False)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    said = " ".join(r.stderr.split())  # as read, whatever the terminal's width did to the lines
    assert "a r1: the kept data directory" in said and "starting this repetition afresh" in said, out
    after = done_cells(tmp)
    assert after[:1] == before, "a finished cell was changed"
    assert sorted((c[1], c[2], c[5]) for c in after) == [
        ("a", "load", "done"),
        ("a", "point-query_range=100", "done"),
        ("b", "load", "done"),
        ("b", "point-query_range=100", "done"),
    ]


@contextlib.contextmanager
def small_disk(where: Path, megabytes: int) -> Iterator[Path]:
    """A tmpfs of `megabytes` at `where`, reachable by the server user, unmounted after the block."""
    where.mkdir()
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={megabytes}M,mode=755", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        pytest.skip(f"cannot mount a small filesystem here: {r.stderr.strip()}")
    try:
        yield where
    finally:
        wait_no_processes(where, timeout=30)
        subprocess.run(["umount", "--lazy", str(where)], check=False)


def test_a_full_disk_fails_the_cells_naming_it_and_gives_the_space_back(
    engine_name: str, support: Support, tmp: Path
) -> None:
    a, b = support.configs
    with small_disk(tmp / "disk", 64) as disk:
        study = write_study(
            tmp, engine=engine_name, config_a=a, config_b=b, rows=400000, seconds=2, warmup=1, workspace=disk / "ws"
        )
        r = dbsweep("run", study, check=False)
        out = r.stdout + r.stderr
        assert r.returncode == 1, out
        assert "Traceback" not in out
        with sqlite3.connect(disk / "ws" / "results.db") as db:
            stored = db.execute("SELECT status, error FROM cells ORDER BY id").fetchall()
        # Every cell is stored (the store, on the same disk, got its space back), failed, and says why.
        assert len(stored) == 4 and {st for st, _ in stored} == {"failed"}, stored
        first = [e for _, e in stored if not e.startswith("not run: ")]
        assert first and all(
            e.startswith(f"the disk holding {disk}/ws/data/") and " ran out of space (" in e for e in first
        )
        assert not [p for p in (disk / "ws" / "data").rglob("r1") if any(p.iterdir())], "a full data dir was kept"
        assert not wait_no_processes(disk, timeout=30)


def test_sigkill_of_dbsweep_during_a_count_leaves_nothing_running_and_no_count(
    engine_name: str, support: Support, tmp: Path
) -> None:
    if not shutil.which("valgrind"):
        pytest.skip("needs valgrind")
    a, b = support.configs
    study = write_study(tmp, engine=engine_name, config_a=a, config_b=b, rows=5000, seconds=1, warmup=0)
    counts = "\n[measure]\ninstructions = true\ninstruction_seconds = 2\ninstruction_pairs = 1\n"
    study.write_text(study.read_text() + counts)
    proc = subprocess.Popen(
        [*DBSWEEP, "run", str(study), "--counts-only", "--target", "a"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
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
    # Servers, clients and valgrind die with dbsweep, even on SIGKILL.
    wait_for(lambda: not alive(children), timeout=60)
    assert not wait_no_processes(tmp, timeout=30)
    # Nothing half-counted was stored: every count there is whole or a failure that says why.
    with sqlite3.connect(tmp / "ws" / "results.db") as db:
        rows = db.execute("SELECT step, per_event, error FROM instructions").fetchall()
    for step, per_event, error in rows:
        assert error or (per_event and per_event > 0), (step, per_event, error)
    st = dbsweep("status", study)
    assert "done 0, failed 0, pending 4" in st.stdout, st.stdout
