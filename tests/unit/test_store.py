"""The results store: one transaction per cell, done at most once, latest status wins."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from dbsweep.results.model import CellKey, CellResult
from dbsweep.results.store import LEGACY_RATES_TABLE, Store, now

SUMMARY = {
    "ops_name": "queries",
    "operations": 100,
    "events": 100,
    "seconds": 2.0,
    "rate": 50.0,
    "tps": 50.0,
    "latency_us": {"p50": 10, "max": 99},
    "histogram": "HISTFAAAAB94nJNpmSzMwMDAxAABzFCaEUzOmbWR",
}


def _store(tmp_path: Path) -> tuple[Store, int, int]:
    s = Store(tmp_path / "r.db")
    sid = s.study_id("x", "x.toml")
    run = s.new_run(sid, "k", "toml")
    tid = s.ensure_target(run, "a", "postgres", {"source": "system", "variant": "def", "config": "c"})
    return s, run, tid


def test_failed_then_done_reports_done(tmp_path: Path) -> None:
    s, run, tid = _store(tmp_path)
    key = CellKey("a", "point-query", 1, 1)
    s.write_cell(run, tid, CellResult(key, "failed", now(), now(), error="boom"))
    assert s.statuses(run)[key] == ("failed", "boom")
    s.write_cell(
        run,
        tid,
        CellResult(
            key,
            "done",
            now(),
            now(),
            summary=SUMMARY,
            seconds_lines=[{"t": 1, "phase": "measure", "ops": 5, "errors": 0, "max_us": 9}],
        ),
    )
    assert s.statuses(run)[key] == ("done", None)
    s.write_cell(run, tid, CellResult(key, "failed", now(), now(), error="later"))
    assert s.statuses(run)[key][0] == "done"
    assert [r.qps for r in s.results(run)] == [50.0]


def test_a_cell_is_done_at_most_once(tmp_path: Path) -> None:
    s, run, tid = _store(tmp_path)
    key = CellKey("a", "load", 1, 1)
    s.write_cell(run, tid, CellResult(key, "done", now(), now(), summary=SUMMARY))
    with pytest.raises(sqlite3.IntegrityError):
        s.write_cell(run, tid, CellResult(key, "done", now(), now(), summary=SUMMARY))
    # The failed second write left nothing behind: the cell's rows are all or nothing.
    assert s.db.execute("SELECT count(*) FROM cells").fetchone() == (1,)
    assert s.db.execute("SELECT count(*) FROM step_results").fetchone() == (1,)
    assert s.db.execute("SELECT count(*) FROM histograms").fetchone() == (1,)


def test_changed_target_spec_is_refused(tmp_path: Path) -> None:
    s, run, _ = _store(tmp_path)
    with pytest.raises(ValueError, match="changed"):
        s.ensure_target(run, "a", "postgres", {"source": "system", "variant": "def", "config": "other"})


def test_provenance_is_stored_once(tmp_path: Path) -> None:
    s, run, tid = _store(tmp_path)
    prov = {"host": {"cpus": 2}, "config": {"diff": "x=1"}}
    for rep in (1, 2):
        s.write_cell(
            run, tid, CellResult(CellKey("a", "load", 1, rep), "done", now(), now(), summary=SUMMARY, provenance=prov)
        )
    assert s.db.execute("SELECT count(*) FROM provenance").fetchone() == (1,)
    assert s.db.execute("SELECT count(DISTINCT provenance_id) FROM cells").fetchone() == (1,)


def test_per_second_rates_survive_the_tables_rename(tmp_path: Path) -> None:
    """Schema 1 kept the per-second rates of several operations in a table named after a suite: a reader of
    such a store reads them there, and the first writer renames the table to rate_samples."""
    s, run, tid = _store(tmp_path)
    line = {"t": 1, "phase": "measure", "ops": 5, "errors": 0, "max_us": 9, "i_ips": 10.0, "i_dps": 5.0, "i_qps": 2.0}
    s.write_cell(
        run, tid, CellResult(CellKey("a", "qr100", 1, 1), "done", now(), now(), summary=SUMMARY, seconds_lines=[line])
    )
    rates = s.rates(run)
    assert [r[1:5] for r in rates] == [(1, 10.0, 5.0, 2.0)]
    s.db.execute(f"ALTER TABLE rate_samples RENAME TO {LEGACY_RATES_TABLE}")
    s.close()
    old = Store(tmp_path / "r.db", read_only=True)
    assert old.rates(run) == rates
    old.close()
    again = Store(tmp_path / "r.db")
    assert again.rates(run) == rates
    tables = {n for (n,) in again.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "rate_samples" in tables and LEGACY_RATES_TABLE not in tables
    again.close()


def test_load_frame_is_there_without_pandas_for_the_stores_readers() -> None:
    """`from dbsweep.results import load_frame` (as the README shows) works, and importing the store does not
    pay for pandas."""
    code = (
        "import sys; import dbsweep.results.store; assert 'pandas' not in sys.modules, 'pandas imported'; "
        "from dbsweep.results import load_frame, load_data; import dbsweep.results.frame as f; "
        "assert load_frame is f.load_frame and load_data is f.load_data; print('ok')"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_canaries_round_trip_and_append(tmp_path: Path) -> None:
    s, run, _ = _store(tmp_path)
    s.write_canary(run, 1, 1000, 0.5, 0.4)
    s.write_canary(run, 2, 1000, 0.25, 0.25)
    s.write_canary(run, 2, 1000, 0.2, 0.2)  # the round resumed later and timed again: a second row, not a swap
    got = s.canaries(run)
    assert [(c.repetition, c.iterations, c.seconds, c.cpu_seconds) for c in got] == [
        (1, 1000, 0.5, 0.4),
        (2, 1000, 0.25, 0.25),
        (2, 1000, 0.2, 0.2),
    ]
    assert got[0].rate == 2000.0 and got[0].measured_at


def test_a_store_from_before_the_canaries_still_opens(tmp_path: Path) -> None:
    """An older store has no canaries table: a reader finds no canaries, the first writer adds the table."""
    s, run, tid = _store(tmp_path)
    s.write_cell(run, tid, CellResult(CellKey("a", "load", 1, 1), "done", now(), now(), summary=SUMMARY))
    s.db.execute("DROP TABLE canaries")
    s.close()
    old = Store(tmp_path / "r.db", read_only=True)
    assert old.canaries(run) == [] and [r.qps for r in old.results(run)] == [50.0]
    old.close()
    again = Store(tmp_path / "r.db")
    again.write_canary(run, 1, 10, 1.0, 1.0)
    assert [c.rate for c in again.canaries(run)] == [10.0]
    again.close()


def test_measures_are_read_back_per_cell(tmp_path: Path) -> None:
    s, run, tid = _store(tmp_path)
    key = CellKey("a", "point-query", 1, 1)
    cell = s.write_cell(run, tid, CellResult(key, "done", now(), now(), summary=SUMMARY, measures={"host_st_pct": 3.5}))
    s.write_cell(run, tid, CellResult(CellKey("a", "point-query", 1, 2), "failed", now(), now(), error="x"))
    assert s.measures(run) == {cell: {"host_st_pct": 3.5}}
