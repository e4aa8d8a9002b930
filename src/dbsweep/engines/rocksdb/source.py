"""Where RocksDB's source comes from, as `dbsweep.sources` asks an engine: Debian's one source package
`rocksdb` (6.11 in bullseye, 7.8 in bookworm, 9.10 in trixie, 9.11 in forky), the version an unpacked tree
declares (`include/rocksdb/version.h`), and what its make writes into a tree built in place."""

from __future__ import annotations

import re
from pathlib import Path

from dbsweep.errors import DbsweepError
from dbsweep.sources import BuildProducts, Naming

DEBIAN_PACKAGE = "rocksdb"
# The majors `dbsweep sources` lists.
DEBIAN_MAJORS = range(5, 12)
# An upstream version (9.11.2) or a Debian one (9.11.2-1, 7.8.3-2+b1).
_VERSION = re.compile(r"(?:\d+:)?(\d+)\.(\d+)(?:\.(\d+))?(?:[-+~][A-Za-z0-9.+~-]*)?")
_DEFINE = re.compile(r"^#define\s+ROCKSDB_(MAJOR|MINOR|PATCH)\s+(\d+)\s*$", re.MULTILINE)

BUILD_PRODUCTS = BuildProducts(
    dirs=frozenset({"CMakeFiles", "jls", "jl"}),
    names=frozenset(
        {
            "db_bench",
            "librocksdb.a",
            "librocksdb_debug.a",
            "make_config.mk",
            "CMakeCache.txt",
            "cmake_install.cmake",
            "compile_commands.json",
        }
    ),
    paths=frozenset({"util/build_version.cc"}),
)


def release_of(version: str) -> tuple[int, int, int]:
    """(major, minor, patch) of an upstream version (9.11.2) or a Debian one (9.11.2-1)."""
    m = _VERSION.fullmatch(version.strip())
    if not m:
        raise DbsweepError(f"{version!r} is not a RocksDB version (e.g. 9.11.2, or a Debian version 9.11.2-1).")
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def major_of(version: str) -> int:
    return release_of(version)[0]


def debian_package(version: str) -> str:
    """Debian carries every RocksDB version in the one source package `rocksdb`."""
    release_of(version)
    return DEBIAN_PACKAGE


def debian_major(package: str) -> int | None:
    """A placeholder for `rocksdb`, which carries several majors (`version_major` reads each version's); None
    for other packages whose names start alike."""
    return DEBIAN_MAJORS.start if package == DEBIAN_PACKAGE else None


def tree_version(tree: Path) -> str:
    """The version a RocksDB tree declares in `include/rocksdb/version.h`, e.g. "9.11.2"."""
    header = tree / "include" / "rocksdb" / "version.h"
    parts: dict[str, str] = {}
    if header.is_file():
        parts = {k: v for k, v in _DEFINE.findall(header.read_text(errors="replace"))}
    if set(parts) != {"MAJOR", "MINOR", "PATCH"} or not (tree / "Makefile").is_file():
        raise DbsweepError(
            f"{tree} does not look like a RocksDB source tree: no include/rocksdb/version.h defining "
            "ROCKSDB_MAJOR, _MINOR and _PATCH beside a Makefile."
        )
    return f"{parts['MAJOR']}.{parts['MINOR']}.{parts['PATCH']}"


NAMING = Naming(
    title="RocksDB",
    debian_prefix=DEBIAN_PACKAGE,
    debian_package=debian_package,
    debian_major=debian_major,
    debian_majors=DEBIAN_MAJORS,
    tree_version=tree_version,
    build_products=BUILD_PRODUCTS,
    version_major=major_of,
)
