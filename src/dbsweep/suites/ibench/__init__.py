"""The Insert Benchmark (methodology §2, §4.1): sizes and profiles, its ten steps, the load client's
command for each, what a step's result means, and the SLA of the read-write steps."""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from dbsweep.measure.instructions import CountPlan
from dbsweep.measure.integrity import Expectation, Nonzero
from dbsweep.suites import limits
from dbsweep.suites.base import Connections, Duration, Found, PositiveInt, Progress, Suite, SuiteSettings

# A read-write step fails its SLA when the background inserts fall below this share of the target.
SLA_SHARE = 0.95

GROUPS = {
    "ibench-load": "Insert Benchmark: load and write-only steps",
    "ibench-rw": "Insert Benchmark: read-write steps (queries with background inserts and deletes)",
}
# The steps in the order they run (methodology §2.6): the write-only ones run until their rows are in; the
# read-write ones (qrN range queries, qpN point queries) at N background inserts per second per client.
LOAD_STEPS = ("l.i0", "l.x", "l.i1", "l.i2")
RATES: dict[str, int] = {f"q{kind}{rate}": rate for rate in (100, 500, 1000) for kind in ("r", "p")}
STEP_NAMES = (*LOAD_STEPS, *RATES)
# The steps that build the tables' state: a resume on a fresh data directory replays them.
SETUP = LOAD_STEPS
# The postwrite maintenance runs right after l.i2, before the read-write steps.
MAINTENANCE_AFTER = "l.i2"
# The steps the instruction pass counts (a fixed number of rows each), and the short run's rows at most.
COUNTED = ("l.i0", "l.i1", "l.i2")
DELETING = ("l.i1", "l.i2")
COUNT_ROWS = 20_000

# Rough figures of this VM for preflight's estimate: rows per second of all clients together (53k, 16.7k
# and 4.5k measured at one client), l.x's three secondary indexes, the VACUUM after l.i2, bytes per row.
ROWS_PER_S = {"l.i0": 50_000, "l.i1": 15_000, "l.i2": 4_000}
INDEX_ROWS_PER_S = 120_000
VACUUM_ROWS_PER_S = 2_000_000
CHECKPOINT_S = 2.0
STEP_OVERHEAD_S = 1.0
ROW_BYTES = 200  # per row of load_rows + write_rows per client, with three secondary indexes
# The ids' sequence cache (ALTER SEQUENCE ... CACHE 1000): each connection that inserts may skip this many.
SEQUENCE_CACHE = 1000
# The Insert Benchmark paces its inserts in nanoseconds held in a u64: seconds x 1e9 must fit.
PACING_SECONDS_MAX = limits.U64_MAX // 1_000_000_000


@dataclass(frozen=True)
class Sizes:
    clients: int
    load_rows: int  # per client, l.i0
    write_rows: int  # per client, l.i1 + l.i2
    rw_seconds: int
    maintenance_seconds: int | None  # None: the method's budget


PROFILES: dict[str, Sizes] = {
    # About 10 minutes for two targets on a 2-core VM: 1M rows, 200k rows through the queue, 30 s per
    # read-write step, and a short wait after l.i2.
    "quick": Sizes(clients=1, load_rows=1_000_000, write_rows=200_000, rw_seconds=30, maintenance_seconds=15),
    # The seeds' small-server runs (1 client, 20M rows, 40M + 10M through the queue, 1800 s read-write
    # steps, on 32 GB of RAM), scaled to this machine's 24 GB.
    "small-server": Sizes(
        clients=1, load_rows=15_000_000, write_rows=37_500_000, rw_seconds=1800, maintenance_seconds=None
    ),
}


class IbenchSettings(SuiteSettings):
    name: Literal["ibench"] = "ibench"
    connect: Literal["tcp", "socket"] = "tcp"
    # A profile gives every size; a size set here overrides the profile's.
    profile: Literal["quick", "small-server"] | None = None
    load_rows: PositiveInt | None = None  # rows per client inserted by l.i0
    write_rows: PositiveInt | None = None  # rows per client inserted and deleted by l.i1 (4/5) and l.i2 (1/5)
    rw_seconds: PositiveInt | None = None  # seconds of each read-write step when the target rate is met
    only1t: bool = False  # every client shares one table


class Ibench(Suite):
    name: ClassVar[str] = "ibench"
    settings_model = IbenchSettings
    groups = GROUPS
    default_set = "ibench"
    settings: IbenchSettings

    def clients_for(self, cores: int) -> list[int] | None:
        return None  # one client count (its dop), which the profile or the study sets

    @classmethod
    def step_names(cls) -> tuple[str, ...]:
        return STEP_NAMES

    @classmethod
    def sets(cls) -> dict[str, list[str]]:
        return {"ibench": list(STEP_NAMES)}

    def settings_problems(self) -> list[Found]:
        """One client count, sizes from a profile or the study, l.i0 first."""
        settings = self.settings
        out: list[Found] = []
        if len(settings.clients) != 1:
            out.append(("suite.clients", "the ibench suite runs at one client count (its dop), e.g. clients = [1]"))
        missing = [f for f in ("load_rows", "write_rows", "rw_seconds") if getattr(settings, f) is None]
        if settings.profile is None and missing:
            out.append(("suite.profile", f"set a profile (quick, small-server) or all of: {', '.join(missing)}"))
        if isinstance(settings.steps, list) and settings.steps and settings.steps[0] != "l.i0":
            out.append(("suite.steps[0]", "an ibench suite starts with l.i0, the step that creates the tables"))
        return out

    def sizes(self) -> Sizes:
        """The profile's sizes with the study's own fields on top."""
        s = self.settings
        base = PROFILES[s.profile] if s.profile else None
        clients = s.clients[0] if "clients" in s.model_fields_set or base is None else base.clients

        def pick(field: str) -> int:
            value = getattr(s, field)
            if value is not None:
                return int(value)
            assert base is not None, "validated: a profile or every size is set"
            return int(getattr(base, field))

        maint = s.maintenance_seconds
        if maint is None and base is not None:
            maint = base.maintenance_seconds
        return Sizes(clients, pick("load_rows"), pick("write_rows"), pick("rw_seconds"), maint)

    def step_rows(self, step: str) -> int:
        """Rows each client inserts in a step (the method's 4/5 and 1/5 split of l.i1 and l.i2)."""
        z = self.sizes()
        if step == "l.i0":
            return z.load_rows
        if step == "l.x":
            return 100
        if step == "l.i1":
            return z.write_rows * 4 // 5
        if step == "l.i2":
            return max(1, z.write_rows // 5)
        return z.rw_seconds * RATES[step]

    def setup_steps(self) -> tuple[str, ...]:
        return SETUP

    def clients(self, step: str) -> list[int]:
        return [self.sizes().clients]

    def group_of(self, step: str) -> str:
        return "ibench-rw" if step in RATES else "ibench-load"

    def in_summaries(self, step: str) -> bool:
        return True

    def ops_name(self, step: str) -> str:
        return "queries" if step in RATES else "indexed rows" if step == "l.x" else "rows"

    @staticmethod
    def is_read_write(step: str) -> bool:
        return step in RATES

    # ---- running ----------------------------------------------------------------------------------------

    def command(self, step: str, clients: int) -> list[str]:
        z = self.sizes()
        cmd = ["ibench", step, "--clients", str(z.clients), "--seed", str(self.settings.seed)]
        if step in RATES:
            cmd += ["--seconds", str(z.rw_seconds)]
        else:
            cmd += ["--rows", str(self.step_rows(step))]
        if self.settings.only1t:
            cmd.append("--only1t")
        return cmd

    def expectation(self, step: str) -> Expectation:
        """A whole step inserted every row it was given; a read-write step also ran at least its seconds
        (longer when the server could not keep up with the rate: that is its SLA's business, not a fault)."""
        z = self.sizes()
        work = ("inserted_rows", self.step_rows(step) * z.clients)
        if step in RATES:
            # Its queries read the rows the load put in: none returned means they read empty tables.
            rows = Nonzero("query_rows", "no query returned a row", "the tables hold none of the rows the step reads")
            return Expectation(seconds=float(z.rw_seconds), may_run_long=True, work=work, nonzero=(rows,))
        # l.x is one CREATE INDEX per table after its few rows: seconds without a finished operation are normal.
        return Expectation(steady=step != "l.x", work=work)

    def judge(self, summary: dict[str, Any]) -> dict[str, Any]:
        """A read-write step met its SLA when the background inserts kept SLA_SHARE of the target rate; judged
        here, so the rule lives in one place whatever the client reports."""
        s = dict(summary)
        if str(s.get("step")) in RATES:
            target = s.get("target_rate")
            achieved = s.get("achieved_rate")
            s["sla_ok"] = bool(target and achieved is not None and float(achieved) >= SLA_SHARE * float(target))
        return s

    # ---- the instruction pass ---------------------------------------------------------------------------------

    def instruction_steps(self) -> dict[str, tuple[str, int]]:
        """The insert steps: l.i0 from an empty database, l.i1 and l.i2 from the pristine copy (the whole load
        done). l.x is one CREATE INDEX per table, and the read-write steps pace their inserts by the clock (their
        work per query depends on how fast the queries ran): neither is a fixed amount of work to count."""
        return {st: (st, 0) for st in self.steps() if st in COUNTED}

    def instruction_plan(self, step: str, seconds: int, amount: int | None = None) -> CountPlan:
        short = min(max(self.step_rows(step) // 10, 1000), COUNT_ROWS)
        return CountPlan(functools.partial(self._rows, step), unit="rows", short=short, from_empty=step == "l.i0")

    def _rows(self, step: str, rows: int) -> list[str]:
        # --counting: no latencies kept, whose summary costs more the longer the run's statements took.
        cmd = ["ibench", step, "--clients", "1", "--seed", str(self.settings.seed), "--rows", str(rows), "--counting"]
        # A delete beside an insert makes the work per row depend on how the two overlapped (what the
        # delete's scan finds dead, what pruning may remove): counted, each delete follows its insert.
        serial = ["--serial"] if step in DELETING else []
        return cmd + serial + (["--only1t"] if self.settings.only1t else [])

    def instruction_command(self, step: str, seconds: int) -> list[str]:
        cmd = ["ibench", step, "--clients", "1", "--seed", str(self.settings.seed)]
        cmd += ["--seconds", str(seconds)] if step in RATES else ["--rows", str(self.step_rows(step))]
        return cmd + (["--only1t"] if self.settings.only1t else [])

    def tables(self) -> list[str]:
        return ["pi1"] if self.settings.only1t else [f"pi{i}" for i in range(1, self.sizes().clients + 1)]

    def maintenance_points(self) -> set[str]:
        steps = self.steps()
        return {b for a, b in itertools.pairwise(steps) if a == MAINTENANCE_AFTER}

    def maintenance_budget(self) -> float:
        """The wait after l.i2: min(1200, 60 + total l.i0 rows / 1e6) seconds, unless the study shortens it."""
        z = self.sizes()
        if z.maintenance_seconds is not None:
            return float(z.maintenance_seconds)
        return min(1200.0, 60 + z.clients * z.load_rows / 1e6)

    def progress(self, step: str) -> Progress:
        """Inserting steps move their bar by rows, read-write steps by seconds; l.x (one CREATE INDEX) has none."""
        z = self.sizes()
        if step in RATES:
            return Progress(float(z.rw_seconds), "s")
        if step == "l.x":
            return Progress(None, "s")
        return Progress(float(self.step_rows(step) * z.clients), "rows")

    def cell_seconds(self, step: str) -> float:
        z = self.sizes()
        return float(z.rw_seconds) if step in RATES else self.step_rows(step) * z.clients / 1e5 + 1

    def describe(self) -> str:
        z = self.sizes()
        return (
            f"Insert Benchmark, {len(self.steps())} steps, {z.clients} client(s), {z.load_rows:,} rows per client "
            f"loaded, {z.write_rows:,} through the queue, {z.rw_seconds} s per read-write step"
        )

    # ---- preflight --------------------------------------------------------------------------------------

    def size_problems(self) -> list[Found]:
        s, z = self.settings, self.sizes()
        out = limits.common(s)
        for field, value in (("suite.load_rows", z.load_rows), ("suite.write_rows", z.write_rows)):
            if value > limits.U64_MAX:
                out.append(limits.too_big(field, value, limits.U64_MAX, "--rows", limits.U64))
        steps = self.steps()
        if any(st in RATES for st in steps) and z.rw_seconds > PACING_SECONDS_MAX:
            out.append(
                (
                    "suite.rw_seconds",
                    f"{z.rw_seconds} is more than the load client can pace: it counts a read-write step's schedule "
                    f"in nanoseconds held in an unsigned 64-bit integer; the largest allowed value is "
                    f"{PACING_SECONDS_MAX}",
                )
            )
        # Ids come from each table's 64-bit auto-increment and are never reused: every step's inserts add up.
        sharing = z.clients if s.only1t else 1
        contributions: dict[str, int] = {"suite.load_rows": 0, "suite.write_rows": 0, "suite.rw_seconds": 0}
        for st in steps:
            rows = self.step_rows(st) + SEQUENCE_CACHE
            if st in ("l.i0", "l.x"):
                contributions["suite.load_rows"] += rows
            elif st in RATES:
                contributions["suite.rw_seconds"] += rows
            else:
                contributions["suite.write_rows"] += rows
        ids = sharing * sum(contributions.values())
        if ids > limits.I64_MAX:
            biggest = max(contributions, key=lambda k: contributions[k])
            table = "pi1, which every client shares (only1t)" if s.only1t else "each client's table"
            out.append(
                (
                    biggest,
                    f"the ids of {table} would pass {limits.I64_MAX} (transactionid is a 64-bit auto-increment): "
                    f"the steps insert about {ids} rows into it; lower load_rows, write_rows or rw_seconds",
                )
            )
        return out

    def connections(self) -> list[Connections]:
        n = self.sizes().clients
        out = []
        for st in self.steps():
            if st in RATES:
                k, who = 4, "an inserter, a delete generator, a deleter and a query connection"
            elif st in ("l.i1", "l.i2"):
                k, who = 3, "an inserter, a delete generator and a deleter"
            else:
                k, who = 1, "an inserter" + (", then one per table for CREATE INDEX" if st == "l.x" else "")
            how = f"{k} per client ({who}) + the load client's admin connection"
            out.append(Connections(k * n + 1, f"step {st} at {n} client(s)", how))
        return out

    def duration(self) -> Duration:
        z = self.sizes()
        setup = 0.0
        for st in self.steps():
            if st in RATES:
                continue
            if st == "l.x":
                setup += (z.load_rows + self.step_rows(st)) * z.clients / INDEX_ROWS_PER_S
            else:
                setup += self.step_rows(st) * z.clients / ROWS_PER_S[st]
            setup += STEP_OVERHEAD_S
        steps = sum(z.rw_seconds + STEP_OVERHEAD_S for st in self.steps() if st in RATES)
        each = max(self.maintenance_budget(), self.table_rows() / VACUUM_ROWS_PER_S + CHECKPOINT_S)
        return Duration(setup, steps, each, len(self.maintenance_points()))

    def data_bytes(self) -> int:
        z = self.sizes()
        return (z.load_rows + z.write_rows) * z.clients * ROW_BYTES

    def table_rows(self) -> int:
        """Rows in the tables while the read-write steps run."""
        z = self.sizes()
        return z.clients * z.load_rows

    # ---- reports ----------------------------------------------------------------------------------------

    main_table = False
    operations = ("insert", "delete", "query")
    summary_columns = ("ips", "dps", "achieved_rate", "target_rate")

    report_module = "report"  # its tables: `report.tables(data, suite)`

    def report_note(self) -> str:
        return "inserted rows/s for l.i0, l.i1, l.i2; indexed rows/s for l.x; queries/s for the read-write steps"
