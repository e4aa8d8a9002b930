"""RocksDB behind the engine boundary: an engine whose benchmark tool, `db_bench`, is its own client (no
server), its Debian names, the build recipe of db_bench, option-set configs fitted to each version, and the
database directory's lifecycle."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

from dbsweep.build.recipe import Recipe
from dbsweep.configdiff import ConfigDiff, Setting, quoted_include
from dbsweep.engines import base
from dbsweep.engines.rocksdb import config, install, source
from dbsweep.engines.rocksdb.install import Install
from dbsweep.engines.rocksdb.instance import Store
from dbsweep.sources import Naming

__all__ = ["Install", "Rocksdb", "Store"]

# Bytes on disk per byte of key and value, roughly: the LSM tree's levels overlap while compaction catches up.
_DISK_PER_DATA_BYTE = 1.5


class Rocksdb(base.Engine):
    name: ClassVar[str] = "rocksdb"
    title: ClassVar[str] = "RocksDB"
    kind: ClassVar[base.Kind] = "tool"
    # Nothing to start. Cold builds of db_bench on 2 cores: 6.11.4 in 591 s, 10.4.2 (about 355 objects) in 826 s.
    costs: ClassVar[base.Costs] = base.Costs(start_s=0.1, valgrind_starts_s=20.0, build_s=800.0, lto_build_s=1200.0)
    instance_type: ClassVar[type[base.Instance]] = Store
    source_forms: ClassVar[str] = (
        "use 'system' (Debian's db_bench from rocksdb-tools), a version such as '9.11.2' or 'debian:9.11.2' "
        "(Debian's source package), 'crate:librocksdb-sys@6.11.4' (the tree a Rust binding's crate bundles), "
        "'git:URL_OR_PATH@REF', 'tarball:PATH_OR_URL' or 'dir:PATH'"
    )

    @property
    def naming(self) -> Naming:
        return source.NAMING

    def recipe(self) -> Recipe:
        from dbsweep.engines.rocksdb.build import RECIPE

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

    def known_settings(self, inst: base.Install) -> set[str]:
        """The flags the install's db_bench lists in its --help."""
        db_bench = inst.bin("db_bench")
        return set(install.known_flags(str(db_bench), db_bench.stat().st_mtime))

    unsafe_settings: ClassVar[Mapping[str, str]] = config.UNSAFE

    def fit_to_install(self, diff: ConfigDiff, inst: base.Install, optional: set[str]) -> tuple[str, list[str]]:
        return config.fit(diff, self.known_settings(inst), inst.short_version, optional)

    def check_values(self, diff: ConfigDiff, inst: base.Install, text: str) -> list[str]:
        """The config's flags parsed by the install's db_bench, which opens a scratch database with no benchmark
        and exits (`values`)."""
        from dbsweep.engines.rocksdb import values

        if not isinstance(inst, Install):
            return []
        return values.check(diff, inst, text)

    def connection_limit(self, diff: ConfigDiff) -> tuple[int, str] | None:
        return None  # db_bench's threads are not connections

    # Past this many db_bench threads per CPU a step overruns its duration by far more than the integrity checks
    # allow (measured on 2 vCPUs, readrandom for 2 s: 1,000 threads ran 4.7 s, 5,000 ran 19 s, 20,000 ran 371 s).
    clients_per_cpu: ClassVar[int] = 512
    clients_are: ClassVar[str] = "db_bench's threads"
    past_the_cap: ClassVar[str] = (
        "a step runs far longer than asked (5,000 threads on 2 CPUs ran 19 s where 2 s were asked)"
    )
    clients_word: ClassVar[str] = "threads"

    # ---- instances

    def server_user(self) -> str | None:
        return None  # db_bench runs as dbsweep's own user, as the load client does

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
            raise TypeError(f"not a RocksDB install: {install!r}")
        return Store(install, home, config_name, config_text, user, wrapper)

    def stop_stale(self, datadir: Path) -> None:
        """No process is ever left on a database directory: db_bench runs as a step's child."""

    def storage_bytes(self, diff: ConfigDiff | None, table_bytes: int) -> int:
        return int(table_bytes * _DISK_PER_DATA_BYTE)
