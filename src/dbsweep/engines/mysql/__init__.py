"""Oracle's MySQL behind the engine boundary: the MySQL family's engine (`engines.mariadb`) with MySQL's Debian
packages and names, CMake options, data directory initialisation and server binary. Configs are my.cnf diffs,
read as MariaDB's; the load client speaks one protocol to both."""

from __future__ import annotations

from typing import ClassVar

from dbsweep.build.recipe import Recipe
from dbsweep.engines import base
from dbsweep.engines.mariadb import Mariadb
from dbsweep.engines.mysql import install as installs
from dbsweep.engines.mysql import source
from dbsweep.engines.mysql.install import Install
from dbsweep.engines.mysql.instance import Server
from dbsweep.sources import Naming

__all__ = ["Install", "Mysql", "Server"]


class Mysql(Mariadb):
    name: ClassVar[str] = "mysql"
    title: ClassVar[str] = "MySQL"
    # 9.7.2's def build of mysqld alone (1,453 objects) took 2,674 s on two cores here; an LTO build about twice
    # that, as MariaDB's. A count's run starts and stops MySQL under valgrind (3-4 G instructions: an 8 GB buffer
    # pool, the data dictionary): 127-366 s a run measured beside builds, so about 60 s alone, five runs a step.
    costs: ClassVar[base.Costs] = base.Costs(start_s=3.0, valgrind_starts_s=300.0, build_s=2700.0, lto_build_s=5400.0)
    instance_type: ClassVar[type[base.Instance]] = Server
    install_type: ClassVar[type[Install]] = Install
    source_forms: ClassVar[str] = (
        "use a version such as '9.7.2' or 'debian:9.7.2' (Debian's source package), 'git:URL_OR_PATH@REF', "
        "'tarball:PATH_OR_URL' or 'dir:PATH' (there is no prebuilt MySQL here)"
    )

    @property
    def naming(self) -> Naming:
        return source.NAMING

    def recipe(self) -> Recipe:
        from dbsweep.engines.mysql.build import RECIPE

        return RECIPE

    def system_versions(self) -> list[str]:
        return installs.system_versions()

    def system_install(self, spec: str) -> base.Install:
        return installs.system_install(spec)

    def known_settings(self, install: base.Install) -> set[str]:
        return installs.known_settings(install)

    def server_user(self) -> str | None:
        return installs.server_user()
