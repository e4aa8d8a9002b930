"""The sysbench microbenchmarks (methodology §1): the load, then the chosen steps at every client count,
with the postwrite maintenance where the method puts it."""

from __future__ import annotations

import functools
import itertools
import math
from typing import TYPE_CHECKING, Annotated, ClassVar, Literal

from pydantic import Field

from dbsweep.measure.instructions import CountPlan
from dbsweep.measure.integrity import Expectation, Nonzero
from dbsweep.suites import limits
from dbsweep.suites.base import Connections, Duration, Found, PositiveInt, Progress, Suite, SuiteSettings
from dbsweep.suites.sysbench.steps import (
    ALIASES,
    CHANGES_ROWS,
    FIVE_GROUPS,
    GROUP_SCHEMES,
    GROUPS,
    LOAD_STEP,
    READ_NONE,
    RETURNS_ROWS,
    SCAN_WARM_SECONDS,
    SETS,
    STEP_NAMES,
    STEPS,
    StepSpec,
    five_group,
)

if TYPE_CHECKING:
    from dbsweep.engines.base import Engine

# Rough figures of this VM for preflight's estimate (2 vCPUs, Debian's Postgres 15, cx10a): the load's
# multi-row INSERTs (48k rows/s measured), its CREATE INDEX on k, the postwrite VACUUM, a CHECKPOINT.
LOAD_ROWS_PER_S = 50_000
INDEX_ROWS_PER_S = 1_000_000
VACUUM_ROWS_PER_S = 2_000_000
CHECKPOINT_S = 2.0
EVENTS_CAP_SECONDS = 3600
# A counted run prints no line per second and keeps no latencies: an embedded engine's count is the whole client's,
# and both are work that grows with how long the run took (a line a second; a histogram's summary, which walks
# more buckets the wider the latencies spread), not with its events: +115,000 instructions in the summary of
# 20,000 point queries of SQLite on a CPU shared with three busy processes.
COUNTING = ["--counting"]
LOAD_COUNT_ROWS = 20_000  # the instruction pass's short load at most (the long one loads three times as many)
STEP_OVERHEAD_S = 1.0  # per step and client count: connecting, preparing, the statistics after it
ROW_BYTES = 270  # heap, primary key and the index on k (264 B measured)
# The most rows one client's `insert` step could add per second (7k measured): only for the check that the
# sbtest tables' 32-bit ids suffice, so it errs high.
INSERT_CEILING_PER_CLIENT = 50_000
# The workloads whose --range changes what they draw (`dbsweep-load list --json`: uses_range): the client
# rejects a range above --rows for them, and for hot-points one that reaches past the last row from rows/2.
USES_RANGE = frozenset(
    {
        "random-points",
        "hot-points",
        "points-covered-pk",
        "points-notcovered-pk",
        "points-covered-si",
        "points-notcovered-si",
        "range-covered-pk",
        "range-notcovered-pk",
        "range-covered-si",
        "range-notcovered-si",
        "read-only",
        "read-only-simple",
        "read-only-sum",
        "read-only-order",
        "read-only-distinct",
        "read-only-count",
        "read-write",
    }
)


class SysbenchSettings(SuiteSettings):
    name: Literal["sysbench"] = "sysbench"
    tables: PositiveInt = 1
    rows: PositiveInt = 100_000
    read_seconds: PositiveInt = 60
    write_seconds: PositiveInt = 60
    warmup_seconds: Annotated[int, Field(ge=0)] = 5
    prepared: bool = True
    primary_key: bool = True
    connect: Literal["tcp", "socket"] = "tcp"
    # Zipfian exponent of update-zipf.
    zipf_exp: Annotated[float, Field(gt=0)] = 0.8
    # The report's groups (GROUP_SCHEMES).
    groups: Literal["four", "five"] = "four"


class Sysbench(Suite):
    name: ClassVar[str] = "sysbench"
    settings_model = SysbenchSettings
    groups = GROUPS
    group_schemes = GROUP_SCHEMES
    default_set = "quick"
    settings: SysbenchSettings

    @classmethod
    def step_names(cls) -> tuple[str, ...]:
        return STEP_NAMES

    @classmethod
    def sets(cls) -> dict[str, list[str]]:
        return SETS

    @classmethod
    def canonical(cls, name: str) -> str | None:
        return name if name in STEPS else ALIASES.get(name)

    @staticmethod
    def spec(step: str) -> StepSpec:
        return STEPS[step]

    def cell_steps(self) -> list[str]:
        return [LOAD_STEP, *self.steps()]

    def setup_steps(self) -> tuple[str, ...]:
        return (LOAD_STEP,)

    def clients(self, step: str) -> list[int]:
        """The study's client counts, or one client per table for a warm-up."""
        if step == LOAD_STEP:
            return [1]
        return [self.settings.tables] if STEPS[step].clients_are_tables else list(self.settings.clients)

    def report_groups(self) -> dict[str, str]:
        return FIVE_GROUPS if self.settings.groups == "five" else GROUPS

    def group_of(self, step: str) -> str:
        if step == LOAD_STEP:
            return "load"
        return five_group(STEPS[step]) if self.settings.groups == "five" else STEPS[step].group

    def in_summaries(self, step: str) -> bool:
        return step != LOAD_STEP and STEPS[step].in_summaries

    def ops_name(self, step: str) -> str:
        if step == LOAD_STEP:
            return "rows"
        return "Krows" if STEPS[step].workload == "scan" else "queries"

    def seconds(self, step: str) -> int:
        """The measured seconds of a step (after its warm-up)."""
        s, kind = self.settings, STEPS[step].duration
        if kind == "scan-warm":
            return SCAN_WARM_SECONDS
        return s.read_seconds if kind == "read" else s.write_seconds

    # ---- running ----------------------------------------------------------------------------------------

    def _sizes(self) -> list[str]:
        s = self.settings
        return ["--tables", str(s.tables), "--rows", str(s.rows), "--seed", str(s.seed)]

    def command(self, step: str, clients: int) -> list[str]:
        s = self.settings
        if step == LOAD_STEP:
            return ["sysbench", "prepare", *self._sizes()] + ([] if s.primary_key else ["--no-pk"])
        return self._run(step, clients, self.seconds(step), s.warmup_seconds)

    def _run(self, step: str, clients: int, seconds: int, warmup: int) -> list[str]:
        s, spec = self.settings, STEPS[step]
        return [
            "sysbench",
            spec.workload,
            *self._sizes(),
            "--range",
            str(spec.range),
            "--zipf-exp",
            str(s.zipf_exp),
            "--clients",
            str(clients),
            "--seconds",
            str(seconds),
            "--warmup",
            str(warmup),
        ] + ([] if s.prepared else ["--no-prepared"])

    def expectation(self, step: str) -> Expectation:
        s = self.settings
        if step == LOAD_STEP:
            # The load ends with CREATE INDEX: seconds without a finished insert are normal then.
            return Expectation(steady=False, work=("operations", s.rows * s.tables))
        # A query of an empty table is fast: a step that read or wrote nothing looks healthy otherwise.
        workload = STEPS[step].workload
        nonzero = [Nonzero("rows_returned", *READ_NONE)] if workload in RETURNS_ROWS else []
        if workload in CHANGES_ROWS:
            nonzero.append(Nonzero("rows_affected", *CHANGES_ROWS[workload]))
        return Expectation(seconds=float(self.seconds(step)), nonzero=tuple(nonzero))

    def loads(self, step: str) -> bool:
        return step == LOAD_STEP

    def needs_loaded(self, step: str) -> str | None:
        """Every step works on the tables the load makes; the load always runs first (cell_steps)."""
        return None if step == LOAD_STEP else "works on the sbtest tables"

    def tables(self) -> list[str]:
        return [f"sbtest{i}" for i in range(1, self.settings.tables + 1)]

    def maintenance_points(self) -> set[str]:
        """The method runs the maintenance after the load (through point-query.warm, which follows it) and
        after read-write_range=100; attached to the step that follows, it survives a resume."""
        steps = self.steps()
        points = {b for a, b in itertools.pairwise(steps) if STEPS[a].maintenance_after}
        if steps and not STEPS[steps[0]].maintenance_after:
            points.add(steps[0])  # straight after the load
        return points

    def maintenance_budget(self) -> float:
        s = self.settings
        if s.maintenance_seconds is not None:
            return float(s.maintenance_seconds)
        return min(1200.0, 60 + s.rows * s.tables / 1e6)

    def progress(self, step: str) -> Progress:
        s = self.settings
        if step == LOAD_STEP:
            return Progress(float(s.tables * s.rows), "rows")
        return Progress(float(self.seconds(step) + s.warmup_seconds), "s")

    def cell_seconds(self, step: str) -> float:
        s = self.settings
        if step == LOAD_STEP:
            return s.rows * s.tables / 1e5 + 2
        return float(self.seconds(step) + s.warmup_seconds + 1)

    def instruction_steps(self) -> dict[str, tuple[str, int]]:
        """Every measured step and the load; a .pre step and its plain form share their count (each run
        starts from the same freshly loaded tables)."""
        steps = {st: (STEPS[st].workload, STEPS[st].range) for st in self.steps() if STEPS[st].group != "warm"}
        return {LOAD_STEP: (LOAD_STEP, 0), **steps}

    def instruction_plan(self, step: str, seconds: int, amount: int | None = None) -> CountPlan:
        if step == LOAD_STEP:
            # The load's cost per row at a size valgrind gets through in a minute or two; the difference of
            # two loads cancels creating the tables and their indexes' fixed costs.
            short = min(max(self.settings.rows // 10, 1000), LOAD_COUNT_ROWS)
            return CountPlan(self._load_rows, unit="rows", short=short, from_empty=True)
        return CountPlan(
            functools.partial(self._events, step),
            short=amount,
            probe=functools.partial(self.instruction_command, step, seconds),
            keeps_state=STEPS[step].group != "write",  # every write step (and insert) is in group write
        )

    def _load_rows(self, rows: int) -> list[str]:
        s = self.settings
        sizes = ["--tables", str(s.tables), "--rows", str(rows), "--seed", str(s.seed)]
        return ["sysbench", "prepare", *sizes, *COUNTING] + ([] if s.primary_key else ["--no-pk"])

    def _events(self, step: str, events: int) -> list[str]:
        # The seconds only bound a run that cannot finish its events (a stuck server); valgrind is slow.
        return [*self._run(step, 1, EVENTS_CAP_SECONDS, 0), "--events", str(events), *COUNTING]

    def instruction_command(self, step: str, seconds: int) -> list[str]:
        return self._run(step, 1, seconds, 0)

    def describe(self) -> str:
        return f"{len(self.steps())} steps + load, clients {list(self.settings.clients)}"

    # ---- preflight --------------------------------------------------------------------------------------

    def size_problems(self) -> list[Found]:
        s = self.settings
        steps = self.steps()
        out = limits.common(s)
        if s.tables > limits.U32_MAX:
            out.append(limits.too_big("suite.tables", s.tables, limits.U32_MAX, "--tables", limits.U32))
        if s.rows > limits.I32_MAX:
            out.append(limits.too_big("suite.rows", s.rows, limits.I32_MAX, "--rows", limits.I32))
        kinds = {STEPS[st].duration for st in steps}
        for field, seconds, used in (
            ("suite.read_seconds", s.read_seconds, "read" in kinds),
            ("suite.write_seconds", s.write_seconds, bool(kinds & {"write", "insert"})),
        ):
            if used:
                out.extend(limits.clock(field, seconds, s.warmup_seconds))
        if not math.isfinite(s.zipf_exp):
            out.append(("suite.zipf_exp", f"{s.zipf_exp} is not a number the load client takes: it must be finite"))
        if s.rows > limits.I32_MAX:
            return out  # the checks below compare with rows, which cannot even be passed
        # A step's range must fit in the rows; hot-points reads ids rows/2+1 .. rows/2+range, so needs 2 x range - 1.
        needs: list[tuple[str, int]] = []
        for st in steps:
            spec = STEPS[st]
            if spec.workload in USES_RANGE:
                least = 2 * spec.range - 1 if spec.workload == "hot-points" else spec.range
                if s.rows < least and (st, least) not in needs:
                    needs.append((st, least))
        if needs:
            out.append(
                (
                    "suite.rows",
                    f"{s.rows} rows are too few for the load client's range steps: "
                    + "; ".join(f"{st} needs rows >= {least}" for st, least in needs)
                    + f"; rows must be at least {max(least for _, least in needs)} for these steps",
                )
            )
        inserting = [st for st in steps if STEPS[st].workload == "insert"]
        if inserting:
            per_client = (s.warmup_seconds + s.write_seconds) * INSERT_CEILING_PER_CLIENT
            could = sum(c * per_client for st in inserting for c in self.clients(st))
            if s.rows + could > limits.I32_MAX:
                safe = limits.I32_MAX - could
                hint = f"the largest rows that is safe here is {safe}" if safe >= 1 else "shorten write_seconds"
                out.append(
                    (
                        "suite.rows",
                        f"the ids of the insert step could pass {limits.I32_MAX} (sbtest's id is a 32-bit "
                        f"auto-increment): {s.rows} rows loaded + up to {could} inserted (at most "
                        f"{INSERT_CEILING_PER_CLIENT} rows/s per client for warmup_seconds + write_seconds at "
                        f"clients {list(s.clients)}); {hint}",
                    )
                )
        return out

    def engine_problems(self, engine: Engine) -> list[Found]:
        if self.settings.primary_key or not engine.generated_id_needs_key:
            return []
        return [
            (
                "suite.primary_key",
                f"false gives sbtest's id a secondary index instead of the primary key (sysbench's --secondary), "
                f"which {engine.title} cannot make: {engine.generated_id_needs_key}; leave primary_key out or set it "
                "to true",
            )
        ]

    def connections(self) -> list[Connections]:
        out = [Connections(1, "the load", "its one connection")]
        for st in self.steps():
            warm = " (a warm-up: one client per table)" if STEPS[st].clients_are_tables else ""
            for c in self.clients(st):
                out.append(Connections(c, f"step {st} at {c} client(s){warm}", "one per client"))
        return out

    def duration(self) -> Duration:
        s = self.settings
        rows = s.rows * s.tables
        steps = sum(
            (self.seconds(st) + s.warmup_seconds + STEP_OVERHEAD_S) * len(self.clients(st)) for st in self.steps()
        )
        each = max(self.maintenance_budget(), rows / VACUUM_ROWS_PER_S + CHECKPOINT_S)
        setup = rows / LOAD_ROWS_PER_S + rows / INDEX_ROWS_PER_S + STEP_OVERHEAD_S
        return Duration(setup, steps, each, len(self.maintenance_points()))

    def data_bytes(self) -> int:
        return self.settings.rows * self.settings.tables * ROW_BYTES

    def sized(self, data_bytes: int) -> SuiteSettings | None:
        s = self.settings
        if "rows" in s.model_fields_set:
            return None
        return s.model_copy(update={"rows": max(1000, data_bytes // (s.tables * ROW_BYTES))})
