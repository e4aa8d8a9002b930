"""A stand-in engine and suite that run in this process, for tests of the runner's own logic: no server, no load
client, no process at all. Registered only inside a test (`registered()`), never in dbsweep's own registries.

The engine is an embedded one installed as `system`, or built from a `git:` source (for the bisection's tests):
a tree holds a `VERSION` file and a `cost` file, its build copies `cost` into the install, and a tree with a file
named `broken` does not build. An instance is a directory whose database is a JSON file (the tables the load made,
the steps that wrote to it). The suite's steps are `load` (its setup), `read` and `write`; each returns its result
at once, at a rate of RATE_AT_UNIT_COST / the install's cost (`system`: DEFAULT_COST), and a `Script` says which
cells to fail, when to stop the run as a Ctrl-C would and how noisy the rates are, and records every cell the
runner ran, in order.
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from dbsweep.build.recipe import Facts, Phase, Recipe, Step
from dbsweep.build.variants import Variant
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
OPERATIONS = 100  # every step's work, in one measured second, at the default cost
DEFAULT_COST = 100.0  # the `system` install's cost per operation
RATE_AT_UNIT_COST = OPERATIONS * DEFAULT_COST  # a step's rate is this over the install's cost
COST = "share/standin/cost"  # a build's install: its tree's `cost` file


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
    # Each cell's rate is off by up to this share either way, the same for the same cell on every run (0: exact).
    noise: float = 0.0
    # Steps whose rate ignores the install's cost (that no commit changes), at the `system` install's rate.
    costless: set[str] = field(default_factory=set)


SCRIPT = Script()


# ---- the engine -------------------------------------------------------------------------------------------


class StandinInstance(Instance):
    """A data directory holding one JSON database file; nothing runs."""

    def __init__(
        self, home: Path, config_name: str, config_text: str, user: str | None, cost: float = DEFAULT_COST
    ) -> None:
        self.home = home.resolve()
        self.cost = cost
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
        return Access(args=["--database", str(self.database), "--cost", str(self.cost)], env={})

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


def tree_version(tree: Path) -> str:
    """The version a stand-in tree declares in its VERSION file."""
    try:
        return (tree / "VERSION").read_text().strip()
    except OSError:
        raise DbsweepError(f"{tree} is not a stand-in tree: it has no VERSION file") from None


def no_package(version: str) -> str:
    raise DbsweepError("the stand-in has no Debian package")


NAMING = Naming(
    title="Stand-in",
    debian_prefix="standin-",
    debian_package=no_package,
    debian_major=lambda package: None,  # no package is the stand-in's
    debian_majors=range(0),
    tree_version=tree_version,
)


class StandinRecipe(Recipe):
    """A build of the "tool" shape with nothing compiled: the tree copied in, a compile that fails on a tree
    holding `broken` (a commit that does not build), and the tree's `cost` installed."""

    engine: ClassVar[str] = NAME
    artefact: ClassVar[str] = COST
    objects_estimate: ClassVar[int] = 1
    default_cflags: ClassVar[tuple[str, ...]] = ()

    def options(self, variant: Variant, version: str) -> list[str]:
        return [*variant.configure, *(f"{k}={v}" for k, v in variant.configure_vars)]

    def configure(self, phase: Phase) -> list[Step]:
        return [Step("copy the tree", ("cp", "-a", f"{phase.tree.path}/.", "."))]

    def compile(self, phase: Phase) -> list[Step]:
        return [Step("check the tree builds", ("test", "!", "-e", "broken"), objects=1)]

    def install(self, phase: Phase) -> list[Step]:
        root = Path(f"{phase.destdir}{phase.prefix}") if phase.destdir is not None else phase.prefix
        return [Step("install the cost", ("install", "-D", "-m", "0644", "cost", str(root / COST)))]

    def probe(self, install_dir: Path) -> dict[str, Any]:
        return {"standin_cost": (install_dir / COST).read_text().strip()}

    def facts(self, record: Mapping[str, Any]) -> Facts:
        return Facts(
            version=f"standin {record['version']} cost {record['standin_cost']}",
            cc=record["compiler"]["name"],
            cflags="",
            ldflags="",
            configure=record["configure_cmdline"],
        )

    def install_of(self, bindir: Path, source: str, provenance: dict[str, Any]) -> Install:
        version = provenance["version"]  # "standin <tree version> cost <cost>"
        return Install(bindir, version, source, provenance, short_version=version.split()[1])


def cost_of(install: Install) -> float:
    """The install's cost per operation: a build's installed `cost` file, or the `system` install's default."""
    if install.source == "system":
        return DEFAULT_COST
    return float((install.bindir.parent / COST).read_text())


class Standin(Engine):
    name: ClassVar[str] = NAME
    title: ClassVar[str] = "Stand-in"
    kind: ClassVar[Kind] = "embedded"
    source_forms: ClassVar[str] = "use 'system' or 'git:URL_OR_PATH@REF' (a tree with VERSION and cost files)"
    instance_type: ClassVar[type[Instance]] = StandinInstance

    @property
    def naming(self) -> Naming:
        return NAMING

    def recipe(self) -> Recipe:
        return StandinRecipe()

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
        return StandinInstance(home, config_name, config_text, user, cost_of(install))

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
        """The step's work on the instance's database, in this process, at the install's rate."""
        database = Path(conn.args[conn.args.index("--database") + 1])
        cost = DEFAULT_COST if step in SCRIPT.costless else float(conn.args[conn.args.index("--cost") + 1])
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
        # Seeded by the cell, so a cell read back on a resume is the one the first run measured.
        spread = random.Random(f"{cell.target}/{cell.step}/{cell.rep}").uniform(-1.0, 1.0)
        rate = RATE_AT_UNIT_COST / cost * (1.0 + SCRIPT.noise * spread)
        operations = round(rate)
        line = {"t": 1, "phase": "measure", "ops": operations, "errors": 0, "max_us": 10}
        if on_second is not None:
            on_second(line)
        if on_summary is not None:
            on_summary()
        result = StepResult(
            suite=NAME,
            step=step,
            ops_name="rows" if step == "load" else "queries",
            operations=operations,
            events=operations,
            seconds=1.0,
            rate=rate,
            tps=rate,
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
    SCRIPT.noise = 0.0
    SCRIPT.costless.clear()
    with engines.registered(Standin()), suites.registered(StandinSuite):
        yield SCRIPT


def in_process(tmp_path: Path, monkeypatch: Any) -> None:
    """What a run of the stand-ins needs besides them: a config (`plain`) of their own, no load client to ask its
    version (a unit test may run without its build), and the canary's work in this process (its child process
    would take a third of a second a round)."""
    from dbsweep import loadclient
    from dbsweep.measure import canary

    configs = tmp_path / "configs" / NAME
    configs.mkdir(parents=True)
    (configs / "plain.conf").write_text("cache_kb = 64\n")
    monkeypatch.setenv("DBSWEEP_CONFIGS", str(configs.parent))
    monkeypatch.setattr(loadclient, "version", lambda: "standin-load 0")
    monkeypatch.setattr(canary, "run", lambda cpus=None: canary.timed(1000))
