"""The pgbench suite end to end through the command line, against Debian's Postgres 15 (`source = "system"`) with
Debian's pgbench: a tiny study of two targets that are the same install runs the load, select-only and tpcb-like
at one and two clients, every cell whole, and reports each step's transactions per second; every result names the
pgbench that ran it and its version, and the load its phases. Then a run that counts select-only's instructions
per transaction under valgrind. Without a server (settings, command lines, pgbench's output parsed):
unit/test_pgbench.py."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from dbsweep.measure import instructions, session
from dbsweep.suites.pgbench import tool

from ..conftest import POSTGRES_UNDER_VALGRIND, dbsweep, stored_cells

pytestmark = pytest.mark.server

STUDY = """\
name = "{name}"
engine = "postgres"
base = "a"
workspace = "{workspace}"

[suite]
name = "pgbench"
scale = 1
steps = {steps}
clients = {clients}
seconds = {seconds}
warmup_seconds = {warmup}
maintenance_seconds = 0
{targets}{measure}"""

TARGET = """
[[targets]]
name = "{name}"
source = "system"
config = "cx10a_c2r24"
"""


def _study(tmp: Path, name: str, targets: str, **kw: object) -> Path:
    path = tmp / f"{name}.toml"
    fields = {"steps": '["load", "select-only", "tpcb-like"]', "clients": "[2]", "seconds": 2, "warmup": 1}
    fields |= {"measure": ""} | kw
    text = STUDY.format(
        name=name,
        workspace=tmp / "ws",
        targets="".join(TARGET.format(name=t) for t in targets),
        **fields,
    )
    path.write_text(text)
    return path


def _pgbench() -> Path:
    found = tool.newest_debian()
    if found is None:
        pytest.fail("Debian's pgbench is not installed: scripts/setup.sh installs postgresql-15, which carries it")
    return found


def test_a_study_of_pgbench_runs_and_reports_each_steps_tps(tmp: Path) -> None:
    pgbench = _pgbench()
    study = _study(tmp, "pgb", "ab")
    dbsweep("run", study, timeout=600)
    cells = stored_cells(tmp / "ws")
    # The load once, two scripts at two clients (a thread each); per target.
    assert len(cells) == 2 * (1 + 2)
    assert all(c[3] == "done" for c in cells), [(c[:4], c[4].get("error")) for c in cells if c[3] != "done"]
    by = {(t, st, c): s for t, st, c, _, s in cells}
    version = tool.program(pgbench).version
    assert version.startswith("pgbench (PostgreSQL) 15.")
    for (_target, step, clients), s in by.items():
        # One fixed pgbench for every target: its path and version in every result.
        assert s["pgbench"] == str(pgbench) and s["pgbench_version"] == version, s
        assert s["command"][0] == "pgbench" and "--username" in s["command"]
        if step == "load":
            assert s["operations"] == 100_000 and s["ops_name"] == "rows" and s["rate"] > 0
            phases = s["phases"]
            assert set(phases) == {"drop_tables", "create_tables", "client_side_generate", "vacuum", "primary_keys"}
            assert 0 < sum(phases.values()) <= s["seconds"] + 0.05
            continue
        assert s["ops_name"] == "transactions" and s["tps"] > 0 and s["events"] > 0
        assert s["ended_early"] is None and s["error_count"] == 0
        assert s["clients"] == clients and s["mode"] == "prepared" and s["warmup_s"] == 1
        assert s["statements_per_event"] == {"select-only": 1, "tpcb-like": 7}[step]
        # The measured part of the transaction logs: about the 2 s asked, after the 1 s warm-up.
        assert 1.5 < s["seconds"] < 2.5 and s["warmup_events"] > 0
        assert s["tps"] == pytest.approx(s["events"] / s["seconds"])
        assert 0 < s["latency_us"]["p50"] <= s["latency_us"]["p99"] <= s["latency_us"]["max"]
        # pgbench's own account covers the warm-up too.
        assert s["pgbench_summary"]["transactions"] >= s["events"] + s["warmup_events"]
    db = sqlite3.connect(tmp / "ws" / "results.db")
    per_second = dict(
        db.execute(
            "SELECT c.id, count(*) FROM samples s JOIN cells c ON c.id = s.cell_id "
            "WHERE c.step = 'select-only' AND s.phase = 'measure' GROUP BY c.id"
        ).fetchall()
    )
    (histograms,) = db.execute("SELECT count(*) FROM histograms WHERE kind = 'latency'").fetchone()
    db.close()
    assert len(per_second) == 2 and all(n >= 2 for n in per_second.values()), per_second
    assert histograms == 2 * 2  # every timed cell's latencies
    # The report: each step's transactions per second, for each target.
    report = json.loads(dbsweep("report", study, "--format", "json").stdout)
    rows = {(r["step"], r["clients"], r["target"]): r for r in report["rows"]}
    for step in ("select-only", "tpcb-like"):
        for clients in (2,):
            for target in "ab":
                row = rows[(step, clients, target)]
                assert row["ops_name"] == "transactions" and row["tps_median"] > 0, row
                stored = by[(target, step, clients)]["tps"]
                assert row["tps_median"] == pytest.approx(stored)
    shown = dbsweep("report", study).stdout
    for step in ("select-only", "tpcb-like"):
        lines = [ln for ln in shown.splitlines() if f" {step} " in ln and "│" in ln]
        assert lines, shown
        for clients, line in zip((2,), lines, strict=False):
            cols = [c.strip() for c in line.split("│") if c.strip()]
            assert cols[:2] == [step, str(clients)] and all(c.replace(",", "").isdigit() for c in cols[2:4]), cols
    assert "load (rows/s)" in shown


def _marked(marks: list[pytest.MarkDecorator]) -> Callable[[Callable[..., None]], Callable[..., None]]:
    def apply(test: Callable[..., None]) -> Callable[..., None]:
        for mark in marks:
            test = mark(test)
        return test

    return apply


@_marked(POSTGRES_UNDER_VALGRIND)
def test_instructions_per_transaction_of_select_only(tmp: Path) -> None:
    """A run with [measure] instructions = true: select-only's instructions per transaction under valgrind, from
    one client's fixed number of transactions (`pgbench -t`), the probe's second finding how many."""
    _pgbench()
    measure = "\n[measure]\ninstructions = true\ninstruction_seconds = 1\ninstruction_pairs = 1\n"
    study = _study(tmp, "pgbi", "a", steps='["load", "select-only"]', clients="[1]", seconds=1, warmup=0)
    study.write_text(study.read_text() + measure)
    run = dbsweep("run", study, timeout=600)
    assert "select-only instructions" in run.stderr, run.stderr
    assert all(c[3] == "done" for c in stored_cells(tmp / "ws"))
    db = sqlite3.connect(tmp / "ws" / "results.db")
    stored = {step: (data, error) for step, data, error in db.execute("SELECT step, data, error FROM instructions")}
    db.close()
    assert set(stored) == {"select-only"}
    data, error = stored["select-only"]
    assert error is None, (error, run.stderr)
    count = json.loads(data)
    # A transaction of select-only is one statement; the backend's work for it is tens of thousands of instructions.
    assert count["statements_per_event"] == 1 and count["unit"] == "events" and count["counted"] == "server"
    assert 10_000 < count["per_event"] < 500_000 and count["per_query"] == count["per_event"]
    assert count["foreground_per_event"] / count["per_event"] > 0.99
    pair = count["pairs"][0]
    # A read is counted in one session of the server, whose short run is at least its minimum whatever the probe
    # found (a quarter of it: a slow machine's second finds few).
    assert count["method"] == instructions.SESSION
    assert count["amount"] >= session.MIN_EVENTS and pair["short"]["events"] == count["amount"]
    assert pair["long"]["events"] == 3 * count["amount"]
    # One client (-c 1) and a fixed number of transactions (-t), with the seed of the study.
    assert count["command"][1:4] == ["-n", "-c", "1"]
    assert count["command"][-5:] == ["-t", str(count["amount"]), "--random-seed=1", "-b", "select-only"]
    report = json.loads(dbsweep("report", study, "--format", "json").stdout)
    (counted,) = [x for x in report["instructions"] if x["step"] == "select-only"]
    assert counted["event"] == "one statement" and counted["instr_per_event"] == pytest.approx(
        count["foreground_per_event"]
    )
