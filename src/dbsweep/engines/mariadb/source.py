"""Where MariaDB's source comes from, as `dbsweep.sources` asks an engine: its Debian source packages, the
version an unpacked tree declares (its `VERSION` file), and what CMake, make and the test suite write into a
tree (which a `dir:` source's identity leaves out). `NAMING` hands all of it over.

Debian named its MariaDB source packages after the release series up to 10.5 (`mariadb-10.5` in bullseye)
and carries later ones in the one package `mariadb` (10.11 in bookworm, 11.8 in trixie and forky), so the
unversioned package's major is read from each of its versions. Both carry the epoch 1 (`1:10.11.19-0+deb12u1`).
"""

from __future__ import annotations

import re
from pathlib import Path

from dbsweep.errors import DbsweepError
from dbsweep.sources import BuildProducts, Naming

DEBIAN_PREFIX = "mariadb"
UNVERSIONED = "mariadb"
# The last release series Debian packaged under a versioned name (mariadb-10.5).
LAST_VERSIONED = (10, 5)
# The majors `dbsweep sources` lists: 10.x and 11.x today, 12.x when Debian has it.
DEBIAN_MAJORS = range(10, 13)
_DEBIAN_PACKAGE = re.compile(r"mariadb(?:-(\d+)\.(\d+))?")  # not mariadb-connector-c, mariadb-mysql-kbs, ...
# An upstream version (10.11.19, 11.8.3, 11.0.1-rc) or a Debian one (1:10.11.19-0+deb12u1).
_VERSION = re.compile(r"(?:\d+:)?(\d+)\.(\d+)(?:\.\d+)?(?:[-+~][A-Za-z0-9.+~-]*)?")

BUILD_PRODUCTS = BuildProducts(
    # CMake's own directories, CPack's staging, and the test suite's run directory.
    dirs=frozenset({"CMakeFiles", "_CPack_Packages", "Testing", "var"}),
    names=frozenset(
        {
            "CMakeCache.txt",
            "cmake_install.cmake",
            "CTestTestfile.cmake",
            "CPackConfig.cmake",
            "CPackSourceConfig.cmake",
            "install_manifest.txt",
            "compile_commands.json",
            "Makefile",
            "build.ninja",
            ".ninja_log",
            ".ninja_deps",
            "DartConfiguration.tcl",
        }
    ),
    # What configuring writes beside the sources in an in-tree build: generated headers and scripts.
    paths=frozenset(
        {
            "include/config.h",
            "include/my_config.h",
            "include/mysql_version.h",
            "include/mariadb_capi_rename.h",
            "include/mysqld_error.h",
            "include/mysqld_ername.h",
            "include/mysqld_ername.h.tmp",
            "include/sql_state.h",
            "include/source_revision.h",
            "include/probes_mysql_dtrace.h",
            "include/probes_mysql_nodtrace.h",
            "sql/lex_hash.h",
            "sql/lex_token.h",
            "sql/yy_mariadb.cc",
            "sql/yy_mariadb.hh",
            "sql/yy_oracle.cc",
            "sql/yy_oracle.hh",
            "sql/sql_yacc.cc",
            "sql/sql_yacc.hh",
            "sql/sql_builtin.cc",
            "sql/share/errmsg.sys",
            "libmysqld/libmysqld_exports_file.cc",
            "scripts/mysql_install_db",
            "scripts/mariadb-install-db",
            "scripts/mysqld_safe",
            "scripts/mysql_config",
            "scripts/mysql_fix_privilege_tables.sql",
            "scripts/mysql_fix_privilege_tables_sql.c",
            "support-files/my-huge.cnf",
            "support-files/mysql.server",
            "support-files/mysqld_multi.server",
        }
    ),
)


def series_of(version: str) -> tuple[int, int]:
    """The release series of an upstream version (10.11.19, 11.8.3) or a Debian one (1:10.11.19-0+deb12u1)."""
    m = _VERSION.fullmatch(version.strip())
    if not m:
        raise DbsweepError(
            f"{version!r} is not a MariaDB version (e.g. 10.11.19, or a Debian version 1:10.11.19-0+deb12u1)."
        )
    return int(m.group(1)), int(m.group(2))


def major_of(version: str) -> int:
    """10 for 10.11.19, 11 for 1:11.8.3-1: the leading number, as the build cache's `major_version` reads it."""
    return series_of(version)[0]


def debian_package(version: str) -> str:
    """The Debian source package that carries `version`: mariadb-10.5 for 10.5.29, mariadb for 10.11.19."""
    major, minor = series_of(version)
    return f"{DEBIAN_PREFIX}-{major}.{minor}" if (major, minor) <= LAST_VERSIONED else UNVERSIONED


def debian_major(package: str) -> int | None:
    """10 for mariadb-10.5; for `mariadb`, which carries several majors, a placeholder (`version_major` reads
    each version's); None for the other packages whose names start alike (the connectors, ...)."""
    m = _DEBIAN_PACKAGE.fullmatch(package)
    if not m:
        return None
    return int(m.group(1)) if m.group(1) else DEBIAN_MAJORS.start


def tree_version(tree: Path) -> str:
    """The upstream version a MariaDB source tree declares in its `VERSION` file, e.g. "10.11.19"."""
    return declared_version(tree, ("VERSION",), "MariaDB")


def declared_version(tree: Path, files: tuple[str, ...], title: str) -> str:
    """The version a tree of the MySQL family declares as MYSQL_VERSION_MAJOR/_MINOR/_PATCH (and _EXTRA) lines,
    in the first of `files` it has, beside a CMakeLists.txt."""
    fields: dict[str, str] = {}
    found = next((tree / f for f in files if (tree / f).is_file()), None)
    if found is not None:
        for line in found.read_text(errors="replace").splitlines():
            key, sep, value = line.partition("=")
            if sep:
                fields[key.strip()] = value.strip()
    parts = [fields.get(f"MYSQL_VERSION_{k}", "") for k in ("MAJOR", "MINOR", "PATCH")]
    if not all(p.isdigit() for p in parts) or not (tree / "CMakeLists.txt").is_file():
        named = " (or ".join(files) + ")" * (len(files) - 1)
        raise DbsweepError(
            f"{tree} does not look like a {title} source tree: no {named} file with MYSQL_VERSION_MAJOR, "
            "_MINOR and _PATCH beside a CMakeLists.txt."
        )
    return ".".join(parts) + fields.get("MYSQL_VERSION_EXTRA", "")


NAMING = Naming(
    title="MariaDB",
    debian_prefix=DEBIAN_PREFIX,
    debian_package=debian_package,
    debian_major=debian_major,
    debian_majors=DEBIAN_MAJORS,
    tree_version=tree_version,
    build_products=BUILD_PRODUCTS,
    version_major=major_of,
)
