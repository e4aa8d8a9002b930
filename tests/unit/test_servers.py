"""The lifecycle the server engines share (`servers.ServerInstance`), without a server: a start that tries another
port only when the last one was taken, each engine's command line, a step held against its watermark, a stop, a
fresh home, and the hooks a server of the MySQL family overrides. A `sleep` stands in for a server's process."""

from __future__ import annotations

import dataclasses
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from dbsweep.engines import mariadb, postgres, servers
from dbsweep.engines.base import Watermark
from dbsweep.engines.registry import engine_named
from dbsweep.errors import ServerError

VERSION_LINE = "mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)"


def _postgres(tmp_path: Path) -> postgres.Server:
    engine = engine_named("postgres")
    server = engine.instance(engine.system_install("system"), tmp_path / "home", "test", "", None)
    assert isinstance(server, postgres.Server)
    return server


def _mariadb_install(tmp_path: Path) -> mariadb.Install:
    usr = tmp_path / "usr"
    (usr / "sbin").mkdir(parents=True)
    (usr / "sbin" / "mariadbd").write_text("#!/bin/sh\nexit 0\n")
    (usr / "lib" / "mysql" / "plugin").mkdir(parents=True)
    return mariadb.Install(usr / "bin", VERSION_LINE, "system")


def _mariadb(tmp_path: Path) -> mariadb.Server:
    return mariadb.Server(_mariadb_install(tmp_path), tmp_path / "home", "cz", "innodb_buffer_pool_size = 1G\n")


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A process that stands in for a server's (its own session: a kill by process group reaches it alone). SIGINT
    is made to end it: a test run started in the background of a shell inherits SIGINT ignored, which a real
    server's own handler overrides and `sleep` would keep (Postgres's clean shutdown is a SIGINT)."""
    proc = subprocess.Popen(
        ["sleep", "600"], start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)
    )
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def test_a_start_tries_another_port_only_when_the_last_was_taken() -> None:
    said: list[str] = []
    taken = iter([True, False])

    def ready() -> None:
        said.append("ready")
        raise ServerError("did not answer")

    with pytest.raises(ServerError, match="did not answer"):
        servers.start_on_a_free_port(
            lambda: said.append("launch"), ready, lambda: said.append("abandon"), lambda: next(taken)
        )
    assert said == ["launch", "ready", "abandon"] * 2  # the second failure was not a lost bind: no third start
    said.clear()
    with pytest.raises(ServerError):
        servers.start_on_a_free_port(lambda: said.append("launch"), ready, lambda: said.append("abandon"), lambda: True)
    assert said == ["launch", "ready", "abandon"] * 3  # at most `attempts` starts
    said.clear()
    servers.start_on_a_free_port(lambda: said.append("launch"), lambda: None, lambda: said.append("abandon"), bool)
    assert said == ["launch"]


def test_each_engine_gives_its_servers_command_line(tmp_path: Path) -> None:
    pg = _postgres(tmp_path / "pg")
    pg.port, pg.socket_dir = 5433, tmp_path / "sock"
    assert pg._server_argv() == [
        pg.install.bin("postgres"), "-D", pg.home / "pgdata", "-c", "port=5433", "-c", "listen_addresses=127.0.0.1",
        "-c", f"unix_socket_directories={tmp_path / 'sock'}", "-c", "unix_socket_permissions=0700",
    ]  # fmt: skip
    maria = _mariadb(tmp_path / "maria")
    assert maria._server_argv() == [
        tmp_path / "maria" / "usr" / "sbin" / "mariadbd",
        f"--defaults-file={tmp_path / 'maria' / 'home' / 'my.cnf'}",
    ]
    assert isinstance(pg, servers.ServerInstance) and isinstance(maria, servers.ServerInstance)
    assert (pg.shutdown_signal, maria.shutdown_signal) == (signal.SIGINT, signal.SIGTERM)


def test_a_step_is_held_against_the_process_that_began_it(tmp_path: Path, sleeper: subprocess.Popen[bytes]) -> None:
    server = _postgres(tmp_path)
    server.home.mkdir()
    server.log.write_text("2025-01-01 LOG:  database system is ready to accept connections\n")
    server.proc = sleeper
    mark = server.watermark()
    assert (mark.pid, mark.log_offset) == (sleeper.pid, server.log.stat().st_size) and mark.started > 0
    assert server.pid == sleeper.pid and server.disturbance_since(mark) is None
    assert server.disturbance_since(dataclasses.replace(mark, started=mark.started - 10)) == (
        f"the server's postmaster (PID {sleeper.pid}) is not the process that started the step"
    )
    # Postgres's own check comes after the shared one: a backend's crash the postmaster survived.
    with server.log.open("a") as f:
        f.write("2025-01-01 LOG:  server process (PID 7) was terminated by signal 9: Killed\n")
    assert server.disturbance_since(mark) == (
        "the server crash-restarted its backends during the step (every connection was reset): "
        "server process (PID 7) was terminated by signal 9: Killed"
    )
    sleeper.kill()
    sleeper.wait()
    said = server.disturbance_since(mark)
    assert said is not None and said.startswith(
        f"the server died during the step: its postmaster (PID {sleeper.pid}) killed by SIGKILL; from {server.log}:\n"
    )
    assert "was terminated by signal 9" in said and server.pid is None


def test_a_mariadb_step_is_held_against_its_one_process(tmp_path: Path, sleeper: subprocess.Popen[bytes]) -> None:
    server = _mariadb(tmp_path)
    server.home.mkdir()
    server.log.write_text("")
    server.proc = sleeper
    mark = server.watermark()
    assert server.disturbance_since(mark) is None
    assert server.disturbance_since(dataclasses.replace(mark, started=-5.0)) == (
        f"the server (PID {sleeper.pid}) is not the process that started the step"
    )
    server.proc = None
    assert server.disturbance_since(mark) == (
        f"the server died during the step: mariadbd (PID {sleeper.pid}) gone; from {server.log}:\n"
        "    (the log is empty)"
    )


@pytest.mark.parametrize("engine", ["postgres", "mariadb"])
def test_a_stop_sends_the_clean_shutdown_and_removes_its_own_socket_directory(
    tmp_path: Path, sleeper: subprocess.Popen[bytes], engine: str
) -> None:
    server: servers.ServerInstance = _postgres(tmp_path) if engine == "postgres" else _mariadb(tmp_path)
    sock = tmp_path / "dbsweep-sock"
    sock.mkdir()
    server.proc, server.socket_dir, server._own_socket_dir = sleeper, sock, True
    server.stop()
    assert sleeper.returncode == -server.shutdown_signal
    assert server.proc is None and server.socket_dir is None and not sock.exists()
    server.stop()  # nothing left to stop


def test_a_fresh_home_holds_only_the_generated_password(tmp_path: Path) -> None:
    server = _postgres(tmp_path)
    server.home.mkdir()
    (server.home / "old").write_text("from before\n")
    password = server._fresh_home()
    assert [p.name for p in server.home.iterdir()] == ["password"] and server.password == password
    assert server.home.stat().st_mode & 0o777 == 0o700 and server.password_file.stat().st_mode & 0o777 == 0o600


def test_the_log_since_this_start_says_whether_mariadb_lost_its_port_or_gave_up(tmp_path: Path) -> None:
    server = _mariadb(tmp_path)
    server.home.mkdir()
    server.log.write_text("0 [ERROR] Can't start server: Bind on TCP/IP port. Got error: 98\n0 [ERROR] Aborting\n")
    server._log_start = servers.log_size(server.log)
    assert not server._bind_failed() and not server._gave_up()  # an earlier start's
    with server.log.open("a") as f:
        f.write("0 [ERROR] Can't start server: Bind on TCP/IP port. Got error: 98\n0 [ERROR] Aborting\n")
    assert server._bind_failed() and server._gave_up()


class _MysqlLike(mariadb.Server):
    """What a server of the MySQL family changes: its program, its option file's section, its name."""

    died_process: ClassVar[str] = "mysqld"
    option_group: ClassVar[str] = "mysqld"

    def _server_binary(self) -> Path:
        return self._install.bin("mysqld")


def test_a_server_of_the_mysql_family_reuses_mariadbs_lifecycle(tmp_path: Path) -> None:
    install = _mariadb_install(tmp_path)
    server = _MysqlLike(install, tmp_path / "home", "cz", "innodb_buffer_pool_size = 1G\n")
    assert server._server_argv() == [install.bin("mysqld"), f"--defaults-file={tmp_path / 'home' / 'my.cnf'}"]
    sections = [ln for ln in server.defaults_text(port=1).splitlines() if ln.startswith("[")]
    assert sections == ["[mysqld]", "[mysqld]"]
    assert server.disturbance_since(Watermark(7, 1.0, 0)) == (
        f"the server died during the step: mysqld (PID 7) gone; from {server.log}:\n    (no log at {server.log})"
    )
