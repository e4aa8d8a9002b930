"""The server's account of a step: a watermark taken when it began, and `disturbance_since` naming, with its
evidence, a backend that was killed (the server crash-restarted every connection), a server that died, and a
server that is another process than the one that began; nothing when the server was left alone. A server
whose one process serves every connection (threads: MariaDB) has no backend to kill alone, only itself. An embedded
engine's equivalents: a killed load client leaves a database the next connection recovers (no disturbance),
a database file that went is one. For every engine: a load client killed mid-step fails its cell, and the
study resumes."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from dbsweep import loadclient
from dbsweep.engines.base import Engine, Instance
from dbsweep.errors import StepError
from dbsweep.loadclient import connection_to

from ..conftest import (
    alive,
    children_of,
    cmdline,
    dbsweep,
    done_cells,
    running_instance,
    start_run,
    wait_for,
    wait_no_processes,
    write_study,
)
from .engines import Support

pytestmark = pytest.mark.server


def _answers(support: Support, instance: Instance) -> bool:
    try:
        return support.query(instance, "SELECT 1") == [(1,)]
    except Exception:
        return False


def test_a_killed_backend_and_a_killed_server_are_named(
    engine_name: str, engine: Engine, support: Support, tmp: Path
) -> None:
    if engine.kind != "server":
        pytest.skip(f"{engine_name} is embedded: no backend or server process to kill (see the killed client tests)")
    with running_instance(engine_name, tmp / "home", support.small_config) as server:
        mark = server.watermark()
        assert server.pid == mark.pid and mark.log_offset > 0
        # Work that does not disturb the server is not a disturbance.
        assert support.query(server, "SELECT 1") == [(1,)]
        assert server.disturbance_since(mark) is None

        if support.backend_processes:
            with support.session(server) as backend:
                assert backend != mark.pid
                os.kill(backend, signal.SIGKILL)
                wait_for(lambda: server.disturbance_since(mark) is not None, timeout=60)
            why = server.disturbance_since(mark)
            assert why is not None
            for words in support.crash_restart_words:
                assert words in why, why
            assert support.killed_backend in why
            # The same server came back from its crash restart: a new watermark holds nothing against it.
            wait_for(lambda: _answers(support, server), timeout=120)
            assert server.pid == mark.pid
            after = server.watermark()
            assert after.log_offset > mark.log_offset
            assert server.disturbance_since(after) is None
        else:
            # One process serves every connection (threads): no backend can be killed alone, and a session that
            # ends is no disturbance.
            with support.session(server) as pid:
                assert pid == mark.pid
            assert server.disturbance_since(mark) is None
            after = server.watermark()

        # The server itself killed: it died, and the message says which process it was.
        os.kill(after.pid, signal.SIGKILL)
        wait_for(lambda: server.pid is None, timeout=60)
        died = server.disturbance_since(after)
        assert died is not None and f"PID {after.pid}" in died
        for words in support.died_words:
            assert words in died, died


def test_a_restarted_server_is_not_the_one_that_began(
    engine_name: str, engine: Engine, support: Support, tmp: Path
) -> None:
    if engine.kind != "server":
        pytest.skip(f"{engine_name} is embedded: there is no server process to stop or start again")
    with running_instance(engine_name, tmp / "home", support.small_config) as server:
        mark = server.watermark()
        server.stop()
        stopped = server.disturbance_since(mark)  # a server stopped under a step disturbed it too
        assert stopped is not None and f"PID {mark.pid}" in stopped
        server.start()
        assert server.pid != mark.pid
        why = server.disturbance_since(mark)
        assert why is not None and f"PID {mark.pid}" in why


def test_a_killed_client_leaves_an_embedded_database_whole(
    engine_name: str, engine: Engine, support: Support, tmp: Path
) -> None:
    """An embedded engine's own account of a crash: the load client (the process running the library) killed
    in the middle of its writing transactions leaves its WAL behind, which the next connection recovers from;
    the database is whole and the same file, so nothing disturbed it. Only a database file that went is."""
    if engine.kind != "embedded":
        pytest.skip(f"{engine_name} is a server: a killed backend and a killed server are the tests above")
    with running_instance(engine_name, tmp / "home", support.small_config) as db:
        assert "journal_mode = WAL" in support.small_config
        database = support.database_file(db)
        assert database is not None
        access = connection_to(db)
        loadclient.run(["sysbench", "prepare", "--rows", "5000"], access, tmp / "prepare.log")
        mark = db.watermark()
        assert db.disturbance_since(mark) is None

        pid: list[int] = []
        write = ["sysbench", "write-only", "--rows", "5000", "--clients", "2", "--seconds", "60", "--warmup", "0"]
        with pytest.raises(StepError, match="was killed by SIGKILL before the step ended"):
            # A second into the writes, the client is killed with its connections and transactions open.
            loadclient.run(
                write,
                access,
                tmp / "write.log",
                on_start=pid.append,
                on_second=lambda _: os.kill(pid[0], signal.SIGKILL),
            )
        wal = database.with_name(database.name + "-wal")
        assert wal.is_file() and wal.stat().st_size > 0  # left by the connections that did not close
        assert db.disturbance_since(mark) is None  # the same database file: recovered on the next open
        assert support.query(db, "PRAGMA integrity_check") == [("ok",)]
        # Every committed transaction deletes one row and inserts it again; the one cut short is rolled back.
        assert support.query(db, "SELECT count(*), min(id), max(id) FROM sbtest1") == [(5000, 1, 5000)]
        r = loadclient.run(
            ["sysbench", "point-query", "--rows", "5000", "--seconds", "1", "--warmup", "0"], access, tmp / "r.log"
        ).result
        assert r.events > 0 and r.error_count == 0 and r.detail["rows_returned"] == r.events

        # Another file put in its place (a copy, then renamed over it) is not the database the step began on.
        copy = database.with_name("copy.db")
        shutil.copyfile(database, copy)
        copy.replace(database)
        why = db.disturbance_since(mark)
        assert why is not None and str(database) in why and "was replaced during the step" in why, why
        database.unlink()  # as if something removed it during a step
        why = db.disturbance_since(mark)
        assert why is not None and str(database) in why and "disappeared" in why, why


def _load_client_of(proc: subprocess.Popen[str], step: str) -> psutil.Process | None:
    """The load client a run started for `step`, while it runs."""
    for p in alive(children_of(proc)):
        cmd = cmdline(p)
        if any(Path(a).name == "dbsweep-load" for a in cmd) and step in cmd:
            return p
    return None


def test_a_killed_load_client_fails_its_cell_and_the_study_resumes(
    support: Support, engine_name: str, tmp: Path
) -> None:
    """The load client killed in the middle of a step (for an embedded engine, the process the engine ran in):
    that cell fails, naming the kill, the other cells go on, and --rerun-failed runs it again."""
    a, b = support.configs
    study = write_study(tmp, engine=engine_name, config_a=a, config_b=b, seconds=6, warmup=1)
    proc = start_run(study)
    try:
        wait_for(lambda: _load_client_of(proc, "point-query") is not None or proc.poll() is not None)
        client = _load_client_of(proc, "point-query")
        assert client is not None, "the run ended before its first point-query"
        time.sleep(1.5)
        client.kill()
        out, _ = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1, out
    assert "killed by SIGKILL" in out, out
    before = done_cells(tmp)
    statuses = sorted((str(step).split("_")[0], status) for _, _, step, _, _, status, _, _ in before)
    assert statuses == [("load", "done"), ("load", "done"), ("point-query", "done"), ("point-query", "failed")], before
    assert not wait_no_processes(tmp, timeout=60)

    r = dbsweep("run", study, "--rerun-failed")
    assert "0 failed" in r.stdout, r.stdout
    after = done_cells(tmp)
    kept = [c for c in before if c[5] == "done"]
    assert [c for c in after if c[0] in {k[0] for k in kept}] == kept, "finished cells were changed"
    keys = [(n, s, c, rep) for _, n, s, c, rep, st, _, _ in after if st == "done"]
    assert len(keys) == len(set(keys)) == 4, after
