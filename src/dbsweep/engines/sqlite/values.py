"""A config's values as SQLite takes them, checked before any work: the pragmas are set on a scratch database in
a temporary directory through the install's own shell and read back, exactly as `Database.init` does, so a
value SQLite refuses or silently keeps as the old one is said in the words the first start would say."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from dbsweep.configdiff import ConfigDiff
from dbsweep.engines import base
from dbsweep.engines.sqlite import config
from dbsweep.engines.sqlite.install import Install

# The same SQL, marker and reading of it as the instance's init: the words cannot drift apart.
from dbsweep.engines.sqlite.instance import _MARK, DB_FILE, _readbacks, _set_and_read
from dbsweep.errors import DbsweepError

_TIMEOUT_S = 60.0


def check(diff: ConfigDiff, install: Install, text: str) -> list[str]:
    pairs = config.pragmas(text)
    if not pairs:
        return []
    version = f"SQLite {install.short_version}"
    last = {s.name: s for s in diff.settings}  # a pragma set twice ends as its last line
    sql = _set_and_read(pairs) + "CREATE TABLE dbsweep_init(x); DROP TABLE dbsweep_init;"
    with tempfile.TemporaryDirectory(prefix="dbsweep-check-") as scratch:
        cmd = [str(install.shell), "-batch", "-bail", "-noheader", "-list", str(Path(scratch) / DB_FILE), sql]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            return [base.refused_config(diff.name, version, f"its shell {install.shell} failed: {e}")]
    lines = r.stdout.splitlines()
    out: list[str] = []
    if r.returncode != 0:
        words = " ".join(r.stderr.split()) or f"exit code {r.returncode}"
        done = sum(1 for ln in lines if ln.startswith(_MARK))  # -bail: the pragma after the last marker failed
        failed = last.get(pairs[done][0]) if done < len(pairs) else None
        if failed is not None:
            out.append(base.refused_value(diff.name, failed, version, words))
        else:
            out.append(base.refused_config(diff.name, version, f"creating the database: {words}"))
    readback = _readbacks(lines)
    for s in last.values():
        if s.name not in {n for n, _ in pairs}:
            continue  # left out for this version (optional_settings)
        try:
            config.check_readback(s.name, s.value, readback.get(s.name), s.origin, diff.name, install.short_version)
        except DbsweepError as e:
            out.append(str(e))
    return out
