"""Every microbenchmark of the method, checked on the server side with pg_stat_statements:
the statements' shape, their count per event, and the rows they touch."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from dbsweep import loadclient, paths
from dbsweep.engines import postgres
from dbsweep.loadclient import connection_to as connect_to
from dbsweep.suites import SETS, STEPS

from .conftest import system_server

ROWS = 2000
TABLES = 2

# What each workload sends (prepared), as regexes over pg_stat_statements' text. `{IN}` is an IN-list of
# `range` placeholders; the count per event of each shape is the second element.
N = r"sbtest\d+"
SHAPES: dict[str, list[tuple[str, int]]] = {
    "point-query": [(rf"SELECT c FROM {N} WHERE id=\$1", 1)],
    "random-points": [(rf"SELECT c FROM {N} WHERE id IN \({{IN}}\)", 1)],
    "hot-points": [(rf"SELECT c FROM {N} WHERE id IN \({{IN}}\)", 1)],
    "points-covered-pk": [(rf"SELECT id FROM {N} WHERE id IN \({{IN}}\)", 1)],
    "points-notcovered-pk": [(rf"SELECT id, c FROM {N} WHERE id IN \({{IN}}\)", 1)],
    "points-covered-si": [(rf"SELECT k FROM {N} WHERE k IN \({{IN}}\)", 1)],
    "points-notcovered-si": [(rf"SELECT k, c FROM {N} WHERE k IN \({{IN}}\)", 1)],
    "range-covered-pk": [(rf"SELECT id FROM {N} WHERE id BETWEEN \$1 AND \$2", 1)],
    "range-notcovered-pk": [(rf"SELECT id, c FROM {N} WHERE id BETWEEN \$1 AND \$2", 1)],
    "range-covered-si": [(rf"SELECT k FROM {N} WHERE k BETWEEN \$1 AND \$2", 1)],
    "range-notcovered-si": [(rf"SELECT k, c FROM {N} WHERE k BETWEEN \$1 AND \$2", 1)],
    "scan": [(rf"SELECT \* FROM {N} WHERE LENGTH\(c\) < \$1", 1)],
    "read-only-count": [(rf"SELECT count\(c\) FROM {N} WHERE id BETWEEN \$1 AND \$2", 1)],
    "update-index": [(rf"UPDATE {N} SET k=k\+\$1 WHERE id=\$2", 1)],
    "update-nonindex": [(rf"UPDATE {N} SET c=\$1 WHERE id=\$2", 1)],
    "update-one": [(rf"UPDATE {N} SET c=\$1 WHERE id=\$2", 1)],
    "update-zipf": [(rf"UPDATE {N} SET c=\$1 WHERE id=\$2", 1)],
    "update-inlist": [(rf"UPDATE {N} SET c=\$1 WHERE id IN \(\$2(, \$\d+){{9}}\)", 1)],
    "delete": [(rf"DELETE FROM {N} WHERE id=\$1", 1)],
    "insert": [(rf"INSERT INTO {N} \(k, c, pad\) VALUES \(\$1, \$2, \$3\)", 1)],
}
_READS = [
    (rf"SELECT c FROM {N} WHERE id=\$1", 10),
    (rf"SELECT c FROM {N} WHERE id BETWEEN \$1 AND \$2", 1),
    (rf"SELECT SUM\(k\) FROM {N} WHERE id BETWEEN \$1 AND \$2", 1),
    (rf"SELECT c FROM {N} WHERE id BETWEEN \$1 AND \$2 ORDER BY c", 1),
    (rf"SELECT DISTINCT c FROM {N} WHERE id BETWEEN \$1 AND \$2 ORDER BY c", 1),
]
_WRITES = [
    (rf"UPDATE {N} SET k=k\+\$1 WHERE id=\$2", 1),
    (rf"UPDATE {N} SET c=\$1 WHERE id=\$2", 1),
    (rf"DELETE FROM {N} WHERE id=\$1", 1),
    (rf"INSERT INTO {N} \(id, k, c, pad\) VALUES \(\$1, \$2, \$3, \$4\)", 1),
]
_TRX = [("BEGIN", 1), ("COMMIT", 1)]
SHAPES["read-only"] = _READS + _TRX
SHAPES["read-only-simple"] = [_READS[0], _READS[1], *_TRX]
SHAPES["read-only-sum"] = [_READS[0], _READS[2], *_TRX]
SHAPES["read-only-order"] = [_READS[0], _READS[3], *_TRX]
SHAPES["read-only-distinct"] = [_READS[0], _READS[4], *_TRX]
SHAPES["read-write"] = _READS + _WRITES + _TRX
SHAPES["write-only"] = _WRITES + _TRX


def _rx(pattern: str, in_list: str) -> re.Pattern[str]:
    """The shape as a regex; pg_stat_statements numbers the constants it replaces as it likes."""
    body = pattern.replace("{IN}", in_list)
    return re.compile("^" + re.sub(r"\\\$\d", r"\\$\\d+", body) + "$")


def _pairs() -> list[tuple[str, int]]:
    """The distinct (workload, range) pairs behind all the method's step names."""
    return sorted({(s.workload, s.range) for s in STEPS.values() if s.suite == "sysbench"})


def test_every_step_name_is_covered() -> None:
    all42 = [s for s in SETS["all42"] if STEPS[s].group != "warm"]
    assert len(all42) == 42 and len([s for s in all42 if STEPS[s].is_pre]) == 15
    assert len([s for s in SETS["set32"] if STEPS[s].in_summaries]) == 32
    assert len([s for s in SETS["base27"] if STEPS[s].in_summaries]) == 27
    assert {w for w, _ in _pairs()} == set(SHAPES)


@pytest.fixture(scope="module")
def server(_test_root: Path) -> Iterator[postgres.Server]:
    pgss = "shared_preload_libraries = 'pg_stat_statements'\npg_stat_statements.max = 1000\n"
    with system_server(_test_root / "microbenchmarks", pgss) as s:
        with s.connect() as c:
            c.execute("CREATE EXTENSION pg_stat_statements")
        yield s


def _list(rng: int) -> dict[str, dict[str, object]]:
    out = subprocess.run(
        [paths.load_binary(), "list", "--json", "--range", str(rng)], capture_output=True, text=True, check=True
    ).stdout
    return {d["name"]: d for d in map(json.loads, out.splitlines())}


@pytest.mark.parametrize(("workload", "rng"), _pairs(), ids=[f"{w}_range={r}" for w, r in _pairs()])
def test_statements_per_event(server: postgres.Server, tmp: Path, workload: str, rng: int) -> None:
    # A fresh load each time: writes and deletes of one workload must not change what the next one sees.
    loadclient.run(["prepare", "--tables", str(TABLES), "--rows", str(ROWS)], connect_to(server), tmp / "p.log")
    with server.connect() as c:
        c.execute("SELECT pg_stat_statements_reset()")
    eff_range = min(rng, ROWS // 4)  # hot-points needs its window inside the table
    out = loadclient.run(
        [
            "run",
            workload,
            "--tables",
            str(TABLES),
            "--rows",
            str(ROWS),
            "--range",
            str(eff_range),
            "--seconds",
            "1",
            "--warmup",
            "0",
            "--clients",
            "2",
        ],
        connect_to(server),
        tmp / "r.log",
    )
    s = out.summary
    events = s["events"] + s["error_count"] + s["warmup_events"]
    assert s["events"] > 0
    with server.connect() as c:
        rows = c.execute(
            "SELECT query, calls, rows FROM pg_stat_statements WHERE query !~ 'pg_stat_statements|pg_class' "
            "AND dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
        ).fetchall()
    seen = {q: (calls, r) for q, calls, r in rows}
    expected = SHAPES[workload]
    spe = _list(eff_range)[workload]["statements_per_event"]
    assert sum(n for _, n in expected) == spe
    for pattern, per_event in expected:
        rx = _rx(pattern, r"\$1" + rf"(, \$\d+){{{eff_range - 1}}}")
        calls = sum(cl for q, (cl, _) in seen.items() if rx.match(q))
        # Every event runs its statements; an event cut by the end of the step may have run only some.
        assert per_event * s["events"] <= calls <= per_event * events, (pattern, calls, s["events"], seen)
    unexpected = [q for q in seen if not any(_rx(p, r"\$1(, \$\d+)*").match(q) for p, _ in expected)]
    assert not [q for q in unexpected if q not in ("ROLLBACK",)], unexpected
    if workload in ("point-query", "hot-points") or workload.startswith("points-covered-pk"):
        assert s["rows_returned"] > 0
    if workload == "hot-points":
        lo = ROWS // 2 + 1
        assert s["rows_returned"] == eff_range * s["events"], f"hot-points reads ids {lo}..{lo + eff_range - 1}"
