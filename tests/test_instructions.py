"""Instructions per operation under valgrind, against Debian's Postgres 15: plausibility, determinism,
ordering of workloads, the clear errors, and that nothing survives a measurement or a Ctrl-C."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from dbsweep.engines import postgres
from dbsweep.errors import DbsweepError
from dbsweep.measure import instructions
from dbsweep.measure.instructions import InstructionCount, instructions_per_op, read_ir, unrunnable_flags

from .conftest import ROOT, interruptible, processes_under, wait_no_processes

CONFIG = "shared_buffers=128MB\n"
ROWS = 10000

pytestmark = pytest.mark.skipif(
    not postgres.system_majors() or not shutil.which("valgrind"),
    reason="needs Debian's Postgres and valgrind",
)


@pytest.fixture(scope="module")
def workdir(_test_root: Path) -> Iterator[Path]:
    """One data directory for the module: loaded once, reused by every measurement."""
    d = _test_root / f"instr-{uuid.uuid4().hex[:8]}"
    d.mkdir(mode=0o755)
    yield d
    left = wait_no_processes(d, timeout=30)
    assert not left, f"processes left behind: {[p.info['cmdline'] for p in left]}"


def measure(workdir: Path, workload: str, repeats: int) -> InstructionCount:
    result = instructions_per_op(
        postgres.system_install("system"),
        CONFIG,
        workdir / "srv",
        workload=workload,
        rows=ROWS,
        range_=100,
        short_seconds=1,
        long_seconds=3,
        repeats=repeats,
    )
    # Stopped means stopped: the postmaster, every backend and valgrind around each of them.
    assert processes_under(workdir) == []
    return result


@pytest.fixture(scope="module")
def point(workdir: Path) -> InstructionCount:
    return measure(workdir, "point-query", repeats=2)


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
    d = point.to_dict()
    assert d["pairs"][0]["per_query"] == point.pairs[0].per_query


def test_read_only_costs_more_per_event_than_point_query(point: InstructionCount, workdir: Path) -> None:
    ro = measure(workdir, "read-only", repeats=1)
    assert ro.reused_data  # the point-query measurement left the loaded tables behind
    assert ro.statements_per_event == 16
    assert ro.per_event > 5 * point.per_event
    assert ro.per_query == pytest.approx(ro.per_event / 16)


def test_march_native_is_refused_before_anything_starts(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = postgres.Install(
        bindir=tmp / "no-such-install" / "bin",
        version="postgres (PostgreSQL) 15.18",
        source="git:REL_15_STABLE",
        provenance={"cflags": "-O3 -march=native -flto"},
    )
    monkeypatch.setattr(instructions, "host_cpu_flags", lambda: {"sse4_2", "avx2", "avx512f"})
    with pytest.raises(DbsweepError, match=r"built with -march=native, which emits AVX-512 instructions"):
        instructions_per_op(fake, "", tmp / "srv", workload="point-query")
    assert not (tmp / "srv").exists()


def test_which_flags_valgrind_cannot_run() -> None:
    avx512 = {"avx2", "avx512f", "avx512bw"}
    assert unrunnable_flags("-O2 -g -fno-omit-frame-pointer", avx512) is None
    assert unrunnable_flags("-O3 -march=x86-64-v3", avx512) is None
    assert unrunnable_flags("-O3 -march=native", {"avx2"}) is None  # no AVX-512 on this CPU: native is fine
    assert unrunnable_flags("-O3 -march=native", avx512) == "-march=native"
    assert unrunnable_flags("'CFLAGS=-O2 -march=x86-64-v4'", set()) == "-march=x86-64-v4"
    assert unrunnable_flags("-march=skylake-avx512 -O2", set()) == "-march=skylake-avx512"
    assert unrunnable_flags("-O2 -mavx512f", set()) == "-mavx512f"
    # Debian's own build is fine.
    instructions.check_runnable(postgres.system_install("system"))


def test_missing_valgrind_is_a_clear_error(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(instructions.shutil, "which", lambda _name: None)
    with pytest.raises(DbsweepError, match="needs valgrind, which is not installed"):
        instructions_per_op(postgres.system_install("system"), "", tmp / "srv", workload="point-query")


def test_read_ir_waits_for_the_totals(tmp: Path) -> None:
    cg = tmp / "cg.123"
    cg.write_text("desc: x\ncmd: postgres\nevents: Ir\nfl=a.c\nfn=f\n1 5\n")
    assert read_ir(cg) is None  # still being written
    cg.write_text(cg.read_text() + "summary: 987654321\n")
    assert read_ir(cg) == 987654321
    callgrind = tmp / "callgrind.124"
    callgrind.write_text("version: 1\nevents: Ir\nsummary: 5\nfn=f\n1 5\n\ntotals: 77\n")
    assert read_ir(callgrind) == 77
    assert read_ir(tmp / "absent") is None


def test_a_wrapped_postmaster_left_behind_is_recognised_and_stopped(tmp: Path) -> None:
    """A data directory whose valgrind-wrapped server outlived its dbsweep is stopped by the next start."""
    server = postgres.Server(
        install=postgres.system_install("system"),
        home=tmp / "srv",
        config_name="test",
        config_text=CONFIG,
        user=postgres.server_user(),
        wrapper=["valgrind", "--tool=none", "--trace-children=yes"],
    )
    server.init()
    server.start()
    try:
        assert server.proc is not None
        wrapped = psutil.Process(server.proc.pid)
        assert "postgres" not in wrapped.name()  # valgrind names the process after its tool
        with server.connect() as c:
            assert c.execute("SELECT 1").fetchone() == (1,)
        postgres.stop_stale(server.datadir)
        assert server.proc.wait(timeout=60) is not None
    finally:
        server.remove()
    assert wait_no_processes(tmp, timeout=30) == []


CTRL_C = """
import sys
from pathlib import Path
from dbsweep.engines import postgres
from dbsweep.measure.instructions import instructions_per_op
instructions_per_op(postgres.system_install("system"), "", Path(sys.argv[1]), workload="point-query", rows=1000,
                    short_seconds=20, long_seconds=40, repeats=1, say=lambda m: print(m, flush=True))
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
