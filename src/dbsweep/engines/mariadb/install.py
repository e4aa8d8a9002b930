"""MariaDB installs: Debian's packages (`mariadb-server`, `source = "system"`) and builds; where an install
keeps its programs and plugins; the settings a binary knows; the user servers run as.

Debian splits the programs between /usr/sbin (the server) and /usr/bin (the client tools and
mariadb-install-db), and keeps the plugins in /usr/lib/mysql/plugin; a build's standalone layout has the
server and the tools in bin/, mariadb-install-db in scripts/ and the plugins in lib/plugin/. `Install.bin`
looks in each.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import ClassVar

from dbsweep.engines import base, servers
from dbsweep.errors import DbsweepError, ServerError

SYSTEM_SERVER = Path("/usr/sbin/mariadbd")
SYSTEM_BINDIR = Path("/usr/bin")
# mariadbd refuses to run as root without --user=root; when dbsweep is root, servers run as this user.
SERVER_USERS = ("dbsweep", "mysql")
ROCKSDB_PLUGIN = "ha_rocksdb.so"
# Where an install's programs live, from its root (/usr, or a build's prefix).
_PROGRAM_DIRS = ("bin", "sbin", "scripts")
_PLUGIN_DIRS = ("lib/plugin", "lib/mysql/plugin", "lib64/plugin")
_SHORT = re.compile(r"\bVer\s+(\d+\.\d+\.\d+)")
# An option line of `mariadbd --help --verbose`: "  --name[=#]", "  -a, --name".
_HELP_OPTION = re.compile(r"^\s{2}(?:-\w, )?--([a-z0-9][a-z0-9_-]*)", re.MULTILINE)


@dataclass(frozen=True)
class Install(base.Install):
    """A MariaDB installation: its root's programs and plugins, its version, and what produced it."""

    # How messages name the server, and the option file section only this server reads (MySQL has its own).
    title: ClassVar[str] = "MariaDB"
    section: ClassVar[str] = "mariadbd"

    def __post_init__(self) -> None:
        if not self.short_version:
            # '10.11.19' from 'mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)'.
            m = _SHORT.search(self.version)
            object.__setattr__(self, "short_version", m.group(1) if m else self.version)

    @property
    def basedir(self) -> Path:
        """The install's root: /usr, or a build's prefix."""
        return self.bindir.parent

    def bin(self, name: str) -> Path:
        for d in _PROGRAM_DIRS:
            path = self.basedir / d / name
            if path.is_file():
                return path
        return self.bindir / name

    @property
    def server(self) -> Path:
        return self.bin("mariadbd")

    @property
    def plugin_dir(self) -> Path:
        recorded = self.provenance.get("plugin_dir")
        if recorded:
            return Path(recorded)
        for d in _PLUGIN_DIRS:
            if (self.basedir / d).is_dir():
                return self.basedir / d
        return self.basedir / _PLUGIN_DIRS[0]

    @property
    def has_rocksdb(self) -> bool:
        return (self.plugin_dir / ROCKSDB_PLUGIN).is_file()


def server_version_line(server: Path) -> str:
    """`mariadbd --version` without the path it starts with: 'mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 ...'."""
    r = subprocess.run([server, "--version"], capture_output=True, text=True, check=False)
    line = r.stdout.strip()
    if r.returncode != 0 or not line:
        raise ServerError(f"{server} --version failed: {(r.stderr or r.stdout).strip()[:300]}")
    return line.replace(str(server), server.name, 1)


def known_settings(install: base.Install) -> set[str]:
    """The names of every option this server binary knows (lower case, `_` for `-`), with MyRocks's when the
    install has the plugin (its options exist only once it is loaded)."""
    if isinstance(install, Install):  # a member of the family (MySQL's) names its own server
        return set(known_options(install.server, install.plugin_dir, install.has_rocksdb))
    plugin_dir = install.bindir.parent / "lib" / "plugin"
    return set(known_options(install.bin("mariadbd"), plugin_dir, (plugin_dir / ROCKSDB_PLUGIN).is_file()))


def known_options(server: Path, plugin_dir: Path, rocksdb: bool = False) -> frozenset[str]:
    """What a MySQL-family server binary says it knows, `--verbose --help` (`rocksdb`: with MyRocks loaded)."""
    return _known_settings(str(server), str(plugin_dir), rocksdb)


@cache
def _known_settings(server: str, plugin_dir: str, rocksdb: bool) -> frozenset[str]:
    # --no-defaults first: the system's /etc/mysql must not change what the binary says it knows.
    cmd = [server, "--no-defaults", "--verbose", "--help", f"--plugin-dir={plugin_dir}"]
    if rocksdb:
        cmd.append(f"--plugin-load-add={ROCKSDB_PLUGIN}")
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    names = {m.replace("-", "_").lower() for m in _HELP_OPTION.findall(r.stdout)}
    if r.returncode != 0 or not names:
        raise ServerError(f"{server} --verbose --help failed: {(r.stderr or r.stdout).strip()[-300:]}")
    return frozenset(names)


def system_versions() -> list[str]:
    if not SYSTEM_SERVER.is_file():
        return []
    return [Install(SYSTEM_BINDIR, server_version_line(SYSTEM_SERVER), "system").short_version]


def system_install(source: str) -> Install:
    """Debian's MariaDB: `system`, or `system:10.11` / `system:10.11.19` to insist on the version installed."""
    if not SYSTEM_SERVER.is_file():
        raise DbsweepError(
            f"source {source!r}: Debian's MariaDB is not installed ({SYSTEM_SERVER} is missing); run "
            "scripts/setup.sh (it installs mariadb-server, mariadb-client and mariadb-plugin-rocksdb)."
        )
    version = server_version_line(SYSTEM_SERVER)
    install = Install(SYSTEM_BINDIR, version, source)
    want = source.partition(":")[2]
    have = install.short_version
    if want and have != want and not have.startswith(want + "."):
        raise DbsweepError(f"source {source!r}: the installed MariaDB is {have}, not {want}")
    for tool in ("mariadb-install-db", "mariadb-admin"):
        if not install.bin(tool).is_file():
            raise DbsweepError(f"source {source!r}: {tool} is missing; install mariadb-server and mariadb-client.")
    plugin = install.plugin_dir / ROCKSDB_PLUGIN
    rocksdb = base.debian_package_of(plugin) if install.has_rocksdb else "not installed"
    provenance = {
        "source": source,
        "source_identity": base.debian_package_of(SYSTEM_SERVER),
        "version": version,
        "bindir": str(SYSTEM_BINDIR),
        "server": str(SYSTEM_SERVER),
        "plugin_dir": str(install.plugin_dir),
        "rocksdb": rocksdb,
        "cc": "Debian's build",
        "cflags": "",
        "configure": "",
    }
    return Install(SYSTEM_BINDIR, version, source, provenance)


def server_user() -> str | None:
    """The user servers run as: None (ourselves) unless we are root."""
    return servers.server_user(SERVER_USERS, "MariaDB servers do not")
