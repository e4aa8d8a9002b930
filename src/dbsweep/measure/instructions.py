"""Instructions per operation of the serving backend, counted by valgrind: a deterministic CPU cost.

QPS on a shared machine moves by several per cent from run to run; the number of instructions one backend
executes for the same statements moves by thousandths of a per cent. The server runs under valgrind
(cachegrind without cache or branch simulation: it only counts instructions, the cheapest way valgrind has),
one client runs the workload twice on fresh connections, a short run and a long one, and

    instructions per operation = (Ir_long - Ir_short) / (ops_long - ops_short)

where Ir is the total the backend's output file reports when it exits at disconnect. The difference cancels
what every connection costs once: authentication, catalog caches, preparing the statements, exit.

The tables are loaded at full speed, without valgrind, then frozen, analysed and checkpointed, so no run
pays for setting hint bits; under valgrind the buffer pool is warmed and one throw-away run touches what the
runs will, so the first pair costs what the later ones do. Only single-client CPU-bound steps make sense
here: anything that waits on I/O or on other clients is not what an instruction count describes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import shutil
import statistics
import subprocess
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import psutil

from dbsweep import loadclient, procs
from dbsweep.engines.base import Engine, EngineError, Install, Instance
from dbsweep.errors import DbsweepError, StepError

Tool = Literal["cachegrind", "callgrind"]
TOOLS: tuple[Tool, ...] = ("cachegrind", "callgrind")

# -march values that make the compiler emit AVX-512 (or AMX), which valgrind cannot decode.
_UNRUNNABLE_MARCH = re.compile(
    r"x86-64-v4|knl|knm|skylake-avx512|cannonlake|icelake-client|icelake-server|cascadelake|cooperlake"
    r"|tigerlake|rocketlake|sapphirerapids|emeraldrapids|graniterapids(-d)?|diamondrapids|znver[45]"
)
_MARCH = re.compile(r"(?:^|\s|')-march=([\w.-]+)")
_ISA_FLAG = re.compile(r"(?:^|\s|')-m(avx512\w*|amx[\w-]*)")

_LOADED = "instructions-load.json"  # in the server's home: what the data directory holds
_WAIT_EXIT_S = 300.0  # for a backend to write its output and exit (seconds)
# A long run does at least this many times the short one's events, else it is run again twice as long (at most
# LONG_RETRIES times): the difference is the measurement, and a small one is mostly noise of start-up.
LONG_FACTOR = 1.5
LONG_RETRIES = 2


@dataclass(frozen=True)
class Run:
    """One run of the load client on one connection, and what its backend executed."""

    seconds: int  # the load client's --seconds
    events: int  # every event the client completed, warm-up share included
    queries: int  # events x statements per event (BEGIN/COMMIT not counted, as sysbench does)
    instructions: int  # the backend's total Ir, connection start-up and exit included
    backend_pid: int
    output_file: str  # valgrind's file for the backend: `cg_annotate` / `callgrind_annotate` it to see why
    other_files: int  # output files of other processes of the run (the client's table check, ...): ignored
    wall_s: float


@dataclass(frozen=True)
class Pair:
    """A short and a long run; their difference is the cost of the extra operations."""

    short: Run
    long: Run

    @property
    def per_event(self) -> float:
        return (self.long.instructions - self.short.instructions) / (self.long.events - self.short.events)

    @property
    def per_query(self) -> float:
        return (self.long.instructions - self.short.instructions) / (self.long.queries - self.short.queries)


@dataclass(frozen=True)
class InstructionCount:
    """Instructions per operation of the serving backend for one step, over `repeats` pairs of runs."""

    step: str
    command: list[str]  # the load client's arguments for the short run
    statements_per_event: int
    per_event: float  # median over the pairs
    per_query: float
    spread: float  # (max - min) / median of the pairs' per-event figures; ~1e-4 is normal
    pairs: list[Pair]
    tool: str
    valgrind_version: str
    valgrind_command: list[str]  # the wrapper the postmaster ran under
    server_version: str
    output_dir: str
    wall_s: float  # the whole measurement: load (unless reused), start under valgrind, warm-up, all runs
    reused_data: bool  # the data directory was already loaded with the same tables, rows and config
    # What was counted: "backend" (the server process that served the client) or "client" (an embedded
    # engine runs inside the load client, so the whole client is counted, its own instructions included).
    counted: str = "backend"

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        for p, pair in zip(d["pairs"], self.pairs, strict=True):
            p.update(per_event=pair.per_event, per_query=pair.per_query)
        return d


# ---- preconditions ----------------------------------------------------------------------------------


def valgrind_version() -> str:
    """'valgrind-3.19.0'; a clear error when valgrind is not installed."""
    exe = shutil.which("valgrind")
    if exe is None:
        raise DbsweepError(
            "counting instructions needs valgrind, which is not installed; install it (apt-get install valgrind)."
        )
    return subprocess.run([exe, "--version"], capture_output=True, text=True, check=False).stdout.strip()


def host_cpu_flags() -> set[str]:
    """The CPU's feature flags as /proc/cpuinfo lists them (empty when unreadable)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.partition(":")[2].split())
    return set()


def unrunnable_flags(cflags: str, cpu_flags: Collection[str]) -> str | None:
    """The compiler flag that makes a build unrunnable under valgrind (AVX-512 code), or None.

    -march=native is a problem only on a CPU with AVX-512: elsewhere it yields code valgrind decodes."""
    for arch in _MARCH.findall(cflags):
        if arch == "native" and any(f.startswith(("avx512", "amx")) for f in cpu_flags):
            return "-march=native"
        if _UNRUNNABLE_MARCH.fullmatch(arch):
            return f"-march={arch}"
    m = _ISA_FLAG.search(cflags)
    return f"-m{m.group(1)}" if m else None


def check_runnable(engine: Engine, install: Install) -> None:
    """Raises a clear error when valgrind cannot run this install's server."""
    flag = unrunnable_flags(engine.compile_flags(install), host_cpu_flags())
    if flag is not None:
        raise DbsweepError(
            f"valgrind cannot run the {engine.title} in {install.bindir}: it was built with {flag}, which emits "
            "AVX-512 instructions valgrind does not support; count instructions on a build without it "
            "(e.g. -march=x86-64-v3 or no -march)."
        )


def valgrind_wrapper(tool: Tool, out_dir: Path) -> list[str]:
    """The command the postmaster runs under: one output file per process (%p), written at its exit."""
    if tool not in TOOLS:
        raise DbsweepError(f"unknown valgrind tool {tool!r}; have: {', '.join(TOOLS)}")
    # --fair-sched: valgrind runs one thread at a time, and by default a thread that wakes from a sleep may wait
    # seconds for a busy one to let go; the load client's timer thread (an embedded engine runs in the client)
    # then ends a 1 s run after 6 s. The count per operation does not change, the runs' lengths do.
    common = ["valgrind", f"--tool={tool}", "--trace-children=yes", "--fair-sched=yes"]
    if tool == "cachegrind":
        return [*common, "--cache-sim=no", "--branch-sim=no", f"--cachegrind-out-file={out_dir}/cg.%p"]
    return [*common, f"--callgrind-out-file={out_dir}/callgrind.%p"]


# ---- valgrind's output files ------------------------------------------------------------------------


def read_ir(path: Path) -> int | None:
    """The total Ir of a cachegrind or callgrind output file; None while the file is not complete."""
    try:
        with path.open("rb") as f:
            head = f.read(1 << 16).decode(errors="replace")
            f.seek(0, 2)
            f.seek(max(0, f.tell() - (1 << 14)))
            tail = f.read().decode(errors="replace")
    except OSError:
        return None
    events = next((ln.split()[1:] for ln in head.splitlines() if ln.startswith("events:")), None)
    # The last line holds the totals (cachegrind's "summary:", callgrind's "totals:"; callgrind also has a
    # "summary:" in its header); a file without it is still being written.
    summary = next(
        (ln.split()[1:] for ln in reversed(tail.splitlines()) if ln.startswith(("summary:", "totals:"))), None
    )
    if not events or not summary or "Ir" not in events:
        return None
    i = events.index("Ir")
    return int(summary[i]) if i < len(summary) else None


def _file_pid(path: Path) -> int | None:
    suffix = path.name.rpartition(".")[2]
    return int(suffix) if suffix.isdigit() else None


def _wait_gone(pids: Iterable[int], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    left = [p for p in pids if _alive(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [p for p in left if _alive(p)]
    if left:
        # Without its file the run's largest file would be some other process's: better no figure at all.
        raise StepError(f"backend processes {left} did not exit within {timeout:.0f} s of the client's end.")


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


# ---- the measurement ------------------------------------------------------------------------------


class _Session:
    """A running server under valgrind and the load client's view of it."""

    def __init__(self, instance: Instance, out_dir: Path, logs: Path) -> None:
        self.instance = instance
        self.out_dir = out_dir
        self.logs = logs
        self.runs = 0

    def run(self, command: list[str], seconds: int) -> tuple[Run, dict[str, Any]]:
        """Runs the load client once; finds its backend's output file once every backend of the run is gone."""
        before = self.instance.workers()
        files_before = set(self.out_dir.iterdir())
        self.runs += 1
        t0 = time.monotonic()
        out = loadclient.run(
            command, loadclient.connection_to(self.instance), self.logs / f"run{self.runs}-{seconds}s.log"
        )
        s = out.result.flat()
        if s.get("error_count"):
            raise StepError(
                f"dbsweep-load {' '.join(command[:2])} had {s['error_count']} errors: {s.get('error_samples')}"
            )
        # Backends born during the run write their file as they exit, which valgrind makes slow.
        _wait_gone(self.instance.workers() - before, _WAIT_EXIT_S)
        wall = time.monotonic() - t0
        # A file of a process that already existed before the run (a slow-exiting earlier backend) is not ours.
        found: list[tuple[int, Path, int]] = []
        for f in set(self.out_dir.iterdir()) - files_before:
            pid = _file_pid(f)
            ir = read_ir(f)
            if pid is not None and pid not in before and ir is not None:
                found.append((ir, f, pid))
        if not found:
            raise StepError(
                f"no backend output file appeared in {self.out_dir} after a run of {' '.join(command[:2])}; "
                f"valgrind's messages are in {self.instance.log}."
            )
        ir, path, pid = max(found)  # the serving backend did far more than the client's table check
        # With --warmup 0 an event can finish before the client marks the start of measurement: count both.
        events = int(s["events"]) + int(s.get("warmup_events", 0))
        run = Run(
            seconds=seconds,
            events=events,
            queries=events * int(s["statements_per_event"]),
            instructions=ir,
            backend_pid=pid,
            output_file=str(path),
            other_files=len(found) - 1,
            wall_s=wall,
        )
        return run, s


def _load(instance: Instance, load: list[list[str]], logs: Path, say: Callable[[str], None]) -> None:
    """A fresh data directory and the tables, at full speed; settled so reads set no hint bits."""
    say("a fresh data directory and the load (without valgrind)")
    instance.init()
    instance.start()
    try:
        for i, command in enumerate(load):
            loadclient.run(command, loadclient.connection_to(instance), logs / f"load{i}.log")
        instance.settle()
    except EngineError as e:
        raise StepError(f"settling the loaded tables failed: {e}") from e
    finally:
        instance.stop()


def instructions_per_op(
    engine: Engine,
    install: Install,
    config_text: str,
    home: Path,
    *,
    step: str,
    load: list[list[str]],
    run: Callable[[int], list[str]],
    tables: list[str],
    short_seconds: int = 2,
    long_seconds: int = 6,
    repeats: int = 2,
    tool: Tool = "cachegrind",
    say: Callable[[str], None] | None = None,
) -> InstructionCount:
    """Instructions per event and per query of the backend serving one client of `step`.

    `load` are the load client's commands that build the tables (the suite's setup), `run(seconds)` the one
    that runs the step for that long on one client. `home` holds the server (data directory, logs) and
    valgrind's output files; a data directory loaded by an earlier call with the same install, config and
    load is reused. Every process started here is stopped on return, on error and on Ctrl-C."""
    say = say or (lambda _msg: None)
    t_start = time.monotonic()
    if not 0 < short_seconds < long_seconds:
        raise DbsweepError(f"need 0 < short_seconds < long_seconds, not {short_seconds} and {long_seconds}")
    if repeats < 1:
        raise DbsweepError(f"repeats must be at least 1, not {repeats}")
    version = valgrind_version()
    check_runnable(engine, install)
    home = home.resolve()
    out_dir = home / "valgrind"
    wrapper = valgrind_wrapper(tool, out_dir)
    user = engine.server_user()
    instance = engine.instance(install, home, "instructions", config_text, user)
    instance.config_text = config_text.rstrip() + "\n" + instance.quiet_config
    identity = {"bindir": str(install.bindir), "config": instance.config_text, "load": load}
    marker = home / _LOADED
    logs = home / "instructions-logs"
    try:
        reused = instance.initialized() and marker.is_file() and json.loads(marker.read_text()) == identity
        if not reused:
            _load(instance, load, logs, say)
        # A write step changes the data: the marker comes back only if this measurement leaves it intact.
        marker.unlink(missing_ok=True)
        shutil.rmtree(out_dir, ignore_errors=True)
        r = procs.run_as(["mkdir", "-m", "0755", out_dir], user=user)
        if r.returncode != 0:
            raise DbsweepError(f"cannot create {out_dir}: {r.stdout.strip()}")
        say(f"start under {tool}")
        instance.wrapper = wrapper
        instance.start()
        try:
            instance.prewarm(tables)
        except EngineError as e:
            raise StepError(f"warming the cache failed: {e}") from e
        session = _Session(instance, out_dir, logs)
        say(f"{step}: warm-up run under {tool}")
        _, summary = session.run(run(1), 1)  # touches what the measured runs touch; also checks the step
        pairs: list[Pair] = []
        for i in range(repeats):
            say(f"{step}: pair {i + 1} of {repeats} ({short_seconds} s and {long_seconds} s)")
            short, _ = session.run(run(short_seconds), short_seconds)
            # The runs are timed by the wall clock, so on a busy machine a long run may get less CPU than its
            # short one: it is run again, longer, until it did at least LONG_FACTOR times the short one's work.
            seconds = long_seconds
            long, _ = session.run(run(seconds), seconds)
            for _ in range(LONG_RETRIES):
                if long.events >= LONG_FACTOR * short.events:
                    break
                seconds *= 2
                say(f"{step}: the long run did {long.events} events to the short one's {short.events}: {seconds} s")
                long, _ = session.run(run(seconds), seconds)
            if long.events <= short.events:
                raise StepError(
                    f"the long run of {step} completed {long.events} events in {seconds} s, no more than the short "
                    f"run's {short.events} in {short_seconds} s (the machine was too busy for valgrind's runs); "
                    "count again with --rerun-failed."
                )
            pairs.append(Pair(short, long))
        if summary.get("group") != "write":
            marker.write_text(json.dumps(identity))
    finally:
        instance.stop()
    per_event = [p.per_event for p in pairs]
    mid = statistics.median(per_event)
    return InstructionCount(
        step=step,
        command=run(short_seconds),
        statements_per_event=int(summary["statements_per_event"]),
        per_event=mid,
        per_query=statistics.median(p.per_query for p in pairs),
        spread=(max(per_event) - min(per_event)) / mid if mid else 0.0,
        pairs=pairs,
        tool=tool,
        valgrind_version=version,
        valgrind_command=wrapper,
        server_version=install.version,
        output_dir=str(out_dir),
        wall_s=time.monotonic() - t_start,
        reused_data=reused,
        counted="client" if engine.kind == "embedded" else "backend",
    )
