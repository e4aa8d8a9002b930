"""SQLite configs: named PRAGMA sets (`configs/sqlite/<name>.conf`), one `name = value` a line, `#` comments,
`include 'other.conf'` inlined. Every connection the load client opens applies them in file order.

A pragma SQLite does not know is ignored by SQLite without a word, and a value it does not take is often
kept silently as the old one; so the names are checked against the library's `PRAGMA pragma_list`, and
every value is read back after it is set (`check_readback`)."""

from __future__ import annotations

import re

from dbsweep.configdiff import ConfigDiff, Setting
from dbsweep.errors import DbsweepError

_LINE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.+?)\s*$")
# A value as a PRAGMA takes it: a number, a word, or a quoted string without quotes inside.
_VALUE = re.compile(r"^-?\d+$|^[A-Za-z_][A-Za-z0-9_]*$|^'[^']*'$")
# Pragmas whose words read back as numbers.
_WORDS: dict[str, dict[str, str]] = {
    "synchronous": {"off": "0", "normal": "1", "full": "2", "extra": "3"},
    "temp_store": {"default": "0", "file": "1", "memory": "2"},
    "auto_vacuum": {"none": "0", "full": "1", "incremental": "2"},
    "secure_delete": {"fast": "2"},
}
_BOOLEAN = {"on": "1", "yes": "1", "true": "1", "off": "0", "no": "0", "false": "0"}
# Pragmas a diff may not set: they change what a step measures behind its back, or the file's identity.
_REFUSED = {"busy_timeout": "the load client sets the busy timeout itself, the same for every target"}
# Pragmas a diff may set only where the study allows them (`allow_unsafe_settings`), and why. No pragma loads
# an extension (that is a C call the load client never makes), and the schema the untrusted-schema guard
# (trusted_schema) protects against is the load client's own.
UNSAFE = {
    "temp_store_directory": "puts temporary files in a directory of its choosing, outside the workspace",
    "data_store_directory": "puts database files in a directory of its choosing, outside the workspace",
}


def parse(lines: list[tuple[str, str]]) -> tuple[Setting, ...]:
    out: list[Setting] = []
    for line, origin in lines:
        body = line.split("#", 1)[0].strip()
        if not body:
            continue
        m = _LINE.match(body)
        if not m:
            raise DbsweepError(f"{origin}: cannot read {line.strip()!r} as `pragma = value`")
        name, value = m.group(1).lower(), m.group(2)
        if not _VALUE.match(value):
            raise DbsweepError(
                f"{origin}: {value!r} is not a PRAGMA value: give a number, a word (e.g. WAL, NORMAL) "
                "or a quoted string"
            )
        if name in _REFUSED:
            raise DbsweepError(f"{origin}: PRAGMA {name} cannot be set in a config: {_REFUSED[name]}")
        out.append(Setting(name, value, origin))
    return tuple(out)


def pragmas(text: str) -> list[tuple[str, str]]:
    """(name, value) of a fitted config's text, in order (the lines `fit` commented out are left out)."""
    return [(s.name, s.value) for s in parse([(ln, "") for ln in text.splitlines()])]


def fit(diff: ConfigDiff, known: set[str], version: str, optional: set[str]) -> tuple[str, list[str]]:
    """The diff for a library that knows `known` pragmas: an unknown one is an error unless optional, then
    its lines are commented out and it is listed as skipped."""
    missing = [s for s in diff.settings if s.name not in known]
    fatal = [s for s in missing if s.name not in optional]
    if fatal:
        s = fatal[0]
        more = f" (and {', '.join(x.name for x in fatal[1:])})" if len(fatal) > 1 else ""
        raise DbsweepError(
            f"config {diff.name} sets PRAGMA {s.name} ({s.origin}){more}, which SQLite {version} does not know; "
            "list it in the study's optional_settings to apply it only where supported."
        )
    if not missing:
        return diff.text, []
    skipped = sorted({s.name for s in missing})
    out = []
    for line in diff.text.splitlines():
        m = _LINE.match(line.split("#", 1)[0].strip())
        out.append(f"# not in SQLite {version}, skipped: {line}" if m and m.group(1).lower() in skipped else line)
    return "\n".join(out) + "\n", skipped


def expected(name: str, value: str) -> str:
    """What `PRAGMA name` reads back after `PRAGMA name = value`, as SQLite prints it."""
    v = value.strip("'").lower()
    return _WORDS.get(name, {}).get(v) or _BOOLEAN.get(v) or v


def check_readback(name: str, value: str, got: str | None, origin: str, config: str, version: str) -> None:
    """Raises a clear error when SQLite did not take a value (it keeps the old one without a word)."""
    if got is None:  # a pragma that reads back nothing (e.g. a one-off action): its error was the check
        return
    want = expected(name, value)
    if got.strip().lower() != want:
        raise DbsweepError(
            f"config {config} sets PRAGMA {name} = {value} ({origin}), which SQLite {version} does not take: "
            f"it reads back as {got.strip()!r}."
        )


def connection_pragmas(text: str) -> list[str]:
    """The load client's `--pragma NAME=VALUE` arguments for a fitted config."""
    return [f"{n}={v}" for n, v in pragmas(text)]
