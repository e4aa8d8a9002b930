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
from dbsweep.engines.base import Install
from dbsweep.engines.registry import engine_named
from dbsweep.errors import StepError
from dbsweep.measure import instructions
from dbsweep.sources import debian
from dbsweep.sources.resolve import copy_of
from dbsweep.suites.sysbench import Sysbench, SysbenchSettings

from ..conftest import dbsweep, worker_cpu

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


def test_a_second_build_of_one_source_is_its_own(built: cache.Build) -> None:
    """`build_copy`: the same source and variant built again, from a copy of the tree, into an entry of its own
    (what a calibration's copy B runs on); the provenance says which copy it is."""
    engine = engine_named("sqlite")
    tree = debian.resolve_debian(VERSION, VERSION, CACHE / "sources", naming=engine.naming)
    twin = cache.build(
        engine.recipe(), copy_of(tree, CACHE / "sources", 1), variants.builtin("def"), CACHE / "builds", copy=1
    )
    assert twin.key != built.key and twin.dir != built.dir and ".copy1-" in twin.name
    assert twin.provenance()["copy"] == 1 and built.provenance()["copy"] == 0
    assert twin.metadata["source"]["identity"] == built.metadata["source"]["identity"]
    assert twin.metadata["source"]["path"] != built.metadata["source"]["path"]
    assert (twin.cflags, twin.configure.replace(str(twin.dir), "")) == (
        built.cflags,
        built.configure.replace(str(built.dir), ""),
    )
    assert twin.install.short_version == built.install.short_version == VERSION
    lib = Path(twin.install.provenance["library"])
    assert lib.is_file() and lib.read_bytes() != Path(built.install.provenance["library"]).read_bytes()


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


def test_a_pragma_sqlite_does_not_take_is_refused_before_any_work(built: cache.Build, tmp: Path) -> None:
    """The built library reads the pragma back on a scratch database before the run does any work (the words the
    first start would say), and a pragma it does not know is refused by name."""
    configs = tmp / "configs"
    (configs / "sqlite").mkdir(parents=True)
    (configs / "sqlite" / "wal_normal.conf").write_text("journal_mode = WAL\n")
    (configs / "sqlite" / "bad.conf").write_text("# a value SQLite keeps silently as it was\njournal_mode = sideways\n")
    (configs / "sqlite" / "unknown.conf").write_text("journal_mode = WAL\nno_such_pragma = 1\n")
    env = {"DBSWEEP_CONFIGS": str(configs)}
    r = dbsweep("run", _study(tmp, "bad"), env=env, check=False)
    assert r.returncode == 2
    assert not (tmp / "ws" / "results.db").exists()
    assert "PRAGMA journal_mode = sideways (bad.conf:2), which SQLite 3.40.1 does not take: it reads back as" in (
        r.stdout + r.stderr
    )
    (tmp / "ws").rename(tmp / "ws1")
    (tmp / "sq.toml").unlink()
    r = dbsweep("validate", _study(tmp, "unknown"), env=env, check=False)
    assert r.returncode == 2
    assert "PRAGMA no_such_pragma (unknown.conf:2), which SQLite 3.40.1 does not know" in r.stdout + r.stderr


def count_point_query(install: Install, config_text: str, home: Path) -> instructions.InstructionCount:
    """The instruction count of a point query on 5,000 rows, the client opening `install`'s library."""
    suite = Sysbench(SysbenchSettings(rows=5000))
    return instructions.instructions_per_op(
        engine_named("sqlite"),
        install,
        config_text,
        home,
        step="point-query_range=100",
        load=[suite.command("load", 1)],
        plan=suite.instruction_plan("point-query_range=100", 1),
        tables=suite.tables(),
        cpus=worker_cpu(),
    )


def test_instructions_count_the_whole_client(tmp: Path) -> None:
    install = engine_named("sqlite").system_install("system")
    count = count_point_query(install, "journal_mode = WAL\ncache_size = -65536\n", tmp / "vg")
    assert count.counted == "client"
    assert 5_000 < count.per_query < 500_000, count.per_query  # a point query, the client's own work included
    assert count.spread < 0.02, [p.per_event for p in count.pairs]
    assert all(p.long.events == 3 * count.amount for p in count.pairs)
    assert count.by_role == {"foreground": pytest.approx(count.median_pair().per_event)}  # one process: the client
    assert any("sqlite3" in f["function"] for f in count.functions), [f["function"] for f in count.functions[:10]]


@pytest.mark.skipif(not SLOW, reason="three builds and a training run (about 5 minutes): set DBSWEEP_SLOW_TESTS=1")
def test_pgo_build_is_trained_through_the_load_client() -> None:
    engine = engine_named("sqlite")
    tree = debian.resolve_debian(VERSION, VERSION, CACHE / "sources", naming=engine.naming)
    b = cache.build(engine.recipe(), tree, variants.builtin("pgo"), CACHE / "builds")
    pgo = b.metadata["pgo"]
    assert b.training is not None and b.training["steps"] == ["prepare", "point-query"]
    assert pgo["profile_files"] >= 1 and pgo["training_seconds"] > 0
    assert "-fprofile-use" in b.cflags or "-fprofile-use" in b.configure
    assert b.install.short_version == VERSION

    # pgo_lto is built with the profile of pgo's instrumented build (kept; trained now if pgo's build was cached
    # from before profiles were kept) and compiled with LTO.
    lto = cache.build(engine.recipe(), tree, variants.builtin("pgo_lto"), CACHE / "builds")
    kept = cache.Profile.of(engine.recipe(), tree, variants.builtin("pgo"), CACHE / "builds")
    assert kept.facts() is not None and lto.metadata["pgo"]["profile_key"] == kept.key
    assert lto.metadata["pgo"]["profile_of"] == "pgo" and "-flto=auto" in lto.log_path.read_text()
    assert lto.install.short_version == VERSION


@pytest.mark.skipif(not SLOW, reason="two builds and a BOLT training run (about 4 minutes): set DBSWEEP_SLOW_TESTS=1")
def test_bolt_build_is_rewritten_from_its_training_and_counted(tmp: Path) -> None:
    """The bolt variant: llvm-bolt rewrites a copy of bolt_base's library with an instrumentation profile of the
    training workload, records how, and valgrind counts the rewritten library as it counts any other, by function."""
    engine = engine_named("sqlite")
    tree = debian.resolve_debian(VERSION, VERSION, CACHE / "sources", naming=engine.naming)
    b = cache.build(engine.recipe(), tree, variants.builtin("bolt"), CACHE / "builds")
    base = cache.build(engine.recipe(), tree, variants.bolt_base(variants.builtin("bolt")), CACHE / "builds")
    rec = b.metadata["bolt"]
    assert rec["version"] and rec["options"] and rec["profile_kind"] == "instrumentation", rec
    assert rec["profile_files"] >= 1 and rec["profile_bytes"] > 0 and rec["training_seconds"] > 0, rec
    assert b.metadata["bolt_of"]["key"] == base.key  # what was rewritten is that build, named by its key
    artefact = engine.recipe().artefact
    rewritten, before = (b.install_dir / artefact).read_bytes(), (base.install_dir / artefact).read_bytes()
    assert rewritten != before and b".note.bolt_info" in rewritten and b".note.bolt_info" not in before
    counts = {
        name: count_point_query(x.install, "journal_mode = WAL\n", tmp / name)
        for name, x in (("base", base), ("bolt", b))
    }
    for name, count in counts.items():
        assert 1_000 < count.per_query < 500_000, (name, count.per_query)  # a primary-key lookup, in the client
        names = [f["function"] for f in count.functions]
        assert any(n.startswith("sqlite3") for n in names), (name, names[:10])  # symbols survive the rewrite
    # The same statements: BOLT moves code, it does not change what runs, so the counts stay within a few per cent.
    assert abs(counts["bolt"].per_event / counts["base"].per_event - 1) < 0.05


def test_a_long_run_that_ended_early_is_no_count(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs do a fixed number of events; a long run that did no more than its short one (the client stopped
    at its time limit) gives no figure, and says why."""
    engine = engine_named("sqlite")
    install = engine.system_install("system")
    asked: list[int] = []
    events = {0: 1000, 1000: 1000, 3000: 900}

    def ended(self: object, amount: int, tables: list[str]) -> instructions.Run:
        asked.append(amount)
        n = events[amount]
        return instructions.Run(amount, n, n, 1_000_000 + 1234 * n, {"foreground": 1}, str(tmp), 1.0)

    monkeypatch.setattr(instructions._Pass, "run", ended)
    suite = Sysbench(SysbenchSettings(rows=1000))
    with pytest.raises(StepError, match=r"completed 900 events, no more than the short run's 1000"):
        instructions.instructions_per_op(
            engine, install, "journal_mode = WAL\n", tmp / "vg", step="point-query_range=100",
            load=[suite.command("load", 1)], plan=suite.instruction_plan("point-query_range=100", 1),
            tables=suite.tables(),
        )  # fmt: skip
    assert asked == [0, 1000, 3000]  # the timed probe found 1000 events; the pair asked for 1000 and three times that
