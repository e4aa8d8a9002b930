"""SQLite behind the engine boundary, without running it: its Debian names and tree versions, PRAGMA configs
read, fitted and checked, the build recipe's steps and record, and the samplers with no server process."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from dbsweep.build.recipe import Phase
from dbsweep.build.variants import builtin
from dbsweep.configdiff import ConfigDiff
from dbsweep.engines.registry import engine_named
from dbsweep.engines.sqlite import config, source
from dbsweep.engines.sqlite.build import OPTIONS, RECIPE
from dbsweep.errors import DbsweepError
from dbsweep.measure import Sampler
from dbsweep.sources import SourceTree


def test_debian_names_and_versions(tmp_path: Path) -> None:
    assert source.debian_package("3.46.1") == source.debian_package("3.46.1-7+deb13u2") == "sqlite3"
    assert source.debian_major("sqlite3") == 3 and source.debian_major("sqlite3-pcre") is None
    with pytest.raises(DbsweepError, match="not an SQLite version"):
        source.debian_package("15.18")
    (tmp_path / "VERSION").write_text("3.46.1\n")
    assert source.tree_version(tmp_path) == "3.46.1"
    amalgamation = tmp_path / "amalgamation"
    amalgamation.mkdir()
    (amalgamation / "sqlite3.h").write_text('#define SQLITE_VERSION        "3.53.4"\n')
    assert source.tree_version(amalgamation) == "3.53.4"
    with pytest.raises(DbsweepError, match="does not look like an SQLite source tree"):
        source.tree_version(tmp_path / "missing")


def _lines(text: str) -> list[tuple[str, str]]:
    return [(ln, f"x.conf:{n}") for n, ln in enumerate(text.splitlines(), 1)]


def test_configs_read_and_refuse() -> None:
    settings = config.parse(_lines("# a comment\njournal_mode = WAL  # why\ncache_size = -262144\n\nfoo='a b'\n"))
    assert [(s.name, s.value, s.origin) for s in settings] == [
        ("journal_mode", "WAL", "x.conf:2"),
        ("cache_size", "-262144", "x.conf:3"),
        ("foo", "'a b'", "x.conf:5"),
    ]
    with pytest.raises(DbsweepError, match=r"x.conf:1: cannot read 'journal_mode WAL'"):
        config.parse(_lines("journal_mode WAL"))
    with pytest.raises(DbsweepError, match=r"x.conf:1: 'WAL; DROP TABLE t' is not a PRAGMA value"):
        config.parse(_lines("journal_mode = WAL; DROP TABLE t"))
    with pytest.raises(DbsweepError, match=r"x.conf:1: PRAGMA busy_timeout cannot be set in a config"):
        config.parse(_lines("busy_timeout = 5"))
    assert config.connection_pragmas("journal_mode = WAL\n# skipped: x = 1\nsynchronous=NORMAL\n") == [
        "journal_mode=WAL",
        "synchronous=NORMAL",
    ]


def test_configs_fit_the_version() -> None:
    text = "journal_mode = WAL\nnew_pragma = 1\n"
    diff = ConfigDiff("c", text, config.parse(_lines(text)))
    with pytest.raises(DbsweepError, match=r"config c sets PRAGMA new_pragma \(x.conf:2\), which SQLite 3.34.1"):
        config.fit(diff, {"journal_mode"}, "3.34.1", set())
    fitted, skipped = config.fit(diff, {"journal_mode"}, "3.34.1", {"new_pragma"})
    assert skipped == ["new_pragma"] and "# not in SQLite 3.34.1, skipped: new_pragma = 1" in fitted
    assert config.pragmas(fitted) == [("journal_mode", "WAL")]
    assert config.fit(diff, {"journal_mode", "new_pragma"}, "3.53.4", set()) == (text, [])


def test_values_are_read_back() -> None:
    assert config.expected("synchronous", "NORMAL") == "1"
    assert config.expected("temp_store", "memory") == "2"
    assert config.expected("journal_mode", "WAL") == "wal"
    assert config.expected("cache_spill", "off") == "0"
    assert config.expected("cache_size", "-262144") == "-262144"
    config.check_readback("synchronous", "NORMAL", "1", "x.conf:1", "c", "3.46.1")
    config.check_readback("optimize", "1", None, "x.conf:1", "c", "3.46.1")  # reads back nothing: no check
    with pytest.raises(
        DbsweepError,
        match=r"PRAGMA mmap_size = 9999999999 \(x.conf:3\), which SQLite 3.46.1 does not take: "
        r"it reads back as '2147418112'",
    ):
        config.check_readback("mmap_size", "9999999999", "2147418112", "x.conf:3", "c", "3.46.1")


def test_the_shipped_configs_read() -> None:
    from dbsweep import configs

    names = configs.available("sqlite")
    assert {"wal_normal", "wal_full", "wal_mmap", "rollback"} <= set(names)
    for name in names:
        diff = configs.load("sqlite", name)
        assert diff.settings, name
        assert diff.text.lstrip().startswith("#"), f"{name} says what it changes and why"
    full = configs.load("sqlite", "wal_full")
    assert [(s.name, s.value) for s in full.settings if s.name == "synchronous"] == [
        ("synchronous", "NORMAL"),
        ("synchronous", "FULL"),
    ]


def test_the_recipe_compiles_the_amalgamation_with_the_variant(tmp_path: Path) -> None:
    tree = SourceTree("3.46.1", "debian", tmp_path / "tree", "3.46.1", "sha256:x")
    phase = Phase(
        tree,
        builtin("o3_native_lto"),
        "gcc",
        tmp_path / "b",
        tmp_path / "p",
        tmp_path / "d",
        builtin("o3_native_lto").cflags,
        builtin("o3_native_lto").ldflags,
        2,
        ccache=True,
    )
    configure = RECIPE.configure(phase)
    assert configure[0].argv[0] == str(tree.path / "configure")
    steps = RECIPE.compile(phase)
    assert [s.what for s in steps] == [
        "make sqlite3.c shell.c",
        "compile sqlite3.c",
        "compile shell.c",
        "link the library",
        "link the shell",
    ]
    # The two compiles print nothing: the progress counts their objects as they end.
    assert [s.objects for s in steps] == [0, 1, 1, 0, 0] and RECIPE.objects_estimate == 2
    lib = steps[1].argv
    assert lib[:2] == ("ccache", "gcc") and "-march=native" in lib and "-flto=auto" in lib
    assert all(o in lib for o in OPTIONS) and lib[-4:] == ("-c", "sqlite3.c", "-o", "sqlite3.o")
    link = steps[3].argv
    assert link[0] == "gcc" and "-shared" in link and link.count("-flto=auto") == 2  # compile and link flags
    # def: SQLite's configure default, -O2; every variant keeps -g.
    plain = Phase(tree, builtin("def"), "clang", tmp_path / "b", tmp_path / "p", None, (), (), 2, ccache=False)
    assert RECIPE.compile(plain)[1].argv[:4] == ("clang", "-O2", "-g", "-fPIC")
    install = RECIPE.install(phase)
    assert str(tmp_path / "d") + str(tmp_path / "p") + "/lib/libsqlite3.so" in install[0].argv
    assert RECIPE.artefact == "lib/libsqlite3.so" and RECIPE.supports_pgo


def test_an_embedded_engine_charges_the_client(tmp_path: Path) -> None:
    engine = engine_named("sqlite")
    assert engine.kind == "embedded" and engine.server_user() is None
    burn = (
        "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.4: pass\n"
        "print('done', flush=True)\ntime.sleep(5)\n"
    )
    with Sampler(None, Path("/var/tmp"), interval=0.1) as s:
        time.sleep(0.15)
        client = subprocess.Popen([sys.executable, "-c", burn], stdout=subprocess.PIPE, text=True)
        try:
            s.attach_client(client.pid)
            t0 = time.monotonic()
            assert client.stdout is not None and client.stdout.readline().strip() == "done"
            t1 = time.monotonic()
            m = s.window(t0, t1)
        finally:
            client.kill()
            client.wait()
    cpu = m.client_cpu_s
    assert cpu is not None and cpu > 0.2
    assert m.server_cpu_s == cpu and m.server_cs == (m.client_cs_vol or 0) + (m.client_cs_invol or 0)
    records = s.samples()
    assert records[0].server.user_s == 0 and records[0].server.procs == 0  # nothing ran before the client
    assert sum(r.server.user_s + r.server.sys_s for r in records) == pytest.approx(
        sum((r.client.user_s + r.client.sys_s) if r.client else 0.0 for r in records)
    )


def test_the_report_says_where_statements_waited_for_a_lock() -> None:
    from dbsweep.report.data import Entry, Rep, Row, lock_waits

    def rep(n: int, waits: int, seconds: float, errors: int = 0) -> Rep:
        return Rep(n, n, 100.0, 100.0, summary={"lock_waits": waits, "lock_wait_s": seconds, "error_count": errors})

    cells = {
        "a": Entry([rep(1, 0, 0.0), rep(2, 0, 0.0)]),
        "b": Entry([rep(1, 120, 1.5, 2), rep(2, 80, 0.5, 0), rep(3, 100, 1.0, 1)]),
        "c": Entry(),  # nothing done: nothing said
    }
    row = Row("update-index_range=100", 2, "write", "queries", cells, True, {})
    assert lock_waits([row], ["a", "b", "c"]) == ["update-index_range=100 c2 b: 100 waited 1.0 s, 1 events failed"]
    quiet = Row("point-query_range=100", 1, "point", "queries", {"a": Entry([rep(1, 0, 0.0)])}, True, {})
    assert lock_waits([quiet], ["a"]) == []
