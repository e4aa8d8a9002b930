"""Instructions per operation of every process that does a step's work, counted by valgrind: a deterministic CPU
cost, with the share each process had.

QPS on a shared machine moves by several per cent from run to run; the number of instructions the server
executes for the same statements moves by thousandths of a per cent. The tables are loaded once at full speed,
without valgrind, then settled (frozen, analysed, checkpointed: no read sets hint bits, nothing is left for
background work) and the data directory is kept as a pristine copy. Each run then starts from that copy, under
valgrind (every process writes its own output file when it exits; cachegrind without cache or branch
simulation only counts instructions, callgrind also keeps who called whom), warms the engine's cache, runs one
client for a while (a timed step) or for a number of rows (a sized one, such as the load, from an empty
database), and stops the server, so the background processes (WAL writer, checkpointer, ...) write theirs too.
Two such runs, a short one and a long one, give

    instructions per operation = (Ir_long - Ir_short) / (ops_long - ops_short)

summed over every process; the difference cancels what every run costs once (start-up, the warm-up, the
shutdown), and the same difference per process says how much of the work was the foreground's. A server that
serves its clients with threads of one process (MariaDB) is counted per thread (callgrind's separate threads;
cachegrind has no such split): the threads that served a connection are the foreground, the rest its
background. Only
single-client steps make sense here: waits on I/O or on other clients are not what an instruction count
describes. Background work that is timed by the clock rather than by the work (a WAL writer's wake-ups) makes
a step less repeatable: the spread over the pairs says by how much.

Every run's server and client share one CPU in lockstep (`placement.Lockstep`: a fixed real-time priority,
so that neither preempts the other and every statement waits for the next once, whatever else the machine
runs). The reads of a server are counted in one session instead (`measure.session`): the same pairs, on one
server (a threaded server's runs are what callgrind counted in its clients' threads between two dumps).
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

from dbsweep import loadclient, placement
from dbsweep.engines.base import Engine, EngineError, Install, Instance
from dbsweep.errors import DbsweepError, StepError
from dbsweep.measure import functions

Tool = Literal["cachegrind", "callgrind"]
TOOLS: tuple[Tool, ...] = ("cachegrind", "callgrind")

# -march values that make the compiler emit AVX-512 (or AMX), which valgrind cannot decode.
_UNRUNNABLE_MARCH = re.compile(
    r"x86-64-v4|knl|knm|skylake-avx512|cannonlake|icelake-client|icelake-server|cascadelake|cooperlake"
    r"|tigerlake|rocketlake|sapphirerapids|emeraldrapids|graniterapids(-d)?|diamondrapids|znver[45]"
)
_MARCH = re.compile(r"(?:^|\s|')-march=([\w.-]+)")
_ISA_FLAG = re.compile(r"(?:^|\s|')-m(avx512\w*|amx[\w-]*)")

_LOADED = "instructions-load.json"  # in the server's home: what the pristine copy holds
_PRISTINE = "pristine"  # the loaded, settled data directory every run starts from
_WAIT_EXIT_S = 300.0  # for a backend to write its output and exit (seconds)
# A long run does at least this many times the short one's events, else it is run again twice as long (at most
# LONG_RETRIES times): the difference is the measurement, and a small one is mostly noise of start-up.
LONG_RUN = 3  # the long run does this many times the short one's work
MIN_EVENTS = 20  # the fewest events a short run counts, however few the timed probe completed
# The CPU the server and the client of a counted run share (the last one, as placement "same" takes).
ONE_CPU = placement.Lockstep(placement.assign("same").server or {0})
# How counts are taken; a stored count taken otherwise is taken again (its figures are not comparable):
# 2 runs each counted run's server and client in lockstep (`placement.Lockstep`) and the reads in sessions;
# 3 runs the load client with --counting (no line a second, no latencies kept: an embedded engine's count, the
# client's, is 84 instructions less per SQLite point query, and no longer grows with the run's length).
METHOD = 3
RESTART = "restart"  # every run from the pristine copy, on a server of its own
SESSION = "session"  # a read's runs on one server, one connection each (`measure.session`)
FUNCTIONS_KEPT = 150  # functions stored per count: the report shows the few that changed most
# Roles of the processes whose files a run leaves; an engine names its background processes itself.
FOREGROUND = "foreground"  # the processes that served the client (backends, or an embedded engine's client)
OTHER = "other"  # a process the engine did not name (start-up, the warm-up's connection, ...): constant per run
# The roles of a threaded server's threads that served no client: its first (start-up, the listener, shutdown)
# and the others (timers, flushing, purge).
MAIN_THREAD = "main thread"
BACKGROUND_THREADS = "background threads"


@dataclass(frozen=True)
class CountPlan:
    """How the instruction pass runs one step: the load client's arguments for an amount of it (events, or
    rows of a sized step such as the load), the short amount (the long run does LONG_RUN times as much),
    and whether it starts from an empty database (the load) rather than from the loaded tables.

    Runs do a fixed amount of work, never "as much as fits in N seconds": a write's cost per event depends on
    how many events came before it (the first change to a page after a checkpoint logs the whole page), so
    two targets compare only over the same events. Without a known `short`, the first short run is timed by
    `probe` and the events it completed become the amount, for every later run and, through the stored
    count, for every other target of the run."""

    command: Callable[[int], list[str]]
    unit: Literal["events", "rows"] = "events"
    short: int | None = None
    probe: Callable[[], list[str]] | None = None
    from_empty: bool = False
    # The step changes no table (a read): its runs may follow each other on one server (`measure.session`).
    keeps_state: bool = False


@dataclass(frozen=True)
class Run:
    """One run of the load client on one connection, and what every process of the run executed."""

    amount: int  # the events or rows the client was asked for (0: a probe, timed)
    events: int  # every event the client completed, warm-up share included
    queries: int  # events x statements per event (BEGIN/COMMIT not counted, as sysbench does)
    instructions: int  # every process's total Ir: start-up, warm-up and shutdown included
    by_role: dict[str, int]  # the same, per role of the process
    output_dir: str  # valgrind's files of the run, one per process: `cg_annotate` one to see why
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

    def per_event_by_role(self) -> dict[str, float]:
        d = self.long.events - self.short.events
        roles = set(self.short.by_role) | set(self.long.by_role)
        return {r: (self.long.by_role.get(r, 0) - self.short.by_role.get(r, 0)) / d for r in sorted(roles)}


@dataclass(frozen=True)
class InstructionCount:
    """Instructions per operation of the processes that did one step's work, over `repeats` pairs of runs."""

    step: str
    command: list[str]  # the load client's arguments for the short run
    statements_per_event: int
    per_event: float  # median over the pairs, every process
    per_query: float
    spread: float  # (max - min) / median of the pairs' per-event figures; ~1e-4 is normal for a read
    pairs: list[Pair]
    tool: str
    valgrind_version: str
    valgrind_command: list[str]  # the wrapper the server (or an embedded engine's client) ran under
    server_version: str
    output_dir: str
    wall_s: float  # the whole measurement: load (unless reused), every run under valgrind
    reused_data: bool  # the pristine copy was already loaded with the same tables, rows and config
    # What was counted: "server" (every process of the server) or "client" (an embedded engine runs inside the
    # load client, so the whole client is counted, its own instructions included).
    counted: str = "server"
    unit: str = "events"
    amount: int = 0  # the short runs' events or rows (the long ones do LONG_RUN times as many)
    # Per event, per role of the process, from the median pair; `foreground` is the work done for the client.
    by_role: dict[str, float] = dataclasses.field(default_factory=dict)
    # Per event, by function, from the median pair (every process's files added): `functions.to_rows`.
    functions: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    # The foreground's instructions per event (median over the pairs) and their spread: the clock-driven
    # wake-ups of background processes vary with how long a run took, the foreground's work does not.
    foreground_per_event: float | None = None
    foreground_spread: float | None = None
    # The settings the pass added to the target's config (the engine's `quiet_config`), so a run's work does
    # not depend on timing; a study comparing them gets no instruction verdict on them.
    held: list[str] = dataclasses.field(default_factory=list)
    # How the runs were taken (RESTART or SESSION), by which METHOD, and whether in lockstep (the fixed
    # priority was granted) or under the normal scheduler.
    method: str = RESTART
    method_version: int = METHOD
    scheduling: str = "lockstep"

    @property
    def foreground_share(self) -> float | None:
        """The foreground's share of the work per operation (None without a split)."""
        fg = self.by_role.get(FOREGROUND)
        return fg / self.per_event if fg is not None and self.per_event else None

    def median_pair(self) -> Pair:
        return _median_pair(self.pairs)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        for p, pair in zip(d["pairs"], self.pairs, strict=True):
            p.update(
                per_event=pair.per_event,
                per_query=pair.per_query,
                foreground_per_event=pair.per_event_by_role().get(FOREGROUND),
            )
        d["foreground_share"] = self.foreground_share
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
        raise DbsweepError(f"valgrind cannot run the {engine.title} in {install.bindir}: {unrunnable_reason(flag)}")


def unrunnable_reason(flag: str) -> str:
    """Why valgrind cannot run a build made with `flag`, and what to count instead."""
    return (
        f"it was built with {flag}, which emits AVX-512 instructions valgrind does not support; count "
        "instructions on a build without it (e.g. -march=x86-64-v3 or no -march)."
    )


def valgrind_wrapper(
    tool: Tool,
    out_dir: Path,
    *,
    threads: bool = False,
    dump_before: str | None = None,
    collect_in: Collection[str] = (),
) -> list[str]:
    """The command the server runs under: one output file per process (%p), written at its exit; with
    `threads` (callgrind only), one per thread of each process (`<file>.<pid>-<thread>`). Callgrind only: with
    `dump_before` (a function, `*` a wildcard), also a file of the counts since the last such dump as a thread
    enters that function (`<file>.<pid>.<part>`); with `collect_in`, only what threads do inside those functions
    is counted."""
    if tool not in TOOLS:
        raise DbsweepError(f"unknown valgrind tool {tool!r}; have: {', '.join(TOOLS)}")
    if threads and tool != "callgrind":
        raise DbsweepError("only callgrind counts per thread")
    if (dump_before is not None or collect_in) and tool != "callgrind":
        raise DbsweepError("only callgrind dumps its counts while the server runs, or counts inside functions")
    # --fair-sched: valgrind runs one thread at a time, and by default a thread that wakes from a sleep may wait
    # seconds for a busy one to let go; the load client's timer thread (an embedded engine runs in the client)
    # then ends a 1 s run after 6 s. The count per operation does not change, the runs' lengths do.
    # --vgdb=no: valgrind's gdbserver makes a file per process in /tmp named by the pid alone (user and host read
    # "???" for a server user without a login environment) and aborts the process when it cannot create it. Such
    # files outlive a killed valgrind, and a backend that later got a pid of a root-owned one died at its start
    # ("cannot create shared_mem file ... Permission denied"): its client's connection was reset. Nothing here
    # attaches a debugger. (Asking callgrind for a dump through it, `vgdb`, hung here on MariaDB: its ptrace
    # invoker could not get a thread out of poll(), and an idle server never polled for the request.)
    common = ["valgrind", f"--tool={tool}", "--trace-children=yes", "--fair-sched=yes", "--vgdb=no"]
    if tool == "cachegrind":
        return [*common, "--cache-sim=no", "--branch-sim=no", f"--cachegrind-out-file={out_dir}/cg.%p"]
    split = ["--separate-threads=yes"] if threads else []
    # A dump of one process's file holds every thread's counts; with threads apart, only the dumping thread's.
    dumps = [f"--dump-before={dump_before}"] if dump_before is not None else []
    inside = ["--collect-atstart=no", *(f"--toggle-collect={f}" for f in collect_in)] if collect_in else []
    return [*common, *split, *dumps, *inside, f"--callgrind-out-file={out_dir}/callgrind.%p"]


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


_FILE_ID = re.compile(r"(\d+)(?:-(\d+))?")  # <pid>, or <pid>-<thread> with separate threads


def _file_id(path: Path) -> tuple[int, int | None] | None:
    """(pid, valgrind's number of the thread: 1 the process's first; None in a whole process's file), from an
    output file's name; None for another file."""
    m = _FILE_ID.fullmatch(path.name.rpartition(".")[2])
    if m is None:
        return None
    return int(m.group(1)), int(m.group(2)) if m.group(2) else None


def _file_thread(path: Path) -> int | None:
    found = _file_id(path)
    return found[1] if found else None


def _runs_any(path: Path, names: Collection[str]) -> bool:
    """Whether valgrind's file names one of the functions `names` (as run, or as called)."""
    data = path.read_bytes()
    return any(re.search(rb"[ )]" + re.escape(n.encode()) + rb"(?:\(|'|\n| )", data) for n in names)


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


def _files(out_dir: Path) -> dict[Path, int]:
    """Each output file valgrind has written in `out_dir` so far -> the pid of its process."""
    ids = {f: found for f in out_dir.iterdir() if (found := _file_id(f)) is not None}
    # With separate threads callgrind also leaves the process's own file, empty: the threads' files hold it all.
    threaded = {pid for pid, thread in ids.values() if thread is not None}
    return {f: pid for f, (pid, thread) in ids.items() if pid not in threaded or thread is not None}


def _complete(files: Iterable[Path], what: str) -> dict[Path, int]:
    """file -> its total Ir; waits a little for a file still being written, then fails clearly."""
    deadline = time.monotonic() + 30.0
    out: dict[Path, int] = {}
    for f in files:
        while (ir := read_ir(f)) is None and time.monotonic() < deadline:
            time.sleep(0.1)
        if ir is None:
            raise StepError(f"valgrind's file {f} of {what} has no totals: the process did not exit cleanly.")
        out[f] = ir
    return out


class _Pass:
    """The runs of one step: each from the pristine copy (or an empty database), under valgrind."""

    def __init__(
        self,
        instance: Instance,
        wrapper: Callable[[Path], list[str]],
        home: Path,
        plan: CountPlan,
        client: loadclient.Client = loadclient.run,
        cpus: frozenset[int] = ONE_CPU,
    ) -> None:
        self.instance = instance
        self.cpus = cpus
        self.client = client
        self.wrapper = wrapper
        self.home = home
        self.plan = plan
        self.logs = home / "instructions-logs"
        self.runs = 0
        self.summary: dict[str, Any] = {}
        # Counted per thread: the server's threads that ran one of these functions served a client.
        self.by_thread = per_thread(instance)

    @property
    def in_lockstep(self) -> bool:
        return isinstance(self.cpus, placement.Lockstep)

    def _thread_role(self, f: Path) -> str:
        if _file_thread(f) == 1:
            return MAIN_THREAD
        return FOREGROUND if _runs_any(f, self.instance.client_thread_functions) else BACKGROUND_THREADS

    def _fresh_data(self) -> None:
        if self.plan.from_empty:
            self.instance.init()
        else:
            restore_pristine(self.instance, self.home)

    def run(self, amount: int, tables: list[str]) -> Run:
        """One run of `amount` events or rows (0: the plan's probe, timed): fresh data, the server under
        valgrind, the warm-up, the client, the server stopped."""
        self.runs += 1
        out_dir = self.home / "valgrind" / f"run{self.runs}"
        _writable_dir(out_dir, self.instance.user)
        t0 = time.monotonic()
        self._fresh_data()
        self.instance.wrapper = self.wrapper(out_dir)
        self.instance.start()
        try:
            # Server and client share one CPU: a backend then finds its socket empty after every reply and waits
            # once per statement. On two CPUs whether it waits depends on timing, which the machine's load
            # changes: it moved a point query's count by 0.5 % between a busy hour and a quiet one.
            self.cpus = hold(self.instance, self.cpus)  # once refused, not asked again
            if not self.plan.from_empty:
                try:
                    self.instance.prewarm(tables)
                except EngineError as e:
                    raise StepError(f"warming the cache failed: {e}") from e
            # Asked before the run: a connection after it would meet backends still writing their files under
            # valgrind (one such connection was closed unexpectedly on a busy machine).
            roles = self.instance.roles()
            with self.instance.held_still():
                # A process alive now (the warm-up's connection may still be exiting) is not the client's.
                base = self.instance.workers()
                server = self.instance.pid
                setup_pids = set(_files(out_dir).values())
                command, s = run_client(
                    self.client,
                    self.plan,
                    amount,
                    self.instance,
                    self.logs / f"run{self.runs}-{amount}.log",
                    self.cpus,
                )
                # Backends born during the run write their file as they exit, which valgrind makes slow.
                _wait_gone(self.instance.workers() - base, _WAIT_EXIT_S)
                foreground = {pid for pid in set(_files(out_dir).values()) - setup_pids if pid not in base}
        finally:
            self.instance.stop()
        files = _files(out_dir)
        counts = _complete(files, f"run {self.runs}")
        threads = self.by_thread and server is not None
        if self.instance.threaded and server is not None and not threads:
            # One process served the client with a thread (and did the background work): its file, written as it
            # stopped, is the foreground's; the split by role is not there to be had.
            foreground.add(server)
        by_role: dict[str, int] = {}
        for f, ir in counts.items():
            pid = files[f]
            if threads and pid == server:
                role = self._thread_role(f)
            else:
                role = FOREGROUND if pid in foreground else roles.get(pid, OTHER)
            by_role[role] = by_role.get(role, 0) + ir
        if FOREGROUND not in by_role:
            raise StepError(
                f"no output file of the client's {'backend' if self.instance.pid else 'process'} appeared in "
                f"{out_dir} during a run of {' '.join(command[:2])}; valgrind's messages are in {self.instance.log}."
            )
        self.summary = s
        # With --warmup 0 an event can finish before the client marks the start of measurement: count both.
        events = int(s["events"]) + int(s.get("warmup_events", 0))
        return Run(
            amount=amount,
            events=events,
            queries=events * int(s.get("statements_per_event") or 1),
            instructions=sum(counts.values()),
            by_role=by_role,
            output_dir=str(out_dir),
            wall_s=time.monotonic() - t0,
        )


def hold(instance: Instance, cpus: frozenset[int]) -> frozenset[int]:
    """Pins a started server's processes to `cpus` and, for a `placement.Lockstep`, gives them its fixed
    priority. Returns the CPUs its client runs on: the same, or a plain set when the priority was refused."""
    if instance.pid is None:
        return cpus
    placement.pin_tree(instance.pid, cpus)
    if isinstance(cpus, placement.Lockstep) and not placement.lockstep_tree(instance.pid):
        return frozenset(cpus)
    return cpus


def run_client(
    client: loadclient.Client, plan: CountPlan, amount: int, instance: Instance, log: Path, cpus: frozenset[int]
) -> tuple[list[str], dict[str, Any]]:
    """One client run of `amount` events or rows of the plan (0: its timed probe) against `instance`: its command
    and its summary; a StepError when the client saw errors (a count of a run that failed is no count)."""
    if amount == 0 and plan.probe is None:
        raise DbsweepError("the plan has no probe, so its amount must be given")
    command = plan.command(amount) if amount else plan.probe()  # type: ignore[misc]
    out = client(command, loadclient.connection_to(instance), log, cpus=cpus)
    s = out.result.flat()
    if s.get("error_count"):
        raise StepError(f"the client's {' '.join(command[:2])} had {s['error_count']} errors: {s.get('error_samples')}")
    return command, s


def per_thread(instance: Instance) -> bool:
    """Whether the instance's server is counted thread by thread (a threaded server that names its clients'
    threads)."""
    return instance.threaded and bool(instance.client_thread_functions)


def _writable_dir(path: Path, user: str | None) -> None:
    """A directory the server's processes (running as `user`) can write their output files into."""
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o755)
    if user is not None:
        shutil.chown(path, user)


def _load(
    instance: Instance, load: list[list[str]], home: Path, say: Callable[[str], None], client: loadclient.Client
) -> None:
    """A fresh data directory and the tables, at full speed, settled; kept as the pristine copy."""
    say("a fresh data directory and the load (without valgrind)")
    instance.wrapper = None
    instance.init()
    instance.start()
    try:
        for i, command in enumerate(load):
            client(command, loadclient.connection_to(instance), home / "instructions-logs" / f"load{i}.log")
        instance.settle()
    except EngineError as e:
        raise StepError(f"settling the loaded tables failed: {e}") from e
    finally:
        instance.stop()
    instance.save_state(home / _PRISTINE)


def quiet_instance(engine: Engine, install: Install, config_text: str, home: Path) -> Instance:
    """The instance the passes after the timed cells run (instructions, profiles): the config with the engine's
    quiet settings added, its home inside `home`, beside the pristine copy."""
    # The instance's home is remade by each init: the pristine copy and the passes' files live beside it.
    home.mkdir(parents=True, exist_ok=True)
    instance = engine.instance(install, home / "server", "instructions", config_text, engine.server_user())
    instance.config_text = config_text.rstrip() + "\n" + instance.quiet_config
    return instance


def pristine(
    instance: Instance,
    install: Install,
    load: list[list[str]],
    home: Path,
    say: Callable[[str], None],
    client: loadclient.Client = loadclient.run,
) -> bool:
    """Makes sure `home` holds the pristine copy of `instance` loaded by `load` and settled; True when an earlier
    call already made it (same install, config and load), so it was reused."""
    identity = {"bindir": str(install.bindir), "config": instance.config_text, "load": load}
    marker = home / _LOADED
    if (home / _PRISTINE).is_dir() and marker.is_file() and json.loads(marker.read_text()) == identity:
        return True
    marker.unlink(missing_ok=True)
    _load(instance, load, home, say, client)
    marker.write_text(json.dumps(identity))
    return False


def restore_pristine(instance: Instance, home: Path) -> None:
    """The instance's home as the pristine copy left it."""
    instance.restore_state(home / _PRISTINE)


def instructions_per_op(
    engine: Engine,
    install: Install,
    config_text: str,
    home: Path,
    *,
    step: str,
    load: list[list[str]],
    plan: CountPlan,
    tables: list[str],
    repeats: int = 2,
    tool: Tool = "cachegrind",
    say: Callable[[str], None] | None = None,
    client: loadclient.Client = loadclient.run,
    cpus: frozenset[int] = ONE_CPU,
) -> InstructionCount:
    """Instructions per event and per query of the processes doing `step` for one client.

    `load` are the client's commands that build the tables (the suite's setup), `plan` how to run the step for a
    short and a long amount, `client` what runs both (the load client, or the engine's own tool). `home` holds
    the server (data directory, the pristine copy, logs) and valgrind's output files (one directory per run); a
    pristine copy loaded by an earlier call with the same install, config and load is reused. Every process
    started here is stopped on return, on error and on Ctrl-C."""
    say = say or (lambda _msg: None)
    t_start = time.monotonic()
    cpus = lockstep_for(engine, cpus)
    if plan.short is None and plan.probe is None:
        raise DbsweepError(f"the plan of {step} gives neither an amount nor a probe to find one")
    if plan.short is not None and plan.short < 1:
        raise DbsweepError(f"the short run's amount must be positive, not {plan.short}")
    if repeats < 1:
        raise DbsweepError(f"repeats must be at least 1, not {repeats}")
    version = valgrind_version()
    check_runnable(engine, install)
    home = home.resolve()
    shutil.rmtree(home / "valgrind", ignore_errors=True)
    instance = quiet_instance(engine, install, config_text, home)
    threads = per_thread(instance)
    if threads:
        tool = "callgrind"  # cachegrind cannot tell one thread's work from another's
    try:
        reused = pristine(instance, install, load, home, say, client)
        counting = _Pass(instance, lambda d: valgrind_wrapper(tool, d, threads=threads), home, plan, client, cpus)
        amount = plan.short
        pairs: list[Pair] = []
        for i in range(repeats):
            if amount is None:
                say(f"{step}: a timed run to find how many events to count")
                probe = counting.run(0, tables)
                # Not a pair's short run: a run stopped by the clock ends differently from one that ran out of
                # events (0.17 % more per point query in a pair against 0.01 % between fixed runs).
                amount = events_to_count(step, probe.events)
            say(f"{step}: pair {i + 1} of {repeats} ({amount:,} and {LONG_RUN * amount:,} {plan.unit})")
            short = counting.run(amount, tables)
            long = counting.run(LONG_RUN * amount, tables)
            if long.events <= short.events:
                raise StepError(
                    f"the long run of {step} completed {long.events} events, no more than the short run's "
                    f"{short.events}: the load client ended it early (its log is in {counting.logs})."
                )
            pairs.append(Pair(short, long))
    finally:
        instance.wrapper = None
        instance.stop()
    assert amount is not None
    check_pairs(step, pairs, home / "valgrind")
    return from_pairs(
        pairs,
        tree=source_tree(install),
        step=step,
        command=plan.command(amount),
        statements_per_event=int(counting.summary.get("statements_per_event") or 1),
        tool=tool,
        valgrind_version=version,
        valgrind_command=valgrind_wrapper(tool, home / "valgrind" / "run%N", threads=threads),
        server_version=install.version,
        output_dir=str(home / "valgrind"),
        wall_s=time.monotonic() - t_start,
        reused_data=reused,
        # An embedded engine runs inside the load client, a tool engine is its own client: the client is counted.
        counted="server" if engine.kind == "server" else "client",
        unit=plan.unit,
        amount=amount,
        held=held_by(type(instance)),
        scheduling="lockstep" if counting.in_lockstep else "normal",
    )


def source_tree(install: Install) -> str | None:
    """The source tree a build was compiled from (its functions' files are read relative to it), if recorded."""
    tree = install.provenance.get("source_tree")
    return tree if isinstance(tree, str) and tree else None


def from_pairs(pairs: list[Pair], tree: str | None = None, **fields: Any) -> InstructionCount:
    """A count from its pairs: the medians and spreads of every process's and the foreground's figures, and the
    split by role and the functions of the median pair (files relative to `tree`, the build's source tree);
    `fields` say what was counted, how and by what."""
    per_event = [p.per_event for p in pairs]
    mid = statistics.median(per_event)
    fg = [p.per_event_by_role().get(FOREGROUND, 0.0) for p in pairs]
    fg_mid = statistics.median(fg)
    mid_pair = _median_pair(pairs)
    return InstructionCount(
        per_event=mid,
        per_query=statistics.median(p.per_query for p in pairs),
        spread=(max(per_event) - min(per_event)) / mid if mid else 0.0,
        pairs=pairs,
        by_role=mid_pair.per_event_by_role(),
        functions=function_rows(mid_pair, tree=tree),
        foreground_per_event=fg_mid,
        foreground_spread=(max(fg) - min(fg)) / fg_mid if fg_mid else None,
        **fields,
    )


def _median_pair(pairs: list[Pair]) -> Pair:
    return sorted(pairs, key=lambda p: p.per_event)[(len(pairs) - 1) // 2]


def lockstep_for(engine: Engine, cpus: frozenset[int]) -> frozenset[int]:
    """`cpus` as a count of this engine runs on them: in lockstep for a server, whose client runs beside it;
    plain for an engine counted inside its client (SQLite, db_bench), whose threads share the one CPU under
    valgrind: at a fixed priority the thread that never blocks (a read of an in-process database) would keep
    the CPU from the timer thread that ends a timed run, and the run would never end. Plain too for a server
    that cannot run at a fixed priority (`Instance.lockstep`)."""
    return cpus if engine.kind == "server" and engine.instance_type.lockstep else frozenset(cpus)


def events_to_count(step: str, probed: int) -> int:
    """How many events a pair's short run does, from the `probed` events its timed probe completed: as many, and
    at least MIN_EVENTS. A fixed run ends when its events are done, not by the clock, so a slow step (a scan, a
    range of 10,000 rows) is counted by more time rather than by a handful of events or not at all."""
    if probed < 1:
        raise StepError(
            f"the timed run of {step} completed no event, so there is nothing to count by; give it more time "
            "(measure.instruction_seconds)."
        )
    return max(probed, MIN_EVENTS)


def held_settings(quiet_config: str) -> list[str]:
    """The settings lines of an engine's quiet config, without comments: `name = value`."""
    lines = (line.split("#", 1)[0].strip() for line in quiet_config.splitlines())
    return [" ".join(line.split()) for line in lines if line]


def held_by(instance_type: type[Instance]) -> list[str]:
    """What a count of this kind of instance holds still, as its `held` records it."""
    return [*held_settings(instance_type.quiet_config), *instance_type.held_during_count]


def stale_counts(
    have: dict[tuple[str, str], dict[str, Any]],
    held: list[str],
    method_of: Callable[[str], str | None] | None = None,
) -> tuple[set[tuple[str, str]], list[str]]:
    """The stored counts taken while the engine's count held other settings still than `held` (a setting added
    once timing was found to move a count), by an older METHOD, or otherwise than `method_of(step)` takes the
    step now (RESTART or SESSION): their figures are not comparable with a new count's. Also what differs, for
    the message."""
    stale: set[tuple[str, str]] = set()
    changed: set[str] = set()
    for key, v in have.items():
        if v.get("error") or "held" not in v:
            continue
        if v.get("method_version", 1) != METHOD:
            stale.add(key)
            changed.add(f"the counting method (version {v.get('method_version', 1)}, now {METHOD})")
        now = method_of(key[1]) if method_of is not None else None
        if now is not None and v.get("method", RESTART) != now:
            stale.add(key)
            changed.add(f"some steps counted as {v.get('method', RESTART)} runs, now as {now} runs")
        if v["held"] != held:
            stale.add(key)
            changed |= set(held).symmetric_difference(v["held"])
    return stale, sorted(changed)


def check_pairs(step: str, pairs: list[Pair], output_dir: Path) -> None:
    """Raises StepError when a pair counted no more instructions in its long run than in its short one: work
    that is not the step's varied between the runs by more than the step's own, and its figure would be noise.
    The message names the role of the process (or thread) whose work fell most."""
    for i, pair in enumerate(pairs, 1):
        if pair.per_event > 0:
            continue
        roles = pair.per_event_by_role()
        role = min(roles, key=lambda r: roles[r]) if roles else "every process"
        moved = (pair.long.by_role.get(role, 0) - pair.short.by_role.get(role, 0)) if roles else 0
        raise StepError(
            f"pair {i} of {step} counted {pair.long.instructions:,} instructions in its long run and "
            f"{pair.short.instructions:,} in its short one: the {role}'s work changed by {moved:+,} between "
            f"the runs, more than the step's own; see valgrind's files in {output_dir}."
        )


def function_rows(pair: Pair, keep: int = FUNCTIONS_KEPT, tree: str | None = None) -> list[dict[str, Any]]:
    """The pair's instructions per event by function (the largest `keep` by own and by inclusive cost), their
    files relative to `tree` where they are in it (a `dir:` source's tree is wherever its owner keeps it)."""

    def profile(run: Run) -> functions.Profile:
        return functions.add(functions.read_functions(f) for f in sorted(_files(Path(run.output_dir))))

    per_op = functions.per_operation(profile(pair.short), profile(pair.long), pair.short.events, pair.long.events)
    return functions.to_rows(functions.top_functions(per_op, keep), tree)
