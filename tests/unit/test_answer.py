"""The answer at the top of every report, the one-repetition rule and the one figure per step, on a real run of
studies/sqlite-quick.toml (one repetition, instructions counted; tests/unit/data/counts): rollback's insert is
about 19 times slower than wal's, which one repetition decides against its per-second noise, while read-only's
0.67 stays unsure."""

from __future__ import annotations

import io
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from dbsweep import say
from dbsweep.report import answer, csv_json, data, html, markdown, terminal
from dbsweep.results.model import CellKey, CellResult
from dbsweep.results.store import Store, now
from dbsweep.study import Study, load_study
from dbsweep.verdicts import calibrate, judging, stats

from .conftest import cli
from .handmade import real_store, summary

INSERT, READ_ONLY, UPDATE = "insert_range=100", "read-only_range=100", "update-index_range=100"


def gathered(tmp_path: Path, **kw: Any) -> tuple[data.ReportData, Path]:
    path, store = real_store(tmp_path, **kw)
    try:
        return data.gather(load_study(path), store, 1, series=True), path
    finally:
        store.close()


def row(d: data.ReportData, step: str) -> data.Row:
    return next(r for r in d.rows if r.step == step)


def terminal_text(d: data.ReportData) -> str:
    buf = io.StringIO()
    terminal.render(d, say.console(file=buf, width=400, color_system=None))
    return buf.getvalue()


def test_one_repetition_decides_a_change_far_beyond_the_step_s_own_noise(tmp_path: Path) -> None:
    d, _ = gathered(tmp_path)
    insert = row(d, INSERT).cmp["rollback"]
    assert insert.ratio is not None and insert.ratio < 0.06 and insert.low is None  # no interval from one each
    assert insert.verdict == "slower" and insert.rule == "one repetition"
    assert insert.noise is not None and insert.noise.source == "seconds"
    # The noise is the larger per-second CV of the two repetitions: wal's insert moved 14.8 % second to second.
    assert insert.noise.cv == pytest.approx(0.148, abs=0.001)
    assert insert.multiple is not None and insert.multiple > judging.ONE_REPETITION_FACTOR
    assert insert.multiple == pytest.approx(abs(math.log(insert.ratio)) / math.sqrt(2 * math.log1p(0.148**2)), rel=0.01)
    # 0.67 on read-only is 3 times its noise: one repetition does not decide it, and never says `same`.
    ro = row(d, READ_ONLY).cmp["rollback"]
    assert ro.verdict == "unsure" and ro.rule == "one repetition" and ro.multiple is not None and ro.multiple < 5
    # The load has one measured second: no per-second noise, so no rule; unsure as before.
    load = row(d, "load").cmp["rollback"]
    assert load.verdict == "unsure" and load.rule == "interval" and load.noise is None
    # cpu/o keeps the interval's rule: unsure from one repetition however large.
    assert row(d, INSERT).cost_cmp["rollback"].verdict == "unsure"
    # The verdict says how it was reached, in every format.
    assert "slower (1 rep: 14.2x ±14.8% per-second)" in terminal_text(d)
    assert "slower (1 rep: 14.2x ±14.8% per-second)" in markdown.render(d)
    rec = next(r for r in csv_json.records(d) if r["target"] == "rollback" and r["step"] == INSERT)
    assert (rec["verdict"], rec["verdict_rule"], rec["noise_source"]) == ("slower", "one repetition", "seconds")
    assert rec["noise_multiple"] == pytest.approx(insert.multiple)


@pytest.mark.parametrize(
    ("cv", "source", "ratio", "verdict"),
    [
        (0.05, "seconds", 1.45, "faster"),  # 5 x sqrt(2 ln(1 + 0.05^2)) = 0.3534: the line is at 1.424 and 0.702
        (0.05, "seconds", 1.40, "unsure"),
        (0.05, "seconds", 0.69, "slower"),
        (0.05, "seconds", 0.71, "unsure"),
        (0.01, "seconds", 1.40, "unsure"),  # per-second variation counts as at least 5 %
        (0.01, "calibrate", 1.08, "faster"),  # a calibration's own spread is taken as measured: the line is at 1.073
        (0.01, "calibrate", 1.06, "unsure"),
        (0.001, "calibrate", 1.015, "unsure"),  # beyond the noise, but under the 2 % minimum effect
    ],
)
def test_the_one_repetition_line(cv: float, source: judging.NoiseSource, ratio: float, verdict: str) -> None:
    got, k = judging.one_repetition(ratio, judging.Noise(cv, source, ""), min_effect=0.02)
    assert got == verdict and k is not None


def write_calibration(store: Store, study: Study, cv: float) -> None:
    """A stored `dbsweep calibrate` of the base: two copies of wal, three rounds, QPS spread by `cv` per step."""
    target = study.target(study.base)
    c = calibrate.copies(study, target, None, 3, None)
    sid = store.study_id(c.title, str(study.path))
    run = store.new_run(sid, c.measurement_key(), "")
    a, b = calibrate.copy_labels(target)
    spec = {"source": "system", "variant": "def", "config": "wal_normal"}
    ids = {x: store.ensure_target(run, x, "sqlite", spec) for x in (a, b)}
    for step in (INSERT, READ_ONLY, UPDATE, "point-query_range=100"):
        for rep, f in enumerate((1 - cv, 1.0, 1 + cv), 1):
            for x in (a, b):
                key = CellKey(x, step, 1, rep)
                store.write_cell(run, ids[x], CellResult(key, "done", now(), now(), summary=summary(1000.0 * f)))


def test_a_calibration_s_spread_is_the_noise_when_the_store_has_one(tmp_path: Path) -> None:
    path, store = real_store(tmp_path)
    try:
        study = load_study(path)
        write_calibration(store, study, 0.01)
        d = data.gather(study, store, 1)
    finally:
        store.close()
    ro = row(d, READ_ONLY).cmp["rollback"]
    assert ro.noise is not None and ro.noise.source == "calibrate" and ro.noise.cv == pytest.approx(0.01)
    assert ro.verdict == "slower" and ro.multiple is not None and ro.multiple > 20  # 0.67 is far beyond a 1 % spread
    assert "slower (1 rep: " in markdown.render(d) and "±1.0% cal)" in markdown.render(d)


def test_every_format_opens_with_the_answer(tmp_path: Path) -> None:
    d, _ = gathered(tmp_path)
    assert d.answer is not None
    (a,) = d.answer.targets
    tallies = {t.figure: t for t in a.tallies}
    assert tallies["instructions"].verdicts == {"faster": 4, "slower": 0, "same": 1, "unsure": 0}
    assert tallies["QPS"].verdicts == {"faster": 0, "slower": 3, "same": 0, "unsure": 2}
    assert tallies["cpu/o"].verdicts["unsure"] == 5
    # The largest changes first, each with its why: update-index and insert, 30 and 19 times slower.
    assert [c.step for c in a.changes] == [UPDATE, INSERT, "point-query_range=100"]
    assert a.changes[0].why is not None and a.changes[0].why == next(
        ir for ir in d.instr_rows if ir.step == UPDATE
    ).headline("rollback")
    # What is undecided, and what would decide it: a second round (one repetition each).
    assert {u.step for u in a.undecided} == {"load", READ_ONLY}
    assert all("a second round" in u.decide[0] for u in a.undecided)
    first = "The answer, run 1: each target against the base (wal)"
    out = terminal_text(d)
    assert out.startswith(first)
    assert "rollback against wal: instructions 4 faster, 1 same of 5; QPS 3 slower, 2 unsure of 5" in out
    assert out.index("largest changes") < out.index("QPS and QPS relative to the base")
    md = markdown.render(d)
    assert md.index("## The answer") < md.index("## Relative QPS") and md.index("## The answer") < md.index("> note")
    assert "- `insert_range=100: instructions faster -21.08%" in md
    page = html.render(d)
    assert page.index('id="answer"') < page.index('id="summary"') < page.index('id="instructions"')
    assert "QPS undecided, and what would decide it:" in page
    doc = json.loads(csv_json.to_json(d))
    assert next(iter(doc)) == "answer"
    got = doc["answer"]["targets"][0]
    assert got["tallies"]["QPS"]["slower"] == 3 and [c["step"] for c in got["largest"]] == [
        UPDATE,
        INSERT,
        "point-query_range=100",
    ]
    assert got["largest"][1]["qps"]["verdict_rule"] == "one repetition" and got["largest"][1]["why"]["function"]
    assert doc["answer"]["lines"][0].startswith("rollback against wal:")


def test_rounds_at_the_measured_spread_are_what_would_decide() -> None:
    # 3 % at a 5 % spread: the smallest n whose detectable effect is 3 % at most.
    n = answer.rounds_needed(0.05, 1.03, 0.02, 2)
    assert n is not None and stats.min_detectable_effect(0.05, n) <= 0.03 < stats.min_detectable_effect(0.05, n - 1)
    assert answer.rounds_needed(0.05, 0.999, 0.02, 100) is None  # no more within MAX_ROUNDS
    # Under the minimum effect, the interval need only fit in 0.8-1.25 to say `same`: a few rounds, not dozens.
    small = answer.rounds_needed(0.2, 1.01, 0.02, 2)
    assert small is not None and small <= 10 and answer.rounds_needed(0.2, 1.03, 0.02, 2) is None


def busy_background(target: str, step: str, d: dict[str, Any]) -> dict[str, Any]:
    """rollback's update-index count with a background that did 20 % of the work (as a server's WAL writer)."""
    if (target, step) != ("rollback", UPDATE):
        return d
    return {**d, "per_event": d["foreground_per_event"] / 0.8, "foreground_share": 0.8}


def test_the_figure_a_verdict_judges_is_the_figure_every_table_shows(tmp_path: Path) -> None:
    d, path = gathered(tmp_path, alter=busy_background)
    ir = next(x for x in d.instr_rows if x.step == UPDATE)
    j = ir.judged["rollback"]
    assert ir.basis == j.basis == "all processes"  # the step's: the base's quiet background does not matter
    assert (ir.figure("wal"), ir.figure("rollback")) == (j.base_figure, j.target_figure)
    assert j.ratio == pytest.approx(j.target_figure / j.base_figure)  # type: ignore[operator]
    fg_only = next(x for x in d.instr_rows if x.step == INSERT)
    assert fg_only.basis == "foreground"
    # The costs per operation show the same figure, per event, with the verdict's ratio.
    r = row(d, UPDATE)
    assert r.cells["rollback"].per_op_median(data.INSTR_METRIC) == j.target_figure
    assert r.cost_ratio["rollback"][data.INSTR_METRIC] == pytest.approx(j.ratio)
    assert "instructions/o" not in d.per_op_metrics
    shown = f"{j.target_figure:,.0f}"
    assert shown in terminal_text(d) and shown in markdown.render(d) and shown in html.render(d)
    other = ir.other("rollback")
    assert other[0] == "foreground" and f"fg {other[1]:,.0f} (80.0%)" in markdown.render(d)
    rec = next(x for x in csv_json.records(d) if x["target"] == "rollback" and x["step"] == UPDATE)
    assert (rec["instr_per_event"], rec["instr_basis"], rec["instr_ratio"]) == (j.target_figure, j.basis, j.ratio)
    assert rec["instr_other_per_event"] == other[1] and rec["instr_event"] == "one statement"
    # `why` prints the same two figures and the same change.
    out = cli("why", path, "--target", "rollback", "--step", "update-index").stdout
    assert f"rollback runs {j.target_figure:,.0f} instructions per event, wal {j.base_figure:,.0f}" in out
    assert f"{(j.ratio - 1) * 100:+.2f}%" in out and "every process" in out  # type: ignore[operator]


def test_why_takes_the_step_as_the_study_names_it(tmp_path: Path) -> None:
    path, store = real_store(tmp_path)
    store.close()
    short = cli("why", path, "--target", "rollback", "--step", "insert", "--top", "3")
    full = cli("why", path, "--target", "rollback", "--step", INSERT, "--top", "3")
    assert short.returncode == 0 and short.stdout == full.stdout
    assert short.stdout.startswith(f"{INSERT} (an event: one statement): rollback runs 25,410")
    lines = [ln for ln in short.stdout.splitlines() if ln.startswith("  ")]  # one per function
    assert len(lines) == 3 and all(not re.search(r"\.(constprop|lto_priv|isra|part|cold)\b", ln) for ln in lines)
    bad = cli("why", path, "--target", "rollback", "--step", "inserts")
    assert bad.returncode == 1 and "--step: 'inserts' is not a sysbench step" in bad.stderr
    assert "point-query" in bad.stderr  # the study's steps, as it names them


def test_until_decided_applies_the_same_rule(tmp_path: Path) -> None:
    """`run --until-decided` asks `judging` which targets are unsure: with the cells' per-second noise, the insert
    is decided from its one repetition, as the report says; read-only is left to its instruction count."""
    from dbsweep.verdicts.decide import decided_by_instructions

    path, store = real_store(tmp_path)
    try:
        study, rows, seconds = load_study(path), store.results(1), store.second_spreads(1)
        by_count = decided_by_instructions(study, store, 1)
    finally:
        store.close()
    plain = judging.run_verdicts(study, rows)
    assert plain[("rollback", INSERT, 1)].verdict == "unsure"  # one repetition, no noise given: no verdict
    ruled = judging.run_verdicts(study, rows, None, seconds)
    assert (
        ruled[("rollback", INSERT, 1)].verdict == "slower" and ruled[("rollback", INSERT, 1)].rule == "one repetition"
    )
    assert ruled[("rollback", READ_ONLY, 1)].verdict == "unsure"
    assert judging.unsure_targets(study, rows, set(), None, seconds) == {"rollback"}
    assert ("rollback", READ_ONLY, 1) in by_count  # its count said `same`
    assert judging.unsure_targets(study, rows, by_count, None, seconds) == set()


def test_a_failed_builds_error_is_one_line_with_its_log_in_what_decides() -> None:
    err = (
        "building postgres-15.18-pgo_lto_bolt-06543fbd840c failed: llvm-bolt -instrument exited with code 1.\n"
        "The last lines of the build log /ws/builds/failed/postgres-15.18-pgo_lto_bolt-06543fbd840c.log:\n"
        "    BOLT-INFO: 47290 instructions were shortened\n"
        "    BOLT-ERROR: unable to get new address corresponding to input address 0x43e761\n"
    )
    assert answer._in_brief(err) == (
        "building postgres-15.18-pgo_lto_bolt-06543fbd840c failed: llvm-bolt -instrument exited with code 1; its log: "
        "/ws/builds/failed/postgres-15.18-pgo_lto_bolt-06543fbd840c.log"
    )
    assert answer._in_brief("valgrind exited with code 1.") == "valgrind exited with code 1"


def test_why_takes_the_load_step_and_refuses_the_base(tmp_path: Path) -> None:
    path, store = real_store(tmp_path)
    store.close()
    load = cli("why", path, "--target", "rollback", "--step", "load", "--top", "3")
    assert load.returncode == 0 and load.stdout.startswith("load (an event: one row): rollback runs"), load.stderr
    base = cli("why", path, "--target", "wal", "--step", "load")
    assert base.returncode == 1 and "--target: wal is the base" in base.stderr and "rollback" in base.stderr
    # --against: the base explained against another target (the study's two here), the sign turned over.
    back = cli("why", path, "--target", "wal", "--against", "rollback", "--step", "load", "--top", "3")
    assert back.returncode == 0 and back.stdout.startswith("load (an event: one row): wal runs"), back.stderr
    assert "instructions per event, rollback " in back.stdout
    there, away = (re.findall(r"([+-][\d,]+) \(", r.stdout)[:1] for r in (load, back))
    assert there and away and there[0].lstrip("+-") == away[0].lstrip("+-") and there[0][0] != away[0][0]
    same = cli("why", path, "--target", "wal", "--against", "wal", "--step", "load")
    assert same.returncode == 1 and "is the target --against names" in same.stderr
    none = cli("why", path, "--target", "wal", "--against", "nosuch", "--step", "load")
    assert none.returncode == 1 and "--against:" in none.stderr and "no target 'nosuch'" in none.stderr


def test_a_step_not_run_yet_is_not_called_failed_in_what_decides(tmp_path: Path) -> None:
    d, _ = gathered(tmp_path)
    r = row(d, "load")
    r.cells["rollback"].reps.clear()
    ir = next((x for x in d.instr_rows if x.step == "load"), None)
    assert "its cells have not run yet: dbsweep run)" in answer.what_decides(d, r, "rollback", ir)[0]
    r.cells["rollback"].failed = 1
    assert "a cell failed: dbsweep run --rerun-failed" in answer.what_decides(d, r, "rollback", ir)[0]


def unrun(tmp_path: Path, steps: set[str] | None = None) -> data.ReportData:
    """The real run as if rollback's timed cells (of `steps`, else all) had not run yet."""
    tmp_path.mkdir()
    path, store = real_store(tmp_path)
    try:
        rows = store.db.execute(
            "SELECT c.id, c.step FROM cells c JOIN targets t ON t.id = c.target_id WHERE t.name = 'rollback'"
        ).fetchall()
        store.db.commit()
        store.db.execute("PRAGMA foreign_keys = OFF")  # a cell not run has none of what refers to it either
        for cell, step in rows:
            if steps is None or step in steps:
                store.db.execute("DELETE FROM cells WHERE id = ?", (cell,))
        store.db.commit()
        return data.gather(load_study(path), store, 1, series=True)
    finally:
        store.close()


def test_steps_whose_cells_have_not_run_read_as_one_line(tmp_path: Path) -> None:
    """After a run that only counted, every step waits for its first timed cells: one line says so, not one per
    step; a few such steps are still named."""
    d = unrun(tmp_path / "all")
    whole = answer.lines(answer.Answer(d.base, [answer.for_target(d, "rollback")]), False)
    waiting = [text for _, text in whole if answer.NOT_RUN in text]
    assert len(waiting) == 1 and re.fullmatch(
        rf"\d+ steps \(QPS not measured\): {re.escape(answer.NOT_RUN)}", waiting[0]
    )

    d = unrun(tmp_path / "one", {READ_ONLY})
    one = answer.lines(answer.Answer(d.base, [answer.for_target(d, "rollback")]), False)
    assert any(text.startswith(f"{READ_ONLY} (QPS not measured") and answer.NOT_RUN in text for _, text in one)
