"""Reports of a real short run: terminal, markdown, CSV, JSON and HTML through the command line, checked against
the store; the HTML pages (that run's, and the Insert Benchmark's of a hand-made store) rendered offline in
headless Chromium; `dbsweep compare`. Hand-made stores alone: unit/test_report.py."""

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

from dbsweep.report import html
from dbsweep.results import load_frame

from ..conftest import ROOT, dbsweep, wait_no_processes, write_study
from ..unit.handmade import ibench_made

ARTIFACTS = ROOT / "test-artifacts"
STEPS = '["point-query", "update-nonindex", "range-covered-pk"]'
FULL_STEPS = ("point-query_range=100", "update-nonindex_range=100", "range-covered-pk_range=100")

pytestmark = pytest.mark.server


# ---- a real short run, once for the module ------------------------------------------------------------


@pytest.fixture(scope="module")
def run(_test_root: Path) -> Iterator[Path]:
    """Debian's Postgres, two configs, three steps from three groups, two repetitions."""
    d = _test_root / f"report-{uuid.uuid4().hex[:8]}"
    d.mkdir(mode=0o755)
    study = write_study(d, name="rep", repeats=2, rows=5000, seconds=1, warmup=0, steps=STEPS)
    # The reads take one second; the write two, so that the page's throughput-over-time chart (a line needs two
    # per-second samples) has a step to draw.
    text = study.read_text()
    assert "write_seconds = 1\n" in text
    study.write_text(text.replace("write_seconds = 1\n", "write_seconds = 2\n"))
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
    table = rep[rep.index("QPS and QPS relative to the base") :]  # the answer above it names the steps too
    line = next(ln for ln in table.splitlines() if FULL_STEPS[0] in ln)
    assert f"{ratio:.2f}" in line
    # The report opens with the answer: b against a by each figure.
    assert rep.startswith("The answer, run 1: each target against the base (a)")
    tally = r"^b against a: instructions not counted; QPS .* of 4; cpu/o (.*)$"
    found = re.search(tally, rep, re.M)
    assert found, rep[:600]
    # cpu/o: a verdict per cell where both sides' samplers stored it; a cell without is said, and the four add up.
    cpu = re.fullmatch(r".* of (\d)(?: \((\d) without a verdict\))?|not measured", found.group(1))
    assert cpu, found.group(1)
    assert cpu.group(1) is None or int(cpu.group(1)) + int(cpu.group(2) or 0) == 4, found.group(1)
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
    # The noise: a canary before each of the two rounds, the steps' spread over the base's repetitions, steal.
    assert [c["repetition"] for c in doc["canaries"]] == [1, 2] and all(c["rate"] > 0 for c in doc["canaries"])
    assert doc["canary_cv"] is not None and doc["canary_cv"] >= 0
    for step in FULL_STEPS:
        b = by[("b", step, 1)]
        assert b["aa_spread_source"] == "repetitions" and b["aa_spread_n"] == 2 and b["aa_spread"] >= 0
        assert b["steal_pct_max"] is not None and b["steal_pct_max"] >= 0


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
    # Seed 002's layout of the summaries: per target, a row per group with min, max, avg and median.
    point = next(g for g in doc["groups"] if g["target"] == "b" and g["group"] == "point")
    row = rf"^point\s+{point['min']:.2f}\s+{point['max']:.2f}\s+{point['mean']:.2f}\s+{point['median']:.2f}$"
    assert re.search(r"^b, 1 client\s+min\s+max\s+avg\s+median$", md, re.M) and re.search(row, md, re.M), md


def test_five_groups_as_seed_002_prints_them(run: Path, outputs: dict[str, str]) -> None:
    """`--groups five`: the point queries by the primary key are point-1, the range queries without aggregation
    range-1; the default grouping of the same run is unchanged, and a grouping the suite lacks is a clear error."""
    md = dbsweep("report", run, "--groups", "five", "--format", "markdown").stdout
    assert re.search(r"^col-1\s+--> point queries by the primary key \(point-1\)$", md, re.M), md
    assert re.search(r"^col-1\s+--> range queries without aggregation \(range-1\)$", md, re.M), md
    assert re.search(r"^point-1\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+$", md, re.M), md
    assert "point-1" not in outputs["markdown"]
    bad = dbsweep("report", run, "--groups", "six", check=False)
    assert bad.returncode != 0 and "no report grouping 'six'; it has: four, five" in bad.stderr, bad.stderr


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
    ARTIFACTS.mkdir(exist_ok=True)
    shot.unlink(missing_ok=True)  # the picture checked must be this run's
    try:
        # One browser start for both: the DOM goes to stdout, the picture of the same page to `shot`.
        argv = [*common, "--dump-dom", f"--screenshot={shot}", page.as_uri()]
        dom = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        assert dom.returncode == 0, dom.stderr[-2000:]
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    # The page logs nothing itself: any console line is an error or a warning of plotly's.
    console = [ln for ln in dom.stderr.splitlines() if ":CONSOLE" in ln]
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
    table = r.stdout[r.stdout.index("QPS and QPS relative to the base") :]  # the answer above it names steps too
    line = next(ln for ln in table.splitlines() if FULL_STEPS[0] in ln)
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


def test_ibench_page_renders_in_chromium(tmp_path: Path, chromium: str) -> None:
    page = tmp_path / "ib.html"
    with ibench_made(tmp_path) as ibench:
        page.write_text(html.render(ibench))
    text = page.read_text()
    for t in ("Insert Benchmark", "background insert rate", "<h3>Response times</h3>", "qp1000"):
        assert t in text, t
    dom, console = _browse(chromium, page, ARTIFACTS / "report-ibench.png")
    assert not console, console
    chart = _chart(dom, "ibts")
    assert chart.count('class="main-svg"') >= 1 and 'd="M' in chart
    _assert_png(ARTIFACTS / "report-ibench.png")
