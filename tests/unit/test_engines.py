"""The engines behind their boundary, without a server: the registry, what an install says of itself, the log
lines that explain a failure, and the unit tests' own guarantee that no engine is used for real here."""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest

from dbsweep.engines import postgres, servers
from dbsweep.engines.base import Engine
from dbsweep.engines.registry import engine_named, names
from dbsweep.errors import ServerError


def test_the_registry() -> None:
    # Whatever engines there are: each name is its engine's, once, and an unknown name lists them all.
    assert names()[0] == "postgres" and len(set(names())) == len(names()) >= 4
    for name in names():
        e = engine_named(name)
        assert isinstance(e, Engine) and e.name == name and e is engine_named(name)
    with pytest.raises(KeyError, match=re.escape(f"unknown engine 'oracle'; have: {', '.join(names())}")):
        engine_named("oracle")


def test_unit_tests_see_the_stand_in_and_start_no_server(system_root: Path, tmp_path: Path) -> None:
    engine = engine_named("postgres")
    install = engine.system_install("system")
    assert install.bindir == system_root / "15" / "bin"
    assert install.short_version == "15.18" and install.provenance["source_identity"].startswith("postgresql-15 ")
    assert engine.system_versions() == ["15"]
    instance = engine.instance(install, tmp_path / "home", "test", "", None)
    with pytest.raises(AssertionError, match="tried to initialise or start a server"):
        instance.init()
    with pytest.raises(AssertionError, match="tried to initialise or start a server"):
        instance.start()
    instance.stop()  # stopping what never ran is allowed, and does nothing


def test_an_install_reads_its_short_version() -> None:
    i = postgres.Install(Path("/x/bin"), "postgres (PostgreSQL) 17.2 (Debian 17.2-1)", "system")
    assert i.short_version == "17.2" and i.bin("postgres") == Path("/x/bin/postgres")
    assert postgres.Install(Path("/x"), "18beta1", "dir:/src").short_version == "18beta1"


def test_no_free_port_is_a_server_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: socket.socket, address: object) -> None:
        raise OSError(98, "Address already in use")

    monkeypatch.setattr(socket.socket, "bind", refuse)
    with pytest.raises(ServerError, match=r"no free TCP port on 127.0.0.1 for the server \(Address already in use\)"):
        servers.free_port()


def test_the_log_lines_that_explain_a_failure(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(
        "2025-01-01 LOG:  starting PostgreSQL 15.18\n"
        "2025-01-01 LOG:  listening on IPv4 address\n"
        '2025-01-01 LOG:  invalid value for parameter "shared_buffers": "lots"\n'
        "2025-01-01 FATAL:  configuration file contains errors\n"
    )
    got = postgres.relevant_log_lines(log)
    assert got.splitlines() == [
        '    2025-01-01 LOG:  invalid value for parameter "shared_buffers": "lots"',
        "    2025-01-01 FATAL:  configuration file contains errors",
    ]
    # From an offset: only what came after it; without a telling line, the tail.
    start = len(log.read_bytes())
    with log.open("a") as f:
        f.write("2025-01-01 LOG:  database system is ready\n")
    assert postgres.relevant_log_lines(log, start=start) == "    2025-01-01 LOG:  database system is ready"
    assert "no log at" in postgres.relevant_log_lines(tmp_path / "missing.log")


def test_stop_stale_without_a_pid_file_does_nothing(tmp_path: Path) -> None:
    datadir = tmp_path / "pgdata"
    datadir.mkdir()
    engine_named("postgres").stop_stale(datadir)
    assert list(datadir.iterdir()) == []
