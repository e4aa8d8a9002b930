"""Postgres behind the engine boundary: installs and Debian names, the build recipe, config diffs, the
server's lifecycle, and its statistics."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from dbsweep.build.recipe import Recipe
from dbsweep.configdiff import ConfigDiff, Setting, quoted_include
from dbsweep.engines import base
from dbsweep.engines.postgres import config, source
from dbsweep.engines.postgres.install import (
    SYSTEM_ROOT,
    Install,
    known_settings,
    pg_config,
    server_user,
    system_install,
    system_majors,
)
from dbsweep.engines.postgres.instance import (
    DB_NAME,
    DB_USER,
    Server,
    relevant_log_lines,
    stop_stale,
)
from dbsweep.sources import Naming

__all__ = [
    "DB_NAME",
    "DB_USER",
    "SYSTEM_ROOT",
    "Install",
    "Postgres",
    "Server",
    "known_settings",
    "pg_config",
    "relevant_log_lines",
    "server_user",
    "stop_stale",
    "system_install",
    "system_majors",
]


class Postgres(base.Engine):
    name: ClassVar[str] = "postgres"
    title: ClassVar[str] = "Postgres"
    kind: ClassVar[base.Kind] = "server"
    instance_type: ClassVar[type[base.Instance]] = Server
    source_forms: ClassVar[str] = (
        "use 'system' or 'system:15' (Debian's prebuilt Postgres), a version such as '15.18' or 'debian:15.18' "
        "(Debian's source package), 'git:URL_OR_PATH@REF', 'tarball:PATH_OR_URL' or 'dir:PATH'"
    )

    # ---- sources, builds and installs

    @property
    def naming(self) -> Naming:
        return source.NAMING

    def recipe(self) -> Recipe:
        from dbsweep.engines.postgres.build import RECIPE

        return RECIPE

    def system_versions(self) -> list[str]:
        return system_majors()

    def system_install(self, spec: str) -> base.Install:
        return system_install(spec)

    # ---- configs

    def parse_config(self, lines: list[tuple[str, str]]) -> tuple[Setting, ...]:
        return config.parse(lines)

    def include_target(self, line: str) -> str | None:
        return quoted_include(line)

    def known_settings(self, install: base.Install) -> set[str]:
        return known_settings(install)

    unsafe_settings: ClassVar[Mapping[str, str]] = config.UNSAFE

    def unsafe_entry(self, setting: Setting) -> str | None:
        return config.unsafe_entry(setting)

    def fit_to_install(self, diff: ConfigDiff, install: base.Install, optional: set[str]) -> tuple[str, list[str]]:
        return config.fit_to_version(diff, self.known_settings(install), install.short_version, optional)

    def check_values(self, diff: ConfigDiff, install: base.Install, text: str) -> list[str]:
        """The config read by the install's `postgres -C`, which checks every value and exits (`values`)."""
        from dbsweep.engines.postgres import values

        return values.check(diff, install, text)

    def connection_limit(self, diff: ConfigDiff) -> tuple[int, str] | None:
        return config.connection_limit(diff)

    connection_task: ClassVar[str] = "a backend process"

    # ---- instances

    def server_user(self) -> str | None:
        return server_user()

    def instance(
        self,
        install: base.Install,
        home: Path,
        config_name: str,
        config_text: str,
        user: str | None,
        wrapper: list[str] | None = None,
    ) -> base.Instance:
        return Server(install, home, config_name, config_text, user=user, wrapper=wrapper)

    def stop_stale(self, datadir: Path) -> None:
        stop_stale(datadir)

    def storage_bytes(self, diff: ConfigDiff | None, table_bytes: int) -> int:
        return config.storage_bytes(diff, table_bytes)

    def compile_flags(self, install: base.Install) -> str:
        """pg_config's CFLAGS and configure line, and the install's recorded provenance."""
        pgc = pg_config(install.bindir)
        parts = [pgc.get("CFLAGS", ""), pgc.get("CONFIGURE", "")]
        parts += [str(install.provenance.get(k, "")) for k in ("cflags", "configure")]
        return " ".join(p for p in parts if p)
