"""Building Postgres from source for real: the build starts and answers, its provenance is pg_config's, the
second build comes from the cache, a rejected flag or a killed build leaves nothing cached, PGO.

These tests build for real. The source and the builds live in a cache that outlives
the test run (DBSWEEP_TEST_CACHE, default /var/tmp/dbsweep-test-cache), so only the
first run on a machine compiles; ccache makes a rebuild take seconds. The build is at -O0
with frame pointers (`o0_nofp`, the test's own variant): what these tests check (configure,
make, install, the provenance, the cache) is the same at every level, and -O0 builds in 247 s
here against o2_nofp's 394 s (alone, cold).
The PGO test takes two more builds and a training run: it runs with DBSWEEP_SLOW_TESTS=1.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import pytest

from dbsweep.build import cache, variants
from dbsweep.build.compiler import compiler_for
from dbsweep.build.variants import Variant
from dbsweep.engines.base import Install
from dbsweep.engines.postgres.build import CONTRIB, DEFAULT_TRAINING, RECIPE
from dbsweep.engines.registry import engine_named
from dbsweep.errors import DbsweepError
from dbsweep.sources import SourceTree

from ..conftest import Recorder

CACHE = Path(os.environ.get("DBSWEEP_TEST_CACHE", "/var/tmp/dbsweep-test-cache"))
SOURCES = CACHE / "sources" / "build-tests"
BUILDS = CACHE / "builds"
VERSION = "15.18"
DEBIAN_VERSION = "15.18-0+deb12u1"
TARBALL = f"postgresql-15_{VERSION}.orig.tar.bz2"
SLOW = os.environ.get("DBSWEEP_SLOW_TESTS") == "1"

pytestmark = pytest.mark.server


def _apt(directory: Path, *args: str) -> None:
    """apt-get with a private sources list and state, so the host's apt setup is untouched."""
    options = [
        f"-oDir::Etc::SourceList={directory / 'sources.list'}",
        "-oDir::Etc::SourceParts=/nonexistent",
        f"-oDir::State::Lists={directory / 'lists'}",
        f"-oDir::Cache={directory / 'cache'}",
    ]
    subprocess.run(["apt-get", "-q", *options, *args], check=True, capture_output=True, cwd=directory.parent)


def _fetch_tarball() -> Path:
    tarball = SOURCES / TARBALL
    if tarball.is_file():
        return tarball
    apt = SOURCES / "apt"
    for d in (apt / "lists" / "partial", apt / "cache" / "archives" / "partial"):
        d.mkdir(parents=True, exist_ok=True)
    (apt / "sources.list").write_text(
        "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
        "http://deb.debian.org/debian bookworm main\n"
    )
    _apt(apt, "update")
    _apt(apt, "source", "--download-only", f"postgresql-15={DEBIAN_VERSION}")
    assert tarball.is_file(), f"apt-get source did not leave {tarball}"
    return tarball


@pytest.fixture(scope="session")
def tree() -> SourceTree:
    """Postgres 15.18 from Debian's archive, unpacked once per machine."""
    SOURCES.mkdir(parents=True, exist_ok=True)
    for d in (CACHE, CACHE / "sources", SOURCES):
        d.chmod(0o755)  # the server user runs installs from below here
    tarball = _fetch_tarball()
    path = SOURCES / f"postgresql-{VERSION}"
    if not (path / "configure").is_file():
        with tempfile.TemporaryDirectory(dir=SOURCES) as t:
            with tarfile.open(tarball) as tf:
                tf.extractall(t, filter="tar")
            shutil.rmtree(path, ignore_errors=True)
            (Path(t) / f"postgresql-{VERSION}").rename(path)
    digest = hashlib.sha256(tarball.read_bytes()).hexdigest()
    return SourceTree(spec=f"debian:{VERSION}", kind="debian", path=path, version=VERSION, identity=f"sha256:{digest}")


@pytest.fixture(scope="session")
def o0_nofp() -> Variant:
    return Variant("o0_nofp", cflags=("-O0", "-fno-omit-frame-pointer"))


@pytest.fixture(scope="session")
def o0_nofp_build(tree: SourceTree, o0_nofp: Variant) -> cache.Build:
    rec = Recorder()
    b = cache.build(RECIPE, tree, o0_nofp, BUILDS, log=rec.log, progress=rec.on_progress)
    fractions = [f for f, _ in rec.progress]
    assert fractions == sorted(fractions), "progress never goes back"
    assert fractions[-1] == 1.0
    return b


def _answers(install: Install, home: Path) -> str:
    """The version a server of the install reports, started in `home` and removed again."""
    engine = engine_named("postgres")
    server = engine.instance(install, home, "default", "", engine.server_user())
    try:
        server.init()
        server.start()
        return server.server_version()
    finally:
        server.remove()


def test_o0_nofp_build_starts_and_answers(o0_nofp_build: cache.Build, tmp: Path) -> None:
    version = _answers(o0_nofp_build.install, tmp / "server")
    assert version.split()[0] == VERSION


def test_provenance_is_what_pg_config_reports(o0_nofp_build: cache.Build) -> None:
    b = o0_nofp_build
    prov = b.install.provenance

    def pg_config(option: str) -> str:
        return subprocess.run(
            [b.bindir / "pg_config", option], capture_output=True, text=True, check=True
        ).stdout.strip()

    assert prov["cflags"] == pg_config("--cflags") == b.cflags
    assert {"-O0", "-fno-omit-frame-pointer"} <= set(prov["cflags"].split())
    assert "-g" in prov["cflags"].split()  # --enable-debug
    assert prov["ldflags"] == pg_config("--ldflags")
    assert prov["configure"] == pg_config("--configure")
    assert "'--enable-debug'" in prov["configure"] and "'--with-lz4'" in prov["configure"]
    assert b.configure_command[0] == str(b.metadata["source"]["path"]) + "/configure"
    assert f"--prefix={b.install_dir}" in b.configure_command
    assert prov["compiler_version"].startswith("gcc ")
    assert prov["source_identity"].startswith("sha256:")
    assert b.dir.name == f"postgres-{VERSION}-o0_nofp-{b.key[:12]}"
    assert b.log_path.is_file() and "make" in b.log_path.read_text(errors="replace")
    assert b.install_bytes > 10_000_000 and b.build_seconds > 0
    for ext in CONTRIB:
        assert (b.install_dir / "share" / "extension" / f"{ext}.control").is_file()
    # psql finds the libpq of its own install (the rpath names the final directory).
    ldd = subprocess.run(["ldd", b.bindir / "psql"], capture_output=True, text=True, check=True).stdout
    assert str(b.install_dir / "lib" / "libpq.so") in ldd


def test_second_build_comes_from_the_cache(tree: SourceTree, o0_nofp: Variant, o0_nofp_build: cache.Build) -> None:
    before = (o0_nofp_build.log_path.stat().st_mtime_ns, (o0_nofp_build.dir / "build.json").stat().st_mtime_ns)
    rec = Recorder()
    again = cache.build(RECIPE, tree, o0_nofp, BUILDS, log=rec.log, progress=rec.on_progress)
    assert again == o0_nofp_build
    assert rec.messages == [f"{again.name}: cached"]  # no configure, no make
    assert (again.log_path.stat().st_mtime_ns, (again.dir / "build.json").stat().st_mtime_ns) == before
    assert cache.find(RECIPE, tree, o0_nofp, BUILDS) == again
    listed = {b.key: b.summary() for b in cache.list_builds(BUILDS, RECIPE)}
    row = listed[again.key]
    assert (row["name"], row["version"], row["variant"]) == (again.name, VERSION, "o0_nofp")
    assert row["compiler"].startswith("gcc ") and "-fno-omit-frame-pointer" in row["cflags"]
    assert row["install_bytes"] == again.install_bytes and row["build_seconds"] == again.build_seconds
    assert row["created"] == again.created
    assert not (BUILDS / f".tmp-{again.key}").exists()


def test_a_flag_the_compiler_rejects_fails_plainly_and_caches_nothing(tree: SourceTree) -> None:
    bad = Variant("bad_flag", cflags=("-O2", "-fno-such-flag"))
    key = cache.cache_key(RECIPE, tree, bad, compiler_for(bad))
    with pytest.raises(DbsweepError) as info:
        cache.build(RECIPE, tree, bad, BUILDS)
    message = str(info.value)
    assert "C compiler cannot create executables" in message
    assert "-fno-such-flag" in message
    log = BUILDS / "failed" / f"postgres-{VERSION}-bad_flag-{key[:12]}.log"
    assert str(log) in message and log.is_file()
    assert len([ln for ln in message.splitlines() if ln.startswith("    ")]) >= 10  # the log's tail
    # The cache is shared with other builds that may land meanwhile: look for this key only.
    assert not [b for b in cache.list_builds(BUILDS, RECIPE) if b.variant == "bad_flag" or b.key == key]
    assert not [p for p in BUILDS.iterdir() if p.is_dir() and key[:12] in p.name]
    assert cache.find(RECIPE, tree, bad, BUILDS) is None


def test_a_killed_build_leaves_nothing_that_looks_cached(tree: SourceTree, tmp: Path) -> None:
    root = tmp / "builds"
    killed = Variant("killed", cflags=("-O1",))
    key = cache.cache_key(RECIPE, tree, killed, compiler_for(killed))
    script = (
        "import sys; from pathlib import Path; from dbsweep.build import cache; "
        "from dbsweep.build.variants import Variant; from dbsweep.engines.postgres.build import RECIPE; "
        "from dbsweep.sources import SourceTree; "
        f"tree = SourceTree({tree.spec!r}, {tree.kind!r}, Path({str(tree.path)!r}), {tree.version!r}, "
        f"{tree.identity!r}); cache.build(RECIPE, tree, Variant('killed', cflags=('-O1',)), Path({str(root)!r}))"
    )
    proc = subprocess.Popen([sys.executable, "-c", script])
    config_log = root / f".tmp-{key}" / "build" / "config.log"
    deadline = time.monotonic() + 120
    while not config_log.is_file() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.kill()  # no chance to clean up: only the rename at the end may make a build visible
    proc.wait()
    assert config_log.is_file(), "configure never started"
    assert cache.list_builds(root, RECIPE) == []
    assert cache.find(RECIPE, tree, killed, root) is None
    assert not [p for p in root.iterdir() if not p.name.startswith(".")]


slow = pytest.mark.skipif(not SLOW, reason="set DBSWEEP_SLOW_TESTS=1: two builds and a training run")


@slow
@pytest.mark.timeout(3600)
def test_pgo_build_is_trained_and_runs(tree: SourceTree, tmp: Path) -> None:
    rec = Recorder()
    b = cache.build(RECIPE, tree, variants.builtin("pgo"), BUILDS, log=rec.log, progress=rec.on_progress)
    assert b.training == DEFAULT_TRAINING.describe() == b.install.provenance["training"]
    assert b.metadata["pgo"]["server_profile_files"] > 100
    assert not b.ccache
    cflags = b.cflags.split()
    assert "-fprofile-correction" in cflags and any(f.startswith("-fprofile-use=") for f in cflags)
    assert _answers(b.install, tmp / "server").split()[0] == VERSION
    log = b.log_path.read_text(errors="replace")
    assert "-fprofile-generate=" in log and "training: server log" in log
