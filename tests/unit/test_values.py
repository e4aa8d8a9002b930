"""What `validate` makes of an engine's words and of this machine's bounds, without an engine: the lines each
engine's check reads (mariadbd's log and `--help` table, Postgres's log, db_bench's gflags errors) put under the
config line they name, the machine's memory and task limits read from /proc and the cgroup, and the bounds of
client counts, caches and threads with the estimate and the limit. The engines themselves answer in
tests/e2e/test_validate_values.py."""

from __future__ import annotations

import resource
from collections.abc import Callable
from pathlib import Path

import pytest

from dbsweep import machine, preflight
from dbsweep.configdiff import ConfigDiff, Setting
from dbsweep.engines import base
from dbsweep.engines.mariadb import config as mariadb_config
from dbsweep.engines.mariadb import values as mariadb_values
from dbsweep.engines.postgres import config as postgres_config
from dbsweep.engines.postgres import values as postgres_values
from dbsweep.engines.registry import engine_named
from dbsweep.engines.rocksdb import config as rocksdb_config
from dbsweep.engines.rocksdb import values as rocksdb_values
from dbsweep.study import load_study
from dbsweep.suites.dbbench import Dbbench, DbbenchSettings
from dbsweep.suites.sysbench import Sysbench, SysbenchSettings

from ..conftest import write_study

GIB = 1 << 30


def _diff(
    parse: Callable[[list[tuple[str, str]]], tuple[Setting, ...]], text: str, name: str, suffix: str
) -> ConfigDiff:
    """A config diff as configs.load makes it, each line's origin its file and line."""
    lines = [(ln, f"{name}{suffix}:{n}") for n, ln in enumerate(text.splitlines(), 1)]
    return ConfigDiff(name, text, parse(lines))


@pytest.fixture
def small_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine of 16 GiB that can start 10,000 more threads, with 2 CPUs."""
    monkeypatch.setattr(machine, "memory", lambda *a: machine.Limit(16 * GIB, "MemTotal"))
    monkeypatch.setattr(
        machine, "tasks", lambda *a: machine.Limit(10_000, "kernel.pid_max 10,100 less the 100 running")
    )
    monkeypatch.setattr(machine, "cpus", lambda: 2)


# ---- the machine ---------------------------------------------------------------------------------------------


def _proc(tmp: Path, cgroup: str = "0::/box\n") -> Path:
    proc = tmp / "proc"
    (proc / "sys" / "kernel").mkdir(parents=True)
    (proc / "self").mkdir()
    (proc / "meminfo").write_text("MemTotal:       24684096 kB\nMemFree:        1000 kB\n")
    (proc / "sys" / "kernel" / "pid_max").write_text("32768\n")
    (proc / "sys" / "kernel" / "threads-max").write_text("192731\n")
    (proc / "loadavg").write_text("0.50 0.40 0.30 2/120 4242\n")
    (proc / "self" / "cgroup").write_text(cgroup)
    return proc


def test_memory_is_memtotal_or_the_cgroups_lower_limit(tmp_path: Path) -> None:
    proc, cgroup = _proc(tmp_path), tmp_path / "cgroup"
    assert machine.memory(proc, cgroup) == machine.Limit(24684096 * 1024, "MemTotal")
    (cgroup / "box").mkdir(parents=True)
    (cgroup / "box" / "memory.max").write_text("max\n")
    assert machine.memory(proc, cgroup).where == "MemTotal"
    (cgroup / "box" / "memory.max").write_text(f"{8 * GIB}\n")
    assert machine.memory(proc, cgroup) == machine.Limit(8 * GIB, "its cgroup's memory limit")
    # cgroup v1: the memory controller's own hierarchy, "no limit" a number near 2^63.
    proc1, cgroup1 = _proc(tmp_path / "v1", "4:memory:/box\n0::/\n"), tmp_path / "v1" / "cgroup"
    (cgroup1 / "memory" / "box").mkdir(parents=True)
    (cgroup1 / "memory" / "box" / "memory.limit_in_bytes").write_text("9223372036854771712\n")
    assert machine.memory(proc1, cgroup1).where == "MemTotal"
    (cgroup1 / "memory" / "box" / "memory.limit_in_bytes").write_text(f"{2 * GIB}\n")
    assert machine.memory(proc1, cgroup1).value == 2 * GIB


def test_tasks_are_the_lowest_kernel_or_cgroup_limit_less_those_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(resource, "getrlimit", lambda _: (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    proc, cgroup = _proc(tmp_path), tmp_path / "cgroup"
    assert machine.tasks(proc, cgroup) == machine.Limit(32648, "kernel.pid_max 32,768 less the 120 running")
    (cgroup / "box").mkdir(parents=True)
    (cgroup / "box" / "pids.max").write_text("500\n")
    assert machine.tasks(proc, cgroup) == machine.Limit(380, "the cgroup's pids.max 500 less the 120 running")


def test_sizes_are_shown_in_the_engines_binary_units() -> None:
    assert machine.shown_bytes(1000 * GIB) == "1000 GiB"
    assert machine.shown_bytes(23.5 * GIB) == "23.5 GiB"
    assert machine.shown_bytes(128 << 20) == "128 MiB"
    assert machine.shown_bytes(10_000_000 << 20) == "9.5 TiB"


# ---- client counts, caches and threads against the machine ------------------------------------------------------


@pytest.mark.usefixtures("small_machine")
def test_clients_beyond_what_the_machine_can_start_name_the_field_the_need_and_the_limit() -> None:
    postgres = engine_named("postgres")
    problems = machine.client_problems(postgres, Sysbench(SysbenchSettings(clients=[1, 6000])))
    # Each connection: a thread of the load client and a backend process; one more connection for dbsweep.
    assert problems == [
        (
            "suite.clients[1]",
            "6,000 clients need about 12,000 threads and processes (6,000 connections at once, a thread of the load "
            "client and a backend process each), more than this machine can start now (10,000: kernel.pid_max "
            "10,100 less the 100 running); use at most 5,000 clients",
        )
    ]
    assert machine.client_problems(postgres, Sysbench(SysbenchSettings(clients=[1, 4000]))) == []
    rocksdb = engine_named("rocksdb")
    (field, message), *_ = machine.client_problems(rocksdb, Dbbench(DbbenchSettings(clients=[100_000])))
    assert field == "suite.clients[0]"
    assert message.startswith("100,000 clients need about 100,000 threads and processes (a thread each), more than")
    assert message.endswith("use at most 1,024 clients")  # the engine's cap is lower


@pytest.mark.usefixtures("small_machine")
def test_an_engine_that_runs_its_clients_in_one_process_caps_them_per_cpu() -> None:
    sqlite = engine_named("sqlite")
    assert machine.client_problems(sqlite, Sysbench(SysbenchSettings(clients=[1024]))) == []
    ((field, message),) = machine.client_problems(sqlite, Sysbench(SysbenchSettings(clients=[1, 2, 1025])))
    assert field == "suite.clients[2]"
    assert message.startswith("1,025 clients are more than SQLite runs well on this machine: its clients are threads")
    assert "past 512 per CPU" in message and message.endswith("this machine has 2 CPUs, so use at most 1,024 clients")
    ((_, message),) = machine.client_problems(engine_named("rocksdb"), Dbbench(DbbenchSettings(clients=[2000])))
    assert "its clients are db_bench's threads" in message and message.endswith("use at most 1,024 threads")


@pytest.mark.usefixtures("small_machine")
def test_a_dbbench_cache_beyond_the_memory_and_background_jobs_beyond_the_threads() -> None:
    problems = Dbbench(DbbenchSettings(cache_mb=10_000_000, background_jobs=50_000)).size_problems()
    assert problems == [
        (
            "suite.cache_mb",
            "a block cache of 10,000,000 MB with the memtables (128 MB) would take about 9.5 TiB, more than this "
            "machine's memory (16.0 GiB, MemTotal); cache_mb may be at most 16,256 here",
        ),
        (
            "suite.background_jobs",
            "50,000 background jobs are threads RocksDB starts, more than this machine can start now (10,000: "
            "kernel.pid_max 10,100 less the 100 running)",
        ),
    ]
    assert Dbbench(DbbenchSettings(cache_mb=16_000, background_jobs=2)).size_problems() == []
    assert Dbbench(DbbenchSettings()).size_problems() == []  # 60 % of the memory by default


def test_a_sysbench_table_without_its_primary_key_where_the_engine_cannot_make_one() -> None:
    suite = Sysbench(SysbenchSettings(primary_key=False))
    ((field, message),) = suite.engine_problems(engine_named("sqlite"))
    assert field == "suite.primary_key"
    assert message.startswith("false gives sbtest's id a secondary index instead of the primary key")
    assert "which SQLite cannot make: SQLite generates an id on insert only for an INTEGER PRIMARY KEY" in message
    assert suite.engine_problems(engine_named("postgres")) == []
    assert Sysbench(SysbenchSettings()).engine_problems(engine_named("sqlite")) == []


# ---- the engines' words, under the line they name ---------------------------------------------------------------


def test_an_engines_message_names_a_setting_however_it_spells_it() -> None:
    settings = [
        Setting("innodb_buffer_pool_size", "1G", "a.cnf:1"),
        Setting("innodb_buffer_pool_size", "lots", "a.cnf:3"),
        Setting("innodb_buffer_pool_chunk_size", "1M", "a.cnf:2"),
        Setting("cache_type", "arc", "a.cnf:4"),
    ]
    named = base.setting_named("Error while setting value 'lots' to 'innodb-buffer-pool-size'", settings)
    assert named is not None and named.origin == "a.cnf:3"  # the last line, the one that counts
    assert base.setting_named("Cache type not supported.", settings) == settings[3]
    assert base.setting_named("Cannot parse compression type 'x'", settings) is None


MARIADB_STDERR = """\
2026-11-26 22:04:03 0 [Warning] Could not increase number of max_open_files to more than 20000 (request: 32184)
2026-11-26 22:04:03 0 [ERROR] Unknown suffix 'l' used for variable 'innodb-buffer-pool-size' (value 'lots'). \
Legal suffix characters are: K, M, G, T, P, E
2026-11-26 22:04:03 0 [ERROR] /usr/sbin/mariadbd: Error while setting value 'lots' to 'innodb-buffer-pool-size'
2026-11-26 22:04:03 0 [ERROR] /usr/sbin/mariadbd: Error while setting value 'O_BOGUS' to 'innodb-flush-method'
2026-11-26 22:04:03 0 [ERROR] Parsing options for plugin 'InnoDB' failed. Disabling plugin
2026-11-26 22:04:03 0 [Warning] option 'innodb-log-file-size': unsigned value 1 adjusted to 4194304
2026-11-26 22:04:03 0 [Warning] /usr/sbin/mariadbd: ignoring option '--innodb-doublewrite' due to invalid value 'maybe'
2026-11-26 22:04:08 0 [ERROR] Buffered error: Unknown suffix 'l' used for variable 'max_connections' (value 'x')
"""


def test_mariadbds_refusals_are_said_in_its_words_under_each_setting() -> None:
    text = (
        "innodb_buffer_pool_size = lots\ninnodb_flush_method = O_BOGUS\ninnodb_log_file_size = 1\n"
        "innodb-doublewrite = maybe\nmax_connections = x\n"
    )
    diff = _diff(mariadb_config.parse, text, "bad", ".cnf")
    got = mariadb_values.refusals(diff, MARIADB_STDERR, "MariaDB 10.11.19")
    assert got == [
        "config bad sets innodb_buffer_pool_size = lots (bad.cnf:1), which MariaDB 10.11.19 refuses: Unknown suffix "
        "'l' used for variable 'innodb-buffer-pool-size' (value 'lots'). Legal suffix characters are: K, M, G, T, P, "
        "E; /usr/sbin/mariadbd: Error while setting value 'lots' to 'innodb-buffer-pool-size'.",
        "config bad sets innodb_flush_method = O_BOGUS (bad.cnf:2), which MariaDB 10.11.19 refuses: "
        "/usr/sbin/mariadbd: Error while setting value 'O_BOGUS' to 'innodb-flush-method'.",
        "config bad sets innodb_doublewrite = maybe (bad.cnf:4), which MariaDB 10.11.19 refuses: /usr/sbin/mariadbd: "
        "ignoring option '--innodb-doublewrite' due to invalid value 'maybe'.",
        "config bad sets max_connections = x (bad.cnf:5), which MariaDB 10.11.19 refuses: Unknown suffix 'l' used for "
        "variable 'max_connections' (value 'x').",
    ]
    # An adjusted value is taken (the server starts with it), and the plugin's fate follows the lines above.
    assert not any("adjusted" in g or "Disabling plugin" in g for g in got)


@pytest.mark.usefixtures("small_machine")
def test_mariadbs_caches_as_help_prints_them_against_the_memory() -> None:
    help_text = (
        "Variables (--variable-name=value)\nand boolean options {FALSE|TRUE}  Value (after reading options)\n"
        "------------------------------------------------------------ -------------\n"
        "innodb-buffer-pool-size                                      1073741824000\n"
        "innodb-flush-method                                          O_DIRECT\n"
        "key-buffer-size                                              134217728\n"
    )
    values = mariadb_values.help_values(help_text)
    assert values["innodb_buffer_pool_size"] == "1073741824000" and values["innodb_flush_method"] == "O_DIRECT"
    diff = _diff(mariadb_config.parse, "innodb_buffer_pool_size = 1000G\n", "big", ".cnf")
    assert mariadb_values.memory_problems(diff, values, "MariaDB 10.11.19") == [
        "config big sets innodb_buffer_pool_size = 1000G (big.cnf:1): MariaDB 10.11.19's global caches "
        "(innodb_buffer_pool_size 1000 GiB, key_buffer_size 128 MiB) would take about 1000 GiB, more than this "
        "machine's memory (16.0 GiB, MemTotal); innodb_buffer_pool_size may be at most 15.9 GiB here."
    ]
    values["innodb_buffer_pool_size"] = str(8 * GIB)
    assert mariadb_values.memory_problems(diff, values, "MariaDB 10.11.19") == []


POSTGRES_STDERR = """\
2026-11-26 22:04:25.314 GMT [2428] LOG:  skipping missing configuration file "/tmp/x/postgresql.auto.conf"
2026-11-26 22:04:25.314 GMT [2428] LOG:  invalid value for parameter "wal_level": "bogus"
2026-11-26 22:04:25.314 GMT [2428] HINT:  Available values: minimal, replica, logical.
2026-11-26 22:04:25.314 GMT [2428] LOG:  -5 kB is outside the valid range for parameter "work_mem" (64 .. 2147483647)
2026-11-26 22:04:25.314 GMT [2428] LOG:  invalid value for parameter "shared_buffers": "lots"
2026-11-26 22:04:25.314 GMT [2428] FATAL:  configuration file "/tmp/x/postgresql.conf" contains errors
"""


def test_postgres_refusals_are_said_in_its_words_with_its_hints() -> None:
    diff = _diff(postgres_config.parse, "wal_level = bogus\nWORK_MEM = -5\nshared_buffers = lots\n", "bad", ".conf")
    assert postgres_values.refusals(diff, POSTGRES_STDERR, "Postgres 15.18") == [
        "config bad sets wal_level = bogus (bad.conf:1), which Postgres 15.18 refuses: invalid value for parameter "
        '"wal_level": "bogus" (Available values: minimal, replica, logical).',
        "config bad sets WORK_MEM = -5 (bad.conf:2), which Postgres 15.18 refuses: -5 kB is outside the valid range "
        'for parameter "work_mem" (64 .. 2147483647).',
        "config bad sets shared_buffers = lots (bad.conf:3), which Postgres 15.18 refuses: invalid value for "
        'parameter "shared_buffers": "lots".',
    ]


def test_db_benchs_refusals_are_said_in_its_words_under_each_flag() -> None:
    diff = _diff(rocksdb_config.parse, "write_buffer_size = lots\ncache_type = arc\nbloom_bits = 10\n", "bad", ".conf")
    said = ["ERROR: illegal value 'lots' specified for int64 flag 'write_buffer_size'", "Cache type not supported."]
    assert rocksdb_values.refusals(diff, said, "RocksDB 7.8.3's db_bench") == [
        "config bad sets write_buffer_size = lots (bad.conf:1), which RocksDB 7.8.3's db_bench refuses: illegal value "
        "'lots' specified for int64 flag 'write_buffer_size'.",
        "config bad sets cache_type = arc (bad.conf:2), which RocksDB 7.8.3's db_bench refuses: Cache type not "
        "supported.",
    ]
    assert rocksdb_values.refusals(diff, ["killed by SIGABRT"], "RocksDB 7.8.3's db_bench") == [
        "RocksDB 7.8.3's db_bench refuses config bad: killed by SIGABRT."
    ]


@pytest.mark.usefixtures("small_machine")
def test_db_benchs_caches_and_background_threads_are_bounded_before_it_runs() -> None:
    text = "cache_size = 100000000000000\nmax_background_jobs = 50000\nrow_cache_size = lots\n"
    diff = _diff(rocksdb_config.parse, text, "big", ".conf")
    assert rocksdb_values.size_problems("big", list(diff.settings)) == [
        "config big sets cache_size = 100000000000000 (big.conf:1): db_bench's caches would take about 90.9 TiB, more "
        "than this machine's memory (16.0 GiB, MemTotal); cache_size may be at most 16.0 GiB here.",
        "config big sets max_background_jobs = 50000 (big.conf:2): 50,000 background threads RocksDB would start, "
        "more than this machine can start now (10,000: kernel.pid_max 10,100 less the 100 running).",
    ]
    small = _diff(rocksdb_config.parse, "cache_size = 1073741824\nmax_background_jobs = 4\n", "ok", ".conf")
    assert rocksdb_values.size_problems("ok", list(small.settings)) == []


# ---- preflight: one engine check per install and config -----------------------------------------------------------


def test_preflight_asks_the_engine_once_per_install_and_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def check_values(self: base.Engine, diff: ConfigDiff, install: base.Install, text: str) -> list[str]:
        calls.append(diff.name)
        return [f"config {diff.name} sets x = y ({diff.name}.conf:1), which the engine refuses: no."]

    engine = type(engine_named("postgres"))
    monkeypatch.setattr(engine, "check_values", check_values)
    study = load_study(write_study(tmp_path, config_b="cx10a_c2r24"))  # both targets: one install, one config
    problems = preflight.check(study).problems
    assert calls == ["cx10a_c2r24"]
    assert [p.split(": ", 2)[1] for p in problems] == ["targets[0].config", "targets[1].config"]
    assert problems[0].endswith("config cx10a_c2r24 sets x = y (cx10a_c2r24.conf:1), which the engine refuses: no.")
