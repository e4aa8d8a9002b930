"""Postgres config diffs: `name = value` lines as postgresql.conf takes them, `include 'file'` inlined by
dbsweep, checked against the binary's own list of settings and fitted to a version.

Names are read as Postgres reads them, in any case. How clients reach the server and where its files are, are
dbsweep's (`OWNED`): a diff cannot set them. What loads code, runs commands, decides who may connect or writes
outside the data directory (`UNSAFE`) a diff may set only where the study allows it by name."""

from __future__ import annotations

import re

from dbsweep.configdiff import ConfigDiff, Setting, stays_inside
from dbsweep.errors import DbsweepError

_SETTING = re.compile(r"""^\s*([A-Za-z_][A-Za-z0-9_.]*)\s*=?\s*(.*?)\s*$""")
# What dbsweep sets for every instance and a diff may not (the server's command line sets the first four at
# each start, which would silently win over a diff's value).
OWNED = {
    "port": "dbsweep picks a free loopback port at each start",
    "listen_addresses": "servers listen on loopback only",
    "unix_socket_directories": "dbsweep gives each server a private socket",
    "unix_socket_permissions": "dbsweep gives each server a private socket",
    "unix_socket_group": "dbsweep gives each server a private socket",
    "data_directory": "the data directory is the instance's own",
    "config_file": "the instance's postgresql.conf is dbsweep's",
}
# What a diff may set only where the study allows it (`allow_unsafe_settings`), and why. The paths are unsafe
# only outside the data directory: the server works in it, so a relative path without `..` stays there.
UNSAFE = {
    "hba_file": "replaces the rules of who may connect and how they authenticate",
    "ident_file": "replaces the map of which system users log in as which database users",
    "shared_preload_libraries": "loads shared libraries into the server at start",
    "local_preload_libraries": "loads shared libraries into every session",
    "session_preload_libraries": "loads shared libraries into every session",
    "dynamic_library_path": "changes where the server loads shared libraries from",
    "jit_provider": "loads a shared library as the JIT compiler",
    "archive_command": "runs a shell command for every WAL segment",
    "archive_library": "loads a shared library to archive WAL",
    "restore_command": "runs a shell command to fetch WAL",
    "archive_cleanup_command": "runs a shell command at every restartpoint",
    "recovery_end_command": "runs a shell command when recovery ends",
    "ssl_passphrase_command": "runs a shell command to read the TLS key's passphrase",
}
# Of UNSAFE, the paths: unsafe only outside the data directory.
_PATHS = {
    "log_directory": "writes the server's logs outside the data directory",
    "log_filename": "writes the server's logs outside the data directory",
    "external_pid_file": "writes a PID file outside the data directory",
    "stats_temp_directory": "writes statistics files outside the data directory",
}
UNSAFE.update(_PATHS)
# Postgres's default max_connections.
DEFAULT_MAX_CONNECTIONS = 100
# Rough storage figures of this VM (preflight's estimate): an empty cluster with its first WAL segment, the WAL
# a load leaves in pg_wal per byte of table (1.3 measured) until max_wal_size lets checkpoints recycle it, and
# Postgres's default max_wal_size (1GB).
EMPTY_CLUSTER_BYTES = 48_000_000
WAL_PER_DATA_BYTE = 1.3
DEFAULT_MAX_WAL_BYTES = 1 << 30


def _strip_comment(line: str) -> str:
    # A '#' inside a quoted value is not a comment.
    out, quoted = [], False
    for ch in line:
        if ch == "'":
            quoted = not quoted
        if ch == "#" and not quoted:
            break
        out.append(ch)
    return "".join(out).strip()


def parse(lines: list[tuple[str, str]]) -> tuple[Setting, ...]:
    out: list[Setting] = []
    for line, origin in lines:
        body = _strip_comment(line)
        if not body:
            continue
        m = _SETTING.match(body)
        if not m or not m.group(2):
            raise DbsweepError(f"{origin}: cannot read {line.strip()!r} as `name = value`")
        if m.group(1).lower() in OWNED:
            raise DbsweepError(f"{origin}: {m.group(1)} cannot be set in a config: {OWNED[m.group(1).lower()]}")
        out.append(Setting(m.group(1), m.group(2).strip("'"), origin))
    return tuple(out)


def unsafe_entry(setting: Setting) -> str | None:
    """The UNSAFE entry a setting sets (in any case), or None: a path inside the data directory is safe."""
    key = setting.name.lower()
    if key not in UNSAFE:
        return None
    if key in _PATHS and stays_inside(setting.value.strip()):
        return None
    return key


def fit_to_version(diff: ConfigDiff, supported: set[str], version: str, optional: set[str]) -> tuple[str, list[str]]:
    """The diff's text for a server that knows `supported` settings.

    A setting the server lacks is an error unless the study lists it as optional; then its
    lines are commented out and the setting is returned in the list of skipped ones.
    """
    missing = [s for s in diff.settings if "." not in s.name and s.name.lower() not in supported]
    fatal = [s for s in missing if s.name.lower() not in optional]
    if fatal:
        s = fatal[0]
        more = f" (and {', '.join(x.name for x in fatal[1:])})" if len(fatal) > 1 else ""
        raise DbsweepError(
            f"config {diff.name} sets {s.name} ({s.origin}){more}, which Postgres {version} does not have; "
            f"list it in the study's optional_settings to apply it only where supported."
        )
    if not missing:
        return diff.text, []
    skipped = sorted({s.name for s in missing})
    lowered = {n.lower() for n in skipped}
    out = []
    for line in diff.text.splitlines():
        m = _SETTING.match(_strip_comment(line))
        if m and m.group(1).lower() in lowered:
            out.append(f"# not in Postgres {version}, skipped: {line}")
        else:
            out.append(line)
    return "\n".join(out) + "\n", skipped


def pg_int(value: str) -> int | None:
    """An integer setting's value as Postgres reads it (decimal, 0x hex, 0 octal, or a number it rounds)."""
    v = value.strip().strip("'").strip()
    try:
        if re.fullmatch(r"[+-]?0[xX][0-9a-fA-F]+", v):
            return int(v, 16)
        if re.fullmatch(r"[+-]?0[0-7]+", v):
            return int(v, 8)
        if re.fullmatch(r"[+-]?\d+", v):
            return int(v)
        return round(float(v)) if re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", v) else None
    except ValueError:
        return None


def pg_bytes(value: str, unit: int) -> int | None:
    """A memory setting's value in bytes (`16GB`, `'1024'` in its default unit)."""
    m = re.fullmatch(r"\s*'?\s*(\d+(?:\.\d+)?)\s*(B|kB|MB|GB|TB)?\s*'?\s*", value)
    if not m:
        return None
    units = {"B": 1, "kB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}
    return int(float(m.group(1)) * (units[m.group(2)] if m.group(2) else unit))


def last_settings(diff: ConfigDiff) -> dict[str, Setting]:
    """Each setting's last line: in postgresql.conf the last one wins."""
    return {s.name.lower(): s for s in diff.settings}


def connection_limit(diff: ConfigDiff) -> tuple[int, str] | None:
    """max_connections and where it comes from; dbsweep connects as the cluster's bootstrap superuser, so the
    slots Postgres reserves for superusers are its own too. Raises DbsweepError for a value it cannot read."""
    s = last_settings(diff).get("max_connections")
    if s is None:
        return DEFAULT_MAX_CONNECTIONS, "Postgres's default"
    v = pg_int(s.value)
    if v is None:
        raise DbsweepError(f"config {diff.name} sets {s.name} = {s.value!r} ({s.origin}), which is not an integer")
    return v, s.origin


def storage_bytes(diff: ConfigDiff | None, table_bytes: int) -> int:
    """A data directory at its largest: an empty cluster, the tables, and the WAL the config lets pile up."""
    max_wal = DEFAULT_MAX_WAL_BYTES
    setting = last_settings(diff).get("max_wal_size") if diff is not None else None
    if setting is not None:
        max_wal = pg_bytes(setting.value, 1 << 20) or max_wal  # its unit is MB
    return int(EMPTY_CLUSTER_BYTES + table_bytes + min(max_wal, table_bytes * WAL_PER_DATA_BYTE))
