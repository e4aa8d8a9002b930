"""Shared fixtures: a workspace the server user can reach, study files, the CLI, leak checks."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from dbsweep.engines import postgres

ROOT = Path(__file__).resolve().parents[1]
DBSWEEP = [sys.executable, "-m", "dbsweep"]
# Every test workspace lives under this directory, so leaks are easy to find.
TEST_ROOT = Path("/tmp") / f"dbsweep-tests-{os.getpid()}"

STUDY = """\
name = "{name}"
engine = "postgres"
base = "a"
repeats = {repeats}
workspace = "{workspace}"

[suite]
steps = {steps}
tables = {tables}
rows = {rows}
clients = {clients}
read_seconds = {seconds}
write_seconds = {seconds}
warmup_seconds = {warmup}
maintenance_seconds = 0

[[targets]]
name = "a"
source = "system"
config = "cx10a_c2r24"

[[targets]]
name = "b"
source = "system"
config = "{config_b}"
"""


def write_study(directory: Path, name: str = "t", **kw: object) -> Path:
    params: dict[str, object] = {
        "name": name,
        "repeats": 1,
        "workspace": str(directory / "ws"),
        "tables": 1,
        "rows": 20000,
        "clients": [1],
        "seconds": 2,
        "warmup": 1,
        "config_b": "cx10a_sb1g_c2r24",
        "steps": '["point-query"]',
    }
    params.update(kw)
    path = directory / f"{name}.toml"
    path.write_text(STUDY.format(**params))
    return path


@contextlib.contextmanager
def system_server(home: Path, config_text: str) -> Iterator[postgres.Server]:
    """Debian's Postgres, initialised in `home` with `config_text`, running for the block."""
    s = postgres.Server(
        install=postgres.system_install("system"),
        home=home,
        config_name="test",
        config_text=config_text,
        user=postgres.server_user(),
    )
    s.init()
    s.start()
    try:
        yield s
    finally:
        s.remove()


def processes_under(path: Path) -> list[psutil.Process]:
    """Live processes whose command line mentions `path` (servers, clients)."""
    found = []
    for p in psutil.process_iter(["cmdline", "pid", "status"]):
        if p.info["status"] == psutil.STATUS_ZOMBIE:  # dead, waiting to be reaped by init
            continue
        cmd = " ".join(p.info["cmdline"] or [])
        if str(path) in cmd and p.pid != os.getpid():
            found.append(p)
    return found


def wait_no_processes(path: Path, timeout: float = 60) -> list[psutil.Process]:
    deadline = time.monotonic() + timeout
    left = processes_under(path)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = processes_under(path)
    return left


@pytest.fixture(scope="session", autouse=True)
def _test_root() -> Iterator[Path]:
    TEST_ROOT.mkdir(mode=0o755, exist_ok=True)
    TEST_ROOT.chmod(0o755)  # the server user must reach data directories inside
    yield TEST_ROOT
    left = wait_no_processes(TEST_ROOT, timeout=30)
    shutil.rmtree(TEST_ROOT, ignore_errors=True)
    assert not left, f"processes left behind: {[p.info['cmdline'] for p in left]}"


@pytest.fixture
def tmp(_test_root: Path) -> Iterator[Path]:
    d = _test_root / uuid.uuid4().hex[:8]
    d.mkdir(mode=0o755)
    yield d
    left = wait_no_processes(d, timeout=30)
    assert not left, f"processes left behind: {[p.info['cmdline'] for p in left]}"


def dbsweep(*args: str | Path, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    r = subprocess.run(
        [*DBSWEEP, *map(str, args)], capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT, check=False
    )
    if check and r.returncode != 0:
        raise AssertionError(f"dbsweep {args} exited {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}")
    return r


def interruptible() -> None:
    """preexec_fn for a child the test will Ctrl-C: a shell that started the tests in the background
    made SIGINT ignored, and children inherit that; a user's Ctrl-C reaches a foreground dbsweep."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_run(study: Path, *args: str) -> subprocess.Popen[str]:
    """`dbsweep run STUDY` in the background, its stdout and stderr together."""
    return subprocess.Popen(
        [*DBSWEEP, "run", str(study), *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=interruptible,
    )


def wait_for(pred, timeout: float = 120) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.2)
    raise AssertionError("timed out waiting")


def done_cells(tmp: Path) -> list[tuple[object, ...]]:
    """Every stored cell of the study in `tmp` (workspace tmp/ws): id, target, step, clients, rep, status,
    finished_at, qps."""
    p = tmp / "ws" / "results.db"
    if not p.exists():
        return []
    with sqlite3.connect(p) as db:
        try:
            return db.execute(
                "SELECT c.id, t.name, c.step, c.clients, c.repetition, c.status, c.finished_at, r.qps "
                "FROM cells c JOIN targets t ON t.id = c.target_id "
                "LEFT JOIN step_results r ON r.cell_id = c.id ORDER BY c.id"
            ).fetchall()
        except sqlite3.OperationalError:
            return []


def alive(procs: list[psutil.Process]) -> list[psutil.Process]:
    """Those still running; a zombie is dead already, it only waits for init to reap it."""
    out = []
    for p in procs:
        try:
            if p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.NoSuchProcess:
            continue
    return out


def children_of(proc: subprocess.Popen[str]) -> list[psutil.Process]:
    try:
        return psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def names(procs: list[psutil.Process]) -> set[str]:
    """The names of those still there (short-lived helpers may exit between listing and asking)."""
    found = set()
    for p in procs:
        try:
            found.add(p.name())
        except psutil.NoSuchProcess:
            continue
    return found


def load_client_running(proc: subprocess.Popen[str]) -> bool:
    return "dbsweep-load" in names(alive(children_of(proc)))
