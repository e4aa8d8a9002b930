"""What a suite is: the boundary every benchmark suite (sysbench, the Insert Benchmark, and those to come)
implements, so the plan, the runner, preflight and the reports never need a suite's name.

A suite owns its `[suite]` settings model, its steps and named sets, the client counts per step, the
steps that build the tables' state (replayed on a resume), where the postwrite maintenance runs and its
budget, the one place that builds the load client's command line, what a whole measurement of a step
looks like, its report groups and any extra report tables, and what preflight needs to know of it
(sizes the load client cannot take, connections a step opens, a rough duration).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from dbsweep.measure.instructions import CountPlan
from dbsweep.measure.integrity import Expectation

if TYPE_CHECKING:
    from dbsweep.engines.base import Access, Engine
    from dbsweep.loadclient import Client, StepOutput

PositiveInt = Annotated[int, Field(gt=0)]
# (field of the study, message): a problem preflight reports against the study file.
Found = tuple[str, str]


class SuiteSettings(BaseModel):
    """The `[suite]` table: what every suite has; each suite's model adds its own fields."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    name: str
    # A named set or a list of steps; unset: the suite's default set.
    steps: Annotated[list[str], Field(min_length=1)] | str | None = None
    clients: Annotated[list[PositiveInt], Field(min_length=1)] = [1]
    seed: int = 1
    connect: str = "tcp"
    # Seconds the postwrite maintenance may take in all; unset: the suite's (the method's) budget.
    maintenance_seconds: Annotated[int, Field(ge=0)] | None = None


@dataclass(frozen=True)
class Connections:
    """The connections something in a run opens at once: how many, what opens them, how they add up."""

    need: int
    what: str
    how: str


@dataclass(frozen=True)
class Progress:
    """A step's progress bar: its total (None: no total) and unit (rows or s)."""

    total: float | None
    unit: str


@dataclass(frozen=True)
class Duration:
    """Rough seconds one (target, repetition) group spends, from the settings alone (preflight's estimate)."""

    setup: float  # the steps that build the tables' state
    steps: float  # the measured steps at every client count
    maintenance_each: float  # one postwrite maintenance (its budget)
    maintenances: int  # how many run


class Suite(ABC):
    """One benchmark suite, bound to a study's `[suite]` settings."""

    name: ClassVar[str]
    settings_model: ClassVar[type[SuiteSettings]]
    # Report groups in report order: key -> title.
    groups: ClassVar[dict[str, str]]
    # Other ways to group the report's rows, by name: name -> what it is, in one line. A suite that has them
    # has a `groups` setting naming one (`dbsweep report --groups NAME` overrides it).
    group_schemes: ClassVar[dict[str, str]] = {}
    default_set: ClassVar[str]
    # The kinds of engine (`engines.base.Kind`) the suite runs against: the load client's suites need a server
    # or a library it opens; a suite of an engine's own tool needs that engine.
    kinds: ClassVar[tuple[str, ...]] = ("server", "embedded")

    def __init__(self, settings: SuiteSettings) -> None:
        self.settings = settings

    # ---- steps ------------------------------------------------------------------------------------------

    @classmethod
    @abstractmethod
    def step_names(cls) -> tuple[str, ...]:
        """Every step the suite has, in its table's order."""

    @classmethod
    @abstractmethod
    def sets(cls) -> dict[str, list[str]]:
        """The named step sets."""

    @classmethod
    def canonical(cls, name: str) -> str | None:
        """The full step name for a name as a study may write it; None when the suite has no such step."""
        return name if name in cls.step_names() else None

    def settings_problems(self) -> list[Found]:
        """What the settings model alone cannot say (combinations of fields)."""
        return []

    def engine_problems(self, engine: Engine) -> list[Found]:
        """Settings the study's engine cannot run (what the engine says it cannot make)."""
        return []

    def steps(self) -> list[str]:
        """The study's steps in run order, a named set expanded."""
        steps = self.settings.steps if self.settings.steps is not None else self.default_set
        if isinstance(steps, str):
            return list(self.sets()[steps])
        return [self.canonical(s) or s for s in steps]

    def cell_steps(self) -> list[str]:
        """The steps of one (target, repetition) group, each a stored cell: `steps()` and any recorded setup."""
        return self.steps()

    @abstractmethod
    def setup_steps(self) -> tuple[str, ...]:
        """The steps that build the tables' state: a resume on a fresh data directory replays them."""

    def loads(self, step: str) -> bool:
        """Whether the step loads, from nothing, the data the suite's other steps work on."""
        return False

    def needs_loaded(self, step: str) -> str | None:
        """What the step does with data a step that `loads` must have made before it, as the words after the
        step's name ("reads the database"); None when it needs none (preflight refuses a study whose steps
        need data no earlier step loads)."""
        return None

    @abstractmethod
    def clients(self, step: str) -> list[int]:
        """The client counts a step runs at."""

    def clients_for(self, cores: int) -> list[int] | None:
        """The client counts on a server class of `cores` CPUs when the study names none: 1 and cores/2, as
        the seeds run a small server at 1 client and a large one at 1 and about half its cores. None: the
        study's own (a suite that runs at one client count)."""
        return sorted({1, max(1, cores // 2)})

    def report_groups(self) -> dict[str, str]:
        """The report groups of the settings' grouping, in report order: key -> title."""
        return self.groups

    @abstractmethod
    def group_of(self, step: str) -> str:
        """The step's report group (a key of `report_groups()`)."""

    @abstractmethod
    def in_summaries(self, step: str) -> bool:
        """Whether the step counts in the group summaries and verdict counts (warm-ups do not)."""

    def in_verdicts(self, step: str) -> bool:
        """Whether `run --until-decided` waits for the step's verdict."""
        return self.in_summaries(step)

    def ops_name(self, step: str) -> str:
        """What the step's rate counts, before any result says so."""
        return "queries"

    # ---- running ----------------------------------------------------------------------------------------

    @abstractmethod
    def command(self, step: str, clients: int) -> list[str]:
        """The load client's arguments for one step (without how to reach the server): the one place that
        builds them."""

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
        """Runs one step's command and reads its result: the load client, unless the suite drives the engine's
        own tool."""
        from dbsweep import loadclient

        self.before_run(step)
        return loadclient.run(command, conn, log, on_second, cpus=cpus, on_start=on_start, on_summary=on_summary)

    def before_run(self, step: str) -> None:
        """What the suite does right before a step's command runs (the analytic queries' cold run drops the OS page
        cache); nothing by default."""
        return None

    def client(self) -> Client:
        """What runs this suite's commands outside a timed step (the valgrind pass's load and counted runs): the
        load client, unless the suite drives the engine's own tool."""
        from dbsweep import loadclient

        return loadclient.run

    def step_label(self, step: str, clients: int) -> str:
        """The step's name as the method's reports print it at a client count (the step's own by default)."""
        return step

    @abstractmethod
    def expectation(self, step: str) -> Expectation:
        """What a whole measurement of the step looks like (integrity.check holds every cell to it)."""

    def judge(self, summary: dict[str, Any]) -> dict[str, Any]:
        """The step's stored summary with what the suite itself judges from it (e.g. whether a service level
        was met: the rule lives in one place, whatever the client reports)."""
        return summary

    @abstractmethod
    def tables(self) -> list[str]:
        """The tables the steps use (the maintenance vacuums them)."""

    @abstractmethod
    def maintenance_points(self) -> set[str]:
        """The steps the postwrite maintenance runs before."""

    @abstractmethod
    def maintenance_budget(self) -> float:
        """Seconds one postwrite maintenance may take in all."""

    @abstractmethod
    def progress(self, step: str) -> Progress:
        """The step's progress bar."""

    @abstractmethod
    def cell_seconds(self, step: str) -> float:
        """Roughly how long one cell of the step takes (to weigh the time left)."""

    def instruction_steps(self) -> dict[str, tuple[str, int]]:
        """Steps whose instructions per operation the valgrind pass counts, with the key of the work they
        share (steps with the same key are counted once); none unless the suite says so."""
        return {}

    def instruction_setup(self) -> list[list[str]]:
        """The commands that load the instruction pass's pristine copy: the setup steps as a run does them, unless
        the suite counts on a smaller copy of its own (a data set that valgrind would take hours to query)."""
        return [self.command(s, self.clients(s)[0]) for s in self.setup_steps()]

    def instruction_plan(self, step: str, seconds: int, amount: int | None = None) -> CountPlan:
        """How the valgrind pass runs one client of `step`: `amount` events (or the events a run of `seconds`
        completes, when not known yet) and three times as many; a sized step (the load) its own rows."""
        raise NotImplementedError(f"the {self.name} suite counts no instructions")

    def instruction_warmup_seconds(self) -> float:
        """Seconds each counted run spends under valgrind before its counted work (for preflight's estimate)."""
        return 0.0

    def instruction_command(self, step: str, seconds: int) -> list[str]:
        """The load client's arguments for one client running `step` for `seconds`, without a warm-up (the
        instruction pass's timed probe, the profile pass's sampled run)."""
        raise NotImplementedError(f"the {self.name} suite counts no instructions")

    def describe(self) -> str:
        """What a run does, in a few words, for `validate`."""
        return f"{len(self.steps())} steps, clients {list(self.settings.clients)}"

    # ---- preflight --------------------------------------------------------------------------------------

    @abstractmethod
    def size_problems(self) -> list[Found]:
        """Settings the load client cannot take, each with the largest value allowed."""

    @abstractmethod
    def connections(self) -> list[Connections]:
        """What opens connections at once during a run (the largest must fit the server's limit)."""

    @abstractmethod
    def duration(self) -> Duration:
        """Rough seconds of one (target, repetition) group."""

    @abstractmethod
    def data_bytes(self) -> int:
        """Rough bytes of the tables and indexes at their largest."""

    def sized(self, data_bytes: int) -> SuiteSettings | None:
        """The settings with the tables sized to about `data_bytes` (a server class's cached or io-bound size),
        or None when the study named the size or the suite has no single size to choose."""
        return None

    # ---- reports ----------------------------------------------------------------------------------------

    # The terminal shows the common QPS and rQPS table; a suite whose own tables say it better turns it off.
    main_table: ClassVar[bool] = True
    # The suite's own tables read the per-second samples (loaded for every format, not only the HTML charts).
    report_series: ClassVar[bool] = False
    # Operation kinds a step runs at once, each with its own latency in the summary (`latency.<op>`).
    operations: ClassVar[tuple[str, ...]] = ()
    # Summary fields of the suite's own that the CSV and JSON reports carry as columns.
    summary_columns: ClassVar[tuple[str, ...]] = ()

    # The module of the suite's package that holds tables of the suite's own beside the common ones, as
    # `tables(data: report.data.ReportData, suite) -> list[ExtraTable]` (e.g. "report"), or None. The report layer
    # loads it when it builds a report; the suite never imports it, as those tables read the report model, which
    # sits above the study that names the suite.
    report_module: ClassVar[str | None] = None

    def report_note(self) -> str:
        """A line under the throughput tables saying what the rate of each step counts."""
        return ""
