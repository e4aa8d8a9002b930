"""Cleanup touches only what is provably ours: a server left on a data directory (dbsweep died, the server
outlived it) is stopped, also one that runs under a wrapper; a PID file that names some other process, even
one with the server's name, this data directory and the recorded start time, is set aside and that process
is never signalled."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from dbsweep.engines.base import Engine

from ..conftest import foreign_process, running_instance, wait_for, wait_no_processes
from .engines import Support

pytestmark = pytest.mark.server


@pytest.fixture(autouse=True)
def _a_server(engine_name: str, engine: Engine) -> None:
    if engine.kind != "server":
        pytest.skip(
            f"{engine_name} is embedded: no server runs on its data, only the load client, which dies with dbsweep; "
            "no PID file is written, so stop_stale has nothing to judge"
        )


@pytest.fixture
def foreign(support: Support, tmp: Path) -> Iterator[subprocess.Popen[str]]:
    """A process named like the engine's server that is no server of ours; it writes down every signal it gets
    (to tmp/signals)."""
    proc = foreign_process(tmp, support.process_name)
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def test_a_stale_pid_file_naming_a_foreign_process_is_set_aside_not_signalled(
    engine: Engine, support: Support, foreign: subprocess.Popen[str], tmp: Path
) -> None:
    assert psutil.Process(foreign.pid).name() == support.process_name
    datadir = tmp / "home" / "data"
    datadir.mkdir(parents=True)
    started = int(psutil.Process(foreign.pid).create_time())
    # Its PID, this data directory and even its start time: only where it runs tells it apart.
    support.write_pidfile(datadir, foreign.pid, started)
    engine.stop_stale(datadir)
    time.sleep(0.5)
    assert foreign.poll() is None
    assert not (tmp / "signals").exists(), (tmp / "signals").read_text()
    assert not support.pidfile(datadir).exists()
    assert support.set_aside(datadir)


def test_a_pid_file_of_a_process_that_is_gone_is_set_aside(engine: Engine, support: Support, tmp: Path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    datadir = tmp / "home" / "data"
    datadir.mkdir(parents=True)
    support.write_pidfile(datadir, gone.pid, int(time.time()))
    engine.stop_stale(datadir)
    assert not support.pidfile(datadir).exists() and support.set_aside(datadir)
    engine.stop_stale(datadir)  # nothing left to do: no error


def test_a_server_left_behind_is_provably_ours_and_stopped(
    engine_name: str, engine: Engine, support: Support, tmp: Path
) -> None:
    with running_instance(engine_name, tmp / "home", support.small_config) as server:
        pid = server.pid
        assert pid is not None
        # As if dbsweep had died without stopping it: the next start finds it by its PID file.
        engine.stop_stale(server.datadir)
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        assert not support.set_aside(server.datadir)  # ours: stopped, not set aside


def test_a_wrapped_server_left_behind_is_recognised_and_stopped(engine: Engine, support: Support, tmp: Path) -> None:
    """A data directory whose valgrind-wrapped server outlived its dbsweep is stopped by the next start."""
    if shutil.which("valgrind") is None:
        pytest.skip("needs valgrind")
    server = engine.instance(
        support.install(),
        tmp / "srv",
        "test",
        support.small_config,
        engine.server_user(),
        wrapper=["valgrind", "--tool=none", "--trace-children=yes"],
    )
    server.init()
    server.start()
    try:
        pid = server.pid
        assert pid is not None
        wrapped = psutil.Process(pid)
        assert support.process_name not in wrapped.name()  # valgrind names the process after its tool
        assert support.query(server, "SELECT 1") == [(1,)]
        engine.stop_stale(server.datadir)
        wait_for(lambda: server.pid is None, timeout=60)
    finally:
        server.remove()
    assert wait_no_processes(tmp, timeout=30) == []
