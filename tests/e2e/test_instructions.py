"""Instructions per operation under valgrind, against Debian's Postgres 15: plausibility, determinism,
ordering of steps, and that nothing survives a measurement or a Ctrl-C. Without valgrind running (which
builds it refuses, its output files): unit/test_instructions.py."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from dbsweep.engines import postgres
from dbsweep.engines.registry import engine_named
from dbsweep.measure.instructions import InstructionCount, instructions_per_op, read_ir
from dbsweep.suites.sysbench import Sysbench, SysbenchSettings

from ..conftest import ROOT, interruptible, processes_under, wait_no_processes

CONFIG = "shared_buffers=128MB\n"
ROWS = 10000
SUITE = Sysbench(SysbenchSettings(rows=ROWS))

pytestmark = [
    pytest.mark.server,
    pytest.mark.skipif(
        not postgres.system_majors() or not shutil.which("valgrind"),
        reason="needs Debian's Postgres and valgrind",
    ),
]


@pytest.fixture(scope="module")
def workdir(_test_root: Path) -> Iterator[Path]:
    """One data directory for the module: loaded once, reused by every measurement."""
    d = _test_root / f"instr-{uuid.uuid4().hex[:8]}"
    d.mkdir(mode=0o755)
    yield d
    left = wait_no_processes(d, timeout=30)
    assert not left, f"processes left behind: {[p.info['cmdline'] for p in left]}"


def measure(workdir: Path, step: str, repeats: int) -> InstructionCount:
    engine = engine_named("postgres")
    result = instructions_per_op(
        engine,
        engine.system_install("system"),
        CONFIG,
        workdir / "srv",
        step=step,
        load=[SUITE.command(s, 1) for s in SUITE.setup_steps()],
        run=lambda seconds: SUITE.instruction_command(step, seconds),
        tables=SUITE.tables(),
        short_seconds=1,
        long_seconds=3,
        repeats=repeats,
    )
    # Stopped means stopped: the postmaster, every backend and valgrind around each of them.
    assert processes_under(workdir) == []
    return result


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
    for pair in point.pairs:
        assert pair.long.events > pair.short.events > 0
        assert pair.long.instructions > pair.short.instructions
        assert pair.short.backend_pid != pair.long.backend_pid
        assert read_ir(Path(pair.long.output_file)) == pair.long.instructions
    assert point.tool == "cachegrind" and point.valgrind_version.startswith("valgrind-")
    assert point.valgrind_command[:2] == ["valgrind", "--tool=cachegrind"]
    assert "--cache-sim=no" in point.valgrind_command
    assert point.wall_s > 0 and not point.reused_data
    assert point.step == "point-query_range=100" and point.command == SUITE.instruction_command(point.step, 1)
    d = point.to_dict()
    assert d["pairs"][0]["per_query"] == point.pairs[0].per_query


def test_read_only_costs_more_per_event_than_point_query(point: InstructionCount, workdir: Path) -> None:
    ro = measure(workdir, "read-only_range=100", repeats=1)
    assert ro.reused_data  # the point-query measurement left the loaded tables behind
    assert ro.statements_per_event == 16
    assert ro.per_event > 5 * point.per_event
    assert ro.per_query == pytest.approx(ro.per_event / 16)


CTRL_C = """
import sys
from pathlib import Path
from dbsweep.engines.registry import engine_named
from dbsweep.measure.instructions import instructions_per_op
from dbsweep.suites.sysbench import Sysbench, SysbenchSettings
suite, engine, step = Sysbench(SysbenchSettings(rows=1000)), engine_named("postgres"), "point-query_range=100"
instructions_per_op(engine, engine.system_install("system"), "", Path(sys.argv[1]), step=step,
                    load=[suite.command("load", 1)], run=lambda s: suite.instruction_command(step, s),
                    tables=suite.tables(), short_seconds=20, long_seconds=40, repeats=1,
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
            if "pair 1 of 1" in line:
                break
        time.sleep(2)  # in the middle of the short run: the client, the backend and valgrind all busy
        assert any("valgrind" in " ".join(p.info["cmdline"] or []) for p in processes_under(tmp))
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode != 0 and "KeyboardInterrupt" in err
    assert wait_no_processes(tmp, timeout=5) == []
