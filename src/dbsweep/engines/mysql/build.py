"""Oracle's MySQL build recipe: CMake, as MariaDB's (`engines.mariadb.build`), with MySQL's options.

Every build gets the method's base (5.2: system OpenSSL, bundled zlib, local infile, no maintainer mode, no
Router, no X plugin, no unit tests) and leaves out what a benchmark never loads: the storage engines other than
InnoDB that can be left out (NDB, which `WITH_NDB=OFF` alone leaves built into the server; ARCHIVE, BLACKHOLE,
FEDERATED, EXAMPLE and the mock engine, which `WITH_<ENGINE>_STORAGE_ENGINE=OFF` still builds as plugins),
group replication, the LDAP, Kerberos, WebAuthn and FIDO authentication plugins, MySQL AI, systemd support and
the test suite's install. ICU, protobuf, zstd and lz4 are Debian's (their bundled copies are 800 of the
server's objects, and none of them is on a benchmark's path). An option a version does not know is a harmless
CMake warning. The build type is `RelWithDebInfo`, as MariaDB's builds and MySQL's own release binaries
(`-O2 -g`); a variant's flags replace the build type's.

Only the server is compiled (`--target mysqld`: about 1,450 objects of 9.7's 3,228 with the options above) and
installed with the files it reads (`serveronly`): dbsweep's load client speaks the protocol itself, and no
client program, library or plugin of the build is run.

What a version's tree needs:
- 8.0.33 and later carry the boost they need under `extra/boost/`.
- 5.7 and 8.0 before 8.0.33 need a boost of one exact version, which Oracle ships in its `mysql-boost-*`
  tarballs as `boost/` in the tree: `-DWITH_BOOST` points there. Without it the configure step fails with
  MySQL's own words naming the version (a build never sets `DOWNLOAD_BOOST`: it does not reach the network).

The record is CMake's cache, as for MariaDB; the probe asks `mysqld --version`. PGO's profile must hold the
server's objects (sql/, InnoDB's storage/innobase/), as MariaDB's must.

A gcc `RelWithDebInfo` build on a Debian host takes Debian's package flags (`WITH_PACKAGE_FLAGS`, on there by
default): MySQL's configure sets `CMAKE_C_FLAGS`, `CMAKE_CXX_FLAGS` and the three `CMAKE_*_LINKER_FLAGS` to what
`dpkg-buildflags` says (`-fstack-protector-strong -D_FORTIFY_SOURCE=2 ...`, `-Wl,-z,relro`), replacing what the
command line gave them. So a variant's link flags go to the build type's (`CMAKE_EXE_LINKER_FLAGS_RELWITHDEBINFO`,
which CMake adds after those, as the variant's compile flags go to `CMAKE_CXX_FLAGS_RELWITHDEBINFO`): given as
`CMAKE_EXE_LINKER_FLAGS`, BOLT's `-Wl,--emit-relocs` was dropped and `mysqld` had no relocations to rewrite. And
CMake's cache does not hold the flags a compile got, so the record keeps the server's own: the `flags.make` and
`link.txt` CMake wrote for `mysqld` (`serveronly`), the exact compile flags and link line.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from dbsweep.build.recipe import Facts, Failure, Phase, Step
from dbsweep.engines.mariadb.build import BUILD_TYPE, CACHE_RECORD, RECORD_DIR, MariadbRecipe, read_cmake_cache
from dbsweep.engines.mysql import source
from dbsweep.engines.mysql.install import Install
from dbsweep.engines.mysql.instance import Server
from dbsweep.errors import DbsweepError
from dbsweep.sources import SourceTree

OPTIONS = (
    "-DINSTALL_LAYOUT=STANDALONE",
    "-DWITH_SSL=system",
    "-DWITH_ZLIB=bundled",
    "-DMYSQL_MAINTAINER_MODE=OFF",
    "-DENABLED_LOCAL_INFILE=ON",
    "-DWITH_ROUTER=OFF",
    "-DWITH_MYSQLX=OFF",
    "-DWITH_UNIT_TESTS=OFF",
    "-DWITH_NDB=OFF",
    "-DWITH_NDBCLUSTER=OFF",
    "-DWITH_NDBCLUSTER_STORAGE_ENGINE=OFF",
    "-DWITHOUT_ARCHIVE_STORAGE_ENGINE=ON",
    "-DWITHOUT_BLACKHOLE_STORAGE_ENGINE=ON",
    "-DWITHOUT_FEDERATED_STORAGE_ENGINE=ON",
    "-DWITHOUT_EXAMPLE_STORAGE_ENGINE=ON",
    "-DWITHOUT_MOCK_STORAGE_ENGINE=ON",
    "-DWITHOUT_GROUP_REPLICATION=ON",
    "-DWITH_ICU=system",
    "-DWITH_PROTOBUF=system",
    "-DWITH_ZSTD=system",
    "-DWITH_LZ4=system",
    "-DWITH_AUTHENTICATION_LDAP=OFF",
    "-DWITH_AUTHENTICATION_KERBEROS=OFF",
    "-DWITH_AUTHENTICATION_WEBAUTHN=OFF",
    "-DWITH_FIDO=none",
    "-DWITH_MYSQL_AI=OFF",
    "-DWITH_SYSTEMD=OFF",
    "-DWITH_CURL=none",
    "-DINSTALL_MYSQLTESTDIR=",
)
# Objects a build with these options compiles, for progress until a build in this root says better.
OBJECTS_ESTIMATE = 1450
LINK_KINDS = ("EXE", "SHARED", "MODULE")
# The server's own compile flags and link line, as CMake wrote them for the `mysqld` target (`serveronly`).
FLAGS_RECORD = f"{RECORD_DIR}/mysqld-flags.make"
LINK_RECORD = f"{RECORD_DIR}/mysqld-link.txt"


class MysqlRecipe(MariadbRecipe):
    engine: ClassVar[str] = "mysql"
    title: ClassVar[str] = "MySQL"
    artefact: ClassVar[str] = "bin/mysqld"
    objects_estimate: ClassVar[int] = OBJECTS_ESTIMATE
    base_options: ClassVar[tuple[str, ...]] = OPTIONS
    install_type: ClassVar[type[Install]] = Install
    server_type: ClassVar[type[Server]] = Server

    def check_tree(self, tree: SourceTree) -> None:
        if source.is_mariadb(tree.path):
            raise DbsweepError(f'{tree.spec}: {tree.path} is MariaDB\'s source; use engine = "mariadb" for it.')
        source.tree_version(tree.path)  # raises, naming the files a MySQL tree has

    def compile(self, phase: Phase) -> list[Step]:
        return [
            Step(
                "cmake --build (mysqld)",
                ("cmake", "--build", ".", "--target", "mysqld", "--parallel", str(phase.jobs)),
                compiles=True,
            )
        ]

    def install_files(self, phase: Phase, root: Path, env: dict[str, str]) -> list[Step]:
        return [
            Step(
                "install mysqld and its share/",
                (
                    sys.executable,
                    "-m",
                    "dbsweep.engines.mysql.serveronly",
                    str(phase.build_dir),
                    str(root),
                    str(phase.prefix),
                ),
                env=env,
            )
        ]

    def cmake_command(self, phase: Phase) -> list[str]:
        # The variant's link flags as the build type's: the plain ones are Debian's package flags' (above).
        plain = tuple(f"-DCMAKE_{kind}_LINKER_FLAGS=" for kind in LINK_KINDS)
        cmd = [
            a.replace("_LINKER_FLAGS=", f"_LINKER_FLAGS_{BUILD_TYPE.upper()}=", 1) if a.startswith(plain) else a
            for a in super().cmake_command(phase)
        ]
        # A mysql-boost tarball's boost, for the versions that do not carry their own under extra/.
        shipped = phase.tree.path / "boost"
        if shipped.is_dir() and not (phase.tree.path / "extra" / "boost").is_dir():
            cmd.append(f"-DWITH_BOOST={shipped}")
        return cmd

    def probe(self, install_dir: Path) -> dict[str, Any]:
        record = super().probe(install_dir)
        kind = BUILD_TYPE.upper()
        record["cmake_cache"] |= _cache_entries(install_dir, [f"CMAKE_{k}_LINKER_FLAGS_{kind}" for k in LINK_KINDS])
        flags, link = install_dir / FLAGS_RECORD, install_dir / LINK_RECORD
        if flags.is_file() and link.is_file():
            record["mysqld_flags"] = compile_flags(flags.read_text(errors="replace"))
            record["mysqld_link"] = link.read_text(errors="replace").strip()
        return record

    def facts(self, record: Mapping[str, Any]) -> Facts:
        """The server's own compile flags and link flags where the build kept them, else CMake's cache's."""
        facts = super().facts(record)
        if "mysqld_flags" not in record:
            return facts
        cflags = record["mysqld_flags"]
        return Facts(facts.version, facts.cc, cflags, link_flags(record["mysqld_link"], cflags), facts.configure)

    def explain(self, failure: Failure) -> str:
        if failure.step.what == "cmake" and "DOWNLOAD_BOOST" in failure.tail:
            return (
                " This MySQL needs a boost of one exact version beside its tree: build from Oracle's mysql-boost "
                "tarball of this version, which has it under boost/."
            )
        return super().explain(failure)


def _cache_entries(install_dir: Path, names: list[str]) -> dict[str, str]:
    cache = read_cmake_cache(install_dir / CACHE_RECORD)
    return {n: cache.get(n, "") for n in names}


def compile_flags(flags_make: str) -> str:
    """`CXX_FLAGS = ...` of a CMake target's flags.make: what each C++ compile of the target got."""
    for line in flags_make.splitlines():
        name, sep, value = line.partition("=")
        if sep and name.strip() == "CXX_FLAGS":
            return " ".join(value.split())
    return ""


def link_flags(link_line: str, cflags: str) -> str:
    """The flags of a CMake link line (compiler, flags, objects, `-o`, libraries) that are not compile flags."""
    compile_ = set(cflags.split())
    out: list[str] = []
    for arg in shlex.split(link_line)[1:]:
        if arg == "-o" or not arg.startswith("-"):
            break
        if arg not in compile_ and arg not in out:
            out.append(arg)
    return " ".join(out)


RECIPE = MysqlRecipe()
