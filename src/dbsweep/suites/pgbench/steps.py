"""pgbench's steps: the load (`pgbench -i`), its three built-in scripts and a study's own script files
(`custom:NAME`), with their report groups, named sets and statements per transaction."""

from __future__ import annotations

import re
from dataclasses import dataclass

LOAD = "load"
CUSTOM = "custom:"
# A custom script's name as a step may spell it (the study's `custom` table key).
CUSTOM_NAME = re.compile(r"[A-Za-z0-9_.-]+")
# pgbench -i makes this many pgbench_accounts rows per unit of scale.
ROWS_PER_SCALE = 100_000
TABLES = ("pgbench_accounts", "pgbench_branches", "pgbench_tellers", "pgbench_history")


@dataclass(frozen=True)
class Builtin:
    """One of pgbench's built-in scripts (`pgbench -b NAME`)."""

    # The SQL statements of one transaction, BEGIN and END included (pgbench's own script text).
    statements: int
    writes: bool
    group: str


BUILTINS = {
    "select-only": Builtin(statements=1, writes=False, group="read"),
    "simple-update": Builtin(statements=5, writes=True, group="write"),
    "tpcb-like": Builtin(statements=7, writes=True, group="write"),
}
STEP_NAMES = (LOAD, *BUILTINS)
GROUPS = {
    "load": "load",
    "read": "read-only scripts",
    "write": "read-write scripts",
    "custom": "the study's own scripts",
}
# The named sets; "default" and "custom" end with every script of the study's `custom` table.
SETS = {
    "default": [LOAD, *BUILTINS],
    "read-only": [LOAD, "select-only"],
    "read-write": [LOAD, "simple-update", "tpcb-like"],
    "custom": [LOAD],
}
WITH_CUSTOM = ("default", "custom")


def custom_name(step: str) -> str | None:
    """NAME of a `custom:NAME` step; None for any other step."""
    if not step.startswith(CUSTOM):
        return None
    name = step[len(CUSTOM) :]
    return name if CUSTOM_NAME.fullmatch(name) else None


def canonical(name: str) -> str | None:
    if name in STEP_NAMES:
        return name
    return name if custom_name(name) is not None else None


def is_script(step: str) -> bool:
    """A timed step: a built-in script or a custom one."""
    return step in BUILTINS or custom_name(step) is not None


def writes(step: str) -> bool:
    """Whether a script step may change the tables (a custom script is taken to: its text is the study's)."""
    return BUILTINS[step].writes if step in BUILTINS else custom_name(step) is not None


# Quoted text (its semicolons are no statement's end) and comments, left to right.
_SKIPPED = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|\$(\w*)\$.*?\$\1\$|--[^\n]*|/\*.*?\*/", re.S)
_META_END = re.compile(r"\\[ag]set\b.*$", re.M)


def statements_in(script: str) -> int:
    """The SQL statements of a pgbench script file: what is left once the meta-commands (lines that start with a
    backslash) and comments are gone, split at semicolons outside quotes; `\\gset` and `\\aset` end the statement
    they follow, as a semicolon does. Every statement counts once, whatever a `\\if` around it decides. A script
    without SQL counts 0."""
    lines = []
    for line in script.splitlines():
        if line.lstrip().startswith("\\"):
            lines.append(";")  # a meta-command also ends whatever SQL came before it
        else:
            lines.append(_META_END.sub(";", line))
    text = _SKIPPED.sub(lambda m: "" if m.group(0).startswith(("--", "/*")) else "''", "\n".join(lines))
    return sum(1 for part in text.split(";") if part.strip())
