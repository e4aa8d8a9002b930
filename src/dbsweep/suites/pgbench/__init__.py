"""pgbench, Postgres's own benchmark client, as a suite: the load (`pgbench -i`, client-side generation), then its
built-in scripts (select-only, simple-update, tpcb-like) and any script files of the study's (`custom:NAME`) at
every client count, each for a warm-up and the measured seconds. One pgbench binary runs every target of a study,
whatever the server's version (by default the newest Debian installs), so that a change between targets is the
server's: its path and version are in every step's result. pgbench is the client, as db_bench is RocksDB's: this
suite builds its command line and reads its output (`tool`, `output`)."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import Field

from dbsweep import machine
from dbsweep.engines.base import Access
from dbsweep.errors import DbsweepError, StepError
from dbsweep.loadclient import StepOutput
from dbsweep.measure.instructions import CountPlan
from dbsweep.measure.integrity import Expectation
from dbsweep.suites import limits
from dbsweep.suites.base import Connections, Duration, Found, PositiveInt, Progress, Suite, SuiteSettings
from dbsweep.suites.pgbench import steps, tool
from dbsweep.suites.pgbench.steps import BUILTINS, CUSTOM, GROUPS, LOAD, ROWS_PER_SCALE, SETS, STEP_NAMES, TABLES

if TYPE_CHECKING:
    from dbsweep.engines.base import Engine
    from dbsweep.loadclient import Client

# Rough figures of this VM (2 vCPUs, Debian's Postgres 15, pgbench 15) for preflight's estimate.
LOAD_ROWS_PER_S = 300_000  # pgbench -i -I dtgvp: 100,000 rows in 0.16 s at scale 1, slower once on disk
STEP_OVERHEAD_S = 1.0  # per step and client count: connecting, reading the transaction logs
CHECKPOINT_S = 2.0
# Bytes per unit of scale: pgbench_accounts' heap (13.8 MB measured) and its primary key (2.3 MB).
HEAP_BYTES_PER_SCALE = 13_900_000
INDEX_BYTES_PER_SCALE = 2_300_000
# What a writing transaction adds (a pgbench_history row, the updated rows' old versions), at a rate it seldom
# passes per client: the estimate errs high.
WRITE_BYTES = 200
WRITES_PER_S_PER_CLIENT = 3_000
# The per-transaction logs (`-l`) stay beside the step's log in the repetition's home until it is removed: a line
# of about 36 bytes per transaction, at a rate a reading client seldom passes here (select-only: 30k/s at 1 client).
LOG_LINE_BYTES = 40
READS_PER_S_PER_CLIENT = 30_000
# The first shape of the tables a load makes (`pgbench -i -I`): drop, create, generate client-side, vacuum,
# primary keys. No foreign keys, as pgbench's default.
INIT_STEPS = "dtgvp"
# A step's timed run: the warm-up and the measured seconds together must fit pgbench's -T (an int).
SECONDS_MAX = limits.I32_MAX
# The valgrind pass's timed runs end when their transactions are done: the seconds only bound a stuck one.
COUNT_CAP_S = 3600


class PgbenchSettings(SuiteSettings):
    name: Literal["pgbench"] = "pgbench"
    # pgbench -i -s: pgbench_accounts holds 100,000 rows per unit.
    scale: PositiveInt = 10
    # pgbench -j at every client count; unset: one per client up to this machine's CPUs. Never more than clients.
    threads: PositiveInt | None = None
    mode: Literal["prepared", "simple"] = "prepared"
    # The measured seconds of each script step, after its warm-up.
    seconds: PositiveInt = 60
    warmup_seconds: Annotated[int, Field(ge=0)] = 5
    # Script files of the study's own: name -> path (relative ones from the current directory, as `workspace`);
    # each is the step custom:NAME, run with pgbench -f.
    custom: dict[str, str] = Field(default_factory=dict)
    # The pgbench binary every target runs with; unset: the newest /usr/lib/postgresql/<major>/bin/pgbench.
    pgbench: Annotated[str, Field(min_length=1)] | None = None
    connect: Literal["tcp", "socket"] = "tcp"


class Pgbench(Suite):
    name: ClassVar[str] = "pgbench"
    settings_model = PgbenchSettings
    groups = GROUPS
    default_set = "default"
    kinds: ClassVar[tuple[str, ...]] = ("server",)
    settings: PgbenchSettings

    @classmethod
    def step_names(cls) -> tuple[str, ...]:
        return STEP_NAMES

    @classmethod
    def sets(cls) -> dict[str, list[str]]:
        return SETS

    @classmethod
    def canonical(cls, name: str) -> str | None:
        return steps.canonical(name)

    def steps(self) -> list[str]:
        """The study's steps; the sets "default" and "custom" end with every script of the `custom` table."""
        chosen = self.settings.steps
        if chosen is None or isinstance(chosen, str):
            name = chosen or self.default_set
            out = list(SETS.get(name, []))
            if name in steps.WITH_CUSTOM:
                out += [CUSTOM + n for n in self.settings.custom]
            return out
        return [steps.canonical(s) or s for s in chosen]

    def setup_steps(self) -> tuple[str, ...]:
        return (LOAD,)

    def loads(self, step: str) -> bool:
        return step == LOAD

    def needs_loaded(self, step: str) -> str | None:
        """The built-in scripts run on the tables the load makes; a custom script may bring its own."""
        return "runs on the pgbench tables" if step in BUILTINS else None

    def clients(self, step: str) -> list[int]:
        return [1] if step == LOAD else list(self.settings.clients)

    def group_of(self, step: str) -> str:
        if step == LOAD:
            return "load"
        return BUILTINS[step].group if step in BUILTINS else "custom"

    def in_summaries(self, step: str) -> bool:
        return step != LOAD

    def ops_name(self, step: str) -> str:
        return "rows" if step == LOAD else "transactions"

    def step_label(self, step: str, clients: int) -> str:
        """The step's own name: the reports show the client count beside it."""
        return step

    def report_note(self) -> str:
        return (
            "pgbench's transactions per second over the measured seconds, from its per-transaction logs (a "
            "transaction is one run of the script); the load: rows per second"
        )

    def settings_problems(self) -> list[Found]:
        s = self.settings
        out: list[Found] = []
        for name in s.custom:
            if not steps.CUSTOM_NAME.fullmatch(name):
                out.append(
                    (
                        f"suite.custom.{name}",
                        f"{name!r} is not a script name a step can carry (letters, digits and . _ - only)",
                    )
                )
        if isinstance(s.steps, list):
            for i, st in enumerate(s.steps):
                script = steps.custom_name(st)
                if script is not None and script not in s.custom:
                    have = ", ".join(s.custom) or "none"
                    out.append(
                        (f"suite.steps[{i}]", f"{st} names no script of [suite] custom (it has: {have})"),
                    )
        elif s.steps == "custom" and not s.custom:
            out.append(("suite.steps", "the set custom runs the scripts of [suite] custom, and it names none"))
        return out

    # ---- the pgbench binary and the scripts ---------------------------------------------------------------

    def program(self) -> tool.Program:
        """The pgbench every target runs with; DbsweepError saying what to install or set when there is none."""
        return _program(self.settings.pgbench, tool.DEBIAN_ROOT)

    def script(self, step: str) -> Path:
        """The file of a custom:NAME step, as pgbench is given it."""
        name = steps.custom_name(step)
        if name is None or name not in self.settings.custom:
            raise StepError(f"{step} names no script of [suite] custom")
        return Path(self.settings.custom[name]).expanduser().resolve()

    def _tool_problems(self) -> list[Found]:
        out: list[Found] = []
        try:
            self.program()
        except DbsweepError as e:
            out.append(("suite.pgbench", str(e)))
        for name, path in self.settings.custom.items():
            file = Path(path).expanduser()
            try:
                text = file.read_text()
            except OSError as e:
                why = e.strerror or str(e)
                out.append((f"suite.custom.{name}", f"the script file {path} cannot be read ({why})"))
                continue
            except UnicodeDecodeError:
                out.append((f"suite.custom.{name}", f"the script file {path} is not text (UTF-8)"))
                continue
            if steps.statements_in(text) == 0:
                out.append(
                    (
                        f"suite.custom.{name}",
                        f"the script file {path} holds no SQL statement, so its transactions would measure no "
                        "work of the server",
                    )
                )
        return out

    # ---- the command line ---------------------------------------------------------------------------------

    def threads(self, clients: int) -> int:
        """pgbench -j at `clients`: the setting or one per client, at most the CPUs, never more than clients."""
        most = self.settings.threads or machine.cpus()
        return max(1, min(clients, most))

    def _script_args(self, step: str) -> list[str]:
        if step in BUILTINS:
            return ["-b", step]
        # -s sets a custom script's :scale (a built-in one reads it from pgbench_branches).
        return ["-s", str(self.settings.scale), "-f", str(self.script(step))]

    def _binary(self) -> str:
        try:
            return str(self.program().path)
        except DbsweepError as e:
            raise StepError(f"pgbench cannot run: {e}") from None

    def _script_run(self, step: str, clients: int, *, until: list[str], logged: bool) -> list[str]:
        s = self.settings
        cmd = [self._binary(), "-n", "-c", str(clients), "-j", str(self.threads(clients)), "-M", s.mode, *until]
        if logged:
            cmd += ["-P", "1", "-l"]
        return [*cmd, f"--random-seed={s.seed}", *self._script_args(step)]

    def command(self, step: str, clients: int) -> list[str]:
        """pgbench's command line but the connection: the binary, then its options. The load generates the rows
        client-side (`-I dtgvp`); a script step runs for its warm-up and measured seconds with a progress line
        a second and a log line per transaction (its log files' place is the runner's: `tool.run` adds it)."""
        s = self.settings
        if step == LOAD:
            return [self._binary(), "-i", "-s", str(s.scale), "-I", INIT_STEPS, "--quiet"]
        return self._script_run(step, clients, until=["-T", str(s.warmup_seconds + s.seconds)], logged=True)

    def run(
        self,
        step: str,
        command: Sequence[str],
        conn: Access,
        log: Path,
        on_second: Callable[[dict[str, Any]], None] | None = None,
        *,
        cpus: frozenset[int] | None = None,
        on_start: Callable[[int], None] | None = None,
        on_summary: Callable[[], None] | None = None,
    ) -> StepOutput:
        warmup = 0 if step == LOAD else self.settings.warmup_seconds
        return tool.run(
            command,
            conn,
            log,
            on_second,
            step=step,
            warmup=warmup,
            cpus=cpus,
            on_start=on_start,
            on_summary=on_summary,
        )

    def client(self) -> Client:
        return tool.run

    # ---- the instruction pass -----------------------------------------------------------------------------

    def instruction_steps(self) -> dict[str, tuple[str, int]]:
        """Every script step: one client running a fixed number of transactions (an event is a transaction)."""
        return {st: (st, 0) for st in self.steps() if steps.is_script(st)}

    def instruction_plan(self, step: str, seconds: int, amount: int | None = None) -> CountPlan:
        return CountPlan(
            functools.partial(self._counted, step),
            short=amount,
            probe=functools.partial(self.instruction_command, step, seconds),
            keeps_state=not steps.writes(step),
        )

    def instruction_command(self, step: str, seconds: int) -> list[str]:
        """One client of `step` for `seconds`, without a warm-up, progress lines or logs."""
        return self._script_run(step, 1, until=["-T", str(seconds)], logged=False)

    def _counted(self, step: str, transactions: int) -> list[str]:
        # -t: the run ends when its transactions are done (one client: -t is the whole run's).
        return self._script_run(step, 1, until=["-t", str(transactions)], logged=False)

    # ---- what a measurement is ----------------------------------------------------------------------------

    @property
    def rows(self) -> int:
        return ROWS_PER_SCALE * self.settings.scale

    def expectation(self, step: str) -> Expectation:
        if step == LOAD:
            # The load ends with VACUUM and the primary keys: seconds without a row generated are normal then.
            return Expectation(steady=False, work=("operations", self.rows))
        return Expectation(seconds=float(self.settings.seconds))

    def tables(self) -> list[str]:
        return list(TABLES)

    def maintenance_points(self) -> set[str]:
        """As the method does for sysbench: VACUUM and CHECKPOINT after the load and after every step that
        writes, attached to the script step that follows (so a resume keeps it)."""
        order = self.steps()
        return {b for a, b in itertools.pairwise(order) if steps.is_script(b) and (a == LOAD or steps.writes(a))}

    def maintenance_budget(self) -> float:
        s = self.settings
        if s.maintenance_seconds is not None:
            return float(s.maintenance_seconds)
        return min(1200.0, 60 + self.rows / 1e6)

    def progress(self, step: str) -> Progress:
        if step == LOAD:
            return Progress(float(self.rows), "rows")
        return Progress(float(self.settings.warmup_seconds + self.settings.seconds), "s")

    def cell_seconds(self, step: str) -> float:
        if step == LOAD:
            return self.rows / LOAD_ROWS_PER_S + STEP_OVERHEAD_S
        return float(self.settings.warmup_seconds + self.settings.seconds) + STEP_OVERHEAD_S

    def describe(self) -> str:
        s = self.settings
        try:
            prog = self.program()
            which = f"{prog.path} ({prog.version})"
        except DbsweepError:
            which = "no pgbench found"
        return (
            f"{len(self.steps())} pgbench steps at scale {s.scale} ({s.mode}), clients {list(s.clients)}, "
            f"{s.warmup_seconds} + {s.seconds} s each; {which}"
        )

    # ---- preflight --------------------------------------------------------------------------------------

    def engine_problems(self, engine: Engine) -> list[Found]:
        """pgbench speaks to Postgres only; its binary must be there, and every custom script readable."""
        out: list[Found] = []
        if engine.name != "postgres":
            out.append(
                (
                    "suite.name",
                    f"the pgbench suite runs pgbench, Postgres's own client, which speaks only Postgres's protocol; "
                    f'this study\'s engine is {engine.title}: use engine = "postgres" or another suite',
                )
            )
        return out + self._tool_problems()

    def size_problems(self) -> list[Found]:
        s = self.settings
        out = limits.common(s)
        for j, c in enumerate(s.clients):
            if limits.U32_MAX >= c > limits.I32_MAX:
                out.append(limits.too_big(f"suite.clients[{j}]", c, limits.I32_MAX, "-c", limits.I32))
        if s.scale > limits.I32_MAX:
            out.append(limits.too_big("suite.scale", s.scale, limits.I32_MAX, "-s", limits.I32))
        if s.threads is not None and s.threads > limits.I32_MAX:
            out.append(limits.too_big("suite.threads", s.threads, limits.I32_MAX, "-j", limits.I32))
        if s.warmup_seconds + s.seconds > SECONDS_MAX:
            out.append(
                (
                    "suite.seconds",
                    f"{s.seconds} plus warmup_seconds ({s.warmup_seconds}) is more than pgbench's -T takes (a signed "
                    f"32-bit integer); the largest allowed value is {max(1, SECONDS_MAX - s.warmup_seconds)}",
                )
            )
        return out

    def connections(self) -> list[Connections]:
        # pgbench's first connection (it reads the scale) closes before the clients' open.
        out = [Connections(1, "the load", "pgbench -i's one connection")]
        for st in self.steps():
            if steps.is_script(st):
                out += [Connections(c, f"step {st} at {c} client(s)", "one per client") for c in self.clients(st)]
        return out

    def duration(self) -> Duration:
        s = self.settings
        timed = [st for st in self.steps() if steps.is_script(st)]
        each = float(s.warmup_seconds + s.seconds) + STEP_OVERHEAD_S
        return Duration(
            setup=self.cell_seconds(LOAD) if LOAD in self.steps() else 0.0,
            steps=sum(each * len(self.clients(st)) for st in timed),
            maintenance_each=max(self.maintenance_budget(), CHECKPOINT_S),
            maintenances=len(self.maintenance_points()),
        )

    def data_bytes(self) -> int:
        """The tables, what the writing steps add to them, and the transaction logs of every script step."""
        s = self.settings
        tables = s.scale * (HEAP_BYTES_PER_SCALE + INDEX_BYTES_PER_SCALE)
        seconds = s.warmup_seconds + s.seconds
        written = logged = 0
        for st in (st for st in self.steps() if steps.is_script(st)):
            rate = WRITES_PER_S_PER_CLIENT if steps.writes(st) else READS_PER_S_PER_CLIENT
            for c in self.clients(st):
                busy = min(c, machine.cpus())  # clients beyond the CPUs wait for them
                written += seconds * busy * WRITES_PER_S_PER_CLIENT * WRITE_BYTES if steps.writes(st) else 0
                logged += seconds * busy * rate * LOG_LINE_BYTES
        return tables + written + logged


def _program(setting: str | None, root: Path) -> tool.Program:
    """The binary a `pgbench` setting names (relative to the current directory, as `workspace`), else the newest
    under Debian's `root`."""
    if setting is not None:
        return tool.program(Path.cwd() / Path(setting).expanduser())
    found = tool.newest_debian(root)
    if found is None:
        majors = tool.debian_majors(root)
        major = majors[-1] if majors else "15"
        raise DbsweepError(
            f"no pgbench is installed: no {root}/<major>/bin/pgbench exists; install Debian's "
            f"postgresql-client-{major} (Debian 12 ships pgbench in the server package, postgresql-{major}), or name "
            "a pgbench binary with [suite] pgbench"
        )
    return tool.program(found)
