"""Postgres installs: Debian's packages under /usr/lib/postgresql, and builds; the one reading of pg_config;
the user servers run as."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from dbsweep.engines import base, servers
from dbsweep.errors import ServerError

SYSTEM_ROOT = Path("/usr/lib/postgresql")
# Postgres refuses to run as root; when dbsweep is root, servers run as this user.
SERVER_USERS = ("dbsweep", "postgres")


@dataclass(frozen=True)
class Install(base.Install):
    """A Postgres installation: its bin directory and what produced it."""

    def __post_init__(self) -> None:
        if not self.short_version:
            # '15.18' from 'postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)'.
            m = re.search(r"\(PostgreSQL\)\s+(\S+)", self.version)
            object.__setattr__(self, "short_version", m.group(1) if m else self.version)


def known_settings(install: base.Install) -> set[str]:
    """The names of every setting this server binary knows (lower case)."""
    exe = install.bin("postgres")
    r = subprocess.run([exe, "--describe-config"], capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise ServerError(f"{exe} --describe-config failed: {r.stderr.strip()[:300]}")
    return {line.split("\t", 1)[0].lower() for line in r.stdout.splitlines() if line.strip()}


def system_majors() -> list[str]:
    if not SYSTEM_ROOT.is_dir():
        return []
    majors = [p.name for p in SYSTEM_ROOT.iterdir() if (p / "bin" / "postgres").is_file()]
    return sorted(majors, key=lambda m: int(m) if m.isdigit() else 0)


def pg_config(bindir: Path) -> dict[str, str]:
    exe = bindir / "pg_config"
    if not exe.is_file():
        return {}
    out: dict[str, str] = {}
    for line in subprocess.run([exe], capture_output=True, text=True, check=False).stdout.splitlines():
        key, sep, value = line.partition(" = ")
        if sep:
            out[key.strip()] = value.strip()
    return out


def _debian_package(major: str) -> str:
    pkg = f"postgresql-{major}"
    r = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", pkg], capture_output=True, text=True, check=False)
    return f"{pkg} {r.stdout.strip()}" if r.returncode == 0 else pkg


def system_install(source: str) -> Install:
    """The Postgres from Debian's packages: `system` (newest installed) or `system:MAJOR`."""
    majors = system_majors()
    want = source.partition(":")[2]
    if not majors:
        raise ServerError(
            f"source {source!r}: no Postgres from Debian's packages is installed under {SYSTEM_ROOT}; "
            "run scripts/setup.sh (it installs postgresql-15)."
        )
    if want and want not in majors:
        raise ServerError(f"source {source!r}: Postgres {want} is not installed; have: {', '.join(majors)}")
    major = want or majors[-1]
    bindir = SYSTEM_ROOT / major / "bin"
    version = subprocess.run([bindir / "postgres", "--version"], capture_output=True, text=True, check=True).stdout
    pgc = pg_config(bindir)
    return Install(
        bindir=bindir,
        version=version.strip(),
        source=source,
        provenance={
            "source": source,
            "source_identity": _debian_package(major),
            "version": version.strip(),
            "bindir": str(bindir),
            "cc": pgc.get("CC", ""),
            "cflags": pgc.get("CFLAGS", ""),
            "ldflags": pgc.get("LDFLAGS", ""),
            "configure": pgc.get("CONFIGURE", ""),
        },
    )


def server_user() -> str | None:
    """The user servers run as: None (ourselves) unless we are root."""
    return servers.server_user(SERVER_USERS, "Postgres refuses to")
