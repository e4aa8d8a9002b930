"""MariaDB config diffs: my.cnf lines (`name = value`, or a bare `name` for a flag), `#` comments (and lines
starting with `;`), `!include file` inlined by dbsweep, checked against the binary's own list of options and
fitted to a version.

A diff's lines go into the `[mariadbd]` section of the my.cnf dbsweep writes for each instance; a diff may
open one of the sections every server version reads (`[mysqld]`, `[mariadbd]`, `[server]`, `[mariadb]`),
never a version's own (`[mariadb-10.11]`: the study's optional_settings say what a version lacks) nor a
client's. Names are read as the server reads them: `-` and `_` alike, any case, and the prefixes `loose-`
(ignore when unknown), `skip-`, `enable-`, `disable-` and `maximum-`. Where the server's data, logs and
sockets live, and who may connect, are dbsweep's (`OWNED`): a diff cannot set them. What runs SQL or loads
code, opens the server wider or writes outside its data directory (`UNSAFE`) a diff may set only where the
study allows it by name.
"""

from __future__ import annotations

import re

from dbsweep.configdiff import ConfigDiff, Setting, stays_inside
from dbsweep.errors import DbsweepError

_INCLUDE = re.compile(r"^\s*!include\s+(\S.*?)\s*$")
_INCLUDEDIR = re.compile(r"^\s*!includedir\b")
_SECTION = re.compile(r"^\s*\[\s*([^\]]*?)\s*\]\s*$")
_LINE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_.-]*)\s*(?:=\s*(.*?))?\s*$")
# The sections every version of the server reads (not `mysqld-10.11` and the like).
SERVER_SECTIONS = frozenset({"mysqld", "mariadbd", "server", "mariadb"})
LOOSE = "loose_"
# Prefixes the server strips before it looks a name up (`skip-x` is `x = OFF`).
_PREFIXES = ("skip_", "enable_", "disable_", "maximum_")
# What dbsweep sets for every instance and a diff may not: where the data and logs are, how clients reach
# the server (loopback and a private socket only), who may connect.
OWNED = {
    "datadir": "the data directory is the instance's own",
    "basedir": "the install's root is dbsweep's",
    "plugin_dir": "the install's plugins are dbsweep's",
    "port": "dbsweep picks a free loopback port at each start",
    "socket": "dbsweep gives each server a private socket",
    "bind_address": "servers listen on loopback only",
    "skip_networking": "the load client reaches the server over loopback TCP too",
    "pid_file": "dbsweep proves a server is its own by the PID file it chose",
    "log_error": "dbsweep reads the server's log to explain a failure",
    "user": "the server runs as dbsweep's server user",
    "skip_grant_tables": "every server has a generated password",
    "log_basename": "dbsweep names the server's log and PID files",
}
# What a diff may set only where the study allows it (`allow_unsafe_settings`), and why. The paths are unsafe
# only outside the data directory: the server works in it, so a relative path without `..` stays there.
UNSAFE = {
    "init_file": "runs the SQL of a file at every start, with every privilege: it may create accounts",
    "init_connect": "runs SQL for every client that connects",
    "init_slave": "runs SQL whenever a replica's SQL thread starts",
    "plugin_load": "loads plugins (shared libraries) into the server",
    "plugin_load_add": "loads plugins (shared libraries) into the server",
    "plugin_maturity": "lets plugins of a lower maturity load",
    "allow_suspicious_udfs": "lets CREATE FUNCTION load functions from any shared library",
    "wsrep_provider": "loads a replication library into the server",
    "wsrep_notify_cmd": "runs a command whenever the cluster changes",
    "extra_port": "opens a second TCP port to clients",
    "proxy_protocol_networks": "lets proxies on these networks pass any client address, which accounts match",
}
# Of UNSAFE, the paths: unsafe only outside the data directory.
_PATHS = {
    "general_log_file": "writes the general log outside the data directory",
    "slow_query_log_file": "writes the slow query log outside the data directory",
    "log_slow_query_file": "writes the slow query log outside the data directory",
    "log_bin": "writes the binary log outside the data directory",
    "log_bin_index": "writes the binary log's index outside the data directory",
    "relay_log": "writes relay logs outside the data directory",
    "relay_log_index": "writes the relay log's index outside the data directory",
    "relay_log_info_file": "writes a replica's state outside the data directory",
    "master_info_file": "writes a replica's state outside the data directory",
    "log_tc": "writes the transaction coordinator's log outside the data directory",
    "innodb_data_home_dir": "puts InnoDB's data files outside the data directory",
    "innodb_log_group_home_dir": "puts InnoDB's redo log outside the data directory",
    "innodb_undo_directory": "puts InnoDB's undo logs outside the data directory",
    "aria_log_dir_path": "puts Aria's log outside the data directory",
    "rocksdb_datadir": "puts MyRocks's data outside the data directory",
    "rocksdb_wal_dir": "puts MyRocks's write-ahead log outside the data directory",
}
UNSAFE.update(_PATHS)
# Of UNSAFE, the switches that are unsafe only when on (`skip-x`, `disable-x` and `x = OFF` are safe), and the
# plugin lists (the MyRocks plugin is safe: dbsweep loads it itself for a config that uses it).
_SWITCHES = frozenset({"allow_suspicious_udfs"})
_PLUGIN_LISTS = frozenset({"plugin_load", "plugin_load_add"})
_OFF = frozenset({"0", "off", "false"})
# MariaDB's default max_connections.
DEFAULT_MAX_CONNECTIONS = 151
# Rough storage figures (preflight's estimate), measured on 10.11: a fresh data directory (system tables,
# ibdata1, the undo and temporary tablespaces) besides the redo log, InnoDB's default redo log
# (innodb_log_file_size, allocated whole at start), and a table's bytes on disk per byte of rows (pages
# are not full, and the undo log holds old versions of what a step changes).
EMPTY_DATADIR_BYTES = 48_000_000
DEFAULT_REDO_BYTES = 96 << 20
DISK_PER_TABLE_BYTE = 1.5
_SUFFIXES = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50, "e": 1 << 60}


def canonical(name: str) -> str:
    """A name as the server looks it up: lower case, `_` for `-`."""
    return name.strip().lower().replace("-", "_")


def include_target(line: str) -> str | None:
    m = _INCLUDE.match(line)
    return m.group(1) if m else None


def _strip_comment(line: str) -> str:
    """The line without its comment, as the server reads an option file: a line starting with `#` or `;` is
    one, and `#` outside quotes ends the line."""
    if line.lstrip().startswith(("#", ";")):
        return ""
    out: list[str] = []
    quote = ""
    escaped = False
    for ch in line:
        if ch in "'\"" and not escaped:
            quote = "" if quote == ch else quote or ch
        elif ch == "#" and not quote:
            break
        escaped = bool(quote) and ch == "\\" and not escaped
        out.append(ch)
    return "".join(out).strip()


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def parse(lines: list[tuple[str, str]]) -> tuple[Setting, ...]:
    """The settings of a diff's lines, each named canonically (a `loose-` prefix kept as `loose_`)."""
    out: list[Setting] = []
    for line, origin in lines:
        body = _strip_comment(line)
        if not body:
            continue
        if _INCLUDEDIR.match(body):
            raise DbsweepError(f"{origin}: !includedir is not supported: name each file with !include")
        section = _SECTION.match(body)
        if section:
            if section.group(1).lower() not in SERVER_SECTIONS:
                raise DbsweepError(
                    f"{origin}: section [{section.group(1)}] is not one every server reads; use "
                    f"{', '.join(f'[{s}]' for s in sorted(SERVER_SECTIONS))} (or none: the lines go to [mariadbd])"
                )
            continue
        m = _LINE.match(body)
        if not m:
            raise DbsweepError(f"{origin}: cannot read {line.strip()!r} as `name = value` or a bare `name`")
        name = canonical(m.group(1))
        bare = base_name(name.removeprefix(LOOSE))
        if bare in OWNED or name.removeprefix(LOOSE) in OWNED:
            key = bare if bare in OWNED else name.removeprefix(LOOSE)
            raise DbsweepError(f"{origin}: {m.group(1)} cannot be set in a config: {OWNED[key]}")
        out.append(Setting(name, _unquote(m.group(2) or ""), origin))
    return tuple(out)


def unsafe_entry(setting: Setting) -> str | None:
    """The UNSAFE entry a setting sets, named as the server reads it (`loose-`, `skip-` and the like), or None:
    a switch turned off, a path inside the data directory and the MyRocks plugin are safe."""
    name = setting.name.removeprefix(LOOSE)
    key = name if name in UNSAFE else base_name(name)
    if key not in UNSAFE:
        return None
    value = setting.value.strip()
    if key in _SWITCHES and _turned_off(name, key, value):
        return None
    if key in _PATHS and _inside_datadir(value):
        return None
    if key in _PLUGIN_LISTS and _only_myrocks(value):
        return None
    return key


def _turned_off(name: str, key: str, value: str) -> bool:
    """Whether a line turns the switch `key` off: `skip-key`, `disable-key`, or `key = OFF` (or 0, false)."""
    return (name != key and name.startswith(("skip_", "disable_"))) or value.lower() in _OFF


def _inside_datadir(path: str) -> bool:
    """Whether a path the server resolves from its data directory stays in it (`~` is a home directory)."""
    return not path.startswith("~") and stays_inside(path)


def _only_myrocks(plugins: str) -> bool:
    """Whether a plugin list (`name=library;library`) loads the MyRocks library alone."""
    libraries = [item.split("=", 1)[-1].strip() for item in plugins.split(";") if item.strip()]
    return bool(libraries) and all(lib.removesuffix(".so") == "ha_rocksdb" for lib in libraries)


def base_name(name: str) -> str:
    """The option a name sets once the server's prefixes are taken off (`skip_log_bin` -> `log_bin`)."""
    for p in _PREFIXES:
        if name.startswith(p):
            return name[len(p) :]
    return name


def _known(name: str, supported: set[str]) -> bool:
    name = name.removeprefix(LOOSE)
    return name in supported or base_name(name) in supported


def fit_to_version(
    diff: ConfigDiff, supported: set[str], version: str, optional: set[str], title: str = "MariaDB"
) -> tuple[str, list[str]]:
    """The diff's text for a server that knows `supported` options.

    A setting the server lacks is an error unless the study lists it as optional or the diff wrote it
    `loose-`; then its lines are commented out and the setting is returned in the list of skipped ones.
    """
    missing = [s for s in diff.settings if not _known(s.name, supported)]
    wanted = {canonical(o) for o in optional}
    fatal = [s for s in missing if not s.name.startswith(LOOSE) and s.name not in wanted]
    if fatal:
        s = fatal[0]
        more = f" (and {', '.join(x.name for x in fatal[1:])})" if len(fatal) > 1 else ""
        raise DbsweepError(
            f"config {diff.name} sets {s.name} ({s.origin}){more}, which {title} {version} does not have; "
            "list it in the study's optional_settings to apply it only where supported."
        )
    if not missing:
        return diff.text, []
    skipped = sorted({s.name.removeprefix(LOOSE) for s in missing})
    out = []
    for line in diff.text.splitlines():
        m = _LINE.match(_strip_comment(line))
        if m and not _SECTION.match(line) and canonical(m.group(1)).removeprefix(LOOSE) in skipped:
            out.append(f"# not in {title} {version}, skipped: {line}")
        else:
            out.append(line)
    return "\n".join(out) + "\n", skipped


def settings_of(text: str) -> list[Setting]:
    """The settings of a fitted config's text (its skipped lines are comments by then)."""
    return list(parse([(line, f"line {n}") for n, line in enumerate(text.splitlines(), 1)]))


def last_settings(settings: list[Setting] | tuple[Setting, ...]) -> dict[str, Setting]:
    """Each option's last line (in a my.cnf the last one wins), by its canonical name without `loose_`."""
    return {s.name.removeprefix(LOOSE): s for s in settings}


_ENGINE_CHOICES = ("default_storage_engine", "default_tmp_storage_engine", "enforce_storage_engine", "storage_engine")


def uses_rocksdb(text: str) -> bool:
    """Whether a config needs the MyRocks plugin: tables made in it (a default engine), or its options."""
    for s in settings_of(text):
        name = s.name.removeprefix(LOOSE)
        if name.startswith("rocksdb_"):
            return True
        if name in _ENGINE_CHOICES and s.value.strip().lower() == "rocksdb":
            return True
    return False


def loads_rocksdb(text: str) -> bool:
    """Whether a config loads the MyRocks plugin itself (plugin_load / plugin_load_add naming it)."""
    return any(
        s.name.removeprefix(LOOSE) in ("plugin_load", "plugin_load_add") and "ha_rocksdb" in s.value
        for s in settings_of(text)
    )


def int_value(value: str) -> int | None:
    """A numeric option's value as the server reads it: digits with an optional K, M, G, T, P or E (x 1024)."""
    m = re.fullmatch(r"\s*([+-]?\d+)\s*([kmgtpeKMGTPE])?\s*", value)
    if not m:
        return None
    return int(m.group(1)) * (_SUFFIXES[m.group(2).lower()] if m.group(2) else 1)


def connection_limit(diff: ConfigDiff, title: str = "MariaDB") -> tuple[int, str] | None:
    """max_connections and where it comes from. Raises DbsweepError for a value it cannot read."""
    s = last_settings(diff.settings).get("max_connections")
    if s is None:
        return DEFAULT_MAX_CONNECTIONS, f"{title}'s default"
    v = int_value(s.value)
    if v is None:
        raise DbsweepError(f"config {diff.name} sets {s.name} = {s.value!r} ({s.origin}), which is not an integer")
    return v, s.origin


def storage_bytes(diff: ConfigDiff | None, table_bytes: int) -> int:
    """A data directory at its largest: the system tables, the redo log the config sizes, the tables."""
    redo = DEFAULT_REDO_BYTES
    settings = last_settings(diff.settings) if diff is not None else {}
    # MySQL 8.0.30 and later size the redo log by innodb_redo_log_capacity; MariaDB by innodb_log_file_size.
    setting = settings.get("innodb_redo_log_capacity") or settings.get("innodb_log_file_size")
    if setting is not None:
        redo = int_value(setting.value) or redo
    return int(EMPTY_DATADIR_BYTES + redo + table_bytes * DISK_PER_TABLE_BYTE)
