"""A stand-in for Debian's prebuilt Postgres 15 (`source = "system"`), so that unit tests never run, nor need,
a real Postgres: the directory layout the engine looks for (`<root>/15/bin/postgres`) with a `postgres` that
only answers `--version`, `--describe-config` (the setting names of postgres-15-settings.txt) and `-C` (a
fixed value, as though every value of the config were taken) and a
`pg_config` with Debian's flags. It refuses to run a server.

`tests/e2e/test_system_install.py` holds the stand-in against the installed Postgres 15, so it cannot drift.

Used in-process by `unit/conftest.py` (every unit test) and, through `launch`, by the command lines unit tests
run: `python -c LAUNCH ARGS` is `dbsweep ARGS` with the stand-in in place.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SETTINGS = HERE / "postgres-15-settings.txt"
MAJOR = "15"
VERSION = "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)"
PACKAGE = "postgresql-15 15.18-0+deb12u1"
PG_CONFIG = {
    "CC": "gcc",
    "CFLAGS": "-Wall -fno-strict-aliasing -fwrapv -g -O2 -fstack-protector-strong -fno-omit-frame-pointer",
    "LDFLAGS": "-Wl,-z,relro -Wl,-z,now -Wl,--as-needed",
    "CONFIGURE": "'--prefix=/usr' '--enable-debug' '--with-lz4' 'CFLAGS=-g -O2 -fno-omit-frame-pointer'",
}
# The environment variable that carries the stand-in's root to a command line a unit test runs.
ENV = "DBSWEEP_TEST_SYSTEM_ROOT"

_POSTGRES = """\
#!/bin/sh
# The unit tests' stand-in for Debian's Postgres 15 (tests/unit/installed.py): no server, ever.
case "$1" in
  --version) echo '{version}' ;;
  --describe-config)
    while read -r name; do printf '%s\\tuser\\tstand-in\\tSTRING\\t\\t\\t\\t\\t\\n' "$name"; done < '{settings}' ;;
  -C)
    # What `postgres -C NAME -D DIR` prints once it took the values of DIR/postgresql.conf: shared_buffers's
    # default of 16384 pages of 8192 bytes (preflight asks it; the stand-in trusts every value).
    if [ "$2" = block_size ]; then echo 8192; else echo 16384; fi ;;
  *) echo "the unit tests' stand-in for Postgres runs no server (asked: $*)" >&2; exit 1 ;;
esac
"""


def make(root: Path) -> Path:
    """The stand-in's install tree under `root` (the engine's SYSTEM_ROOT); returns `root`."""
    bindir = root / MAJOR / "bin"
    bindir.mkdir(parents=True, exist_ok=True)
    for d in (root, root / MAJOR, bindir):
        d.chmod(0o755)
    postgres = bindir / "postgres"
    postgres.write_text(_POSTGRES.format(version=VERSION, settings=SETTINGS))
    pg_config = bindir / "pg_config"
    lines = "".join(f"{k} = {v}\n" for k, v in PG_CONFIG.items())
    pg_config.write_text(f"#!/bin/sh\ncat <<'EOF'\n{lines}EOF\n")
    for exe in (postgres, pg_config):
        exe.chmod(0o755)
    return root


def put_in_place(root: Path, setattr_: Any = setattr) -> None:
    """Points the Postgres engine at the stand-in under `root` (`setattr_` may be monkeypatch.setattr)."""
    from dbsweep.engines import postgres
    from dbsweep.engines.postgres import install

    setattr_(install, "SYSTEM_ROOT", root)
    setattr_(postgres, "SYSTEM_ROOT", root)
    # Which Debian package holds it: dpkg would answer for the real one (or not be there at all).
    setattr_(install, "_debian_package", lambda major: PACKAGE)


# `python -c LAUNCH ARGS`: the dbsweep command line with the stand-in in place (its root in ENV).
LAUNCH = (
    "import os, sys; from pathlib import Path; from tests.unit import installed; "
    f"installed.put_in_place(Path(os.environ[{ENV!r}])); "
    "sys.argv[0] = 'dbsweep'; from dbsweep.cli import main; main()"
)


def environment(root: Path) -> dict[str, str]:
    return {**os.environ, ENV: str(root)}
