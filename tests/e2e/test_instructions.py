"""Instructions per operation under valgrind, against Debian's Postgres 15: plausibility, determinism,
ordering of steps, and that nothing survives a measurement or a Ctrl-C. Without valgrind running (which
builds it refuses, its output files): unit/test_instructions.py."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from dbsweep.measure import profile
from dbsweep.measure.instructions import InstructionCount, read_ir
from dbsweep.suites.sysbench import Sysbench, SysbenchSettings

from ..conftest import (
    POSTGRES_UNDER_VALGRIND,
    ROOT,
    alive,
    children_of,
    cmdline,
    count_system_step,
    dbsweep,
    interruptible,
    logging_study,
    own_dir,
    processes_under,
    start_run,
    wait_for,
    wait_no_processes,
    write_study,
)

CONFIG = "shared_buffers=128MB\n"
ROWS = 10000
SUITE = Sysbench(SysbenchSettings(rows=ROWS))

pytestmark = POSTGRES_UNDER_VALGRIND


@pytest.fixture(scope="module")
def workdir(_test_root: Path) -> Iterator[Path]:
    """One data directory for the module: loaded once, reused by every measurement."""
    yield from own_dir(_test_root, "instr")


def measure(workdir: Path, step: str, repeats: int, amount: int | None = None) -> InstructionCount:
    count = count_system_step("postgres", CONFIG, workdir / "srv", SUITE, step, repeats, amount)
    assert processes_under(workdir) == []
    return count


@pytest.fixture(scope="module")
def point(workdir: Path) -> InstructionCount:
    return measure(workdir, "point-query_range=100", repeats=2)


def test_point_query_is_plausible_and_repeatable(point: InstructionCount) -> None:
    assert 20_000 < point.per_query < 500_000
    assert point.per_event == point.per_query and point.statements_per_event == 1
    assert len(point.pairs) == 2
    a, b = (p.per_query for p in point.pairs)
    assert abs(a - b) / min(a, b) < 0.01  # a determinism property: the same statements, the same instructions
    assert point.spread == pytest.approx(abs(a - b) / point.per_event)
    # A timed run found the amount; every pair's runs then did that many events.
    assert point.amount == point.pairs[0].short.events >= 20
    for pair in point.pairs:
        assert pair.long.events == 3 * point.amount
        assert pair.long.instructions > pair.short.instructions
        assert sum(read_ir(f) or 0 for f in Path(pair.long.output_dir).iterdir()) == pair.long.instructions
        assert sum(pair.long.by_role.values()) == pair.long.instructions
    assert point.pairs[1].short.events == point.amount
    # Every process of the server was counted, and named: the client's backend did nearly all the work.
    assert {"foreground", "postmaster", "checkpointer", "walwriter"} <= set(point.by_role)
    assert point.foreground_share is not None and 0.95 < point.foreground_share <= 1.01
    assert point.counted == "server" and point.unit == "events"
    assert point.tool == "cachegrind" and point.valgrind_version.startswith("valgrind-")
    assert point.valgrind_command[:2] == ["valgrind", "--tool=cachegrind"]
    assert "--cache-sim=no" in point.valgrind_command
    assert point.wall_s > 0 and not point.reused_data
    # Counted with commits flushed by their backend and no autovacuum: settings that make the work depend on time.
    assert {"synchronous_commit = on", "autovacuum = off"} <= set(point.held)
    assert point.step == "point-query_range=100" and point.command[-3:] == ["--events", str(point.amount), "--counting"]
    # Why: the per-function counts add up to about the whole per-event figure, and name Postgres's executor.
    names = {f["function"] for f in point.functions}
    assert any("PostgresMain" in n or "exec_" in n or "ExecutorRun" in n for n in names), sorted(names)[:20]
    own = sum(f["self_ir"] for f in point.functions)
    assert 0.5 * point.per_event < own < 1.2 * point.per_event
    d = point.to_dict()
    assert d["pairs"][0]["per_query"] == point.pairs[0].per_query and d["foreground_share"] == point.foreground_share


def test_a_write_step_counts_the_same_work_every_time(point: InstructionCount, workdir: Path) -> None:
    """update-index from the same pristine tables, a fixed number of events: the foreground's work repeats to
    well under a per cent (the background writers' timed wake-ups are what varies)."""
    w = measure(workdir, "update-index_range=100", repeats=2, amount=300)
    assert w.reused_data and w.amount == 300
    fg = [p.per_event_by_role()["foreground"] for p in w.pairs]
    assert abs(fg[0] - fg[1]) / fg[0] < 0.005, fg
    assert w.per_event > point.per_event  # an update does more than a point select
    assert {"walwriter", "checkpointer"} <= set(w.by_role)


def test_read_only_costs_more_per_event_than_point_query(point: InstructionCount, workdir: Path) -> None:
    # A fixed amount: a 1-second probe of read-only completes too few events on a busy machine.
    ro = measure(workdir, "read-only_range=100", repeats=1, amount=50)
    assert ro.reused_data  # the point-query measurement left the loaded tables behind
    assert ro.statements_per_event == 16
    assert ro.per_event > 5 * point.per_event
    assert ro.per_query == pytest.approx(ro.per_event / 16)


CTRL_C = """
import sys
from pathlib import Path
from dbsweep.engines.registry import engine_named
from dbsweep.measure import profile
from dbsweep.measure.instructions import instructions_per_op
from dbsweep.suites.sysbench import Sysbench, SysbenchSettings
suite, engine, step = Sysbench(SysbenchSettings(rows=1000)), engine_named("postgres"), "point-query_range=100"
instructions_per_op(engine, engine.system_install("system"), "", Path(sys.argv[1]), step=step,
                    load=[suite.command("load", 1)], plan=suite.instruction_plan(step, 20),
                    tables=suite.tables(), repeats=1,
                    say=lambda m: print(m, flush=True))
"""


def test_ctrl_c_leaves_nothing_behind(tmp: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", CTRL_C, str(tmp / "srv")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        preexec_fn=interruptible,
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if "a timed run" in line:  # the first counted run (20 s, the probe) starts
                break
        # In the middle of that run: the client, the backend and valgrind all busy (valgrind's start takes
        # longer on a loaded machine, hence a wait rather than a fixed pause). Every run of the pass stops alike;
        # the probe is the first, so no whole run comes before the Ctrl-C.
        wait_for(lambda: any("valgrind" in " ".join(p.info["cmdline"] or []) for p in processes_under(tmp)), 60)
        time.sleep(2)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode != 0 and "KeyboardInterrupt" in err
    assert wait_no_processes(tmp, timeout=5) == []


@dataclass(frozen=True)
class ThreeRuns:
    """One study taken in three runs (`three_runs`): what each said and what the store held after it."""

    tmp: Path
    study: Path
    env: dict[str, str]
    profiled: bool  # perf can sample here, so the study asks for profiles
    stopped: int  # the exit status of the run Ctrl-C stopped
    stopped_out: str
    left: list[str]  # what ran under tmp after it
    interrupted: dict[tuple[str, str], float]  # per-event figures stored after each run
    first: subprocess.CompletedProcess[str]  # --counts-only --target a
    status_first: str
    kept: dict[tuple[str, str], float]
    run: subprocess.CompletedProcess[str]  # the plain run
    status_run: str
    after: dict[tuple[str, str], float]
    report: Path  # the JSON report after the plain run (--out)


@pytest.fixture(scope="module")
def runs_dir(_test_root: Path) -> Iterator[Path]:
    yield from own_dir(_test_root, "runs")


@pytest.fixture(scope="module")
def three_runs(runs_dir: Path) -> ThreeRuns:
    """Two tests read one study's runs (each count of a Postgres load takes half a minute under valgrind): b logs
    every statement; run --counts-only, two counts at once (a CPU each), stopped by Ctrl-C while both run; then
    --counts-only --target a; then a plain run (the timed cells, b's counts and, where perf can sample, the
    profiles)."""
    tmp = runs_dir
    perf = profile.detect()
    extra = "profile = true\nprofile_seconds = 1\n" if perf.can_sample else ""
    mp = pytest.MonkeyPatch()  # the configs' environment goes to each command, not to the other tests
    try:
        study = logging_study(tmp, mp, "postgres", "cx10a_c2r24", "\nlog_statement = 'all'\n", extra)
        env = {"DBSWEEP_CONFIGS": os.environ["DBSWEEP_CONFIGS"]}
    finally:
        mp.undo()
    # Two reads: a target's reads are counted in one session.
    text = study.read_text().replace('steps = ["point-query"]', 'steps = ["point-query", "read-only"]')
    assert '"read-only"' in text
    study.write_text(text)
    proc = start_run(study, "--counts-only", env=env)
    try:

        def counting() -> int:
            return sum("valgrind" in " ".join(cmdline(p)) for p in alive(children_of(proc)))

        if len(os.sched_getaffinity(0)) >= 2:
            wait_for(lambda: counting() >= 2, timeout=300)  # both slots busy
        else:
            wait_for(lambda: counting() >= 1, timeout=300)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    left = [" ".join(cmdline(p)) for p in wait_no_processes(tmp, timeout=10)]

    def counted() -> dict[tuple[str, str], float]:
        data = json.loads(dbsweep("report", study, "--format", "json", env=env).stdout)
        return per_event(data)

    interrupted = counted()
    first = dbsweep("run", study, "--counts-only", "--target", "a", env=env)
    status_first = dbsweep("status", study, env=env).stdout
    kept = counted()
    run = dbsweep("run", study, env=env)
    status_run = dbsweep("status", study, env=env).stdout
    report = tmp / "r.json"
    dbsweep("report", study, "--format", "json", "--out", report, env=env)
    after = per_event(json.loads(report.read_text()))
    return ThreeRuns(
        tmp=tmp,
        study=study,
        env=env,
        profiled=perf.can_sample,
        stopped=proc.returncode,
        stopped_out=out,
        left=left,
        interrupted=interrupted,
        first=first,
        status_first=status_first,
        kept=kept,
        run=run,
        status_run=status_run,
        after=after,
        report=report,
    )


def per_event(report: dict[str, Any]) -> dict[tuple[str, str], float]:
    return {(x["target"], x["step"]): x["per_event"] for x in report["instructions"] if x.get("per_event")}


def test_counts_at_once_stop_on_ctrl_c_then_counts_only_then_the_cells(three_runs: ThreeRuns) -> None:
    """run --counts-only, two counts at once (two targets, a CPU each): Ctrl-C while both run stops every server,
    client and valgrind and keeps the finished counts. Then --counts-only --target a takes a's remaining counts and
    nothing of b's, no timed cell; the run after takes the timed cells and b's counts, and no count is taken again."""
    r = three_runs
    assert r.stopped == 130, r.stopped_out
    assert r.left == []
    interrupted, kept, after = r.interrupted, r.kept, r.after
    assert (
        re.search(r"a read-only_range=100 instructions: [\d,]+ instructions per event", r.first.stderr)
        or ("a", "read-only_range=100") in interrupted
    ), r.first.stderr
    assert "the timed cells wait" in r.first.stdout
    assert "done 0, failed 0, pending 6" in r.status_first
    assert {k for k in kept if k[0] == "a"} == {
        ("a", "load"),
        ("a", "point-query_range=100"),
        ("a", "read-only_range=100"),
    }
    assert {k for k in kept if k[0] == "b"} == {k for k in interrupted if k[0] == "b"}  # nothing more of b's
    assert all(kept[k] == v for k, v in interrupted.items())  # what Ctrl-C left was kept
    assert "done 6, failed 0, pending 0" in r.status_run
    assert set(after) == {(t, s) for t in "ab" for s in ("load", "point-query_range=100", "read-only_range=100")}
    assert all(after[k] == v for k, v in kept.items())  # no count was taken again


def test_a_build_valgrind_cannot_run_is_not_counted_and_not_built(tmp: Path) -> None:
    """b is built with -march=x86-64-v4 (AVX-512 on any CPU): run --counts-only --target b stores its counts as
    not counted, with the flag, and neither fetches nor builds anything to find that out."""
    study = write_study(tmp, rows=2000, seconds=1, warmup=0)
    text = study.read_text().replace(
        'source = "system"\nconfig = "cx10a_sb1g_c2r24"',
        'source = "15.18"\nvariant = "v4"\nconfig = "cx10a_sb1g_c2r24"',
    )
    assert 'variant = "v4"' in text
    text += '\n[[variants]]\nname = "v4"\ncflags = "-O2 -march=x86-64-v4"\n'
    study.write_text(text + "\n[measure]\ninstructions = true\ninstruction_seconds = 2\ninstruction_pairs = 1\n")
    run = dbsweep("run", study, "--counts-only", "--target", "b")
    assert "the timed cells wait" in run.stdout, run.stdout
    ws = tmp / "ws"
    assert not any((ws / "builds").glob("postgres-*")) and not any((ws / "sources").glob("*/*"))
    data = json.loads(dbsweep("report", study, "--format", "json").stdout)
    b = {x["step"]: x for x in data["instructions"] if x["target"] == "b"}
    assert set(b) == {"load", "point-query_range=100"}, b
    assert all(x["per_event"] is None and "-march=x86-64-v4" in x["error"] for x in b.values()), b


def test_a_run_decides_by_instructions_and_says_why(three_runs: ThreeRuns) -> None:
    """Through the command line: b logs every statement (more work per query, in the logging functions). The
    runs count both targets' instructions; every report format shows the verdict, and `why` names the functions;
    where perf can sample, the HTML report has the flame graphs."""
    runs = three_runs
    tmp, study, env = runs.tmp, runs.study, runs.env
    # Two counts at once, a CPU each: the verdict and the functions are the same as one at a time.
    # In a log (stderr is not a terminal here), a line per count as per cell.
    assert re.search(
        r"\[\d+/\d+\] b point-query_range=100 instructions: [\d,]+ instructions per event", runs.run.stderr
    ), runs.run.stderr
    assert re.search(r"\[\d+/\d+\] a load instructions: [\d,]+ instructions per row", runs.first.stderr) or (
        ("a", "load") in runs.interrupted
    ), runs.first.stderr
    data = json.loads(runs.report.read_text())
    got = {(x["target"], x["step"]): x for x in data["instructions"]}
    point = got[("b", "point-query_range=100")]
    assert point["verdict"] == "slower" and point["ratio"] > 1.01, point
    assert point["floor"] >= 0.002 and point["floor_source"] in ("default", "pairs", "calibrate")
    assert 0 < point["user_share"] <= 1 and point["qps_bound"] is not None
    top = [f["function"] for f in point["why"][:5]]
    assert point["why"][0]["delta_self"] > 0, point["why"][:3]
    assert any(k in " ".join(top) for k in ("errstart", "EmitErrorReport", "errmsg", "log", "vsnprintf", "printf")), top
    assert got[("b", "load")]["verdict"] is not None and got[("a", "load")]["per_event"] > 0
    row = next(r for r in data["rows"] if r["target"] == "b" and r["step"] == "point-query_range=100")
    assert row["instr_verdict"] == "slower" and row["instr_ratio"] == pytest.approx(point["ratio"])
    group = next(g for g in data["groups"] if g["target"] == "b" and g["group"] == "point")
    assert group.get("instr_slower") == 1
    md = dbsweep("report", study, "--format", "markdown", env=env).stdout
    assert "## Instructions per event" in md and "Why, point-query_range=100, `b`" in md
    # The answer first, with the verdict's own figures and the top function of its why.
    assert md.index("## The answer") < md.index("## Relative QPS")
    largest = next(c for c in data["answer"]["targets"][0]["largest"] if c["step"] == "point-query_range=100")
    named = next(f for f in top if f != "???")  # the headline names a function; code without symbols does not
    assert largest["instructions"]["verdict"] == "slower" and largest["why"]["function"] == named
    assert largest["instructions"]["target_per_event"] == point["instr_per_event"]
    base_count = got[("a", "point-query_range=100")]
    assert largest["instructions"]["base_per_event"] == base_count["instr_per_event"]
    assert row["instr_per_event"] == point["instr_per_event"]  # the table's figure is the verdict's
    assert not any(re.search(r"\.(constprop|lto_priv|isra|part|cold)(\.\d+)?$", f["function"]) for f in point["why"])
    assert not any(f["file"].startswith("/") and "/sources/" in f["file"] for f in point["why"])  # within the tree
    assert "synchronous_commit = on" in md  # the settings the count held, said
    html = tmp / "r.html"
    dbsweep("report", study, "--format", "html", "--out", html, env=env)
    assert 'id="instructions"' in html.read_text() and "why: point-query_range=100" in html.read_text()
    why = dbsweep("why", study, "--target", "b", "--step", "point-query_range=100", "--top", "5", env=env).stdout
    assert "instructions per event" in why and top[0] in why
    assert f"b runs {point['instr_per_event']:,.0f} instructions per event" in why  # the verdict's figure
    assert dbsweep("why", study, "--target", "b", "--step", "point-query", "--top", "5", env=env).stdout == why
    if not runs.profiled:
        return
    profiles = {(x["target"], x["step"]): x for x in data["profiles"]}
    for t in "ab":
        prof = profiles[(t, "point-query_range=100")]
        assert prof["error"] is None and prof["samples"] > 0 and prof["hottest"], prof
        assert prof["folded"].count("\n") >= 1 and prof["call_graph"] in ("fp", "dwarf,16384")
        assert set(prof["per_event"]) >= {"task-clock", "cycles"}  # cycles may be None: not every host counts it
    page = html.read_text()
    # Per step: a, b, and b against a.
    assert 'id="flames"' in page and page.count('<iframe class="flame" title="point-query_range=100: ') == 3
    assert page.count('<iframe class="flame"') == 6
