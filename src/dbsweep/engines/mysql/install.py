"""Oracle's MySQL installs: builds only (Debian ships MySQL 9.7 in unstable alone, built for unstable's libraries,
so no prebuilt MySQL can be installed beside this project's Debian); where a build keeps its programs, the
settings its server knows, the user servers run as.

A build's standalone layout has mysqld and the client tools in bin/ and the plugins in lib/plugin/, as
MariaDB's has; MariaDB's `Install` finds them, with the server named `mysqld`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from dbsweep.engines import base, servers
from dbsweep.engines.mariadb import install as mariadb
from dbsweep.errors import DbsweepError

# mysqld refuses to run as root without --user=root; when dbsweep is root, servers run as this user.
SERVER_USERS = ("dbsweep", "mysql")


@dataclass(frozen=True)
class Install(mariadb.Install):
    """A MySQL installation: its root's programs and plugins, its version, and what produced it."""

    title: ClassVar[str] = "MySQL"
    section: ClassVar[str] = "mysqld"

    @property
    def server(self) -> Path:
        return self.bin("mysqld")

    @property
    def has_rocksdb(self) -> bool:
        return False  # MyRocks is MariaDB's (and Percona's), never in Oracle's tree


def known_settings(install: base.Install) -> set[str]:
    """The names of every option this server binary knows (lower case, `_` for `-`)."""
    server = install.server if isinstance(install, Install) else install.bin("mysqld")
    plugin_dir = install.plugin_dir if isinstance(install, Install) else install.bindir.parent / "lib" / "plugin"
    return set(mariadb.known_options(server, plugin_dir))


def system_versions() -> list[str]:
    return []


def system_install(source: str) -> Install:
    raise DbsweepError(
        f"source {source!r}: there is no prebuilt MySQL here (Debian has MySQL only in unstable); build one: "
        "source = \"9.7.2\" (Debian's source package) or 'tarball:', 'git:', 'dir:'."
    )


def server_user() -> str | None:
    """The user servers run as: None (ourselves) unless we are root."""
    return servers.server_user(SERVER_USERS, "MySQL servers do not")
