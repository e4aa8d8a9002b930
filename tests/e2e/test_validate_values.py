"""`dbsweep validate` knows what the engine accepts: a config's values are read by the installed engine itself
before any work (a PRAGMA on a scratch database, mariadbd's `--verbose --help`, db_bench's flag parsing, `postgres
-C`) and refused with status 2 in the engine's own words, naming the config's file and line; sizes are bounded by
the machine (its memory, the threads it can start) with the estimate and the limit; and every shipped config
still validates. Each study here is refused before its workspace exists, in a second or two."""

from __future__ import annotations

from pathlib import Path

import pytest

from dbsweep import configs
from dbsweep.engines.mariadb import install as mariadb_installs
from dbsweep.engines.registry import engine_named

from ..conftest import ROOT, dbsweep, write_dbbench_study, write_study

pytestmark = pytest.mark.server


def _installed(engine: str) -> None:
    if not engine_named(engine).system_versions():
        pytest.skip(f"needs Debian's {engine_named(engine).title} (scripts/setup.sh)")


def _configs(tmp: Path, engine: str, **extra: str) -> dict[str, str]:
    """A configs directory with the engine's shipped configs and `extra` (name -> text); the environment that
    points dbsweep at it."""
    d = tmp / "configs" / engine
    d.mkdir(parents=True)
    suffix = engine_named(engine).config_suffix
    for shipped in (ROOT / "configs" / engine).glob(f"*{suffix}"):
        (d / shipped.name).write_text(shipped.read_text())
    for name, text in extra.items():
        (d / f"{name}{suffix}").write_text(text)
    return {"DBSWEEP_CONFIGS": str(tmp / "configs")}


def _refused(study: Path, env: dict[str, str]) -> str:
    """validate's stderr, one line per problem (the terminal's wrapping undone), after a refusal before any work;
    the good shipped config of target a is never the problem."""
    r = dbsweep("validate", study, check=False, env=env)
    assert r.returncode == 2, r.stdout + r.stderr
    assert not (study.parent / "ws").exists(), "bad input must not create the workspace"
    said = "\n".join(" ".join(p.split()) for p in r.stderr.split("error: ") if p.strip())
    assert "targets[0]" not in said, said
    return said


def _dbbench(tmp: Path, config: str = "hyper_clock", clients: str = "[1]", extra: str = "") -> Path:
    return write_dbbench_study(tmp, keys=1000, clients=clients, config=config, suite=extra)


# ---- values, in the engine's own words ---------------------------------------------------------------------------


def test_sqlite_pragma_values_are_read_back_from_a_scratch_database(tmp: Path) -> None:
    _installed("sqlite")
    env = _configs(tmp, "sqlite", bad="journal_mode = BOGUS\nsynchronous = maybe\nmmap_size = -1\n")
    study = write_study(tmp, engine="sqlite", config_a="wal_normal", config_b="bad")
    said = _refused(study, env)
    version = engine_named("sqlite").system_install("system").short_version
    for line, pragma, back in (
        (1, "journal_mode = BOGUS", "delete"),
        (2, "synchronous = maybe", "1"),
        (3, "mmap_size = -1", "0"),
    ):
        assert (
            f"targets[1].config: config bad sets PRAGMA {pragma} (bad.conf:{line}), which SQLite {version} does not "
            f"take: it reads back as '{back}'."
        ) in said, said


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (
            "innodb_buffer_pool_size = lots",
            "config bad sets innodb_buffer_pool_size = lots (bad.cnf:2), which MariaDB {v} refuses: Unknown suffix "
            "'l' used for variable 'innodb-buffer-pool-size' (value 'lots'). Legal suffix characters are: K, M, G, T, "
            f"P, E; {mariadb_installs.SYSTEM_SERVER}: Error while setting value 'lots' to 'innodb-buffer-pool-size'.",
        ),
        (
            "innodb_flush_method = O_BOGUS",
            "config bad sets innodb_flush_method = O_BOGUS (bad.cnf:2), which MariaDB {v} refuses: "
            f"{mariadb_installs.SYSTEM_SERVER}: Error while setting value 'O_BOGUS' to 'innodb-flush-method'.",
        ),
        (
            "default_storage_engine = rocksdb\nrocksdb_block_cache_size = lots",
            "config bad sets rocksdb_block_cache_size = lots (bad.cnf:3), which MariaDB {v} refuses: Unknown suffix "
            "'l' used for variable 'rocksdb-block-cache-size' (value 'lots')",
        ),
    ],
    ids=["suffix", "enum", "myrocks"],
)
def test_mariadb_values_are_refused_in_mariadbds_words(tmp: Path, text: str, words: str) -> None:
    _installed("mariadb")
    env = _configs(tmp, "mariadb", bad=f"# a value mariadbd refuses\n{text}\n")
    study = write_study(tmp, engine="mariadb", config_a="za4_c2r24", config_b="bad")
    said = _refused(study, env)
    version = engine_named("mariadb").system_install("system").short_version
    assert f"targets[1].config: {words.format(v=version)}" in said, said


def test_a_mariadb_buffer_pool_larger_than_the_machines_memory(tmp: Path) -> None:
    _installed("mariadb")
    env = _configs(tmp, "mariadb", big="innodb_buffer_pool_size = 1000G\n")
    study = write_study(tmp, engine="mariadb", config_a="cz12a_c2r24", config_b="big")
    said = _refused(study, env)
    assert "targets[1].config: config big sets innodb_buffer_pool_size = 1000G (big.cnf:1): MariaDB" in said, said
    assert "global caches (innodb_buffer_pool_size 1000 GiB," in said
    assert "would take about 1000 GiB, more than this machine's memory (" in said
    assert "innodb_buffer_pool_size may be at most" in said


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("write_buffer_size = lots", "illegal value 'lots' specified for int64 flag 'write_buffer_size'."),
        ("cache_type = arc", "Cache type not supported."),
    ],
    ids=["gflags", "db_bench"],
)
def test_db_bench_flags_are_refused_in_db_benchs_words(tmp: Path, text: str, words: str) -> None:
    _installed("rocksdb")
    env = _configs(tmp, "rocksdb", bad=f"{text}\n")
    said = _refused(_dbbench(tmp, config="bad"), env)
    version = engine_named("rocksdb").system_install("system").short_version
    assert (
        f"targets[1].config: config bad sets {text} (bad.conf:1), which RocksDB {version}'s db_bench refuses: {words}"
        in said
    ), said


def test_postgres_values_are_refused_in_postgres_words(tmp: Path) -> None:
    _installed("postgres")
    env = _configs(tmp, "postgres", bad="shared_buffers = lots\nwal_level = bogus\n", big="shared_buffers = 1000GB\n")
    study = write_study(tmp, config_a="cx10a_c2r24", config_b="bad")
    said = _refused(study, env)
    version = engine_named("postgres").system_install("system").short_version
    assert (
        f"targets[1].config: config bad sets shared_buffers = lots (bad.conf:1), which Postgres {version} refuses: "
        'invalid value for parameter "shared_buffers": "lots".'
    ) in said, said
    assert (
        f"targets[1].config: config bad sets wal_level = bogus (bad.conf:2), which Postgres {version} refuses: "
        'invalid value for parameter "wal_level": "bogus" (Available values: minimal, replica, logical).'
    ) in said, said
    study.write_text(study.read_text().replace('config = "bad"', 'config = "big"'))
    said = _refused(study, env)
    assert "targets[1].config: config big sets shared_buffers = 1000GB (big.conf:1): Postgres" in said, said
    assert "shared buffers would take about 1000 GiB, more than this machine's memory (" in said


def test_every_shipped_config_takes_its_values_on_the_installed_engines() -> None:
    """The shipped configs, fitted as a study that lists what a version lacks as optional, pass the same check."""
    checked = 0
    for name in ("postgres", "mariadb", "sqlite", "rocksdb"):
        engine = engine_named(name)
        if not engine.system_versions():
            continue
        install = engine.system_install("system")
        for config in configs.available(name):
            diff = configs.load(name, config)
            text, _ = engine.fit_config(diff, install, diff.names())
            assert engine.check_values(diff, install, text) == [], (name, config)
            checked += 1
    assert checked >= 4


# ---- settings the engine cannot run, sizes the machine cannot hold ----------------------------------------------


def test_sqlite_refuses_a_sysbench_table_without_its_primary_key(tmp: Path) -> None:
    _installed("sqlite")
    study = write_study(tmp, engine="sqlite", config_a="wal_normal", config_b="rollback")
    study.write_text(
        study.read_text().replace("maintenance_seconds = 0", "maintenance_seconds = 0\nprimary_key = false")
    )
    said = _refused(study, {})
    assert "suite.primary_key: false gives sbtest's id a secondary index instead of the primary key" in said, said
    assert "which SQLite cannot make: SQLite generates an id on insert only for an INTEGER PRIMARY KEY" in said


def test_sqlite_clients_are_bounded_by_the_cpus(tmp: Path) -> None:
    _installed("sqlite")
    study = write_study(tmp, engine="sqlite", config_a="wal_normal", config_b="rollback", clients=[1, 5000])
    said = _refused(study, {})
    assert "suite.clients[1]: 5,000 clients are more than SQLite runs well on this machine:" in said, said
    assert "past 512 per CPU" in said and "so use at most" in said


def test_dbbench_threads_beyond_what_the_machine_can_start(tmp: Path) -> None:
    _installed("rocksdb")
    said = _refused(_dbbench(tmp, clients="[100000]"), {})
    assert "suite.clients[0]: 100,000 clients need about 100,000 threads and processes (a thread each), more " in said
    assert "than this machine can start now (" in said and "use at most" in said, said


def test_dbbench_cache_larger_than_the_memory_and_negative_background_jobs(tmp: Path) -> None:
    _installed("rocksdb")
    said = _refused(_dbbench(tmp, extra="cache_mb = 10000000"), {})
    assert (
        "suite.cache_mb: a block cache of 10,000,000 MB with the memtables (128 MB) would take about 9.5 TiB, " in said
    )
    assert "more than this machine's memory (" in said and "cache_mb may be at most" in said, said
    said = _refused(_dbbench(tmp, extra="background_jobs = -5"), {})
    assert "suite.background_jobs: must be > 0, got -5" in said, said
