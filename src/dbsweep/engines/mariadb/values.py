"""A config's values as mariadbd takes them, checked before any work: the install's server reads the config as the
only option file (`--defaults-file`, in a temporary directory) with `--verbose --help`, which parses every option
the way a start does (MyRocks's too, with its plugin loaded where the config uses it), prints the values it would
run with, and exits without starting. Its refusals are said in its own words, and its caches are held against
this machine's memory."""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

from dbsweep import machine
from dbsweep.configdiff import ConfigDiff, Setting
from dbsweep.engines import base
from dbsweep.engines.mariadb import config
from dbsweep.engines.mariadb.install import ROCKSDB_PLUGIN, Install

_TIMEOUT_S = 60.0
# A line of the server's log: "2026-11-26 22:04:03 0 [ERROR] Buffered error: Unknown suffix 'l' used for ...".
_LOG_LINE = re.compile(r"\[(ERROR|Warning)\]\s+(?:Buffered (?:error|warning):\s+)?(.*)$")
# A warning that is a refusal: the server ignores the option and runs with its default.
_IGNORED = re.compile(r"ignoring option '[^']*' due to invalid value")
# The `--verbose --help` table of values: "innodb-buffer-pool-size                      134217728".
_VALUE_LINE = re.compile(r"^([a-z0-9][a-z0-9_-]*)\s+(\S.*?)\s*$")
# The server's global caches, allocated at start whatever the load (the estimate of its memory).
CACHES = (
    "innodb_buffer_pool_size",
    "innodb_log_buffer_size",
    "key_buffer_size",
    "aria_pagecache_buffer_size",
    "query_cache_size",
    "rocksdb_block_cache_size",
)


def check(diff: ConfigDiff, install: Install, text: str) -> list[str]:
    cmd = [str(install.server), "", f"--plugin-dir={install.plugin_dir}"]
    if config.uses_rocksdb(text) and not config.loads_rocksdb(text) and install.has_rocksdb:
        cmd.append(f"--plugin-load-add={ROCKSDB_PLUGIN}")
    cmd += ["--verbose", "--help"]
    version = f"{install.title} {install.short_version}"
    with tempfile.TemporaryDirectory(prefix="dbsweep-check-") as scratch:
        cnf = Path(scratch) / "my.cnf"
        cnf.write_text(f"[{install.section}]\n{text}")
        cmd[1] = f"--defaults-file={cnf}"  # the server's rule: the option file comes first
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            return [base.refused_config(diff.name, version, f"{install.server} --verbose --help failed: {e}")]
    out = refusals(diff, r.stderr, version)
    if r.returncode != 0 and not out:
        tail = " ".join(" ".join(r.stderr.strip().splitlines()[-3:]).split())
        out.append(base.refused_config(diff.name, version, tail or f"{install.server.name} exited with {r.returncode}"))
    if not out:
        out += memory_problems(diff, help_values(r.stdout), version)
    return out


def refusals(diff: ConfigDiff, stderr: str, version: str) -> list[str]:
    """The values the server refused, in its words: its errors and the options it ignored for an invalid value,
    each under the setting it names (several lines about one setting joined, as its log says them at a start)."""
    said: list[str] = []
    for line in stderr.splitlines():
        m = _LOG_LINE.search(line)
        if m and (m.group(1) == "ERROR" or _IGNORED.search(m.group(2))):
            said.append(m.group(2).strip())
    settings = [s for s in diff.settings if s.name]
    by_setting: dict[str, tuple[Setting, list[str]]] = {}
    loose: list[str] = []
    for words in said:
        s = base.setting_named(words, settings)
        if s is None:
            loose.append(words)
        else:
            by_setting.setdefault(s.name, (s, []))[1].append(words)
    out = [base.refused_value(diff.name, s, version, "; ".join(lines)) for s, lines in by_setting.values()]
    if not by_setting and loose:
        out.append(base.refused_config(diff.name, version, "; ".join(loose)))
    return out


def help_values(stdout: str) -> dict[str, str]:
    """The values `--verbose --help` says the server would run with, by canonical name."""
    out: dict[str, str] = {}
    table = False
    for line in stdout.splitlines():
        if line.startswith("-" * 20):
            table = True
            continue
        if table:
            m = _VALUE_LINE.match(line)
            if m:
                out[config.canonical(m.group(1))] = m.group(2)
    return out


def memory_problems(diff: ConfigDiff, values: dict[str, str], version: str) -> list[str]:
    """The server's global caches, as it read them, against this machine's memory: said of the config's largest."""
    sizes = {name: n for name in CACHES if (n := config.int_value(values.get(name, ""))) is not None}
    estimate = sum(sizes.values())
    last = config.last_settings(diff.settings)
    own = [last[n] for n in sorted(sizes, key=lambda n: -sizes[n]) if n in last]
    if not own:
        return []
    s = own[0]
    name = s.name.removeprefix(config.LOOSE)
    parts = ", ".join(f"{n} {machine.shown_bytes(v)}" for n, v in sorted(sizes.items(), key=lambda x: -x[1]) if v)
    what = f"{version}'s global caches ({parts})"
    problem = base.over_memory(diff.name, s, what, estimate, sizes[name])
    return [problem] if problem else []
