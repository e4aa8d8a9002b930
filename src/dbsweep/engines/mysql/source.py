"""Where Oracle's MySQL source comes from, as `dbsweep.sources` asks an engine: its Debian source packages, the
version an unpacked tree declares (its `MYSQL_VERSION` file, `VERSION` before 8.0.28), and what CMake writes
into a tree. `NAMING` hands all of it over.

Debian names each MySQL release series' source package after it: `mysql-5.7`, `mysql-8.0`, `mysql-8.4`,
`mysql-9.7` (unstable carries 9.7 today, the only one the archive still serves). Its `.orig` tarball is
Oracle's own, with the bundled boost of the versions that need one. A package's versions carry no epoch
(`9.7.4-1`).
"""

from __future__ import annotations

import re
from pathlib import Path

from dbsweep.engines.mariadb.source import BUILD_PRODUCTS as MARIADB_PRODUCTS
from dbsweep.engines.mariadb.source import declared_version
from dbsweep.errors import DbsweepError
from dbsweep.sources import BuildProducts, Naming

DEBIAN_PREFIX = "mysql"
# The majors `dbsweep sources` lists: 5.7's to 9.x's packages.
DEBIAN_MAJORS = range(5, 10)
_DEBIAN_PACKAGE = re.compile(r"mysql-(\d+)\.(\d+)")  # not mysql-connector-*, mysql-workbench, mysql-defaults
_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.\d+)?(?:[-+~][A-Za-z0-9.+~-]*)?")

# CMake's products as MariaDB's, with the headers and sources MySQL generates in place.
BUILD_PRODUCTS = BuildProducts(
    dirs=MARIADB_PRODUCTS.dirs,
    names=MARIADB_PRODUCTS.names,
    paths=MARIADB_PRODUCTS.paths
    | frozenset(
        {
            "include/mysqld_error.h",
            "include/mysqlclient_ername.h",
            "include/mysqld_errmsg.h",
            "sql/sql_yacc.cc",
            "sql/sql_yacc.h",
            "sql/sql_hints.yy.cc",
            "sql/sql_hints.yy.h",
            "share/messages_to_clients.txt",
            "share/messages_to_error_log.txt",
        }
    ),
)


def series_of(version: str) -> tuple[int, int]:
    """The release series of an upstream version (9.7.4, 8.0.36) or a Debian one (9.7.4-1)."""
    m = _VERSION.fullmatch(version.strip())
    if not m:
        raise DbsweepError(f"{version!r} is not a MySQL version (e.g. 9.7.4, or a Debian version 9.7.4-1).")
    return int(m.group(1)), int(m.group(2))


def debian_package(version: str) -> str:
    """The Debian source package that carries `version`: mysql-9.7 for 9.7.4, mysql-8.0 for 8.0.36."""
    major, minor = series_of(version)
    return f"{DEBIAN_PREFIX}-{major}.{minor}"


def debian_major(package: str) -> int | None:
    """9 for mysql-9.7; None for the other packages whose names start alike (the connectors, workbench, ...)."""
    m = _DEBIAN_PACKAGE.fullmatch(package)
    return int(m.group(1)) if m else None


def tree_version(tree: Path) -> str:
    """The upstream version a MySQL source tree declares, e.g. "9.7.4": in `MYSQL_VERSION` (8.0.28 and later)
    or `VERSION` (before)."""
    return declared_version(tree, ("MYSQL_VERSION", "VERSION"), "MySQL")


def is_mariadb(tree: Path) -> bool:
    """A MariaDB tree declares itself in its CMakeLists.txt; MySQL's recipe must not build one by mistake."""
    try:
        return "MariaDB" in (tree / "CMakeLists.txt").read_text(errors="replace")[:20000]
    except OSError:
        return False


NAMING = Naming(
    title="MySQL",
    debian_prefix=DEBIAN_PREFIX,
    debian_package=debian_package,
    debian_major=debian_major,
    debian_majors=DEBIAN_MAJORS,
    tree_version=tree_version,
    build_products=BUILD_PRODUCTS,
    version_major=None,
)
