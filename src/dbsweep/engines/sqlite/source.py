"""Where SQLite's source comes from, as `dbsweep.sources` asks an engine: Debian's one source package
`sqlite3` (every 3.x version), the version an unpacked tree declares (its `VERSION` file, or `sqlite3.h`
in an amalgamation tarball), and what configure and make write into a tree."""

from __future__ import annotations

import re
from pathlib import Path

from dbsweep.errors import DbsweepError
from dbsweep.sources import BuildProducts, Naming

DEBIAN_PACKAGE = "sqlite3"
_VERSION = re.compile(r"(?:\d+:)?(3)\.\d+(?:\.\d+)*(?:[-+~][A-Za-z0-9.+~-]*)?")

BUILD_PRODUCTS = BuildProducts(
    dirs=frozenset({"testdir", ".libs"}),
    # What configure and the amalgamation's make write into a tree built in place.
    names=frozenset(
        {
            "sqlite3.c",
            "sqlite3.h",
            "shell.c",
            "sqlite3ext.h",
            "parse.c",
            "parse.h",
            "opcodes.c",
            "opcodes.h",
            "keywordhash.h",
            "fts5.c",
            "fts5.h",
            "sqlite_cfg.h",
            "libtool",
            "sqlite3.pc",
            "tsrc",
            "lemon",
            "mkkeywordhash",
            "jimsh0",
            "mksourceid",
        }
    ),
    paths=frozenset({"Makefile", "config.h"}),
)


def major_of(version: str) -> str:
    """ "3" for 3.46.1 or a Debian version 3.46.1-1; an error for anything else."""
    m = _VERSION.fullmatch(version.strip())
    if not m:
        raise DbsweepError(f"{version!r} is not an SQLite version (e.g. 3.46.1, or a Debian version 3.46.1-1).")
    return m.group(1)


def debian_package(version: str) -> str:
    """Debian carries every SQLite 3 version in the one source package `sqlite3`."""
    major_of(version)
    return DEBIAN_PACKAGE


def debian_major(package: str) -> int | None:
    return 3 if package == DEBIAN_PACKAGE else None  # not sqlite3-pcre and the like


def tree_version(tree: Path) -> str:
    """The version an SQLite source tree declares: `VERSION` in the canonical tree, `SQLITE_VERSION` in
    `sqlite3.h` of an amalgamation."""
    version_file = tree / "VERSION"
    if version_file.is_file():
        text = version_file.read_text(errors="replace").strip()
        if re.fullmatch(r"3\.\d+\.\d+", text):
            return text
    header = tree / "sqlite3.h"
    if header.is_file():
        m = re.search(r'^#define SQLITE_VERSION\s+"([^"]+)"', header.read_text(errors="replace"), re.MULTILINE)
        if m:
            return m.group(1)
    raise DbsweepError(
        f"{tree} does not look like an SQLite source tree: no VERSION file and no SQLITE_VERSION in sqlite3.h."
    )


NAMING = Naming(
    title="SQLite",
    debian_prefix=DEBIAN_PACKAGE,
    debian_package=debian_package,
    debian_major=debian_major,
    debian_majors=range(3, 4),
    tree_version=tree_version,
    build_products=BUILD_PRODUCTS,
)
