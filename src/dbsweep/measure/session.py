"""The reads of one target counted on one server: a session instead of a fresh server for every run.

`instructions` starts a server from the pristine copy for every run, so that a run's every process (the
background ones too, whose files are written only as the server stops) is counted from the same state. A read
changes no table, and on a server with a process per connection (Postgres's backends) each connection's process
writes its own file as it exits: so the reads of a target can share one server, started and warmed once, each
run a connection of its own, and a run's count is the files of the processes born during it. Per step, as
before, a pair of a short and a long run of fixed amounts gives

    instructions per event = (Ir_long - Ir_short) / (events_long - events_short)

where the difference cancels a connection's own start-up and exit. What the restarts cost (start under
valgrind, warm-up, shutdown: five sixths of a read's minute) is paid once per target. Each step first runs
once uncounted, so that what its statements read beyond the tables (the catalog) is cached for every target
alike. The background
processes serve no read; their files, written when the session ends, are not part of a read's count.

A forked process's file also holds what its parent executed before the fork: the postmaster's count grows by a
few ten thousand instructions between two connections, a bias of a few instructions per event at the smallest
amounts (about 5e-5 of a point query), the same for every target.

A threaded server (MySQL's, MariaDB's) writes its file only as it stops. There callgrind counts only what
threads do inside the engine's connection handler (`Instance.client_thread_functions`, `--toggle-collect`: the
threads that serve clients, the foreground of a restarted run's split), and writes what it counted so far as a
thread enters a function only the engine's marker statement runs (`Instance.dump_marker`: `DO SLEEP(0)`,
`--dump-before=Item_func_sleep::val_int*`), sent on a connection the session keeps open. A run is what was
counted between the marker before it and the marker after it, each sent once the server's threads are all
asleep (the previous connection's close finished). The marker's own statement is the same in every run, and
cancels in the pair's difference. As with Postgres, the background threads serve no read and are not counted.
A start under valgrind is minutes for MySQL (3.5 G instructions: the data dictionary, an 8 GB buffer pool):
once per target instead of five times per step. (Callgrind's dump at a function writes only the dumping
thread's file when threads are counted apart, so the clients' threads cannot be told apart from the rest by
their files here; collecting inside the handler does it.)
"""

from __future__ import annotations

import contextlib
import re
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbsweep import loadclient, placement
from dbsweep.engines.base import Engine, EngineError, Install, Instance
from dbsweep.errors import DbsweepError, StepError
from dbsweep.measure import instructions as ins


@dataclass(frozen=True)
class SessionStep:
    step: str
    plan: ins.CountPlan


def can_share(engine: Engine, instance_type: type[Instance], plan: ins.CountPlan) -> bool:
    """Whether a step's runs can share a server: a read, on a server with a process per connection, or a threaded
    one whose clients' threads are counted apart and which has a statement to mark a run's ends with."""
    apart = not instance_type.threaded or (
        bool(instance_type.client_thread_functions) and instance_type.dump_marker is not None
    )
    return engine.kind == "server" and apart and plan.keeps_state and not plan.from_empty


def method(engine: Engine, instance_type: type[Instance], plan: ins.CountPlan) -> str:
    """How a step is counted: in a session, or a server of its own for every run."""
    return ins.SESSION if can_share(engine, instance_type, plan) else ins.RESTART


# A step's outcome, handed back as soon as it is counted: (step, its count, or why it has none).
Counted = Callable[[str, "ins.InstructionCount | None", "str | None"], None]


# A dump of a threaded server's counts: <file>.<pid>.<part>.
_DUMP_FILE = re.compile(r"callgrind\.(\d+)\.(\d+)")
_QUIET_POLLS = 3  # the server's threads asleep at this many polls in a row: nothing of a run is still going on
_POLL_S = 0.05
_SETTLE_S = 30.0  # at most, for the threads to fall asleep after a run; longer fails the step


class _Session:
    """One server under valgrind, started from the pristine copy and warmed; runs are connections to it."""

    def __init__(
        self,
        instance: Instance,
        tool: ins.Tool,
        home: Path,
        client: loadclient.Client,
        cpus: frozenset[int],
        *,
        threads: bool = False,
    ) -> None:
        self.instance = instance
        self.tool = tool
        self.home = home
        self.client = client
        self.cpus = cpus
        self.out = home / "valgrind" / "session"
        self.logs = home / "instructions-logs"
        self.runs = 0
        self.summary: dict[str, object] = {}
        # A threaded server: runs are dumps of its clients' threads' counts, each marked by the engine's statement
        # on a connection of the session's (`mark`, open from the server's warm-up to its stop).
        self.threads = threads
        self.mark: Callable[[], None] | None = None

    def wrapper(self) -> list[str]:
        if not self.threads:
            return ins.valgrind_wrapper(self.tool, self.out)
        assert self.instance.dump_marker is not None
        # A C++ function's name as callgrind knows it carries its parameters: `handle_connection(void*)`.
        handlers = [p for f in self.instance.client_thread_functions for p in (f, f"{f}(*")]
        return ins.valgrind_wrapper(self.tool, self.out, dump_before=self.instance.dump_marker[1], collect_in=handlers)

    @property
    def in_lockstep(self) -> bool:
        return isinstance(self.cpus, placement.Lockstep)

    def alive(self) -> bool:
        pid = self.instance.pid
        return pid is not None and ins._alive(pid)

    def start(self, tables: list[str], stack: contextlib.ExitStack) -> None:
        """Starts the server and warms it; a threaded server's marking connection is closed by `stack`."""
        ins._writable_dir(self.out, self.instance.user)
        ins.restore_pristine(self.instance, self.home)
        self.instance.wrapper = self.wrapper()
        self.instance.start()
        self.cpus = ins.hold(self.instance, self.cpus)
        base = self.instance.workers()
        try:
            self.instance.prewarm(tables)
        except EngineError as e:
            raise StepError(f"warming the cache failed: {e}") from e
        if self.threads:
            try:
                self.mark = stack.enter_context(self.instance.marker())
            except EngineError as e:
                raise StepError(f"the connection that marks a count's runs failed: {e}") from e
            # The start and the warm-up, up to now: not any run's.
            self._set_aside(set(self._dump()), self.out / "setup")
            return
        # The warm-up's connection writes its file as it exits: not any run's.
        ins._wait_gone(self.instance.workers() - base, ins._WAIT_EXIT_S)
        self._set_aside(set(ins._files(self.out)), self.out / "setup")

    def _settle(self, pid: int) -> None:
        """Waits until no thread of the server runs, a few polls in a row: valgrind runs one thread at a time, and
        every other waits asleep for its turn. A server still busy after _SETTLE_S fails the step: a statement of
        the run may still be going on, and its work would be counted in the next run."""
        quiet = 0
        deadline = time.monotonic() + _SETTLE_S
        while quiet < _QUIET_POLLS:
            if time.monotonic() > deadline:
                raise StepError(
                    f"the server still had a thread running {_SETTLE_S:.0f} s after the run: what it did could not "
                    "be told from the next run's work (its log is in "
                    f"{self.instance.log})."
                )
            time.sleep(_POLL_S)
            quiet = 0 if _running(pid) else quiet + 1

    def _dump(self) -> dict[Path, int]:
        """Once the server is quiet, its counts since the last dump, marked: each new file -> its pid."""
        pid = self.instance.pid
        assert pid is not None and self.mark is not None
        self._settle(pid)
        before = set(self.out.iterdir())
        try:
            self.mark()  # callgrind writes the files before the statement returns
        except EngineError as e:
            raise StepError(f"the statement that marks a count's runs failed: {e}") from e
        found = {f: m for f in set(self.out.iterdir()) - before if (m := _DUMP_FILE.fullmatch(f.name))}
        if not found:
            assert self.instance.dump_marker is not None
            raise StepError(
                f"callgrind wrote no file into {self.out} as the server ran {self.instance.dump_marker[0]}: its "
                f"function {self.instance.dump_marker[1]} was not entered (valgrind's messages are in "
                f"{self.instance.log})."
            )
        return {f: int(m.group(1)) for f, m in found.items()}

    def _set_aside(self, files: set[Path], where: Path) -> None:
        ins._writable_dir(where, None)
        for f in files:
            f.rename(where / f.name)

    def run(self, step: str, plan: ins.CountPlan, amount: int) -> ins.Run:
        """One connection running `amount` events of the step (0: the plan's timed probe); its processes' files
        are moved into a directory of the run's own."""
        self.runs += 1
        t0 = time.monotonic()
        if not self.alive():
            raise StepError(f"the session's server is no longer running; its log is in {self.instance.log}")
        counts, run_dir, s = self._threaded_run(plan, amount) if self.threads else self._backends_run(plan, amount)
        self.summary = dict(s)
        events = int(s["events"]) + int(s.get("warmup_events", 0))
        total = sum(counts.values())
        return ins.Run(
            amount=amount,
            events=events,
            queries=events * int(s.get("statements_per_event") or 1),
            instructions=total,
            by_role={ins.FOREGROUND: total},
            output_dir=str(run_dir),
            wall_s=time.monotonic() - t0,
        )

    def _client(self, plan: ins.CountPlan, amount: int) -> tuple[list[str], dict[str, Any]]:
        log = self.logs / f"session-run{self.runs}-{amount}.log"
        return ins.run_client(self.client, plan, amount, self.instance, log, self.cpus)

    def _backends_run(self, plan: ins.CountPlan, amount: int) -> tuple[dict[Path, int], Path, dict[str, Any]]:
        """A run on a server with a process per connection: the files of the backends born during it."""
        before = set(ins._files(self.out))
        base = self.instance.workers()
        command, s = self._client(plan, amount)
        ins._wait_gone(self.instance.workers() - base, ins._WAIT_EXIT_S)
        new = set(ins._files(self.out)) - before
        if not new:
            raise StepError(
                f"no output file of a backend appeared in {self.out} during a run of {' '.join(command[:2])}; "
                f"valgrind's messages are in {self.instance.log}."
            )
        counts = ins._complete(new, f"session run {self.runs}")
        run_dir = self.home / "valgrind" / f"run{self.runs}"
        self._set_aside(new, run_dir)
        return counts, run_dir, s

    def _threaded_run(self, plan: ins.CountPlan, amount: int) -> tuple[dict[Path, int], Path, dict[str, Any]]:
        """A run on a threaded server: a marked dump (what came before, thrown away), the client's run, then a
        marked dump (the run's); what the engine holds still during a count (a read view that holds purge) held
        as on a server of its own."""
        try:
            with self.instance.held_still():
                for f in self._dump():  # since the last run: not any run's
                    f.unlink()
                _, s = self._client(plan, amount)
                dumped = self._dump()
        except EngineError as e:
            raise StepError(f"the read view held through the run failed: {e}") from e
        counts = ins._complete(dumped, f"session run {self.runs}")
        run_dir = self.home / "valgrind" / f"run{self.runs}"
        ins._writable_dir(run_dir, None)
        # Named as a process's file is, for what reads the run's files (function_rows).
        kept = {f.rename(run_dir / f"callgrind.{pid}"): counts[f] for f, pid in dumped.items()}
        return kept, run_dir, s


def _running(pid: int) -> bool:
    """Whether a thread of the process is running or about to (state R), or waits on a device (D); False once the
    process is gone."""
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return False
    for task in tasks:
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue  # a thread that ended
        if stat.rpartition(")")[2].split()[:1] in (["R"], ["D"]):
            return True
    return False


def count_reads(
    engine: Engine,
    install: Install,
    config_text: str,
    home: Path,
    *,
    steps: Sequence[SessionStep],
    load: list[list[str]],
    tables: list[str],
    counted: Counted,
    repeats: int = 2,
    tool: ins.Tool = "cachegrind",
    say: Callable[[str], None] | None = None,
    client: loadclient.Client = loadclient.run,
    cpus: frozenset[int] = ins.ONE_CPU,
    amount_of: Callable[[str], int | None] = lambda _step: None,
) -> None:
    """Counts `steps` (reads) in order on one server, handing each step's count or failure to `counted` as it
    ends. A step's amount is its plan's, else `amount_of(step)` (the base's, which may wait for it), else found
    by a timed probe (and recorded in its count). A step that fails leaves the others counted; a server that stops
    fails the rest. Every process started here is stopped on return, on error and on Ctrl-C."""
    say = say or (lambda _msg: None)
    if repeats < 1:
        raise DbsweepError(f"repeats must be at least 1, not {repeats}")
    version = ins.valgrind_version()
    ins.check_runnable(engine, install)
    home = home.resolve()
    shutil.rmtree(home / "valgrind", ignore_errors=True)
    instance = ins.quiet_instance(engine, install, config_text, home)
    threads = instance.threaded
    if threads:
        tool = "callgrind"  # only callgrind dumps its counts while the server runs, and counts inside functions
    left = list(steps)
    stack = contextlib.ExitStack()
    try:
        t0 = time.monotonic()
        reused = ins.pristine(instance, install, load, home, say, client)
        session = _Session(instance, tool, home, client, ins.lockstep_for(engine, cpus), threads=threads)
        say(f"{len(steps)} reads on one server: starting it under valgrind and warming it")
        session.start(tables, stack)
        setup_s = time.monotonic() - t0
        while left:
            item = left.pop(0)
            t_step = time.monotonic()
            try:
                amount, pairs = _pairs(session, item, repeats, say, amount_of)
            except StepError as e:
                counted(item.step, None, str(e))
                if not session.alive():
                    raise
                continue
            count = ins.from_pairs(
                pairs,
                tree=ins.source_tree(install),
                step=item.step,
                command=item.plan.command(amount),
                statements_per_event=int(str(session.summary.get("statements_per_event") or 1)),
                tool=tool,
                valgrind_version=version,
                valgrind_command=session.wrapper(),
                server_version=install.version,
                output_dir=str(home / "valgrind"),
                wall_s=time.monotonic() - t_step + setup_s / len(steps),  # the server's start shared out
                reused_data=reused,
                unit=item.plan.unit,
                amount=amount,
                held=ins.held_by(type(instance)),
                method=ins.SESSION,
                scheduling="lockstep" if session.in_lockstep else "normal",
            )
            counted(item.step, count, None)
    except StepError as e:
        for item in left:
            counted(item.step, None, f"the session's server stopped before this step: {e}")
    finally:
        instance.wrapper = None
        try:
            with contextlib.suppress(EngineError):
                stack.close()  # the marking connection, before its server
        finally:
            with contextlib.suppress(EngineError):
                instance.stop()


# A session's short run does a quarter of what its timed probe did, and at least 6 events: its counts repeat to
# a few parts in a million (the restarts' runs, to 1e-4), so a smaller difference measures as well, and a slow
# step (a scan of every row) no longer takes 20 events x 4 runs x 2 pairs of it. Six, because Postgres plans a
# prepared statement afresh for its first five executions: the short run must be past them, so that the
# difference of the two runs holds only what every later execution costs.
SHARE_OF_PROBE = 4
MIN_EVENTS = 6


def events_to_count(step: str, probed: int) -> int:
    """How many events a session's short run does, from the events of its timed probe."""
    ins.events_to_count(step, probed)  # the same refusal of a probe that completed nothing
    return max(probed // SHARE_OF_PROBE, MIN_EVENTS)


def _pairs(
    session: _Session,
    item: SessionStep,
    repeats: int,
    say: Callable[[str], None],
    amount_of: Callable[[str], int | None],
) -> tuple[int, list[ins.Pair]]:
    """One step's amount and pairs of runs."""
    step, plan = item.step, item.plan
    amount = plan.short if plan.short is not None else amount_of(step)
    if amount is None:
        say(f"{step}: a timed run to find how many events to count")
        amount = events_to_count(step, session.run(step, plan, 0).events)
    # Every target, probed or not, runs the step once before its pairs: the catalog pages its statements read
    # are then in shared buffers for all four runs. Without it a target that took the base's amount read them
    # in its first short run, and counted 0.15 % less per point query than the base (page checksums, opens).
    # A threaded server's warm-up is a whole long run. After 6 point queries MariaDB's first short run still
    # counted 0.28 % more than the next (37,096 instructions of 13.2 M); after a short one, MySQL's first long run
    # counted 0.65 % more than the second (432 k of 66.8 M, in memset and malloc: the run's memory, more than
    # any run before it had, taken afresh).
    warmup = ins.LONG_RUN * amount if session.threads else MIN_EVENTS
    say(f"{step}: a warm-up run of {warmup:,} {plan.unit}")
    session.run(step, plan, warmup)
    pairs: list[ins.Pair] = []
    for i in range(repeats):
        say(f"{step}: pair {i + 1} of {repeats} ({amount:,} and {ins.LONG_RUN * amount:,} {plan.unit})")
        short = session.run(step, plan, amount)
        long = session.run(step, plan, ins.LONG_RUN * amount)
        if long.events <= short.events:
            raise StepError(
                f"the long run of {step} completed {long.events} events, no more than the short run's "
                f"{short.events}: the load client ended it early (its log is in {session.logs})."
            )
        pairs.append(ins.Pair(short, long))
    ins.check_pairs(step, pairs, session.home / "valgrind")
    return amount, pairs
