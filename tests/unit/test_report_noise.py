"""The noise beside the numbers, from hand-made stores: the A-A spread of each step beside its verdict (from a
stored calibration, else from the base's repetitions) in every format, the steal note and column, and the
canary's rate per round with its CV."""

from __future__ import annotations

import io
import json
import statistics
from collections.abc import Iterator
from pathlib import Path

import pytest

from dbsweep import say
from dbsweep.report import csv_json, data, html, markdown, terminal
from dbsweep.results.model import CellKey, CellResult
from dbsweep.results.store import Store, now
from dbsweep.study import Study, load_study
from dbsweep.verdicts import calibrate, stats

from .handmade import HAND, add_target, new_store, summary

STEP = "point-query_range=100"
QUIET = "scan_range=100"
BASE_QPS = {1: 900.0, 2: 1000.0, 3: 1100.0}  # the base's CV over its repetitions: 10 %
CAL_A = {1: 1000.0, 2: 1040.0, 3: 960.0}
CAL_B = {1: 1000.0, 2: 980.0, 3: 1020.0}
CANARY_S = {1: 0.50, 2: 0.52, 3: 0.48}  # seconds for 1,000,000 iterations


def _hand(tmp_path: Path) -> tuple[Study, Store]:
    """b is 10 % slower than a in every round of STEP; a's QPS moves 10 % between rounds. b's second round
    saw 2.5 % steal. A canary before each round."""
    toml = HAND.format(ws=tmp_path / "ws")
    path = tmp_path / "hand.toml"
    path.write_text(toml)
    store = new_store(path, toml)
    ids = {"a": add_target(store, "a", "cx10a_c2r24"), "b": add_target(store, "b", "cx10a_sb1g_c2r24")}
    for rep in (1, 2, 3):
        store.write_canary(1, rep, 1_000_000, CANARY_S[rep], CANARY_S[rep] * 0.9)
        for t in ("a", "b") if rep % 2 else ("b", "a"):
            for step, qps in ((STEP, BASE_QPS[rep] * (0.9 if t == "b" else 1.0)), (QUIET, 500.0)):
                steal = 2.5 if (t, rep, step) == ("b", 2, STEP) else 0.3
                store.write_cell(
                    1,
                    ids[t],
                    CellResult(
                        CellKey(t, step, 1, rep),
                        "done",
                        now(),
                        now(),
                        summary=summary(qps),
                        measures={"host_st_pct": steal, "host_cpu_pct": 50.0},
                    ),
                )
    return load_study(path), store


def _calibrate(study: Study, store: Store) -> int:
    """A calibration of the base, stored as `dbsweep calibrate` stores it: for STEP only."""
    target = study.target("a")
    cal = calibrate.copies(study, target, None, 3, None)
    run_id = store.new_run(store.study_id(cal.title, "hand.toml"), cal.measurement_key(), "toml")
    spec = {"source": "system", "variant": "def", "config": "cx10a_c2r24"}
    ids = {t.label: store.ensure_target(run_id, t.label, "postgres", spec) for t in cal.targets}
    a, b = (t.label for t in cal.targets)
    for rep in (1, 2, 3):
        for label, qps in ((a, CAL_A[rep]), (b, CAL_B[rep])):
            store.write_cell(
                run_id, ids[label], CellResult(CellKey(label, STEP, 1, rep), "done", now(), now(), summary=summary(qps))
            )
    return run_id


@pytest.fixture
def hand(tmp_path: Path) -> Iterator[tuple[Study, Store]]:
    study, store = _hand(tmp_path)
    yield study, store
    store.close()


def _row(d: data.ReportData, step: str) -> data.Row:
    return next(r for r in d.rows if r.step == step)


def _terminal(d: data.ReportData) -> str:
    buf = io.StringIO()
    terminal.render(d, say.console(file=buf, width=220, color_system=None))
    return buf.getvalue()


def test_spread_from_the_repetitions_in_every_format(hand: tuple[Study, Store]) -> None:
    study, store = hand
    d = data.gather(study, store, 1)
    row = _row(d, STEP)
    assert row.cmp["b"].verdict == "slower"
    assert row.spread is not None and row.spread.source == "repetitions" and row.spread.n == 3
    assert row.spread.cv == pytest.approx(stats.spread(list(BASE_QPS.values())))
    quiet = _row(d, QUIET).spread
    assert quiet is not None and quiet.cv == 0.0
    assert "slower (±10.0% reps)" in _terminal(d)
    md = markdown.render(d)
    assert "slower (±10.0% reps)" in md and "`reps`: over this run's repetitions of the base" in md
    rel = html._relative_table(d)
    cell = next(r for _t, rows in rel.groups for r in rows if r[0].text == STEP)[4]
    assert cell.text == "slower (±10.0% reps)" and "3 repetitions of the base" in cell.title
    page = html.render(d)
    assert "slower (±10.0% reps)" in page
    doc = json.loads(csv_json.to_json(d))
    b = next(r for r in doc["rows"] if r["target"] == "b" and r["step"] == STEP)
    assert b["aa_spread"] == pytest.approx(0.1) and b["aa_spread_source"] == "repetitions" and b["aa_spread_n"] == 3
    header = csv_json.to_csv(d).splitlines()[0].split(",")
    assert {"aa_spread", "aa_spread_source", "aa_spread_n", "steal_pct_max", "canary_cv", "canary_rates"} <= set(header)


def test_spread_from_a_stored_calibration_wins(hand: tuple[Study, Store]) -> None:
    study, store = hand
    cal_run = _calibrate(study, store)
    d = data.gather(study, store, 1)
    row = _row(d, STEP)
    expected = statistics.fmean([statistics.stdev(q.values()) / statistics.fmean(q.values()) for q in (CAL_A, CAL_B)])
    assert row.spread is not None and row.spread.source == "calibrate" and row.spread.n == 3
    assert row.spread.cv == pytest.approx(expected)
    assert f"calibrate run {cal_run} of a" in row.spread.detail
    # A step the calibration did not run keeps the repetitions' spread.
    quiet = _row(d, QUIET).spread
    assert quiet is not None and quiet.source == "repetitions"
    shown = f"slower (±{expected * 100:.1f}% cal)"
    assert shown in _terminal(d) and shown in markdown.render(d)
    doc = json.loads(csv_json.to_json(d))
    b = next(r for r in doc["rows"] if r["target"] == "b" and r["step"] == STEP)
    assert b["aa_spread_source"] == "calibrate" and b["aa_spread"] == pytest.approx(expected)
    # compare_targets reads the same calibration.
    assert _row(data.compare_targets(study, store, 1, "a", "b"), STEP).spread == row.spread


def test_steal_above_one_percent_is_noted(hand: tuple[Study, Store]) -> None:
    study, store = hand
    d = data.gather(study, store, 1)
    row = _row(d, STEP)
    assert [r.steal_pct for r in row.cells["b"].reps] == [0.3, 2.5, 0.3]
    assert row.cells["b"].steal_pct == 2.5 and _row(d, QUIET).cells["b"].steal_pct == 0.3
    note = next(n for n in d.notes if n.startswith("Steal time"))
    assert f"{STEP} c1 b r2 2.5%" in note and QUIET not in note
    assert "Steal time above 1%" in _terminal(d) and "Steal time above 1%" in markdown.render(d)
    rows = {(r["target"], r["step"]): r for r in json.loads(csv_json.to_json(d))["rows"]}
    assert rows[("b", STEP)]["steal_pct_max"] == 2.5 and rows[("a", QUIET)]["steal_pct_max"] == 0.3


def test_the_canary_per_round_and_its_cv(hand: tuple[Study, Store]) -> None:
    study, store = hand
    d = data.gather(study, store, 1)
    rates = [1_000_000 / CANARY_S[r] for r in (1, 2, 3)]
    assert d.canaries.rates == pytest.approx(rates)
    assert d.canaries.cv == pytest.approx(stats.spread(rates))
    cv = f"CV {statistics.stdev(rates) / statistics.fmean(rates) * 100:.1f}%"
    line = next(ln for ln in _terminal(d).splitlines() if ln.startswith("Canary"))
    assert "r1 2.00, r2 1.92, r3 2.08" in line and cv in line
    md = markdown.render(d)
    assert "## Noise" in md and "Canary before each round" in md and "1.923" in md
    assert 'id="canary"' in html.render(d)
    doc = json.loads(csv_json.to_json(d))
    assert [c["repetition"] for c in doc["canaries"]] == [1, 2, 3]
    assert doc["canary_cv"] == pytest.approx(stats.spread(rates))
    row = doc["rows"][0]
    assert [float(x) for x in row["canary_rates"].split(";")] == pytest.approx(rates)


def test_no_canaries_and_no_noise_is_quiet(tmp_path: Path) -> None:
    """One repetition and no canary (a store written before them): no spread, no canary line, no steal note."""
    toml = HAND.format(ws=tmp_path / "ws")
    path = tmp_path / "hand.toml"
    path.write_text(toml)
    store = new_store(path, toml)
    ids = {"a": add_target(store, "a", "cx10a_c2r24"), "b": add_target(store, "b", "cx10a_sb1g_c2r24")}
    for t in ("a", "b"):
        store.write_cell(1, ids[t], CellResult(CellKey(t, STEP, 1, 1), "done", now(), now(), summary=summary(100.0)))
    d = data.gather(load_study(path), store, 1)
    store.close()
    assert _row(d, STEP).spread is None and not d.canaries.timed and d.canaries.cv is None
    out = _terminal(d)
    assert "Canary" not in out and "± beside a verdict" not in out and "Steal" not in out
    assert "## Noise" not in markdown.render(d)
    rec = json.loads(csv_json.to_json(d))["rows"][1]
    assert rec["aa_spread"] is None and rec["canary_rates"] is None and rec["steal_pct_max"] is None
