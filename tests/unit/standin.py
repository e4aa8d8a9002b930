"""A stand-in engine and suite that run in this process, for tests of the runner's own logic: no server, no load
client, no process at all. Registered only inside a test (`registered()`), never in dbsweep's own registries.

The engine is an embedded one installed as `system`: an instance is a directory whose database is a JSON file
(the tables the load made, the steps that wrote to it). The suite's steps are `load` (its setup), `read` and
`write`; each returns its result at once, and a `Script` says which cells to fail and when to stop the run as a
Ctrl-C would, and records every cell the runner ran, in order.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from dbsweep.build.recipe import Recipe
from dbsweep.configdiff import ConfigDiff, Setting, quoted_include
from dbsweep.engines import registry as engines
from dbsweep.engines.base import (
    Access,
    Engine,
    Install,
    Instance,
    Kind,
    Watermark,
    path_disturbance,
    path_watermark,
)
from dbsweep.errors import DbsweepError, ServerError, StepError
from dbsweep.loadclient import StepOutput
from dbsweep.measure.integrity import Expectation
from dbsweep.results.model import StepResult
from dbsweep.sources import Naming
from dbsweep.suites import registry as suites
from dbsweep.suites.base import Connections, Duration, Found, Progress, Suite, SuiteSettings

NAME = "standin"
TABLE = "t1"
OPERATIONS = 100  # every step's work, in one measured second


@dataclass(frozen=True)
class Cell:
    """A cell as the stand-in suite saw it run: its target's label (its slug: the tests' labels are slugs
    already), step and repetition."""

    target: str
    step: str
    rep: int


@dataclass
class Script:
    """What the stand-in suite does besides its steps' work, and what it saw."""

    # The cells the suite ran, in order (a load the runner replays to rebuild a data directory among them).
    seen: list[Cell] = field(default_factory=list)
    # Cells whose step fails, with the reason the load client would give.
    fail: dict[Cell, str] = field(default_factory=dict)
    # The nth step run (from 1) stops the run half-way through its work, as a Ctrl-C would.
    interrupt_at: int | None = None


SCRIPT = Script()


# ---- the engine -------------------------------------------------------------------------------------------


class StandinInstance(Instance):
    """A data directory holding one JSON database file; nothing runs."""

    def __init__(self, home: Path, config_name: str, config_text: str, user: str | None) -> None:
        self.home = home.resolve()
        self.config_name = config_name
        self.config_text = config_text
        self.user = user
        self.wrapper = None
        self.started = False

    @property
    def datadir(self) -> Path:
        return self.home / "data"

    @property
    def log(self) -> Path:
        return self.home / "standin.log"

    @property
    def database(self) -> Path:
        return self.datadir / "db.json"

    def initialized(self) -> bool:
        return (self.home / "initialized").is_file() and self.database.is_file()

    def init(self) -> None:
        shutil.rmtree(self.home, ignore_errors=True)
        self.datadir.mkdir(parents=True)
        self.database.write_text(json.dumps({"tables": [], "writes": []}))
        self.log.write_text("")
        (self.home / "initialized").write_text(self.config_name + "\n")

    def start(self, timeout: float | None = None) -> None:
        if not self.database.is_file():
            raise ServerError(f"no database in {self.datadir}")
        self.started = True

    def stop(self) -> None:
        self.started = False

    @property
    def pid(self) -> int | None:
        return None

    def watermark(self) -> Watermark:
        return path_watermark(self.database, self.log)

    def disturbance_since(self, mark: Watermark) -> str | None:
        return path_disturbance(mark, self.database, "database file")

    def access(self, via_socket: bool = False) -> Access:
        return Access(args=["--database", str(self.database)], env={})

    def postwrite(self, tables: list[str], budget: float, say: Callable[[str], None]) -> dict[str, Any]:
        return {"vacuum_s": 0.0, "checkpoint_s": 0.0, "wait_s": 0.0}

    def contents(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.database.read_text())
        return data

    def statistics(self) -> dict[str, Any]:
        return {"database": self.contents()}

    def data_bytes(self) -> int | None:
        return self.database.stat().st_size if self.database.is_file() else None

    def tables(self) -> set[str] | None:
        return set(self.contents()["tables"])

    def settings(self) -> list[dict[str, Any]]:
        return []

    def server_version(self) -> str:
        return "standin 1.0"

    def log_excerpt(self, start: int = 0) -> str:
        return ""


class Standin(Engine):
    name: ClassVar[str] = NAME
    title: ClassVar[str] = "Stand-in"
    kind: ClassVar[Kind] = "embedded"
    source_forms: ClassVar[str] = "use 'system'"
    instance_type: ClassVar[type[Instance]] = StandinInstance

    @property
    def naming(self) -> Naming:
        raise DbsweepError("the stand-in has no source to fetch")

    def recipe(self) -> Recipe:
        raise DbsweepError("the stand-in is never built")

    def system_versions(self) -> list[str]:
        return ["1.0"]

    def system_install(self, spec: str) -> Install:
        return Install(Path("/nonexistent/standin/bin"), "standin 1.0", spec, short_version="1.0")

    def parse_config(self, lines: list[tuple[str, str]]) -> tuple[Setting, ...]:
        out = []
        for line, origin in lines:
            text = line.split("#", 1)[0].strip()
            if text:
                name, _, value = text.partition("=")
                out.append(Setting(name.strip(), value.strip(), origin))
        return tuple(out)

    def include_target(self, line: str) -> str | None:
        return quoted_include(line)

    def known_settings(self, install: Install) -> set[str]:
        return {"cache_kb"}

    def fit_to_install(self, diff: ConfigDiff, install: Install, optional: set[str]) -> tuple[str, list[str]]:
        return diff.text, []

    def connection_limit(self, diff: ConfigDiff) -> tuple[int, str] | None:
        return None

    def server_user(self) -> str | None:
        return None

    def instance(
        self,
        install: Install,
        home: Path,
        config_name: str,
        config_text: str,
        user: str | None,
        wrapper: list[str] | None = None,
    ) -> Instance:
        return StandinInstance(home, config_name, config_text, user)

    def stop_stale(self, datadir: Path) -> None:
        """Nothing runs, so nothing is left running."""


# ---- the suite --------------------------------------------------------------------------------------------


class StandinSettings(SuiteSettings):
    name: Literal["standin"] = "standin"


class StandinSuite(Suite):
    name: ClassVar[str] = NAME
    settings_model: ClassVar[type[SuiteSettings]] = StandinSettings
    groups: ClassVar[dict[str, str]] = {"all": "every step"}
    default_set: ClassVar[str] = "all"
    kinds: ClassVar[tuple[str, ...]] = ("embedded",)

    @classmethod
    def step_names(cls) -> tuple[str, ...]:
        return ("load", "read", "write")

    @classmethod
    def sets(cls) -> dict[str, list[str]]:
        return {"all": list(cls.step_names())}

    def setup_steps(self) -> tuple[str, ...]:
        return ("load",)

    def loads(self, step: str) -> bool:
        return step == "load"

    def clients(self, step: str) -> list[int]:
        return [1] if step == "load" else list(self.settings.clients)

    def group_of(self, step: str) -> str:
        return "all"

    def in_summaries(self, step: str) -> bool:
        return step != "load"

    def command(self, step: str, clients: int) -> list[str]:
        return [NAME, step, f"--clients={clients}"]

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
        """The step's work on the instance's database, in this process."""
        database = Path(conn.args[conn.args.index("--database") + 1])
        home = database.parent.parent  # Runner.home: <target slug>/r<repetition>
        cell = Cell(home.parent.name, step, int(home.name.removeprefix("r")))
        SCRIPT.seen.append(cell)
        data = json.loads(database.read_text())
        if step == "load":
            if TABLE in data["tables"]:
                raise StepError(f"table {TABLE} exists already: a load needs a fresh database")
            data["tables"] = [TABLE]
        elif TABLE not in data["tables"]:
            raise StepError(f"table {TABLE} does not exist: no load ran on {database}")
        data["writes"].append(f"{step} r{cell.rep}")
        database.write_text(json.dumps(data))
        if SCRIPT.interrupt_at == len(SCRIPT.seen):
            raise KeyboardInterrupt  # half-way: the database holds the step's work, the store nothing of it
        if cell in SCRIPT.fail:
            raise StepError(SCRIPT.fail[cell])
        line = {"t": 1, "phase": "measure", "ops": OPERATIONS, "errors": 0, "max_us": 10}
        if on_second is not None:
            on_second(line)
        if on_summary is not None:
            on_summary()
        result = StepResult(
            suite=NAME,
            step=step,
            ops_name="rows" if step == "load" else "queries",
            operations=OPERATIONS,
            events=OPERATIONS,
            seconds=1.0,
            rate=float(OPERATIONS),
            tps=float(OPERATIONS),
        )
        return StepOutput(result, [line])

    def expectation(self, step: str) -> Expectation:
        return Expectation(seconds=1.0)

    def tables(self) -> list[str]:
        return [TABLE]

    def maintenance_points(self) -> set[str]:
        return {"write"}

    def maintenance_budget(self) -> float:
        return 0.0

    def progress(self, step: str) -> Progress:
        return Progress(1.0, "s")

    def cell_seconds(self, step: str) -> float:
        return 1.0

    def size_problems(self) -> list[Found]:
        return []

    def connections(self) -> list[Connections]:
        return [Connections(max(self.settings.clients), "the steps' clients", "one each")]

    def duration(self) -> Duration:
        return Duration(setup=1.0, steps=2.0 * len(self.settings.clients), maintenance_each=0.0, maintenances=1)

    def data_bytes(self) -> int:
        return 1000


@contextmanager
def registered() -> Iterator[Script]:
    """The stand-in engine and suite, known to dbsweep inside the block, with a fresh script."""
    SCRIPT.seen.clear()
    SCRIPT.fail.clear()
    SCRIPT.interrupt_at = None
    with engines.registered(Standin()), suites.registered(StandinSuite):
        yield SCRIPT
