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
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import ClassVar

from dbsweep.build.recipe import Failure, Phase, Step
from dbsweep.engines.mariadb.build import MariadbRecipe
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
        cmd = super().cmake_command(phase)
        # A mysql-boost tarball's boost, for the versions that do not carry their own under extra/.
        shipped = phase.tree.path / "boost"
        if shipped.is_dir() and not (phase.tree.path / "extra" / "boost").is_dir():
            cmd.append(f"-DWITH_BOOST={shipped}")
        return cmd

    def explain(self, failure: Failure) -> str:
        if failure.step.what == "cmake" and "DOWNLOAD_BOOST" in failure.tail:
            return (
                " This MySQL needs a boost of one exact version beside its tree: build from Oracle's mysql-boost "
                "tarball of this version, which has it under boost/."
            )
        return super().explain(failure)


RECIPE = MysqlRecipe()
