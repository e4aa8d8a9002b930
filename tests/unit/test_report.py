"""Reports from hand-made stores (handmade.py): colours on the thresholds, group summaries computed by hand,
per-operation costs and their verdict, missing data shown gracefully, and the Insert Benchmark's tables,
histograms and SLA. From a real run, and the pages in a browser: e2e/test_report.py."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from dbsweep import say
from dbsweep.report import csv_json, data, html, markdown, terminal
from dbsweep.results.model import CellKey, CellResult
from dbsweep.results.store import Store, now
from dbsweep.study import load_study
from dbsweep.suites.ibench.report import BUCKETS, cell_buckets, sla_failed

from .handmade import HAND, add_target, hand_made, ibench_made, new_store, summary


@pytest.fixture
def hand(tmp_path: Path) -> Iterator[tuple[data.ReportData, Store]]:
    with hand_made(tmp_path) as made:
        yield made


@pytest.fixture
def ibench(tmp_path: Path) -> Iterator[data.ReportData]:
    with ibench_made(tmp_path) as made:
        yield made


def test_colours_follow_the_thresholds(hand: tuple[data.ReportData, Store]) -> None:
    d, _ = hand
    rel = {r.step: r for r in d.rows}
    assert rel["point-query_range=100"].rel["b"] == 0.95
    table = html._relative_table(d)  # the HTML classes are what the reader sees
    classes = {row[0].text: row[2].cls for _title, rows in table.groups for row in rows}
    assert classes["point-query_range=100"] == "c-red"  # <= 0.95
    assert classes["random-points_range=10"] == "c-grey"  # between
    assert classes["hot-points_range=100"] == "c-green"  # >= 1.05
    assert classes["update-index_range=100"] == "c-red"
    assert classes["delete_range=100"] == "c-grey"
    buf = io.StringIO()
    terminal.render(d, say.console(file=buf, width=220, force_terminal=True, color_system="standard"))
    out = buf.getvalue()
    assert "\x1b[31m0.95" in out and "\x1b[32m1.05" in out  # red and green in the terminal too
    # Verdicts: no noise at all, so the sign and the 2 % minimum effect decide.
    verdicts = {r.step: r.cmp["b"].verdict for r in d.rows}
    assert verdicts["point-query_range=100"] == "slower"
    assert verdicts["hot-points_range=100"] == "faster"
    assert verdicts["range-covered-pk_range=100"] == "same"  # 1 % < the minimum effect
    assert verdicts["delete_range=100"] == "same"


def test_group_summaries_match_hand_computed_values(hand: tuple[data.ReportData, Store]) -> None:
    d, _ = hand
    g = {x.group: x for x in d.groups}
    assert set(g) == {"point", "range-noagg", "write"}
    point = g["point"].summary  # 0.95, 0.96, 1.05; point-query.pre is left out
    assert point.n == 3
    assert point.min == pytest.approx(0.95) and point.max == pytest.approx(1.05)
    assert point.mean == pytest.approx(0.986666667) and point.median == pytest.approx(0.96)
    assert point.stddev == pytest.approx(0.0550757055, rel=1e-6)
    assert g["point"].geomean == pytest.approx((0.95 * 0.96 * 1.05) ** (1 / 3))
    assert g["point"].verdicts == {"faster": 1, "slower": 2, "same": 0, "unsure": 0}
    rng = g["range-noagg"].summary  # 1.01, 1.20
    assert (rng.min, rng.max, rng.n) == (pytest.approx(1.01), pytest.approx(1.20), 2)
    assert rng.stddev == pytest.approx(0.1343502884, rel=1e-6)
    write = g["write"].summary  # 0.90, 1.00
    assert write.mean == pytest.approx(0.95) and write.median == pytest.approx(0.95)
    doc = csv_json.to_json_obj(d)
    assert doc["groups"][0]["median"] == pytest.approx(0.96)
    md = markdown.render(d)
    assert re.search(r"^0\.96\s+median$", md, re.M) and re.search(r"^0\.055\s+stddev$", md, re.M)


def test_per_op_metrics_in_order_with_a_verdict_on_cpu(hand: tuple[data.ReportData, Store]) -> None:
    d, _ = hand
    assert d.per_op_metrics == ["cpu/o", "alpha/o", "zeta/o"]
    row = next(r for r in d.rows if r.step == "point-query_range=100")
    assert row.cost_ratio["b"]["cpu/o"] == pytest.approx(1.2)
    assert row.cost_cmp["b"].verdict == "slower"  # 20 % more CPU per query
    no_cost = next(r for r in d.rows if r.step == "delete_range=100")
    assert no_cost.cost_ratio["b"]["cpu/o"] is None and no_cost.cost_cmp["b"].verdict is None
    rec = {(x["target"], x["step"]): x for x in csv_json.records(d)}
    assert rec[("b", "point-query_range=100")]["cpu_per_op"] == pytest.approx(12.0)
    assert rec[("b", "point-query_range=100")]["cpu_per_op_verdict"] == "slower"
    assert rec[("b", "point-query_range=100")]["alpha_per_op_ratio"] == pytest.approx(1.0)
    assert rec[("b", "delete_range=100")]["cpu_per_op"] is None
    buf = io.StringIO()
    terminal.render(d, say.console(file=buf, width=220))
    assert "12 (1.20)" in buf.getvalue()
    # Provenance facts of the hand-made record.
    facts = dict(d.provenance["b"].facts())
    assert facts["CPU"] == "Test CPU" and facts["CPU placement"].startswith("split (server CPUs 0")
    assert facts["memory"] == "2.0 GiB"


def test_no_per_op_rows_is_shown_gracefully(tmp_path: Path) -> None:
    toml = HAND.format(ws=tmp_path / "ws").replace("repeats = 3", "repeats = 1")
    path = tmp_path / "hand.toml"
    path.write_text(toml)
    store = new_store(path, toml)
    ids = {"a": add_target(store, "a", "cx10a_c2r24"), "b": add_target(store, "b", "cx10a_sb1g_c2r24")}
    for t in ("a", "b"):
        store.write_cell(
            1,
            ids[t],
            CellResult(CellKey(t, "point-query_range=100", 1, 1), "done", now(), now(), summary=summary(500)),
        )
    d = data.gather(load_study(path), store, 1, series=True)
    store.close()
    assert d.per_op_metrics == [] and d.provenance == {}
    buf = io.StringIO()
    terminal.render(d, say.console(file=buf, width=200))
    assert "No per-operation measurements" in buf.getvalue()
    assert "No per-operation measurements" in html.render(d)
    assert "No per-operation measurements" in markdown.render(d)
    rec = csv_json.records(d)
    assert all(r["cpu_per_op"] is None for r in rec)
    # Steps that never ran show a dash, not an error; one repetition has no interval: unsure.
    assert next(r for r in rec if r["target"] == "b" and r["step"] == "point-query_range=100")["verdict"] == "unsure"
    assert next(r for r in rec if r["step"] == "scan_range=100")["qps_median"] is None


def test_ibench_tables_histograms_and_sla(ibench: data.ReportData) -> None:
    d = ibench
    buf = io.StringIO()
    terminal.render(d, say.console(file=buf, width=250))
    out = buf.getvalue()
    for text in (
        "throughput per step",
        "throughput relative to the base",
        "background insert rate",
        "SLA",
        "qp1000",
        "worst response time",
    ):
        assert text in out, text
    qr100 = next(r for r in d.rows if r.step == "qr100")
    assert sla_failed(qr100.cells["b"]) and not sla_failed(qr100.cells["a"])
    assert qr100.cells["b"].sla_ok is False and qr100.cells["a"].sla_ok is True
    assert [name for name, _ in BUCKETS][:3] == ["le_256us", "le_1ms", "le_4ms"]
    assert cell_buckets(qr100.cells["a"], "insert")[:3] == [90, 9, 1]
    # From the HDR histogram: 100 -> le_256us, 300 x2 -> le_1ms, 5000 -> le_16ms.
    assert cell_buckets(qr100.cells["b"], "insert") == [1, 2, 0, 1, 0, 0, 0, 0, 0, 0]
    assert data.cell_max_us(qr100.cells["a"], "insert") == 3000
    assert data.cell_max_us(qr100.cells["b"], "insert") == pytest.approx(5000, rel=0.01)
    # Deletes: no histogram anywhere, so the worst per-second response time (the rates of each second).
    assert data.cell_max_us(qr100.cells["b"], "delete") == 500
    rates = qr100.cells["b"].reps[0].rates
    assert all(isinstance(s, data.RateSample) for s in rates) and [s.max_delete_us for s in rates] == [500] * 5
    assert isinstance(qr100.cells["b"], data.Entry)
    md = markdown.render(d)
    assert "## Insert Benchmark" in md and "Response times of qr100" in md
    assert re.search(r"^b\s+insert\s+25\.000\s+50\.000\s+25\.000\s+5$", md, re.M)
    assert re.search(r"^b\s+.*900 SLA", md, re.M)  # 0.9 x 1000 on qr1000
    rec = {(x["target"], x["step"]): x for x in csv_json.records(d)}
    assert rec[("b", "qr100")]["sla_ok"] is False and rec[("a", "qr100")]["sla_ok"] is True
    assert rec[("b", "qr100")]["achieved_rate"] == pytest.approx(90.0)
    assert rec[("a", "l.i0")]["max_insert_us"] == 3000
    # The page: the suite's tables in its section, each step's histogram folded under one heading.
    page = html.render(d)
    assert '<h2 id="x-insert-benchmark">Insert Benchmark</h2>' in page
    assert "<h3>background insert rate of the read-write steps (rows/s)</h3>" in page
    assert "<h3>Response times</h3>\n<details><summary>l.i0</summary>" in page
    assert page.count("<details><summary>q") == 6


def test_a_step_is_named_as_the_suite_labels_it_in_every_table(hand: tuple[data.ReportData, Store]) -> None:
    d, _ = hand
    row = next(r for r in d.rows if r.step == "point-query_range=100")
    row.label = "point-query.t1"  # as a suite's step_label names it (db_bench's readwhilewriting.t1)
    names = {r[0].text for _title, rows in html._relative_table(d).groups for r in rows}
    assert "point-query.t1" in names and "point-query_range=100" not in names
    assert "point-query.t1" in html._x_labels(d, d.rows)[1]
    buf = io.StringIO()
    terminal.render(d, say.console(file=buf, width=220))
    assert "point-query.t1" in buf.getvalue()
    assert "point-query.t1" in markdown.render(d)


def _count(per_event: float) -> dict[str, object]:
    return {
        "per_event": per_event,
        "per_query": per_event,
        "spread": 0.0,
        "foreground_per_event": per_event,
        "foreground_spread": 0.0,
        "foreground_share": 1.0,
        "error": None,
    }


def test_group_summaries_carry_the_instruction_ratios(hand: tuple[data.ReportData, Store], tmp_path: Path) -> None:
    _, store = hand
    ids = store.target_ids(1)
    # b's instructions/o relative to a's: the point group has three counted steps (the .pre step is left out as
    # in rQPS), the write group one, the range group none.
    ratios = {
        "point-query_range=100": 0.90,
        "random-points_range=10": 1.001,
        "hot-points_range=100": 1.10,
        "point-query.pre_range=100": 0.50,
        "update-index_range=100": 0.80,
    }
    for step, ratio in ratios.items():
        store.write_instructions(1, ids["a"], step, _count(100_000.0))
        store.write_instructions(1, ids["b"], step, _count(100_000.0 * ratio))
    d = data.gather(load_study(tmp_path / "hand.toml"), store, 1)
    g = {x.group: x for x in d.groups}
    point = g["point"].instr_summary
    assert point is not None and point.n == 3
    assert [point.min, point.max, point.median] == pytest.approx([0.90, 1.10, 1.001])
    assert g["point"].instr_verdicts == {"faster": 1, "same": 1, "slower": 1}
    write = g["write"].instr_summary
    assert write is not None and write.n == 1 and write.mean == pytest.approx(0.80)
    assert g["range-noagg"].instr_summary is None
    doc = {x["group"]: x for x in csv_json.to_json_obj(d)["groups"]}
    assert doc["point"]["instr_median"] == pytest.approx(1.001) and "instr_median" not in doc["range-noagg"]
    md = markdown.render(d)
    assert re.search(r"^point\s+3\s+0\.900\s+1\.100\s+1\.000\s+1\.001\s+1/1/1/0$", md, re.M)
    assert re.search(r"^write\s+1\s+0\.800\s+0\.800\s+0\.800\s+0\.800\s+1/0/0/0$", md, re.M)
    buf = io.StringIO()
    terminal.render(d, say.console(file=buf, width=240))
    assert "(median 1.001)" in buf.getvalue()


def test_targets_that_do_not_fit_the_terminal_go_to_tables_after_it(tmp_path: Path) -> None:
    """Five targets beside each other need more columns than a 130-column terminal has: squeezed, the figures
    would be cut. Each table then holds the targets that fit, with the steps and the base's QPS again."""
    with hand_made(tmp_path, extra=("c", "d", "e")) as (d, _):
        buf = io.StringIO()
        terminal.render(d, say.console(file=buf, width=130))
        out = buf.getvalue()
        wide = io.StringIO()
        terminal.render(d, say.console(file=wide, width=1000))
    titles = re.findall(r"QPS and QPS relative to the base \(a\), run 1 \(([^)]*)\)", out)
    assert len(titles) > 1 and ", ".join(titles).split(", ") == ["col-1", "col-2", "col-3", "col-4"]
    assert all(len(line) <= 130 for line in out.splitlines())
    assert out.count("point-query_range=100") > wide.getvalue().count("point-query_range=100")
    assert "0.95" in out and "…" not in out  # every figure whole
    assert "(col-1" not in wide.getvalue()  # where they fit: one table, as before
    assert "base = a  col-1 = b  col-2 = c" in out  # numbered as the markdown report numbers them
