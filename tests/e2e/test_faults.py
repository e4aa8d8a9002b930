"""Faults injected into real runs: a measurement that was disturbed is stored as failed with its reason,
never as a result; finished cells stay; the study goes on; nothing is left running; no traceback. Damaged,
archived and misplaced stores and workspaces are plain errors."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from ..conftest import (
    TEST_ROOT,
    children_of,
    cmdline,
    dbsweep,
    foreign_process,
    own_dir,
    running,
    wait_for,
    wait_no_processes,
    write_study,
)

pytestmark = pytest.mark.server

STEPS = '["point-query", "read-only"]'
POINT = "point-query_range=100"
# The step after the faulted one: a write, timed by write_seconds, so it can be short while point-query is long.
NEXT = "update-nonindex_range=100"
FAULTED_STEPS = '["point-query", "update-nonindex"]'


def cells(tmp: Path) -> dict[tuple[str, str], tuple[str, str | None]]:
    """(target, step) -> (status, error) of the latest attempt."""
    with sqlite3.connect(tmp / "ws" / "results.db") as db:
        rows = db.execute(
            "SELECT t.name, c.step, c.status, c.error FROM cells c JOIN targets t ON t.id = c.target_id ORDER BY c.id"
        ).fetchall()
    return {(n, s): (st, e) for n, s, st, e in rows}


def step_running(run: subprocess.Popen[str], target: str, step: str) -> psutil.Process | None:
    """The load client of `step` while it runs against `target`'s server, else None."""
    procs = children_of(run)
    servers = [p for p in procs if cmdline(p) and "-D" in cmdline(p) and f"/{target}/r1/pgdata" in " ".join(cmdline(p))]
    if not servers:
        return None
    for p in procs:
        cmd = cmdline(p)
        if cmd and cmd[0].endswith("dbsweep-load") and cmd[1:3] == ["sysbench", step]:
            return p
    return None


def postmaster_of(run: subprocess.Popen[str], target: str) -> psutil.Process:
    return next(p for p in children_of(run) if "-D" in cmdline(p) and f"/{target}/r1/pgdata" in " ".join(cmdline(p)))


# Each fault's target in the one faulted run; d is left alone, to show the study goes on after all three.
FAULTED = {"postmaster": "a", "backend": "b", "client": "c"}
EXTRA_TARGETS = """
[[targets]]
name = "c"
source = "system"
config = "cx10a_c2r24"

[[targets]]
name = "d"
source = "system"
config = "cx10a_sb1g_c2r24"
"""


@dataclass
class Faulted:
    dir: Path
    returncode: int
    out: str


def inject(run: subprocess.Popen[str], target: str, fault: str) -> None:
    """Does `fault` to `target` in the middle of its point-query step."""
    # As long as a run of its own had to finish in: the targets before it take their time on a busy machine.
    wait_for(lambda: step_running(run, target, "point-query") is not None or run.poll() is not None, timeout=300)
    client = step_running(run, target, "point-query")
    assert client is not None, f"{target}'s step never ran"
    time.sleep(2.5)  # past the warm-up, into the measured seconds
    postmaster = postmaster_of(run, target)
    if fault == "postmaster":
        postmaster.kill()
    elif fault == "backend":
        backends = [p for p in postmaster.children() if " ".join(cmdline(p)).startswith("postgres: dbsweep dbsweep")]
        assert backends, [cmdline(p) for p in postmaster.children()]
        backends[0].kill()
    else:
        client.kill()


@pytest.fixture(scope="module")
def faulted(_test_root: Path) -> Iterator[Faulted]:
    """One four-target run that does each fault to its own target (FAULTED) in the middle of its point-query
    step: the targets run one after another on servers of their own, so the faults do not meet, and one run
    pays for the steps that every fault's own run would repeat."""
    place = own_dir(_test_root, "faulted")
    tmp = next(place)
    study = write_study(tmp, rows=10000, seconds=5, warmup=1, steps=FAULTED_STEPS)
    text = study.read_text()
    assert "write_seconds = 5\n" in text
    study.write_text(text.replace("write_seconds = 5\n", "write_seconds = 1\n") + EXTRA_TARGETS)
    with running(study) as run:
        for fault, target in FAULTED.items():
            try:
                inject(run, target, fault)
            except AssertionError as e:
                run.kill()
                said, _ = run.communicate(timeout=60)
                raise AssertionError(f"{fault} on {target}: {e}; the run said:\n{said[-4000:]}") from e
        out, _ = run.communicate(timeout=300)
    assert not wait_no_processes(tmp, timeout=60)
    yield Faulted(tmp, run.returncode, out)
    next(place, None)  # own_dir's check: nothing left running under it


def assert_study_went_on(f: Faulted, target: str) -> None:
    got = cells(f.dir)
    assert got[(target, "load")][0] == "done", "an earlier cell was changed"
    for step in ("load", POINT, NEXT):
        assert got[("d", step)] == ("done", None), (step, f.out)
    assert "Traceback" not in f.out


def test_killed_postmaster_fails_its_step_not_the_next_and_resumes(faulted: Faulted) -> None:
    tmp = faulted.dir
    assert faulted.returncode == 1, faulted.out
    got = cells(tmp)
    status, error = got[("a", POINT)]
    assert status == "failed" and error is not None
    assert error.startswith("the server died during the step: its postmaster (PID "), error
    assert "killed by SIGKILL" in error
    assert got[("a", NEXT)] == ("failed", f"not run: the server failed during a {POINT} c1 r1")
    assert_study_went_on(faulted, "a")
    # a: its load done, two failed; b (backend): the same; c (client): its load and next step done; d: three done.
    assert "Run 1: 7 cells done, 5 failed." in faulted.out
    # The data directory was kept, with the PID file the killed server left. Let its PID now belong to a
    # process named postgres that is not ours: the retry must set the file aside and never signal it.
    datadir = next((tmp / "ws" / "data").glob("*/a/r1/pgdata"))
    foreign = foreign_process(tmp, "postgres")
    try:
        started = int(psutil.Process(foreign.pid).create_time())
        (datadir / "postmaster.pid").write_text(f"{foreign.pid}\n{datadir}\n{started}\n5432\n/tmp\n")
        r = dbsweep("run", tmp / "t.toml", "--rerun-failed", "--target", "a")
        assert foreign.poll() is None and not (tmp / "signals").exists()
    finally:
        foreign.kill()
        foreign.wait()
    # The retry resumed on the kept data directory after the server's crash recovery.
    assert "Run 1: 2 cells done, 0 failed." in r.stdout, r.stdout + r.stderr
    assert "resuming on the kept data directory" in r.stderr
    assert f"stale PID file in {datadir} names PID {foreign.pid}, a process that is not" in r.stderr, r.stderr
    assert "set it aside" in r.stderr


def test_killed_backend_is_a_crash_restart_and_fails_its_step(faulted: Faulted) -> None:
    assert faulted.returncode == 1, faulted.out
    got = cells(faulted.dir)
    status, error = got[("b", POINT)]
    assert status == "failed" and error is not None
    assert error.startswith("the server crash-restarted its backends during the step"), error
    assert "was terminated by signal 9" in error
    assert got[("b", NEXT)][0] == "failed" and "not run" in str(got[("b", NEXT)][1])
    assert_study_went_on(faulted, "b")


def test_killed_load_client_fails_its_step_and_the_server_goes_on(faulted: Faulted) -> None:
    assert faulted.returncode == 1, faulted.out
    got = cells(faulted.dir)
    assert got[("c", POINT)] == (
        "failed",
        "the load client (dbsweep-load sysbench) was killed by SIGKILL before the step ended",
    )
    # The server was not disturbed: the next step ran on it and is a result.
    assert got[("c", NEXT)] == ("done", None)
    assert_study_went_on(faulted, "c")
    # A failed cell left from before keeps the exit status at 1, and says how to retry it.
    r = dbsweep("run", faulted.dir / "t.toml", check=False)
    assert r.returncode == 1 and "Nothing to run" in r.stdout
    assert "use --rerun-failed" in r.stderr


def test_a_second_run_of_a_workspace_refuses_and_the_first_is_untouched(tmp: Path) -> None:
    study = write_study(tmp, rows=5000, seconds=3, warmup=0, steps=STEPS)
    with running(study) as first:
        wait_for(lambda: step_running(first, "a", "point-query") is not None or first.poll() is not None)
        second = dbsweep("run", study, check=False, timeout=60)
        assert second.returncode == 1
        assert f"is in use by another dbsweep (PID {first.pid}, `dbsweep run {study}`, since " in second.stderr
        assert "Traceback" not in second.stderr
        # Readers take no lock.
        status = dbsweep("status", study)
        m = re.search(r"done (\d+), failed 0, pending (\d+)", status.stdout)
        assert m and int(m[1]) >= 1 and int(m[2]) >= 1, status.stdout
        out, _ = first.communicate(timeout=300)
    assert first.returncode == 0, out
    assert "Run 1: 6 cells done, 0 failed." in out


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real, finished run's study directory (results in ws/results.db)."""
    d = TEST_ROOT / f"finished-{os.getpid()}"
    d.mkdir(mode=0o755, exist_ok=True)
    study = write_study(d, rows=5000, seconds=1, warmup=0)
    dbsweep("run", study)
    return d


def _copy(finished: Path, to: Path) -> Path:
    """The finished study and its store, copied to `to` with the workspace pointing there."""
    (to / "ws").mkdir(parents=True, exist_ok=True)
    study = (finished / "t.toml").read_text().replace(str(finished / "ws"), str(to / "ws"))
    (to / "t.toml").write_text(study)
    (to / "ws" / "results.db").write_bytes((finished / "ws" / "results.db").read_bytes())
    return to / "t.toml"


def test_a_damaged_store_is_named_with_the_way_out(finished: Path, tmp: Path) -> None:
    study = _copy(finished, tmp)
    db = tmp / "ws" / "results.db"
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 2])
    for verb in ("report", "status", "run"):
        r = dbsweep(verb, study, check=False)
        assert r.returncode == 1, (verb, r.stdout, r.stderr)
        assert f"the results store {db} is damaged" in r.stderr and f"mv {db} {db}.damaged" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr
    db.write_bytes(b"this is no database, only some text that landed here " * 200)
    r = dbsweep("report", study, check=False)
    assert r.returncode == 1 and "is damaged (file is not a database)" in r.stderr, r.stderr


@pytest.fixture
def read_only_place(tmp: Path) -> Iterator[Path]:
    """A directory nobody can write, root included (a read-only mount when we are root)."""
    place = tmp / "ro"
    place.mkdir()
    if os.geteuid() != 0:
        yield place
        return
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", str(place)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a filesystem here: {r.stderr.decode().strip()}")
    try:
        yield place
    finally:
        subprocess.run(["umount", "-l", str(place)], check=False)


def _make_read_only(place: Path) -> None:
    if os.geteuid() == 0:
        subprocess.run(["mount", "-o", "remount,ro", str(place)], check=True)
    else:
        for p in place.rglob("*"):
            p.chmod(0o555 if p.is_dir() else 0o444)
        place.chmod(0o555)


def test_an_archived_read_only_store_reports_and_run_says_why_not(finished: Path, read_only_place: Path) -> None:
    study = _copy(finished, read_only_place)
    _make_read_only(read_only_place)
    rep = dbsweep("report", study)
    assert "point-query" in rep.stdout and "rQPS" in rep.stdout
    assert "done 4, failed 0, pending 0" in dbsweep("status", study).stdout
    assert not list((read_only_place / "ws").glob("results.db-*")), "a reader wrote a journal or WAL file"
    r = dbsweep("run", study, check=False)
    assert r.returncode == 1 and "read-only" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_bad_places_are_plain_errors(finished: Path, tmp: Path) -> None:
    (tmp / "file").write_text("x")
    file_ws = dbsweep("run", finished / "t.toml", "--workspace", tmp / "file", check=False)
    assert file_ws.returncode == 1 and f"the workspace {tmp / 'file'} is a file, not a directory" in file_ws.stderr
    out_dir = dbsweep("report", finished / "t.toml", "-f", "markdown", "-o", tmp, check=False)
    assert out_dir.returncode == 1 and f"--out: {tmp} is a directory" in out_dir.stderr, out_dir.stderr
    for r in (file_ws, out_dir):
        assert "Traceback" not in r.stderr
