"""A series study: each step's trend over the targets in order, and where it changed, in the report; and the
study's checks of a series."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import numpy as np

from dbsweep import say
from dbsweep.report import csv_json, data, html, markdown, terminal
from dbsweep.results.model import CellKey, CellResult
from dbsweep.results.store import now
from dbsweep.study import load_study

from .conftest import cli
from .handmade import add_target, new_store, summary

STEP = "point-query_range=100"
TARGETS = ["v1", "v2", "v3", "v4", "v5", "v6"]
SERIES = """\
name = "ser"
engine = "postgres"
base = "v1"
repeats = 3
workspace = "{ws}"
series = true

[suite]
steps = ["point-query"]
rows = 1000
{targets}
"""


def _study(tmp_path: Path, configs: list[str] | None = None) -> tuple[Path, str]:
    configs = configs or ["cx10a_c2r24"] * len(TARGETS)
    targets = "".join(f'\n[[targets]]\nname = "{t}"\nconfig = "{c}"\n' for t, c in zip(TARGETS, configs, strict=True))
    toml = SERIES.format(ws=tmp_path / "ws", targets=targets)
    path = tmp_path / "ser.toml"
    path.write_text(toml)
    return path, toml


def _count(per_event: float) -> dict[str, Any]:
    """A stored count with two pairs (their foreground 95 % of the work)."""

    def pair(v: float) -> dict[str, Any]:
        short = {"events": 100, "instructions": 0, "by_role": {"foreground": 0}}
        long = {"events": 400, "instructions": int(v * 300), "by_role": {"foreground": int(0.95 * v * 300)}}
        return {"short": short, "long": long, "per_event": v, "per_query": v, "foreground_per_event": 0.95 * v}

    return {
        "per_event": per_event,
        "spread": 1e-4,
        "foreground_per_event": 0.95 * per_event,
        "foreground_spread": 1e-4,
        "foreground_share": 0.95,
        "pairs": [pair(per_event), pair(per_event * 1.0001)],
        "functions": [],
    }


def gathered(tmp_path: Path) -> data.ReportData:
    """Six targets; from the fourth on, point-query is 10 % slower and does 9 % more instructions per event."""
    path, toml = _study(tmp_path)
    store = new_store(path, toml)
    rng = np.random.default_rng(3)
    try:
        for i, name in enumerate(TARGETS):
            tid = add_target(store, name, "cx10a_c2r24")
            level = 1000.0 if i < 3 else 900.0
            for rep in (1, 2, 3):
                key = CellKey(name, STEP, 1, rep)
                qps = level * (1 + 0.005 * rng.standard_normal())
                store.write_cell(1, tid, CellResult(key, "done", now(), now(), summary=summary(qps)))
            store.write_instructions(1, tid, STEP, _count(41_300.0 if i < 3 else 45_000.0))
        return data.gather(load_study(path), store, 1)
    finally:
        store.close()


def test_the_report_shows_the_trend_and_its_change_point(tmp_path: Path) -> None:
    d = gathered(tmp_path)
    by_figure = {s.figure: s for s in d.trend}
    assert set(by_figure) == {"instructions", "QPS"}
    for figure, verdict in (("instructions", "slower"), ("QPS", "slower")):
        (cp,) = by_figure[figure].points
        assert (cp.index, cp.before, cp.after, cp.confirmed) == (3, "v3", "v4", True), figure
        assert cp.comparison.verdict == verdict
    assert by_figure["instructions"].points[0].p_value is None  # kept by the floor's verdict: counts are exact
    p_qps = by_figure["QPS"].points[0].p_value
    assert p_qps is not None and p_qps <= 0.01
    instr = by_figure["instructions"]
    assert instr.values[0] == 0.95 * 41_300 and instr.values[3] == 0.95 * 45_000  # the foreground: judged on it
    buf = io.StringIO()
    terminal.render(d, say.console(file=buf, width=300, color_system=None))
    text = buf.getvalue()
    assert "Over the series (v1 → v2 → v3 → v4 → v5 → v6):" in text
    assert "change point between v3 and v4: slower +8.96%" in text
    assert "Over the series" in markdown.render(d)
    page = html.render(d)
    assert "Over the series" in page and "change point between v3 and v4: slower +8.96%" in page
    # The chart: every figure relative to the first target, with each target's samples as its bars.
    assert 'id="chart-trend"' in page and "relative to the first target" in page
    (qps,) = [s for s in json.loads(csv_json.to_json(d))["series"] if s["figure"] == "QPS"]
    assert qps["change_points"][0]["after"] == "v4" and qps["change_points"][0]["confirmed"]
    assert all(lo <= v <= hi for lo, v, hi in zip(qps["lows"], qps["values"], qps["highs"], strict=True))
    assert qps["lows"][0] < qps["highs"][0]  # three repetitions, spread


def test_a_series_differs_in_one_axis_and_has_three_targets(tmp_path: Path) -> None:
    path, _ = _study(tmp_path, ["cx10a_c2r24", "cx10a_sb1g_c2r24"] + ["cx10a_c2r24"] * 4)
    assert cli("validate", path).returncode == 0  # configs alone: one axis
    text = path.read_text().replace('name = "v2"\n', 'name = "v2"\nvariant = "o2_nofp"\nsource = "15.18"\n', 1)
    path.write_text(text)
    r = cli("validate", path)
    assert r.returncode != 0 and "differ in source and variant and config" in r.stderr, r.stderr
