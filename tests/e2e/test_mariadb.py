"""MariaDB's own properties, against Debian's server (the contract tests hold what every engine shares): who may
connect and how, the option file the server alone reads, every shipped config on the installed binary, MyRocks
loaded for a config that uses it, the maintenance after writes, and the accounts made without install-db's
--extra-file (the path an older script takes), and instructions counted in the one process that serves every
client."""

from __future__ import annotations

import shutil
import stat
import time
from pathlib import Path

import psutil
import pymysql
import pytest

from dbsweep import configs, loadclient
from dbsweep.engines.mariadb import Server
from dbsweep.engines.mariadb import install as installs
from dbsweep.engines.registry import engine_named
from dbsweep.measure.instructions import (
    BACKGROUND_THREADS,
    FOREGROUND,
    MAIN_THREAD,
    RESTART,
    SESSION,
    InstructionCount,
)
from dbsweep.measure.session import SessionStep
from dbsweep.suites.sysbench import Sysbench, SysbenchSettings

from ..conftest import count_system_reads, count_system_step, running_instance

pytestmark = [
    pytest.mark.server,
    pytest.mark.skipif(not installs.system_versions(), reason="needs Debian's MariaDB (scripts/setup.sh)"),
]

SMALL = "innodb_buffer_pool_size = 128M\n"


def _server(instance: object) -> Server:
    assert isinstance(instance, Server)
    return instance


def test_who_may_connect_and_how(tmp: Path) -> None:
    with running_instance("mariadb", tmp / "home", SMALL) as instance:
        server = _server(instance)
        assert server.pid is not None
        cmdline = psutil.Process(server.pid).cmdline()
        assert cmdline[1] == f"--defaults-file={server.defaults_file}"  # so /etc/mysql is never read
        users = server._query("SELECT User, Host, JSON_VALUE(Priv, '$.plugin') FROM mysql.global_priv ORDER BY 1, 2")
        assert [(u, h) for u, h, _ in users] == [
            ("dbsweep", "127.0.0.1"),
            ("dbsweep", "localhost"),
            ("mariadb.sys", "localhost"),
            ("root", "localhost"),  # through the socket, for the system's root only
        ]
        assert server._query("SELECT COUNT(*) FROM mysql.proxies_priv WHERE Host <> 'localhost'") == [(0,)]
        assert ("test",) not in server._query("SHOW DATABASES")
        assert server._query("SELECT @@bind_address, @@skip_name_resolve") == [("127.0.0.1", 1)]
        assert server.socket_dir is not None and stat.S_IMODE(server.socket_dir.stat().st_mode) == 0o700
        assert stat.S_IMODE(server.password_file.stat().st_mode) == 0o600
        assert not (server.home / "accounts.sql").exists()  # the password is in one file only
        with pytest.raises(pymysql.err.OperationalError, match="Access denied"):
            pymysql.connect(host="127.0.0.1", port=server.port, user="dbsweep", password="wrong", connect_timeout=5)
        with pytest.raises(pymysql.err.OperationalError, match="Access denied"):
            pymysql.connect(host="127.0.0.1", port=server.port, user="root", password="", connect_timeout=5)
        stats = server.statistics()
        # The two refused logins above are counted; a counter of time (Uptime) could still read 0.
        assert stats["global_status"]["Access_denied_errors"] >= 2 and "buffer_pool_reads" in stats["innodb_metrics"]


def test_every_shipped_config_fits_the_installed_server() -> None:
    engine = engine_named("mariadb")
    install = engine.system_install("system")
    for name in configs.available("mariadb"):
        _, skipped = engine.fit_config(configs.load("mariadb", name), install, set())
        assert skipped == [], (name, skipped)


def test_a_myrocks_config_loads_the_plugin_and_is_maintained(tmp: Path) -> None:
    engine = engine_named("mariadb")
    text, _ = engine.fit_config(configs.load("mariadb", "za4_c2r24"), engine.system_install("system"), set())
    with running_instance("mariadb", tmp / "home", text) as instance:
        server = _server(instance)
        assert server._query("SELECT @@default_storage_engine") == [("ROCKSDB",)]
        server._query("CREATE TABLE t (id INT PRIMARY KEY, k INT, pad VARCHAR(100), KEY k (k))")
        rows = ", ".join(f"({i}, {i % 97}, '{'p' * 60}')" for i in range(20_000))
        server._query(f"INSERT INTO t VALUES {rows}")
        before = server.data_bytes()
        parts = server.postwrite(["t"], 2, lambda _: None)
        assert {"analyze_s", "rocksdb_flush_s", "rocksdb_compact_s", "wait_s"} <= set(parts)
        assert "innodb_flush_s" not in parts  # the table is not InnoDB's
        cf = server.statistics()["rocksdb_cfstats"]["default"]
        assert cf["NUM_ENTRIES_ACTIVE_MEM_TABLE"] == 0  # flushed to files
        assert (server.data_bytes() or 0) > (before or 0)
        # The Insert Benchmark's l.x adds MyRocks's indexes one ALTER TABLE each (InnoDB's in one: contract).
        conn = loadclient.connection_to(server)
        loadclient.run(["ibench", "l.i0", "--clients", "1", "--rows", "2000"], conn, tmp / "li0.log")
        s = loadclient.run(["ibench", "l.x", "--clients", "1"], conn, tmp / "lx.log").result.flat()
        assert s["error_count"] == 0
        assert s["sql"]["create_indexes"] == [
            "ALTER TABLE pi1 ADD INDEX pi1_marketsegment (productid, customerid, price)",
            "ALTER TABLE pi1 ADD INDEX pi1_registersegment (cashregisterid, customerid, price)",
            "ALTER TABLE pi1 ADD INDEX pi1_pdc (price, dateandtime, customerid)",
        ]
        made = server._query(
            "SELECT COUNT(DISTINCT index_name) FROM information_schema.statistics WHERE table_name = 'pi1'"
        )
        assert made == [(4,)]


def test_innodb_maintenance_gives_its_settings_back(tmp: Path) -> None:
    with running_instance("mariadb", tmp / "home", SMALL) as instance:
        server = _server(instance)
        server._query("CREATE TABLE t (id INT PRIMARY KEY, pad VARCHAR(200))")
        server._query("INSERT INTO t VALUES " + ", ".join(f"({i}, '{'x' * 150}')" for i in range(20_000)))
        held = "SELECT @@innodb_max_dirty_pages_pct, @@innodb_max_dirty_pages_pct_lwm"
        original = server._query(held)
        t0 = time.monotonic()
        parts = server.postwrite(["t", "missing"], 3, lambda _: None)
        assert time.monotonic() - t0 >= 3  # the rest of the budget is waited out
        assert parts["innodb_settled"] == 1.0 and parts["innodb_flush_s"] <= 3
        assert server._query(held) == original


def test_the_accounts_without_install_dbs_extra_file(tmp: Path) -> None:
    engine = engine_named("mariadb")
    instance = engine.instance(engine.system_install("system"), tmp / "home", "test", SMALL, engine.server_user())
    server = _server(instance)
    server.accounts_with_install_db = False
    server.init()
    try:
        server.start()
        assert server._query("SELECT COUNT(*) FROM mysql.global_priv WHERE User = 'dbsweep'") == [(2,)]
        assert server.server_version().startswith(server.install.short_version)
    finally:
        server.remove()


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="needs valgrind")
def test_instructions_of_a_threaded_server(tmp: Path) -> None:
    """One process serves the client with a thread: a write's count, on a server of its own, is taken per thread
    (callgrind), the connections' threads the foreground, under valgrind with InnoDB's I/O in threads
    (`Server.wrapped_settings`) and purge held by a read view. The reads share one server (a session): callgrind
    counts inside the connection handler only, and a marker statement has it dump what it counted before and after
    each run; the figure is the one a server per run gives its foreground."""
    suite = Sysbench(SysbenchSettings(rows=10_000))
    steps: list[tuple[str, int | None] | SessionStep] = [("point-query_range=100", 300), ("scan_range=100", 6)]
    reads = count_system_reads("mariadb", SMALL, tmp / "instr", suite, steps)
    point, scan = reads["point-query_range=100"], reads["scan_range=100"]
    assert isinstance(point, InstructionCount) and isinstance(scan, InstructionCount), reads
    for count in (point, scan):
        assert count.method == SESSION and count.tool == "callgrind"
        assert "--dump-before=Item_func_sleep::val_int*" in count.valgrind_command
        assert "--toggle-collect=do_handle_one_connection(*" in count.valgrind_command
        assert set(count.by_role) == {FOREGROUND} and count.per_event == count.foreground_per_event
        # After a warm-up run of the short amount, the runs repeat to parts in ten thousand.
        assert count.spread < 3e-4, (count.step, count.pairs)
        assert count.functions and all(Path(p.short.output_dir).is_dir() for p in count.pairs)
    assert 10_000 < point.per_query < 500_000
    assert scan.per_event > 10 * point.per_event  # every row of the table against ten
    restarted = {
        step: count_system_step("mariadb", SMALL, tmp / "instr", suite, step, 2, amount)
        for step, amount in (("point-query_range=100", 300), ("update-index_range=100", 200))
    }
    for step, count in restarted.items():
        assert count.method == RESTART and count.tool == "callgrind"
        assert "--separate-threads=yes" in count.valgrind_command, step
        assert FOREGROUND in count.by_role and set(count.by_role) <= {FOREGROUND, MAIN_THREAD, BACKGROUND_THREADS}
        # Deterministic work: the connection's thread repeats to well under a per cent between pairs.
        assert count.foreground_spread is not None and count.foreground_spread < 0.005, (step, count.pairs)
        assert "innodb_use_native_aio = OFF" in count.held and "innodb_fast_shutdown = 0" in count.held
        assert any("read view" in h for h in count.held)
    # The session saves the restarts, not the work: the same events count as the foreground of a server per run
    # (42,700 against 42,706 per event here), within the verdicts' floor.
    fresh = restarted["point-query_range=100"]
    assert fresh.foreground_per_event is not None and point.held == fresh.held
    assert abs(point.per_event / fresh.foreground_per_event - 1) < 0.002, (point.per_event, fresh.by_role)
    assert fresh.foreground_share is not None and fresh.foreground_share > 0.95  # a read leaves no background work
    # A write leaves purge work, done by background threads at the shutdown.
    assert restarted["update-index_range=100"].by_role.get(BACKGROUND_THREADS, 0) > 0
