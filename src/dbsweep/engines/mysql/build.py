"""Oracle's MySQL build recipe: CMake, as MariaDB's (`engines.mariadb.build`), with MySQL's options.

Every build gets the method's base (5.2: system OpenSSL, bundled zlib, local infile, no maintainer mode, no
Router, no X plugin, no unit tests) and leaves out what a benchmark never loads: the storage engines other than
InnoDB that can be left out (ARCHIVE, BLACKHOLE, FEDERATED, EXAMPLE, NDB), the LDAP, Kerberos, WebAuthn and FIDO
authentication plugins, MySQL AI, systemd support and the test suite's install. An option a version does not
know is a harmless CMake warning. The build type is `RelWithDebInfo`, as MariaDB's builds and MySQL's own
release binaries (`-O2 -g`); a variant's flags replace the build type's.

What a version's tree needs:
- 8.0.33 and later carry the boost they need under `extra/boost/`.
- 5.7 and 8.0 before 8.0.33 need a boost of one exact version, which Oracle ships in its `mysql-boost-*`
  tarballs as `boost/` in the tree: `-DWITH_BOOST` points there. Without it the configure step fails with
  MySQL's own words naming the version (a build never sets `DOWNLOAD_BOOST`: it does not reach the network).

The record is CMake's cache, as for MariaDB; the probe asks `mysqld --version`. PGO's profile must hold the
server's objects (sql/, InnoDB's storage/innobase/), as MariaDB's must.
"""

from __future__ import annotations

from typing import ClassVar

from dbsweep.build.recipe import Failure, Phase
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
    "-DWITH_ARCHIVE_STORAGE_ENGINE=OFF",
    "-DWITH_BLACKHOLE_STORAGE_ENGINE=OFF",
    "-DWITH_FEDERATED_STORAGE_ENGINE=OFF",
    "-DWITH_EXAMPLE_STORAGE_ENGINE=OFF",
    "-DWITH_AUTHENTICATION_LDAP=OFF",
    "-DWITH_AUTHENTICATION_KERBEROS=OFF",
    "-DWITH_AUTHENTICATION_WEBAUTHN=OFF",
    "-DWITH_AUTHENTICATION_FIDO=OFF",
    "-DWITH_MYSQL_AI=OFF",
    "-DWITH_SYSTEMD=OFF",
    "-DWITH_CURL=none",
    "-DINSTALL_MYSQLTESTDIR=",
)
# Objects a build with these options compiles, for progress until a build in this root says better.
OBJECTS_ESTIMATE = 3500


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
