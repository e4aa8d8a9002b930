"""A config's values as Postgres takes them, checked before any work: the install's `postgres -C shared_buffers`
reads the config as the postgresql.conf of a directory that holds nothing else (a temporary one), checks every
value as a start would, prints shared_buffers and exits: no data directory, no server. `-C` first is also what
lets root ask it. Its refusals are said in its own words, and shared_buffers is held against this machine's
memory."""

from __future__ import annotations

import functools
import re
import subprocess
import tempfile
from pathlib import Path

from dbsweep.configdiff import ConfigDiff
from dbsweep.engines import base

_TIMEOUT_S = 60.0
# A line of the server's log, whatever its prefix: "2026-11-26 22:04:25.314 GMT [2428] LOG:  invalid value ...".
_LOG_LINE = re.compile(r"\b(LOG|WARNING|ERROR|FATAL|HINT|DETAIL):\s+(.*)$")
_PARAMETER = re.compile(r'parameter "([^"]+)"')
# Lines that say nothing about a value: the auto.conf a fresh directory lacks, and the summary after the refusals.
_BESIDE = re.compile(r'^skipping missing configuration file|^configuration file ".*" contains errors')
# A build that refuses root even for -C (older than Debian's 15): its values cannot be asked as root.
_ROOT = '"root" execution of the PostgreSQL server is not permitted'
DEFAULT_BLOCK_SIZE = 8192


def _run(argv: list[str], directory: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*argv, "-D", str(directory)], capture_output=True, text=True, timeout=_TIMEOUT_S, check=False
    )


@functools.cache
def block_size(postgres: str, mtime: float) -> int:
    """The install's page size (shared_buffers counts pages), asked once per binary."""
    with tempfile.TemporaryDirectory(prefix="dbsweep-check-") as scratch:
        (Path(scratch) / "postgresql.conf").write_text("")
        try:
            r = _run([postgres, "-C", "block_size"], Path(scratch))
        except (OSError, subprocess.TimeoutExpired):
            return DEFAULT_BLOCK_SIZE
    value = r.stdout.strip()
    return int(value) if r.returncode == 0 and value.isdigit() else DEFAULT_BLOCK_SIZE


def check(diff: ConfigDiff, install: base.Install, text: str) -> list[str]:
    postgres = install.bin("postgres")
    version = f"Postgres {install.short_version}"
    with tempfile.TemporaryDirectory(prefix="dbsweep-check-") as scratch:
        (Path(scratch) / "postgresql.conf").write_text(text)
        try:
            r = _run([str(postgres), "-C", "shared_buffers"], Path(scratch))
        except (OSError, subprocess.TimeoutExpired) as e:
            return [base.refused_config(diff.name, version, f"{postgres} -C failed: {e}")]
    if _ROOT in r.stderr:
        return []
    out = refusals(diff, r.stderr, version)
    if r.returncode != 0:
        if not out:
            words = " ".join(" ".join(r.stderr.strip().splitlines()[-3:]).split())
            out.append(base.refused_config(diff.name, version, words or f"postgres -C exited with {r.returncode}"))
        return out
    pages = r.stdout.strip()
    setting = {s.name.lower(): s for s in diff.settings}.get("shared_buffers")
    if setting is None or not pages.isdigit():
        return out
    size = int(pages) * block_size(str(postgres), postgres.stat().st_mtime)
    problem = base.over_memory(diff.name, setting, f"{version}'s shared buffers", size, size)
    return [*out, problem] if problem else out


def refusals(diff: ConfigDiff, stderr: str, version: str) -> list[str]:
    """The values the server refused, each under the setting it names, its hints beside it."""
    entries: list[list[str]] = []
    for line in stderr.splitlines():
        m = _LOG_LINE.search(line)
        if m is None:
            continue
        level, words = m.group(1), m.group(2).strip()
        if level in ("HINT", "DETAIL"):
            if entries:
                entries[-1].append(words)
        elif not _BESIDE.search(words):
            entries.append([words])
    settings = list(diff.settings)
    out: list[str] = []
    for first, *notes in entries:
        words = first + "".join(f" ({n.rstrip('.')})" for n in notes)
        named = _PARAMETER.search(first)
        s = base.setting_named(named.group(1) if named else first, settings)
        out.append(
            base.refused_value(diff.name, s, version, words) if s else base.refused_config(diff.name, version, words)
        )
    return out
