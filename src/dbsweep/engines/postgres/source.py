"""Where Postgres's source comes from, as `dbsweep.sources` asks an engine: its Debian source packages
(`postgresql-<major>`), the version an unpacked tree declares, and what configure, make and the regression
tests write into a tree (which a `dir:` source's identity leaves out). `NAMING` hands all of it over."""

from __future__ import annotations

import re
from pathlib import Path

from dbsweep.errors import DbsweepError
from dbsweep.sources import BuildProducts, Naming

DEBIAN_PREFIX = "postgresql-"
# The majors `dbsweep sources` lists (the Debian archives dbsweep reads carry 13 to 18 today).
DEBIAN_MAJORS = range(11, 20)
_DEBIAN_PACKAGE = re.compile(r"postgresql-(\d+)")  # not postgresql-common, postgresql-debversion, ...

BUILD_PRODUCTS = BuildProducts(
    # pg_regress's and the TAP tests' output, and the temporary installs they run on.
    dirs=frozenset({"tmp_check", "tmp_install", "results", "log", "output_iso"}),
    names=frozenset({"objfiles.txt", "regression.diffs", "regression.out", "exports.list"}),
    # What configure writes besides config.status and config.log (every autoconf build leaves those).
    paths=frozenset(
        {
            "GNUmakefile",
            "src/Makefile.global",
            "src/Makefile.port",
            "src/include/pg_config.h",
            "src/include/pg_config_ext.h",
            "src/include/pg_config_os.h",
            "src/include/stamp-h",
            "src/include/stamp-ext-h",
            "src/interfaces/ecpg/include/ecpg_config.h",
            "src/interfaces/ecpg/include/stamp-h",
            "src/port/pg_config_paths.h",
            "src/backend/utils/probes.h",
            "src/backend/snowball/snowball_create.sql",
        }
    ),
)


def major_of(version: str) -> str:
    """The major of an upstream version (15.18, 18beta1) or a Debian one (15.18-0+deb12u1, 1:15.18-1): "15"."""
    m = re.fullmatch(r"(?:\d+:)?(\d+)[A-Za-z0-9.+~:-]*", version)
    if not m:
        raise DbsweepError(f"{version!r} is not a Postgres version (e.g. 15.18, or a Debian version 15.18-0+deb12u1).")
    return m.group(1)


def debian_package(version: str) -> str:
    """The Debian source package that carries `version`: postgresql-15 for 15.18."""
    return f"{DEBIAN_PREFIX}{major_of(version)}"


def debian_major(package: str) -> int | None:
    """15 for postgresql-15; None for the other packages whose names start alike."""
    m = _DEBIAN_PACKAGE.fullmatch(package)
    return int(m.group(1)) if m else None


def tree_version(tree: Path) -> str:
    """The upstream version a Postgres source tree declares, e.g. "15.18" or "19devel"."""
    configure = tree / "configure"
    if configure.is_file():
        m = re.search(r"^PACKAGE_VERSION='([^']+)'", configure.read_text(errors="replace"), re.MULTILINE)
        if m:
            return m.group(1)
    configure_ac = tree / "configure.ac"
    if configure_ac.is_file():
        m = re.search(r"AC_INIT\(\[PostgreSQL\],\s*\[([^\]]+)\]", configure_ac.read_text(errors="replace"))
        if m:
            return m.group(1)
    raise DbsweepError(
        f"{tree} does not look like a Postgres source tree: no PACKAGE_VERSION in configure "
        "and no AC_INIT in configure.ac."
    )


NAMING = Naming(
    title="Postgres",
    debian_prefix=DEBIAN_PREFIX,
    debian_package=debian_package,
    debian_major=debian_major,
    debian_majors=DEBIAN_MAJORS,
    tree_version=tree_version,
    build_products=BUILD_PRODUCTS,
)
