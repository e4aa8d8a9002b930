"""Debian's source packages, against real apt: fetch, identity, the cached lists, checksums.

The Debian tests fetch into a cache that persists across runs on one machine
(DBSWEEP_TEST_CACHE), so only the first run downloads.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import time
from pathlib import Path

import pytest

from dbsweep.engines.postgres.source import NAMING
from dbsweep.errors import DbsweepError
from dbsweep.sources.debian import available, compare_versions, verify_dsc
from dbsweep.sources.localdir import content_hash

from ..sourcetrees import resolve, sha256

CACHE = Path(os.environ.get("DBSWEEP_TEST_CACHE", "/var/tmp/dbsweep-test-cache")) / "sources"
SHA256 = re.compile(r"sha256:[0-9a-f]{64}")

pytestmark = pytest.mark.server


# --- debian ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pg15() -> Path:
    """The cached Debian tree of 15.18 (fetched on the first run on a machine)."""
    return resolve("debian:15.18", CACHE).path


def test_debian_fetch_gives_upstream_tree(pg15: Path) -> None:
    tree = resolve("debian:15.18", CACHE)
    assert tree.kind == "debian"
    assert tree.path == pg15
    assert (tree.path / "configure").is_file()
    assert tree.version == "15.18"
    assert SHA256.fullmatch(tree.identity)
    assert tree.details["package"] == "postgresql-15"
    assert tree.details["debian_version"].startswith("15.18-")
    # The identity is the upstream tarball's sha256, which the download next to the tree has.
    orig = tree.path.parent / "download" / tree.details["orig"]
    assert tree.identity == f"sha256:{sha256(orig)}"
    # Only the upstream tarball is unpacked: no debian/ directory of packaging and patches.
    assert not (tree.path / "debian").exists()


def test_debian_second_resolve_is_instant_and_offline(pg15: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = resolve("debian:15.18", CACHE)
    # With no apt-get or apt-cache on PATH, any apt call would fail: the cache must answer alone.
    monkeypatch.setenv("PATH", "/nonexistent")
    for spec in ("debian:15.18", "15.18", "debian:15.18-0+deb12u1"):
        start = time.monotonic()
        again = resolve(spec, CACHE)
        assert time.monotonic() - start < 0.5
        assert (again.path, again.identity, again.version) == (first.path, first.identity, first.version)
        assert again.spec == spec


def test_available_lists_the_majors() -> None:
    found = available(CACHE, naming=NAMING)
    majors = {s.major for s in found}
    assert {13, 15, 17, 18} <= majors
    assert any(s.package == "postgresql-15" and s.upstream_version == "15.18" for s in found)
    keys = [(s.major, s.debian_version) for s in found]
    assert keys == sorted(keys, key=functools.cmp_to_key(lambda a, b: (a[0] - b[0]) or compare_versions(a[1], b[1])))
    assert all(s.suite for s in found)


def test_unknown_version_lists_what_there_is() -> None:
    with pytest.raises(DbsweepError) as e:
        resolve("debian:15.99", CACHE)
    message = str(e.value)
    assert message.startswith("no Debian source for Postgres 15.99; have: ")
    assert "15.18" in message
    assert "13." not in message  # only the versions of the major asked for

    with pytest.raises(DbsweepError) as e:
        resolve("99.1", CACHE)
    message = str(e.value)
    assert message.startswith("no Debian source for Postgres 99.1; have: ")
    assert "13." in message
    assert "15.18" in message


def test_same_upstream_tarball_has_one_identity_whatever_the_kind(pg15: Path) -> None:
    """Debian's .orig tarball given as `tarball:` is the same source, so it gets the same identity."""
    debian = resolve("debian:15.18", CACHE)
    orig = pg15.parent / "download" / debian.details["orig"]
    tarball = resolve(f"tarball:{orig}", CACHE)
    assert tarball.kind == "tarball"
    assert (tarball.identity, tarball.version) == (debian.identity, debian.version)
    assert content_hash(tarball.path) == content_hash(debian.path)


def test_dsc_checksum_mismatch_is_detected(pg15: Path, tmp_path: Path) -> None:
    download = pg15.parent / "download"
    for file in download.iterdir():
        shutil.copy(file, tmp_path / file.name)
    dsc = next(tmp_path.glob("*.dsc"))
    checksums = verify_dsc(dsc)
    assert any(name.endswith(".orig.tar.bz2") for name in checksums)

    debian_tar = next(tmp_path.glob("*.debian.tar.*"))
    with debian_tar.open("r+b") as f:  # same size, one byte changed
        first = f.read(1)
        f.seek(0)
        f.write(bytes([first[0] ^ 0xFF]))
    with pytest.raises(DbsweepError, match=f"{re.escape(debian_tar.name)} does not match"):
        verify_dsc(dsc)
