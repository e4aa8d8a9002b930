"""SQLite behind the engine boundary: an embedded library the load client opens (no server), its Debian
names, the build recipe of the library and its shell, PRAGMA configs, and the database file's lifecycle."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from dbsweep.build.recipe import Recipe
from dbsweep.configdiff import ConfigDiff, Setting, quoted_include
from dbsweep.engines import base
from dbsweep.engines.sqlite import config, install, source
from dbsweep.engines.sqlite.install import Install
from dbsweep.engines.sqlite.instance import Database
from dbsweep.errors import DbsweepError
from dbsweep.sources import Naming

__all__ = ["Database", "Install", "Sqlite"]

# Bytes a database file holds per byte of table, roughly: b-tree pages are not full, and the WAL holds
# the changes of a step until the checkpoint after it (preflight's estimate).
_FILE_PER_TABLE_BYTE = 2.0


class Sqlite(base.Engine):
    name: ClassVar[str] = "sqlite"
    title: ClassVar[str] = "SQLite"
    kind: ClassVar[base.Kind] = "embedded"
    # Nothing to start; valgrind starts the client five times a step; the amalgamation compiles in 60-90 s.
    costs: ClassVar[base.Costs] = base.Costs(start_s=0.1, valgrind_starts_s=8.0, build_s=90.0, lto_build_s=150.0)
    instance_type: ClassVar[type[base.Instance]] = Database
    source_forms: ClassVar[str] = (
        "use 'system' (Debian's packaged libsqlite3), a version such as '3.46.1' or 'debian:3.46.1' "
        "(Debian's source package), 'git:URL_OR_PATH@REF', 'tarball:PATH_OR_URL' or 'dir:PATH'"
    )

    @property
    def naming(self) -> Naming:
        return source.NAMING

    def recipe(self) -> Recipe:
        from dbsweep.engines.sqlite.build import RECIPE

        return RECIPE

    def system_versions(self) -> list[str]:
        return install.system_versions()

    def system_install(self, spec: str) -> base.Install:
        return install.system_install(spec)

    # ---- configs

    def parse_config(self, lines: list[tuple[str, str]]) -> tuple[Setting, ...]:
        return config.parse(lines)

    def include_target(self, line: str) -> str | None:
        return quoted_include(line)

    def known_settings(self, install: base.Install) -> set[str]:
        """The pragmas the library knows (`PRAGMA pragma_list`, through its own shell)."""
        import subprocess

        shell = install.bin("sqlite3")
        r = subprocess.run(
            [shell, "-batch", ":memory:", "PRAGMA pragma_list;"], capture_output=True, text=True, check=False
        )
        if r.returncode != 0 or not r.stdout.strip():
            raise DbsweepError(f"{shell} could not list its pragmas: {r.stderr.strip()[:300]}")
        return {line.strip().lower() for line in r.stdout.splitlines() if line.strip()}

    unsafe_settings: ClassVar[Mapping[str, str]] = config.UNSAFE

    def fit_to_install(self, diff: ConfigDiff, install: base.Install, optional: set[str]) -> tuple[str, list[str]]:
        return config.fit(diff, self.known_settings(install), install.short_version, optional)

    def check_values(self, diff: ConfigDiff, install: base.Install, text: str) -> list[str]:
        """Each pragma set on a scratch database and read back, as the first start does (`values`)."""
        from dbsweep.engines.sqlite import values

        if not isinstance(install, Install):
            return []
        return values.check(diff, install, text)

    def connection_limit(self, diff: ConfigDiff) -> tuple[int, str] | None:
        return None  # any number of connections may open the file

    generated_id_needs_key: ClassVar[str] = (
        "SQLite generates an id on insert only for an INTEGER PRIMARY KEY (the rowid), so the id is always the "
        "primary key"
    )

    # The load client's threads run well up to this many per CPU (measured on 2 vCPUs: 2,000 clients measured their
    # whole step, 5,000 ended it early as their threads came up late).
    clients_per_cpu: ClassVar[int] = 512
    clients_are: ClassVar[str] = "threads of the load client that do the engine's work"
    past_the_cap: ClassVar[str] = (
        "they do not all start within the warm-up (5,000 on 2 CPUs measured 1.1 of the 2 s asked, or none)"
    )

    # ---- instances

    def server_user(self) -> str | None:
        return None  # nothing runs but the load client, as dbsweep's own user

    def instance(
        self,
        install: base.Install,
        home: Path,
        config_name: str,
        config_text: str,
        user: str | None,
        wrapper: list[str] | None = None,
    ) -> base.Instance:
        if not isinstance(install, Install):
            raise TypeError(f"not an SQLite install: {install!r}")
        return Database(install, home, config_name, config_text, user, wrapper, engine=self)

    def stop_stale(self, datadir: Path) -> None:
        """No server is ever left on a database file: the only process was the load client, which dbsweep
        stops with the run."""

    def storage_bytes(self, diff: ConfigDiff | None, table_bytes: int) -> int:
        return int(table_bytes * _FILE_PER_TABLE_BYTE)

    def compile_flags(self, install: base.Install) -> str:
        p = install.provenance
        return " ".join(str(p.get(k, "")) for k in ("cflags", "configure") if p.get(k))
