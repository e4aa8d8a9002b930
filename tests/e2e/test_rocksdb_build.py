"""RocksDB's db_bench built from Debian's source package (7.8.3, def): a release build (no assertions), with
the compression libraries the steps use linked, its make line and version recorded, and a dbbench study that
compares it with Debian's own db_bench of the same version (built with assertions). And 6.11.4, from the
librocksdb-sys crate, whose db_bench lacks the benchmarks the method's later jobs run: the steps run as far
as it goes, and say what they left out.

A cold build of db_bench takes longer than the default test run may spend: these tests run with
DBSWEEP_SLOW_TESTS=1. The source and the build live in the test cache (DBSWEEP_TEST_CACHE, default
/var/tmp/dbsweep-test-cache), so only the first run on a machine compiles.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from dbsweep.build import cache, variants
from dbsweep.build.cache import Build
from dbsweep.engines.registry import engine_named
from dbsweep.sources import debian
from dbsweep.sources import resolve as sources

from ..conftest import Recorder, dbsweep

CACHE = Path(os.environ.get("DBSWEEP_TEST_CACHE", "/var/tmp/dbsweep-test-cache"))
VERSION = "7.8.3"
SLOW = os.environ.get("DBSWEEP_SLOW_TESTS") == "1"

pytestmark = [
    pytest.mark.server,
    pytest.mark.skipif(not SLOW, reason="a db_bench build from source (30-40 min cold): set DBSWEEP_SLOW_TESTS=1"),
]

STUDY = """\
name = "rxb"
engine = "rocksdb"
base = "system"
workspace = "{workspace}"

[suite]
name = "dbbench"
steps = ["fillseq", "readrandom", "overwriteandwait"]
profile = "iobuf"
keys = 50000
read_seconds = 2
write_seconds = 2
cache_mb = 64

[[targets]]
name = "system"
source = "system"
config = "lru"

[[targets]]
name = "built"
source = "{version}"
variant = "def"
config = "hyper_clock"
"""


@pytest.fixture(scope="module")
def built() -> Build:
    engine = engine_named("rocksdb")
    CACHE.mkdir(parents=True, exist_ok=True)
    tree = debian.resolve_debian(VERSION, VERSION, CACHE / "sources", naming=engine.naming)
    rec = Recorder()
    return cache.build(
        engine.recipe(), tree, variants.builtin("def"), CACHE / "builds", log=rec.log, progress=rec.on_progress
    )


@pytest.mark.timeout(2 * 3600)
def test_a_release_db_bench_with_its_compression_and_record(built: Build) -> None:
    assert built.install.short_version == VERSION and built.build_seconds > 0
    record = built.metadata
    assert record["db_bench_version"] == f"db_bench version {VERSION}"
    assert "DEBUG_LEVEL=0" in record["flags"]["make"] and "PORTABLE=1" in record["flags"]["make"]
    linked = " ".join(record["linked"])
    for lib in ("liblz4", "libzstd", "libsnappy", "libgflags"):
        assert lib in linked, (lib, linked)
    assert "librocksdb" not in linked  # RocksDB is compiled in, not Debian's shared library


@pytest.mark.timeout(3600)
def test_the_build_runs_the_suite_beside_debians(built: Build, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "sources").symlink_to(CACHE / "sources")
    (ws / "builds").symlink_to(CACHE / "builds")
    study = tmp_path / "rxb.toml"
    study.write_text(STUDY.format(workspace=ws, version=VERSION))
    dbsweep("run", study, timeout=1800)
    db = sqlite3.connect(ws / "results.db")
    rows = db.execute(
        "SELECT t.name, c.step, c.status, s.summary FROM cells c JOIN targets t ON t.id = c.target_id "
        "LEFT JOIN step_results s ON s.cell_id = c.id"
    ).fetchall()
    db.close()
    assert rows and all(status == "done" for _, _, status, _ in rows), rows
    summaries = {(t, st): json.loads(s) for t, st, _, s in rows}
    # Debian's db_bench warns that its assertions are on; the release build does not.
    assert summaries[("system", "readrandom")]["assertions"] is True
    assert summaries[("built", "readrandom")]["assertions"] is False
    assert "--cache_type=hyper_clock_cache" in summaries[("built", "readrandom")]["command"]
    assert "--compression_type=lz4" in summaries[("built", "fillseq")]["command"]


OLD = """\
name = "rx6"
engine = "rocksdb"
base = "6.11.4"
workspace = "{workspace}"

[suite]
name = "dbbench"
steps = ["fillseq", "overwritesome", "readwhilewriting", "overwriteandwait"]
keys = 50000
read_seconds = 2
write_seconds = 2
cache_mb = 64

[[targets]]
name = "6.11.4"
source = "crate:librocksdb-sys@6.11.4"
variant = "def"
config = "lru"
"""


@pytest.mark.timeout(3600)
def test_an_old_db_bench_runs_the_method_as_far_as_it_goes(tmp_path: Path) -> None:
    engine = engine_named("rocksdb")
    CACHE.mkdir(parents=True, exist_ok=True)
    tree = sources.resolve("crate:librocksdb-sys@6.11.4", CACHE / "sources", naming=engine.naming)
    old = cache.build(engine.recipe(), tree, variants.builtin("def"), CACHE / "builds")
    assert old.install.short_version == "6.11.4"  # 6.x answers --version with its name alone: the tree's
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "sources").symlink_to(CACHE / "sources")
    (ws / "builds").symlink_to(CACHE / "builds")
    study = tmp_path / "rx6.toml"
    study.write_text(OLD.format(workspace=ws))
    dbsweep("run", study, timeout=1800)
    db = sqlite3.connect(ws / "results.db")
    rows = db.execute("SELECT c.step, c.status, s.summary FROM cells c LEFT JOIN step_results s ON s.cell_id = c.id")
    summaries = {st: (status, json.loads(s or "{}")) for st, status, s in rows.fetchall()}
    db.close()
    assert all(status == "done" for status, _ in summaries.values()), summaries
    ow = summaries["overwriteandwait"][1]
    assert ow["lacks"] == ["waitforcompaction"] and "--benchmarks=overwrite,stats" in ow["command"]
    before = summaries["readwhilewriting"][1]["maintenance_before"]
    assert set(before["flush_mt_l0_lacks"].split(",")) == {"flush", "waitforcompaction", "compact0", "memstats"}
    assert before["flush_mt_l0_ran"] == "levelstats,levelstats"
    assert not any(a.startswith("--cache_type") for a in ow["command"])  # 6.11.4 has one cache, LRU, no flag
    md = dbsweep("report", study, "--format", "markdown").stdout
    assert "overwriteandwait ran without waitforcompaction" in " ".join(md.split())
