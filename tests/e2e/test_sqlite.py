"""SQLite end to end, with no server and no root: a library built from Debian's source package and Debian's
own `libsqlite3`, opened by one load client, compared through the command line; the instruction count of the
whole client under valgrind; a pragma SQLite does not take fails its target with the file and line.

The build (3.40.1 at `def`, the version Debian's package has, so the two targets differ only by the build)
lives in the test cache (DBSWEEP_TEST_CACHE, default /var/tmp/dbsweep-test-cache): the first run on a machine
compiles the amalgamation (about 1.5 minutes), later runs reuse it.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from dbsweep.build import cache, variants
from dbsweep.engines.registry import engine_named
from dbsweep.measure import instructions
from dbsweep.sources import debian

from ..conftest import dbsweep

pytestmark = pytest.mark.server

CACHE = Path(os.environ.get("DBSWEEP_TEST_CACHE", "/var/tmp/dbsweep-test-cache"))
VERSION = "3.40.1"
SLOW = os.environ.get("DBSWEEP_SLOW_TESTS") == "1"

STUDY = """\
name = "sq"
engine = "sqlite"
base = "system"
workspace = "{workspace}"

[suite]
name = "sysbench"
steps = ["point-query", "read-only", "update-index"]
tables = 1
rows = 5000
clients = [1]
read_seconds = 2
write_seconds = 2
warmup_seconds = 1
maintenance_seconds = 0

[[targets]]
name = "system"
source = "system"
config = "wal_normal"

[[targets]]
name = "built"
source = "{version}"
variant = "def"
config = "{config}"
"""


@pytest.fixture(scope="module")
def built() -> cache.Build:
    """SQLite 3.40.1 from Debian's source package, at def, in the test cache."""
    engine = engine_named("sqlite")
    tree = debian.resolve_debian(VERSION, VERSION, CACHE / "sources", naming=engine.naming)
    return cache.build(engine.recipe(), tree, variants.builtin("def"), CACHE / "builds")


def _study(tmp: Path, config: str = "wal_normal") -> Path:
    ws = tmp / "ws"
    ws.mkdir()
    # The study's workspace finds its source and build in the test cache.
    (ws / "sources").symlink_to(CACHE / "sources")
    (ws / "builds").symlink_to(CACHE / "builds")
    path = tmp / "sq.toml"
    path.write_text(STUDY.format(workspace=ws, version=VERSION, config=config))
    return path


def test_the_build_is_the_library_it_says(built: cache.Build) -> None:
    install = built.install
    lib = install.provenance["library"]
    assert Path(lib).is_file() and lib.endswith("/lib/libsqlite3.so")
    assert install.short_version == VERSION
    assert "THREADSAFE=1" in install.provenance["compile_options"]
    # Not Debian's extras: the build is SQLite's own defaults with the recipe's options.
    assert "SECURE_DELETE" not in install.provenance["compile_options"]
    assert "-O2" in built.cflags and "-DSQLITE_THREADSAFE=1" in built.cflags and "sqlite3.c" in built.configure
    system = engine_named("sqlite").system_install("system")
    assert system.short_version == VERSION and "SECURE_DELETE" in system.provenance["compile_options"]


def test_two_libraries_one_client_through_the_cli(built: cache.Build, tmp: Path) -> None:
    study = _study(tmp)
    r = dbsweep("run", study)
    assert "8 cells done, 0 failed" in r.stdout, r.stdout + r.stderr
    rep = dbsweep("report", study, "--format", "markdown").stdout
    assert "runs inside the load client" in rep and "point-query" in rep and "built" in rep
    db = sqlite3.connect(tmp / "ws" / "results.db")
    rows = db.execute(
        "SELECT t.name, c.step, c.clients, r.qps, r.summary, m.data, p.data, "
        "(SELECT data FROM server_stats s WHERE s.cell_id = c.id AND s.view = 'database') FROM cells c "
        "JOIN targets t ON t.id = c.target_id JOIN step_results r ON r.cell_id = c.id "
        "JOIN measures m ON m.cell_id = c.id JOIN provenance p ON p.id = c.provenance_id"
    ).fetchall()
    assert len(rows) == 8
    libraries = set()
    for name, step, clients, qps, summary, measures, prov, stats in rows:
        s, m, p = json.loads(summary), json.loads(measures), json.loads(prov)
        assert qps > 0 and s["error_count"] == 0, (name, step, clients)
        lib = s["engine_library"]
        libraries.add((name, lib["path"], lib["version"]))
        # No server: the step's CPU is the client's.
        assert m["server_cpu_s"] == pytest.approx(m["client_cpu_s"]) and m["server_cpu_s"] > 0
        assert "lock_waits" in s
        db_stats = json.loads(stats)
        assert db_stats["page_count"] > 0 and db_stats["journal_mode"] == "wal" and "wal_bytes" in db_stats
        assert [x["name"] for x in p["config"]["effective_settings"]][:2] == ["journal_mode", "synchronous"]
    assert {(n, v) for n, _, v in libraries} == {("system", VERSION), ("built", VERSION)}
    assert len({path for _, path, _ in libraries}) == 2, "each target's client opened its own library"


def test_a_pragma_sqlite_does_not_take_fails_its_target(built: cache.Build, tmp: Path) -> None:
    configs = tmp / "configs"
    (configs / "sqlite").mkdir(parents=True)
    (configs / "sqlite" / "wal_normal.conf").write_text("journal_mode = WAL\n")
    (configs / "sqlite" / "bad.conf").write_text("# a value SQLite keeps silently as it was\njournal_mode = sideways\n")
    (configs / "sqlite" / "unknown.conf").write_text("journal_mode = WAL\nno_such_pragma = 1\n")
    env = {"DBSWEEP_CONFIGS": str(configs)}
    r = dbsweep("run", _study(tmp, "bad"), env=env, check=False)
    assert r.returncode == 1
    assert "PRAGMA journal_mode = sideways (bad.conf:2), which SQLite 3.40.1 does not take: it reads back as" in (
        r.stdout + r.stderr
    )
    (tmp / "ws").rename(tmp / "ws1")
    (tmp / "sq.toml").unlink()
    r = dbsweep("validate", _study(tmp, "unknown"), env=env, check=False)
    assert r.returncode == 2
    assert "PRAGMA no_such_pragma (unknown.conf:2), which SQLite 3.40.1 does not know" in r.stdout + r.stderr


def test_instructions_count_the_whole_client(tmp: Path) -> None:
    engine = engine_named("sqlite")
    install = engine.system_install("system")
    load = [["sysbench", "prepare", "--tables", "1", "--rows", "5000"]]

    def run(seconds: int) -> list[str]:
        return [
            "sysbench",
            "point-query",
            "--tables",
            "1",
            "--rows",
            "5000",
            "--clients",
            "1",
            "--seconds",
            str(seconds),
            "--warmup",
            "0",
        ]

    count = instructions.instructions_per_op(
        engine,
        install,
        "journal_mode = WAL\ncache_size = -65536\n",
        tmp / "vg",
        step="point-query",
        load=load,
        run=run,
        tables=["sbtest1"],
        short_seconds=1,
        long_seconds=3,
    )
    assert count.counted == "client"
    assert 5_000 < count.per_query < 500_000, count.per_query  # a point query, the client's own work included
    assert count.spread < 0.02, [p.per_event for p in count.pairs]
    assert all(p.long.events > p.short.events for p in count.pairs)


@pytest.mark.skipif(not SLOW, reason="two builds and a training run (about 3 minutes): set DBSWEEP_SLOW_TESTS=1")
def test_pgo_build_is_trained_through_the_load_client() -> None:
    engine = engine_named("sqlite")
    tree = debian.resolve_debian(VERSION, VERSION, CACHE / "sources", naming=engine.naming)
    b = cache.build(engine.recipe(), tree, variants.builtin("pgo"), CACHE / "builds")
    pgo = b.metadata["pgo"]
    assert b.training is not None and b.training["steps"] == ["prepare", "point-query"]
    assert pgo["profile_files"] >= 1 and pgo["training_seconds"] > 0
    assert "-fprofile-use" in b.cflags or "-fprofile-use" in b.configure
    assert b.install.short_version == VERSION


def test_a_starved_long_run_is_run_again_longer(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """valgrind's runs are timed by the wall clock: on a busy machine a long run can do less than its short one.
    It is run again, twice as long, up to twice; only then is the count given up, saying why."""
    engine = engine_named("sqlite")
    install = engine.system_install("system")
    asked: list[int] = []
    events_by_seconds = {1: 1000, 3: 900, 6: 5000, 12: 9000}

    def starved(self: object, command: list[str], seconds: int) -> tuple[instructions.Run, dict[str, object]]:
        asked.append(seconds)
        n = events_by_seconds[seconds]
        run = instructions.Run(seconds, n, n, 1_000_000 + 1234 * n, 1, "cg.1", 0, float(seconds))
        return run, {"statements_per_event": 1, "group": "point"}

    monkeypatch.setattr(instructions._Session, "run", starved)
    load = [["sysbench", "prepare", "--tables", "1", "--rows", "1000"]]

    def run(seconds: int) -> list[str]:
        return ["sysbench", "point-query", "--rows", "1000", "--seconds", str(seconds), "--warmup", "0"]

    count = instructions.instructions_per_op(
        engine, install, "journal_mode = WAL\n", tmp / "vg", step="point-query", load=load, run=run,
        tables=["sbtest1"], short_seconds=1, long_seconds=3,
    )  # fmt: skip
    assert asked == [1, 1, 3, 6, 1, 3, 6]  # warm-up; then each pair: short, long (starved), long again at 6 s
    assert count.per_event == pytest.approx(1234) and count.spread == 0
    events_by_seconds.update({6: 950, 12: 990})  # starved every time
    with pytest.raises(Exception, match=r"completed 990 events in 12 s, no more than the short run's 1000 in 1 s"):
        instructions.instructions_per_op(
            engine, install, "journal_mode = WAL\n", tmp / "vg", step="point-query", load=load, run=run,
            tables=["sbtest1"], short_seconds=1, long_seconds=3,
        )  # fmt: skip
