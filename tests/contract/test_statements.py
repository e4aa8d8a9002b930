"""Every sysbench microbenchmark of the method, checked on the engine's side with the statements it recorded
(Postgres: pg_stat_statements; SQLite, embedded: the load client's own record of what it ran through the
library, DBSWEEP_SQLITE_STATEMENTS): the statements' shape, their count per event, and the rows they touch."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from dbsweep import loadclient, paths
from dbsweep.engines.base import Instance
from dbsweep.loadclient import connection_to
from dbsweep.suites.sysbench.steps import STEPS

from ..conftest import running_instance
from .engines import Support

pytestmark = pytest.mark.server

ROWS = 2000
TABLES = 2

# What each workload sends (prepared), as regexes over the recorded text with every parameter written `?`.
# `{IN}` is an IN-list of `range` parameters; the count per event of each shape is the second element. Where
# engines' records legitimately differ, the engine's Support says how: `{CONST:v}` is the constant v of the
# client's SQL as recorded (a parameter where the record normalises constants), `{BEGIN_WRITE}` the statement
# that begins a transaction that writes.
N = r"sbtest\d+"
SHAPES: dict[str, list[tuple[str, int]]] = {
    "point-query": [(rf"SELECT c FROM {N} WHERE id=\?", 1)],
    "random-points": [(rf"SELECT c FROM {N} WHERE id IN \({{IN}}\)", 1)],
    "hot-points": [(rf"SELECT c FROM {N} WHERE id IN \({{IN}}\)", 1)],
    "points-covered-pk": [(rf"SELECT id FROM {N} WHERE id IN \({{IN}}\)", 1)],
    "points-notcovered-pk": [(rf"SELECT id, c FROM {N} WHERE id IN \({{IN}}\)", 1)],
    "points-covered-si": [(rf"SELECT k FROM {N} WHERE k IN \({{IN}}\)", 1)],
    "points-notcovered-si": [(rf"SELECT k, c FROM {N} WHERE k IN \({{IN}}\)", 1)],
    "range-covered-pk": [(rf"SELECT id FROM {N} WHERE id BETWEEN \? AND \?", 1)],
    "range-notcovered-pk": [(rf"SELECT id, c FROM {N} WHERE id BETWEEN \? AND \?", 1)],
    "range-covered-si": [(rf"SELECT k FROM {N} WHERE k BETWEEN \? AND \?", 1)],
    "range-notcovered-si": [(rf"SELECT k, c FROM {N} WHERE k BETWEEN \? AND \?", 1)],
    "scan": [(rf"SELECT \* FROM {N} WHERE LENGTH\(c\) < {{CONST:0}}", 1)],
    "read-only-count": [(rf"SELECT count\(c\) FROM {N} WHERE id BETWEEN \? AND \?", 1)],
    "update-index": [(rf"UPDATE {N} SET k=k\+{{CONST:1}} WHERE id=\?", 1)],
    "update-nonindex": [(rf"UPDATE {N} SET c=\? WHERE id=\?", 1)],
    "update-one": [(rf"UPDATE {N} SET c=\? WHERE id=\?", 1)],
    "update-zipf": [(rf"UPDATE {N} SET c=\? WHERE id=\?", 1)],
    "update-inlist": [(rf"UPDATE {N} SET c=\? WHERE id IN \(\?(, \?){{9}}\)", 1)],
    "delete": [(rf"DELETE FROM {N} WHERE id=\?", 1)],
    "insert": [(rf"INSERT INTO {N} \(k, c, pad\) VALUES \(\?, \?, \?\)", 1)],
}
_READS = [
    (rf"SELECT c FROM {N} WHERE id=\?", 10),
    (rf"SELECT c FROM {N} WHERE id BETWEEN \? AND \?", 1),
    (rf"SELECT SUM\(k\) FROM {N} WHERE id BETWEEN \? AND \?", 1),
    (rf"SELECT c FROM {N} WHERE id BETWEEN \? AND \? ORDER BY c", 1),
    (rf"SELECT DISTINCT c FROM {N} WHERE id BETWEEN \? AND \? ORDER BY c", 1),
]
_WRITES = [
    (rf"UPDATE {N} SET k=k\+{{CONST:1}} WHERE id=\?", 1),
    (rf"UPDATE {N} SET c=\? WHERE id=\?", 1),
    (rf"DELETE FROM {N} WHERE id=\?", 1),
    (rf"INSERT INTO {N} \(id, k, c, pad\) VALUES \(\?, \?, \?, \?\)", 1),
]
_TRX = [("BEGIN", 1), ("COMMIT", 1)]
_WRITE_TRX = [("{BEGIN_WRITE}", 1), ("COMMIT", 1)]
SHAPES["read-only"] = _READS + _TRX
SHAPES["read-only-simple"] = [_READS[0], _READS[1], *_TRX]
SHAPES["read-only-sum"] = [_READS[0], _READS[2], *_TRX]
SHAPES["read-only-order"] = [_READS[0], _READS[3], *_TRX]
SHAPES["read-only-distinct"] = [_READS[0], _READS[4], *_TRX]
SHAPES["read-write"] = _READS + _WRITES + _WRITE_TRX
SHAPES["write-only"] = _WRITES + _WRITE_TRX


def _rx(pattern: str, in_list: str, support: Support) -> re.Pattern[str]:
    const = (lambda _: r"\?") if support.constants_as_parameters else (lambda m: m[1])
    engine = re.sub(r"\{CONST:(\d+)\}", const, pattern).replace("{BEGIN_WRITE}", re.escape(support.begin_write))
    return re.compile("^" + engine.replace("{IN}", in_list) + "$")


def _pairs() -> list[tuple[str, int]]:
    """The distinct (workload, range) pairs behind all the method's step names."""
    return sorted({(s.workload, s.range) for s in STEPS.values()})


def test_every_workload_has_its_shape() -> None:
    assert {w for w, _ in _pairs()} == set(SHAPES)


@pytest.fixture(scope="module")
def server(engine_name: str, support: Support, home: Path) -> Iterator[Instance]:
    with running_instance(engine_name, home / "statements", support.statements_config) as s:
        support.start_capture(s)
        yield s


def _list(rng: int) -> dict[str, dict[str, object]]:
    out = subprocess.run(
        [paths.load_binary(), "list", "--json", "--range", str(rng)], capture_output=True, text=True, check=True
    ).stdout
    return {d["name"]: d for d in map(json.loads, out.splitlines())}


@pytest.mark.parametrize(("workload", "rng"), _pairs(), ids=[f"{w}_range={r}" for w, r in _pairs()])
def test_statements_per_event(server: Instance, support: Support, tmp: Path, workload: str, rng: int) -> None:
    # A fresh load each time: writes and deletes of one workload must not change what the next one sees.
    prepare = ["sysbench", "prepare", "--tables", str(TABLES), "--rows", str(ROWS)]
    loadclient.run(prepare, connection_to(server), tmp / "p.log")
    support.reset_statements(server)
    eff_range = min(rng, ROWS // 4)  # hot-points needs its window inside the table
    cmd = ["sysbench", workload, "--tables", str(TABLES), "--rows", str(ROWS), "--range", str(eff_range)]
    out = loadclient.run(
        [*cmd, "--seconds", "1", "--warmup", "0", "--clients", "2"], connection_to(server), tmp / "r.log"
    )
    r = out.result
    events = r.events + r.error_count + r.detail["warmup_events"]
    assert r.events > 0
    seen = {q: (calls, n) for q, calls, n in support.statements(server)}
    expected = SHAPES[workload]
    spe = _list(eff_range)[workload]["statements_per_event"]
    assert sum(n for _, n in expected) == spe == r.detail["statements_per_event"]
    for pattern, per_event in expected:
        rx = _rx(pattern, r"\?" + rf"(, \?){{{eff_range - 1}}}", support)
        calls = sum(cl for q, (cl, _) in seen.items() if rx.match(q))
        # Every event runs its statements; an event cut by the end of the step may have run only some.
        least = per_event * r.events - support.record_missed
        assert least <= calls <= per_event * events, (pattern, calls, r.events, seen)
    unexpected = [q for q in seen if not any(_rx(p, r"\?(, \?)*", support).match(q) for p, _ in expected)]
    assert not [q for q in unexpected if q not in ("ROLLBACK",)], unexpected
    if workload in ("point-query", "hot-points") or workload.startswith("points-covered-pk"):
        assert r.detail["rows_returned"] > 0
    if workload == "hot-points":
        lo = ROWS // 2 + 1
        assert r.detail["rows_returned"] == eff_range * r.events, f"hot-points reads ids {lo}..{lo + eff_range - 1}"
