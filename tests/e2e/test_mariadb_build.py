"""MariaDB built from Debian's source package (10.11.18, def): the build holds what benchmarks load and not what
they never do, records CMake's cache and command, and serves the load client with both shipped configs (InnoDB,
and MyRocks through the plugin it built).

A cold MariaDB build takes about an hour on two cores, more than the default test run may spend: these tests run
with DBSWEEP_SLOW_TESTS=1. The source and the build live in the test cache (DBSWEEP_TEST_CACHE, default
/var/tmp/dbsweep-test-cache), so only the first run on a machine compiles.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dbsweep import configs, loadclient
from dbsweep.build import cache, variants
from dbsweep.build.cache import Build
from dbsweep.engines.mariadb import Server
from dbsweep.engines.registry import engine_named
from dbsweep.sources import debian
from dbsweep.suites.sysbench import Sysbench, SysbenchSettings

from ..conftest import Recorder

CACHE = Path(os.environ.get("DBSWEEP_TEST_CACHE", "/var/tmp/dbsweep-test-cache"))
VERSION = "10.11.18"
SLOW = os.environ.get("DBSWEEP_SLOW_TESTS") == "1"

pytestmark = [
    pytest.mark.server,
    pytest.mark.skipif(not SLOW, reason="a MariaDB build from source (about an hour cold): set DBSWEEP_SLOW_TESTS=1"),
]


@pytest.fixture(scope="module")
def built() -> Build:
    engine = engine_named("mariadb")
    CACHE.mkdir(parents=True, exist_ok=True)
    CACHE.chmod(0o755)  # the server user runs the install from below here
    tree = debian.resolve_debian(VERSION, VERSION, CACHE / "sources", naming=engine.naming)
    rec = Recorder()
    b = cache.build(
        engine.recipe(), tree, variants.builtin("def"), CACHE / "builds", log=rec.log, progress=rec.on_progress
    )
    return b


@pytest.mark.timeout(3 * 3600)
def test_the_build_holds_what_benchmarks_load_and_records_its_cmake(built: Build) -> None:
    assert built.install.short_version == VERSION
    assert built.build_seconds > 0
    prefix = built.install_dir
    plugins = prefix / "lib" / "plugin"
    assert (plugins / "ha_rocksdb.so").is_file()  # MyRocks, as a plugin the MyRocks config loads
    for never in ("ha_mroonga.so", "ha_spider.so", "ha_connect.so", "ha_oqgraph.so", "ha_s3.so"):
        assert not (plugins / never).exists(), never
    assert not (prefix / "mysql-test").exists() and not (prefix / "lib" / "libmariadbd.so").exists()
    record = built.metadata  # what the recipe's probe read from the install (CMake's cache) and recorded
    assert record["cmake_cache"]["CMAKE_BUILD_TYPE"] == "RelWithDebInfo"
    assert "-DPLUGIN_ROCKSDB=DYNAMIC" in record["cmake"] and "-DWITH_EMBEDDED_SERVER=OFF" in record["cmake"]
    assert f"Ver {VERSION}-MariaDB" in record["server_version"]
    assert "-O2" in built.cflags.split()  # the flags CMake compiled with, from its cache
    assert built.install.provenance["configure"] == record["cmake"]  # every result carries the cmake line


@pytest.mark.timeout(3 * 3600)
def test_both_shipped_configs_fit_the_build_and_serve_the_load_client(built: Build, tmp: Path) -> None:
    engine = engine_named("mariadb")
    suite = Sysbench(SysbenchSettings(rows=2000, read_seconds=2, warmup_seconds=0))
    for name, storage in (("cz12a_c2r24", "InnoDB"), ("za4_c2r24", "ROCKSDB")):
        text, skipped = engine.fit_config(configs.load("mariadb", name), built.install, set())
        assert skipped == [], (name, skipped)
        instance = engine.instance(built.install, tmp / name, "test", text, engine.server_user())
        assert isinstance(instance, Server)
        instance.init()
        try:
            instance.start()
            version, default = instance._query("SELECT @@version, @@default_storage_engine")[0]
            assert str(version).startswith(VERSION) and str(default).upper() == storage.upper()
            conn = loadclient.connection_to(instance)
            loadclient.run(suite.command("load", 1), conn, tmp / f"{name}-load.log")
            point = suite.command("point-query_range=100", 1)
            out = loadclient.run(point, conn, tmp / f"{name}-point.log").result.flat()
            assert out["error_count"] == 0 and out["events"] > 0
            (engine_of,) = instance._query("SELECT engine FROM information_schema.tables WHERE table_name = 'sbtest1'")
            assert str(engine_of[0]).upper() == storage.upper()
        finally:
            instance.remove()
