"""Reports: terminal, markdown, CSV, JSON and HTML from a real short run, checked against the store; the
HTML page rendered in headless Chromium; colours and group summaries on a hand-made dataset; the
Insert Benchmark's tables and histograms on a hand-made store; `dbsweep compare`."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hdrh.histogram import HdrHistogram
from rich.console import Console

from dbsweep.report import csv_json, data, html, markdown, terminal
from dbsweep.results import load_frame
from dbsweep.store import CellKey, CellResult, Store, now
from dbsweep.study import load_study

from .conftest import ROOT, dbsweep, wait_no_processes, write_study

ARTIFACTS = ROOT / "test-artifacts"
STEPS = '["point-query", "update-nonindex", "range-covered-pk"]'
FULL_STEPS = ("point-query_range=100", "update-nonindex_range=100", "range-covered-pk_range=100")


# ---- a real short run, once for the module ------------------------------------------------------------


@pytest.fixture(scope="module")
def run(_test_root: Path) -> Iterator[Path]:
    """Debian's Postgres, two configs, three steps from three groups, two repetitions."""
    d = _test_root / f"report-{uuid.uuid4().hex[:8]}"
    d.mkdir(mode=0o755)
    study = write_study(d, name="rep", repeats=2, rows=10000, steps=STEPS)
    dbsweep("run", study)
    yield study
    assert not wait_no_processes(d, timeout=30)


@pytest.fixture(scope="module")
def outputs(run: Path) -> dict[str, str]:
    """Every format, made through the command line as a user would."""
    out: dict[str, str] = {"terminal": dbsweep("report", run).stdout}
    for fmt, ext in (("markdown", "md"), ("csv", "csv"), ("json", "json"), ("html", "html")):
        path = run.parent / f"report.{ext}"
        r = dbsweep("report", run, "--format", fmt, "--out", path)
        assert f"wrote {path}" in r.stderr.replace("\n", "")
        out[fmt] = path.read_text()
    return out


def _store_qps(study: Path) -> dict[tuple[str, str], list[float]]:
    db = sqlite3.connect(study.parent / "ws" / "results.db")
    rows = db.execute(
        "SELECT t.name, c.step, r.qps FROM cells c JOIN targets t ON t.id = c.target_id "
        "JOIN step_results r ON r.cell_id = c.id WHERE c.status = 'done'"
    ).fetchall()
    out: dict[tuple[str, str], list[float]] = {}
    for name, step, qps in rows:
        out.setdefault((name, step), []).append(qps)
    return out


def test_terminal_report_has_verdicts_summaries_and_targets(run: Path, outputs: dict[str, str]) -> None:
    rep = outputs["terminal"]
    for text in ("a", "b", "load (rows/s)", "rQPS", "95% CI", "verdict", "rQPS per group", *FULL_STEPS):
        assert text in rep, text
    for group in ("point queries", "range queries without aggregation", "writes"):
        assert group in rep
    assert re.search(r"\b(faster|slower|same|unsure)\b", rep)
    qps = _store_qps(run)
    ratio = statistics.median(qps[("b", FULL_STEPS[0])]) / statistics.median(qps[("a", FULL_STEPS[0])])
    line = next(ln for ln in rep.splitlines() if FULL_STEPS[0] in ln)
    assert f"{ratio:.2f}" in line
    # Per-operation costs: a table when the samplers stored them, a clear sentence when not.
    assert "Hardware cost per operation" in rep or "No per-operation measurements" in rep


def test_json_numbers_are_the_stores(run: Path, outputs: dict[str, str]) -> None:
    doc = json.loads(outputs["json"])
    assert doc["study"] == "rep" and doc["base"] == "a" and doc["targets"] == ["a", "b"]
    assert set(doc) >= {"study", "run_id", "base", "rows", "groups", "provenance"}
    qps = _store_qps(run)
    by = {(r["target"], r["step"], r["clients"]): r for r in doc["rows"]}
    assert set(by) == {(t, s, 1) for t in ("a", "b") for s in ("load", *FULL_STEPS)}
    for (t, step, _c), row in by.items():
        assert row["qps_median"] == pytest.approx(statistics.median(qps[(t, step)]), rel=1e-12)
        assert row["n_reps"] == 2
    for step in FULL_STEPS:
        b, a = by[("b", step, 1)], by[("a", step, 1)]
        assert b["rqps"] == pytest.approx(b["qps_median"] / a["qps_median"])
        assert b["verdict"] in ("faster", "slower", "same", "unsure")
        assert a["rqps"] == 1.0 and a["verdict"] is None and a["is_base"] is True
        assert b["lat_p50_us"] > 0 and b["lat_p99_us"] >= b["lat_p50_us"]
        if b["rqps_ci_low"] is not None:
            assert b["rqps_ci_low"] <= b["rqps_ci_high"]
    assert {g["group"] for g in doc["groups"]} == {"point", "range-noagg", "write"}
    point = next(g for g in doc["groups"] if g["group"] == "point")
    assert point["median"] == pytest.approx(by[("b", FULL_STEPS[0], 1)]["rqps"]) and point["n"] == 1
    prov = doc["provenance"]
    assert set(prov) == {"a", "b"}
    assert prov["b"]["facts"]["version"].startswith("15")
    assert "CPU placement" in prov["b"]["facts"] and "CPU" in prov["b"]["facts"]
    assert "-O2" in prov["b"]["facts"]["CFLAGS"]
    assert "shared_buffers=1GB" in prov["b"]["config_change_from_base"]
    assert doc["columns"][:5] == ["study", "run_id", "base", "target", "is_base"]


def test_csv_parses_and_load_frame_round_trips(run: Path, outputs: dict[str, str]) -> None:
    rows = list(csv.DictReader(io.StringIO(outputs["csv"])))
    header = outputs["csv"].splitlines()[0].split(",")
    assert header == json.loads(outputs["json"])["columns"]
    for col in (
        "qps_median",
        "rqps",
        "rqps_ci_low",
        "verdict",
        "lat_p99_us",
        "cpu_per_op",
        "cpu_per_op_ratio",
        "sla_ok",
    ):
        assert col in header
    assert len(rows) == 8
    from_csv = pd.read_csv(io.StringIO(outputs["csv"]))
    for frame in (load_frame(run), load_frame(run.parent / "ws" / "results.db")):
        assert list(frame.columns) == header
        assert len(frame) == len(from_csv)
        for col in header:
            a, b = frame[col].tolist(), from_csv[col].tolist()
            for x, y in zip(a, b, strict=True):
                if _missing(x) or _missing(y):
                    assert _missing(x) and _missing(y), (col, x, y)
                elif isinstance(x, float | int) and not isinstance(x, bool):
                    assert float(x) == float(y), (col, x, y)
                else:
                    assert str(x) == str(y), (col, x, y)


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def test_markdown_is_in_the_seeds_style(outputs: dict[str, str]) -> None:
    md = outputs["markdown"]
    doc = json.loads(outputs["json"])
    assert "Relative to: a" in md and "col-1 : b" in md
    for group in ("point queries", "range queries without aggregation", "writes"):
        assert re.search(rf"^col-1\s+--> {group}$", md, re.M), group
    by = {(r["target"], r["step"]): r for r in doc["rows"]}
    for step in FULL_STEPS:
        assert re.search(rf"^{by[('b', step)]['rqps']:.2f}\s+{re.escape(step)}$", md, re.M), step
    assert "summary: point queries" in md and "median" in md
    assert "## Provenance" in md and "shared_buffers=1GB" in md


# ---- the page in a real browser ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chromium() -> str:
    exe = shutil.which("chromium")
    if exe is None:
        if os.geteuid() != 0:
            pytest.skip("Debian's chromium is not installed and installing it needs root: apt-get install chromium")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, capture_output=True, timeout=600)
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "chromium"],
            check=True,
            env=env,
            capture_output=True,
            timeout=900,
        )
        exe = shutil.which("chromium")
        assert exe, "apt-get installed chromium but it is not on the PATH"
    return exe


def _browse(chromium: str, page: Path, shot: Path) -> tuple[str, list[str]]:
    """The page's DOM after its scripts ran, and the console messages; saves a screenshot."""
    profile = page.parent / f"chromium-{uuid.uuid4().hex[:6]}"
    common = [
        chromium,
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        f"--user-data-dir={profile}",
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=5000",
        "--window-size=1400,2000",
        # No name resolves: the page must draw without the network.
        "--host-resolver-rules=MAP * ~NOTFOUND",
    ]
    try:
        dom = subprocess.run([*common, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120)
        assert dom.returncode == 0, dom.stderr[-2000:]
        ARTIFACTS.mkdir(exist_ok=True)
        pic = subprocess.run(
            [*common, f"--screenshot={shot}", page.as_uri()], capture_output=True, text=True, timeout=120
        )
        assert pic.returncode == 0, pic.stderr[-2000:]
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    # The page logs nothing itself: any console line is an error or a warning of plotly's.
    console = [ln for ln in dom.stderr.splitlines() + pic.stderr.splitlines() if ":CONSOLE" in ln]
    return dom.stdout, console


def _chart(dom: str, div_id: str) -> str:
    """The rendered markup of one plotly chart (up to the next chart)."""
    start = dom.index(f'<div id="{div_id}"')
    nxt = re.compile(r'<div id="[^"]*" class="plotly-graph-div').search(dom, start + 1)
    return dom[start : nxt.start() if nxt else len(dom)]


def _assert_png(path: Path) -> None:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
    assert (width, height) == (1400, 2000)
    assert path.stat().st_size > 20_000  # a blank page compresses to a few kB


def test_html_page_renders_offline_in_chromium(run: Path, outputs: dict[str, str], chromium: str) -> None:
    page_text = outputs["html"]
    # Self-contained: no external scripts, styles or fonts (plotly.js itself mentions a few URLs in strings).
    assert not re.search(r"<script[^>]*\ssrc=|<link\b|@import|url\(\s*['\"]?https?:", page_text)
    assert "plotly" in page_text and len(page_text) > 3_000_000  # plotly.js is inside
    for text in ("a (base)", "rQPS per group", "Relative QPS", "Absolute throughput", "Provenance", *FULL_STEPS):
        assert text in page_text, text
    page = run.parent / "report.html"
    shot = ARTIFACTS / "report.png"
    dom, console = _browse(chromium, page, shot)
    assert not console, console
    for div_id in ("chart-rqps", "chart-latency", "tput"):
        chart = _chart(dom, div_id)
        assert 'class="main-svg"' in chart, div_id
        # Bars or lines were drawn, not just the axes.
        assert re.search(r'class="(point|js-line)"[^>]*>\s*(<path[^>]* d="M|)', chart) or 'd="M' in chart, div_id
    assert dom.count('class="main-svg"') >= 6
    _assert_png(shot)


# ---- compare ---------------------------------------------------------------------------------------------


def test_compare_two_targets_prints_both_and_the_ratio(run: Path, outputs: dict[str, str]) -> None:
    r = dbsweep("compare", run, "--targets", "a", "b")
    doc = json.loads(outputs["json"])
    ratio = next(x["rqps"] for x in doc["rows"] if x["target"] == "b" and x["step"] == FULL_STEPS[0])
    assert "b vs a" in r.stdout
    line = next(ln for ln in r.stdout.splitlines() if FULL_STEPS[0] in ln)
    assert f"{ratio:.2f}" in line
    bad = dbsweep("compare", run, "--targets", "a", "zz", check=False)
    assert bad.returncode == 1 and "no target 'zz'" in bad.stderr


def test_compare_two_studies_labels_both_sides(run: Path) -> None:
    r = dbsweep("compare", run, run, "--format", "json")
    doc = json.loads(r.stdout)
    assert doc["base"] == "A:a" and doc["targets"] == ["A:a", "B:a", "B:b"]
    rows = {(x["target"], x["step"]): x for x in doc["rows"]}
    # The same run against itself: ratio 1 exactly.
    assert rows[("B:a", FULL_STEPS[0])]["rqps"] == pytest.approx(1.0)
    assert any("not paired" in n for n in doc["notes"])
    text = dbsweep("compare", run, run).stdout
    assert "A:a" in text and "B:b" in text
    none = dbsweep("compare", run, check=False)
    assert none.returncode == 1 and "--targets" in none.stderr


# ---- a hand-made dataset -----------------------------------------------------------------------------

HAND = """\
name = "hand"
engine = "postgres"
base = "a"
repeats = 3
workspace = "{ws}"

[suite]
steps = ["point-query", "random-points_range=10", "hot-points", "point-query.pre", "range-covered-pk", "scan",
         "update-index", "delete"]
rows = 1000

[[targets]]
name = "a"
config = "cx10a_c2r24"

[[targets]]
name = "b"
config = "cx10a_sb1g_c2r24"
"""

# rQPS of b per step, chosen to sit on the colour thresholds.
RATIOS = {
    "point-query_range=100": 0.95,
    "random-points_range=10": 0.96,
    "hot-points_range=100": 1.05,
    "point-query.pre_range=100": 0.50,  # left out of the summaries
    "range-covered-pk_range=100": 1.01,
    "scan_range=100": 1.20,
    "update-index_range=100": 0.90,
    "delete_range=100": 1.00,
}


def _summary(rate: float, **extra: Any) -> dict[str, Any]:
    return {
        "ops_name": "queries",
        "operations": int(rate * 10),
        "events": int(rate * 10),
        "seconds": 10.0,
        "rate": rate,
        "tps": rate,
        "latency_us": {"p50": 100, "p95": 200, "p99": 400, "max": 900, "mean": 120},
        **extra,
    }


def _new_store(study_path: Path, toml: str) -> Store:
    study = load_study(study_path)
    store = Store(study.workspace_dir / "results.db")
    sid = store.study_id(study.title, str(study_path))
    run_id = store.new_run(sid, study.measurement_key(), toml)
    assert run_id == 1
    return store


def _target(store: Store, name: str, config: str) -> int:
    return store.ensure_target(1, name, "postgres", {"source": "system", "variant": "def", "config": config})


def _prov(name: str, config: str, diff: str) -> dict[str, Any]:
    return {
        "dbsweep_version": "0.1.0",
        "host": {"cpu_model": "Test CPU", "cpus_logical": 2, "memory_bytes": 2**31, "kernel": "6.1"},
        "engine": {"server_version": "15.18", "cflags": "-O2", "source_identity": "pkg 15.18", "cc": "gcc"},
        "target": {"name": name, "source": "system", "variant": "def"},
        "config": {"name": config, "diff": diff},
        "cpu_placement": {"placement": "split", "server_cpus": [0], "client_cpus": [1], "host_cpus": [0, 1]},
    }


@pytest.fixture
def hand(tmp_path: Path) -> Iterator[tuple[data.ReportData, Store]]:
    toml = HAND.format(ws=tmp_path / "ws")
    path = tmp_path / "hand.toml"
    path.write_text(toml)
    store = _new_store(path, toml)
    ids = {"a": _target(store, "a", "cx10a_c2r24"), "b": _target(store, "b", "cx10a_sb1g_c2r24")}
    diffs = {"a": "shared_buffers=8GB\n", "b": "shared_buffers=1GB\n"}
    for rep in (1, 2, 3):
        for t in ("a", "b") if rep % 2 else ("b", "a"):
            for step, ratio in RATIOS.items():
                qps = 1000.0 * (ratio if t == "b" else 1.0)
                per_op: dict[str, float | None] = {
                    "cpu/o": 10.0 * (1.2 if t == "b" else 1.0),
                    "zeta/o": 1.0,
                    "alpha/o": 2.0,
                }
                store.write_cell(
                    1,
                    ids[t],
                    CellResult(
                        CellKey(t, step, 1, rep),
                        "done",
                        now(),
                        now(),
                        summary=_summary(qps),
                        per_op=per_op if step != "delete_range=100" else None,
                        provenance=_prov(t, "cx10a_c2r24" if t == "a" else "cx10a_sb1g_c2r24", diffs[t]),
                    ),
                )
    yield data.gather(load_study(path), store, 1, series=True), store
    store.close()


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
    terminal.render(d, Console(file=buf, width=220, force_terminal=True, color_system="standard"))
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
    terminal.render(d, Console(file=buf, width=220))
    assert "12 (1.20)" in buf.getvalue()
    # Provenance facts of the hand-made record.
    facts = dict(d.provenance["b"].facts())
    assert facts["CPU"] == "Test CPU" and facts["CPU placement"].startswith("split (server CPUs 0")
    assert facts["memory"] == "2.0 GiB"


def test_no_per_op_rows_is_shown_gracefully(tmp_path: Path) -> None:
    toml = HAND.format(ws=tmp_path / "ws").replace("repeats = 3", "repeats = 1")
    path = tmp_path / "hand.toml"
    path.write_text(toml)
    store = _new_store(path, toml)
    ids = {"a": _target(store, "a", "cx10a_c2r24"), "b": _target(store, "b", "cx10a_sb1g_c2r24")}
    for t in ("a", "b"):
        store.write_cell(
            1,
            ids[t],
            CellResult(CellKey(t, "point-query_range=100", 1, 1), "done", now(), now(), summary=_summary(500)),
        )
    d = data.gather(load_study(path), store, 1, series=True)
    store.close()
    assert d.per_op_metrics == [] and d.provenance == {}
    buf = io.StringIO()
    terminal.render(d, Console(file=buf, width=200))
    assert "No per-operation measurements" in buf.getvalue()
    assert "No per-operation measurements" in html.render(d)
    assert "No per-operation measurements" in markdown.render(d)
    rec = csv_json.records(d)
    assert all(r["cpu_per_op"] is None for r in rec)
    # Steps that never ran show a dash, not an error; one repetition has no interval: unsure.
    assert next(r for r in rec if r["target"] == "b" and r["step"] == "point-query_range=100")["verdict"] == "unsure"
    assert next(r for r in rec if r["step"] == "scan_range=100")["qps_median"] is None


# ---- the Insert Benchmark, hand-made -------------------------------------------------------------------

IBENCH = """\
name = "ib"
engine = "postgres"
base = "a"
workspace = "{ws}"

[suite]
name = "ibench"
profile = "quick"

[[targets]]
name = "a"
config = "cx10a_c2r24"

[[targets]]
name = "b"
config = "cx10a_sb1g_c2r24"
"""


def _hdr(values: list[int]) -> str:
    h = HdrHistogram(1, 60_000_000, 3)
    for v in values:
        h.record_value(v)
    encoded = h.encode()
    return encoded.decode() if isinstance(encoded, bytes) else str(encoded)


@pytest.fixture
def ibench(tmp_path: Path) -> Iterator[data.ReportData]:
    toml = IBENCH.format(ws=tmp_path / "ws")
    path = tmp_path / "ib.toml"
    path.write_text(toml)
    store = _new_store(path, toml)
    ids = {"a": _target(store, "a", "cx10a_c2r24"), "b": _target(store, "b", "cx10a_sb1g_c2r24")}
    buckets = {"le_256us": 90, "le_1ms": 9, "le_4ms": 1}
    for t in ("a", "b"):
        for step in load_study(path).steps():
            rw = step.startswith("q")
            rate = 1000.0 if t == "a" else 800.0
            target = int(step[2:]) if rw else None
            achieved = None if target is None else (target if t == "a" else 0.9 * target)
            extra: dict[str, Any] = {
                "ips": rate,
                "dps": rate / 2,
                "target_rate": target,
                "achieved_rate": achieved,
                "sla_ok": None if target is None else achieved is not None and achieved >= 0.95 * target,
            }
            hist: dict[str, str] | None = None
            if t == "a":  # the client's own buckets in the summary
                extra["latency"] = {
                    "insert": {"max_us": 3000, "buckets": buckets},
                    "query": {"max_us": 700, "buckets": buckets},
                }
            else:  # only HDR histograms: the report decodes them
                hist = {"insert": _hdr([100, 300, 300, 5000]), "query": _hdr([50, 60])}
            # The load client's per-second lines of an ibench step: the main operation, then each one's rate.
            lines = [
                {
                    "t": s,
                    "phase": "measure",
                    "ops": int(rate),
                    "errors": 0,
                    "max_us": 1000 * s,
                    "i_ips": rate + s,
                    "i_dps": rate / 2,
                    "i_qps": 100.0 * s,
                    "max_i_us": 1000 * s,
                    "max_d_us": 500,
                    "max_q_us": 200,
                }
                for s in range(1, 6)
            ]
            store.write_cell(
                1,
                ids[t],
                CellResult(
                    CellKey(t, step, 1, 1),
                    "done",
                    now(),
                    now(),
                    summary=_summary(rate, **extra),
                    seconds_lines=lines,
                    histograms=hist,
                ),
            )
    yield data.gather(load_study(path), store, 1, series=True)
    store.close()


def test_ibench_tables_histograms_and_sla(ibench: data.ReportData) -> None:
    d = ibench
    buf = io.StringIO()
    terminal.render(d, Console(file=buf, width=250))
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
    assert qr100.cells["b"].sla_failed and not qr100.cells["a"].sla_failed
    assert data.cell_buckets(qr100.cells["a"], "insert")[:3] == [90, 9, 1]
    # From the HDR histogram: 100 -> le_256us, 300 x2 -> le_1ms, 5000 -> le_16ms.
    assert data.cell_buckets(qr100.cells["b"], "insert") == [1, 2, 0, 1, 0, 0, 0, 0, 0, 0]
    assert data.cell_max_us(qr100.cells["a"], "insert") == 3000
    assert data.cell_max_us(qr100.cells["b"], "insert") == pytest.approx(5000, rel=0.01)
    # Deletes: no histogram anywhere, so the worst per-second response time.
    assert data.cell_max_us(qr100.cells["b"], "delete") == 500
    md = markdown.render(d)
    assert "## Insert Benchmark" in md and "Response times of qr100" in md
    assert re.search(r"^b insert\s+25\.000\s+50\.000\s+25\.000\s+5$", md, re.M)
    assert re.search(r"^b\s+.*900 SLA", md, re.M)  # 0.9 x 1000 on qr1000
    rec = {(x["target"], x["step"]): x for x in csv_json.records(d)}
    assert rec[("b", "qr100")]["sla_ok"] is False and rec[("a", "qr100")]["sla_ok"] is True
    assert rec[("b", "qr100")]["achieved_rate"] == pytest.approx(90.0)
    assert rec[("a", "l.i0")]["max_insert_us"] == 3000


def test_ibench_page_renders_in_chromium(ibench: data.ReportData, tmp_path: Path, chromium: str) -> None:
    page = tmp_path / "ib.html"
    page.write_text(html.render(ibench))
    text = page.read_text()
    for t in ("Insert Benchmark", "Background insert rate", "Response-time histograms", "qp1000"):
        assert t in text
    dom, console = _browse(chromium, page, ARTIFACTS / "report-ibench.png")
    assert not console, console
    chart = _chart(dom, "ibts")
    assert chart.count('class="main-svg"') >= 1 and 'd="M' in chart
    _assert_png(ARTIFACTS / "report-ibench.png")
