"""MariaDB behind the engine boundary: Debian's packages and names, the CMake build recipe, my.cnf config
diffs, the server's lifecycle (one process, threads), and its statistics (InnoDB's and MyRocks's)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from dbsweep.build.recipe import Recipe
from dbsweep.configdiff import ConfigDiff, Setting
from dbsweep.engines import base
from dbsweep.engines.mariadb import config, source
from dbsweep.engines.mariadb import install as installs
from dbsweep.engines.mariadb.install import Install
from dbsweep.engines.mariadb.instance import DB_NAME, DB_USER, Server, relevant_log_lines, stop_stale
from dbsweep.sources import Naming

__all__ = [
    "DB_NAME",
    "DB_USER",
    "Install",
    "Mariadb",
    "Server",
    "relevant_log_lines",
    "stop_stale",
]


class Mariadb(base.Engine):
    name: ClassVar[str] = "mariadb"
    title: ClassVar[str] = "MariaDB"
    kind: ClassVar[base.Kind] = "server"
    # Measured here (2 vCPUs, Debian's 10.11): mariadb-install-db 1 to 3 s (it allocates the redo log) and a
    # start under a second; under valgrind (callgrind, per thread) a start takes 6 to 10 s with cz12a's 8 GB
    # buffer pool and a clean stop 2 to 5 s, five runs a counted step, and a counted step of a source build 76 to
    # 92 s in all (10.5.23, set32, 100k rows); a cold def build on both cores, nothing beside it, took 1,371 s
    # (10.5.23), 1,512 s (10.11.18) and 1,592 s (11.8.6); 11.8.6 at o3_native_lto took 3,015 s.
    costs: ClassVar[base.Costs] = base.Costs(start_s=3.0, valgrind_starts_s=55.0, build_s=1600.0, lto_build_s=3000.0)
    instance_type: ClassVar[type[base.Instance]] = Server
    install_type: ClassVar[type[Install]] = Install  # another member of the family (MySQL) has its own
    source_forms: ClassVar[str] = (
        "use 'system' or 'system:10.11' (Debian's prebuilt MariaDB), a version such as '10.11.19' or "
        "'debian:10.11.19' (Debian's source package), 'git:URL_OR_PATH@REF', 'tarball:PATH_OR_URL' or 'dir:PATH'"
    )
    config_suffix: ClassVar[str] = ".cnf"

    # ---- sources, builds and installs

    @property
    def naming(self) -> Naming:
        return source.NAMING

    def recipe(self) -> Recipe:
        from dbsweep.engines.mariadb.build import RECIPE

        return RECIPE

    def system_versions(self) -> list[str]:
        return installs.system_versions()

    def system_install(self, spec: str) -> base.Install:
        return installs.system_install(spec)

    # ---- configs

    def parse_config(self, lines: list[tuple[str, str]]) -> tuple[Setting, ...]:
        return config.parse(lines)

    def include_target(self, line: str) -> str | None:
        return config.include_target(line)

    def known_settings(self, install: base.Install) -> set[str]:
        return installs.known_settings(install)

    unsafe_settings: ClassVar[Mapping[str, str]] = config.UNSAFE

    def unsafe_name(self, name: str) -> str:
        return config.canonical(name).removeprefix(config.LOOSE)

    def unsafe_entry(self, setting: Setting) -> str | None:
        return config.unsafe_entry(setting)

    def fit_to_install(self, diff: ConfigDiff, install: base.Install, optional: set[str]) -> tuple[str, list[str]]:
        known = self.known_settings(install)
        return config.fit_to_version(diff, known, install.short_version, optional, title=self.title)

    def check_values(self, diff: ConfigDiff, install: base.Install, text: str) -> list[str]:
        """The config read by the install's mariadbd with `--verbose --help`, which exits without starting
        (`values`)."""
        from dbsweep.engines.mariadb import values

        if not isinstance(install, Install):
            return []
        return values.check(diff, install, text)

    def connection_limit(self, diff: ConfigDiff) -> tuple[int, str] | None:
        return config.connection_limit(diff, title=self.title)

    connection_task: ClassVar[str] = "a server thread"

    # ---- instances

    def server_user(self) -> str | None:
        return installs.server_user()

    def instance(
        self,
        install: base.Install,
        home: Path,
        config_name: str,
        config_text: str,
        user: str | None,
        wrapper: list[str] | None = None,
    ) -> base.Instance:
        if not isinstance(install, self.install_type) or not issubclass(self.instance_type, Server):
            raise TypeError(f"not a {self.title} install: {install!r}")
        return self.instance_type(install, home, config_name, config_text, user=user, wrapper=wrapper)

    def stop_stale(self, datadir: Path) -> None:
        stop_stale(datadir)

    def storage_bytes(self, diff: ConfigDiff | None, table_bytes: int) -> int:
        return config.storage_bytes(diff, table_bytes)
