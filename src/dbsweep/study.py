"""Study files: TOML naming the engine, the targets, the base, the suite and its sizes.

Parsing is strict: unknown keys and wrong types are errors, and every error names
the file, the field path and the problem.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import json
import re
import tomllib
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    SerializeAsAny,
    TypeAdapter,
    ValidationError,
    model_validator,
)
from pydantic_core import PydanticCustomError

from dbsweep import configs, paths, ranges, unsafe
from dbsweep.build import variants as recipes
from dbsweep.engines import registry as engine_registry
from dbsweep.errors import DbsweepError, StudyError
from dbsweep.suites import Suite, SuiteSettings
from dbsweep.suites import registry as suite_registry

VARIANTS = (*recipes.BUILTINS, *recipes.BASES)
NAME_RE = r"^[A-Za-z0-9][A-Za-z0-9._/+-]*$"

PositiveInt = Annotated[int, Field(gt=0)]
# A server class's tables when the study names no size: a quarter of its memory fits the buffer pool of the configs
# written for it (a third to three quarters of RAM); io-bound by size, three times its memory.
CACHED_SHARE = 0.25
IO_BOUND_SIZE = 3.0


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Target(_Strict):
    """One thing under test: source x build variant x config."""

    name: Annotated[str, Field(pattern=NAME_RE, max_length=80)] | None = None
    source: str = "system"
    variant: str = "def"
    # Another compiler for the variant's flags (the compiler axis): "gcc-12", "clang-16"; None: the variant's own.
    compiler: CompilerName | None = None
    config: str
    # 0: the build every target of this source and variant shares; N > 0: a separate Nth build of the same source
    # and variant, from a copy of the tree of its own (an A-A pair of builds; `dbsweep calibrate` makes one).
    build_copy: Annotated[int, Field(ge=0, le=9)] = 0

    @property
    def label(self) -> str:
        variant = f"{self.variant}+{self.compiler}" if self.compiler else self.variant
        return self.name or f"{self.source}/{variant}/{self.config}"

    @property
    def slug(self) -> str:
        """The label as a single path component."""
        return re.sub(r"[^A-Za-z0-9._+-]", "_", self.label)


class VariantSpec(_Strict):
    """A build recipe defined in the study, next to the built-in ones."""

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$", max_length=40)]
    compiler: CompilerName = "gcc"
    cflags: str = ""
    ldflags: str = ""
    configure: list[str] = []
    pgo: bool = False


def _expected(names: Sequence[str]) -> str:
    """`'a', 'b' or 'c'`, as pydantic words a Literal's choices."""
    quoted = [repr(n) for n in names]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def _registered_engine(value: Any) -> Any:
    """A study names one of the engines registered when it is read (not when this module was imported: a test
    may register a stand-in), refused with the words a Literal of their names would use."""
    names = engine_registry.names()
    if value not in names:
        raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": _expected(names)})
    return value


EngineName = Annotated[str, BeforeValidator(_registered_engine)]


def _compiler(value: str) -> str:
    if not recipes.COMPILER_RE.match(value):
        raise PydanticCustomError(
            "compiler_error",
            "{value} is not a compiler: use 'gcc' or 'clang', or one of their versions ('gcc-12', 'clang-16')",
            {"value": repr(value)},
        )
    return value


CompilerName = Annotated[str, AfterValidator(_compiler)]


@functools.cache
def _suite_union(models: tuple[type[SuiteSettings], ...]) -> TypeAdapter[SuiteSettings]:
    union: Any = Annotated[Union[models], Field(discriminator="name")]  # noqa: UP007 - a type made at run time
    return TypeAdapter(union)


def _suite_settings(value: Any) -> SuiteSettings:
    """The [suite] table validated by the settings model of the suite it names: a discriminated union over the
    suites registered when the study is read (a test may register a stand-in), so its errors keep the union's
    locations (`suite.<name>.<field>`) and words."""
    return _suite_union(suite_registry.settings_models()).validate_python(value)


# Serialised as the suite's own model, not as the common base the type checker sees.
SuiteTable = Annotated[SerializeAsAny[SuiteSettings], PlainValidator(_suite_settings)]


class Measure(_Strict):
    """How steps are measured and judged."""

    # Where server and client run: none (the scheduler decides), same (one CPU), split (separate CPUs).
    placement: Literal["none", "same", "split"] = "none"
    # The smallest change a verdict calls faster or slower (0.02 = 2 %).
    min_effect: Annotated[float, Field(gt=0, lt=1)] = 0.02
    confidence: Annotated[float, Field(ge=0.5, lt=1)] = 0.95
    # `dbsweep run --until-decided` adds repetitions to unsure cells up to this many in all.
    max_repeats: PositiveInt = 10
    # Count the server's instructions per operation under valgrind, one client per step, after the timed cells.
    instructions: bool = False
    # cachegrind counts each function's own instructions; callgrind also its callees' (inclusive), more slowly.
    instruction_tool: Literal["cachegrind", "callgrind"] = "cachegrind"
    # Seconds of the timed short run that finds how many events every run counts (the long run does 3x).
    instruction_seconds: PositiveInt = 2
    # Pairs of a short and a long run per count: their spread shows how repeatable the step is.
    instruction_pairs: PositiveInt = 2
    # Counts taken at once, each on a CPU of its own (by default every CPU dbsweep may use): a count does not
    # depend on what else the machine runs, so two CPUs take the pass in about half the time.
    instruction_jobs: PositiveInt | None = None
    # Count only these steps: a name as the report shows it (point-query_range=100), or a microbenchmark's for all
    # its forms (point-query). Empty: every step the suite counts. A server that starts again for every count run
    # (MariaDB, MySQL: threads, not a process per connection) takes minutes a step under valgrind.
    instruction_steps: list[str] = []
    # Sample the server with perf while one client runs each step, after the timed cells: flame graphs.
    profile: bool = False
    profile_seconds: PositiveInt = 10


class ServerClass(_Strict):
    """A class of server the study runs on through a batch scheduler: the nodes of a partition, or those with a
    feature (`constraint`), and the size the class's configs are written for (`profile`, cores and GB of RAM:
    c8r32 is 8 cores and 32 GB)."""

    name: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]*$", max_length=40)]
    partition: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")] | None = None
    constraint: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.&|-]*$")] | None = None
    profile: Annotated[str, Field(pattern=r"^c[1-9][0-9]*r[1-9][0-9]*$")] | None = None

    @property
    def cores(self) -> int | None:
        return int(self.profile[1:].split("r")[0]) if self.profile else None

    @property
    def memory_gb(self) -> int | None:
        return int(self.profile.split("r")[1]) if self.profile else None


class Hosts(_Strict):
    """Where the study runs: here (`local`), or through Slurm, a job per round and server class, each with a
    node to itself (`hosts.slurm`)."""

    scheduler: Literal["local", "slurm"] = "local"
    classes: list[ServerClass] = []
    # Each setup is the study again, reported on its own: `cached` as written; `io-bound` with the server's
    # memory, page cache included, capped at io_bound_memory_mb (a memory cgroup), so its tables no longer
    # fit and are read from the device.
    setups: list[Literal["cached", "io-bound"]] = []
    # How io-bound is made: "cap" the server's memory (any machine), or "size" the tables at IO_BOUND_SIZE times a
    # class's memory (its profile), as the seeds do on servers of that size.
    io_bound: Literal["cap", "size"] = "cap"
    io_bound_memory_mb: Annotated[int, Field(ge=16)] = 256
    # Seconds between two looks at the queue while jobs run.
    poll_seconds: Annotated[float, Field(gt=0, le=600)] = 5.0


class Study(_Strict):
    name: Annotated[str, Field(pattern=NAME_RE, max_length=80)] | None = None
    description: str = ""
    engine: EngineName
    base: str
    repeats: PositiveInt = 1
    # Empty would silently mean the current directory.
    workspace: Annotated[str, Field(min_length=1, pattern=r"^\s*\S")] = ".dbsweep"
    # Settings a config diff may use that some versions lack: applied only where supported.
    optional_settings: list[str] = []
    # Unsafe settings the configs may use (they change who gets in or what runs: `Engine.unsafe_settings`); the
    # reports name each one a target ran with.
    allow_unsafe_settings: list[str] = []
    variants: list[VariantSpec] = []
    suite: SuiteTable
    measure: Measure = Measure()
    hosts: Hosts = Hosts()
    # The targets, in their order, are a series (versions, commits, compiler releases): the reports add each
    # step's trend over them and where it changed (`verdicts.series`). They may differ in one field only.
    series: bool = False
    targets: Annotated[list[Target], Field(min_length=1)]

    # Set by load_study, not by the file.
    path: Path = Path()
    # Set when the study is one part of a study run on several server classes or setups (`parts`).
    part_class: str | None = None
    part_setup: Literal["cached", "io-bound"] | None = None

    @model_validator(mode="before")
    @classmethod
    def _default_suite(cls, data: Any) -> Any:
        """`[suite]` without a name is the default suite's."""
        if isinstance(data, dict) and isinstance(data.get("suite"), dict) and "name" not in data["suite"]:
            data = {**data, "suite": {"name": suite_registry.DEFAULT, **data["suite"]}}
        return data

    @property
    def bench(self) -> Suite:
        """The suite the study runs, bound to its `[suite]` settings."""
        return suite_registry.suite_for(self.suite)

    def regrouped(self, scheme: str) -> Study:
        """The study with its report grouped by `scheme`, one of its suite's `group_schemes`."""
        schemes = self.bench.group_schemes
        if scheme not in schemes:
            have = ", ".join(schemes) or "none besides its default"
            raise DbsweepError(f"the {self.suite.name} suite has no report grouping {scheme!r}; it has: {have}")
        return self.model_copy(update={"suite": self.suite.model_copy(update={"groups": scheme})})

    @property
    def title(self) -> str:
        return self.name or self.path.stem

    def of_class(self, name: str | None, setup: str | None = None) -> Study:
        """The study as one server class runs it in one setup: its results are a study of their own in the store
        (`TITLE.CLASS.SETUP`, without the parts it does not have), so every ratio stays within one class and
        setup."""
        title = ".".join(p for p in (self.title, name, setup) if p)
        update: dict[str, Any] = {"name": title, "part_class": name, "part_setup": setup}
        c = self.server_class(name) if name else None
        if c is not None and c.profile is not None and c.cores is not None:
            # The class's size chooses what the study leaves open: the client counts, and each target's config
            # written for that size (cx10a_c2r24 -> cx10a_c8r32) where the engine has one.
            clients = self.bench.clients_for(c.cores) if "clients" not in self.suite.model_fields_set else None
            suite = self.suite.model_copy(update={"clients": clients}) if clients is not None else self.suite
            # And the tables, when the study names no size: to fit the class's buffer pool (cached), or several
            # times its memory (io-bound by size).
            if c.memory_gb is not None:
                share = IO_BOUND_SIZE if setup == "io-bound" and self.hosts.io_bound == "size" else CACHED_SHARE
                suite = suite_registry.suite_for(suite).sized(int(c.memory_gb * 2**30 * share)) or suite
            update["suite"] = suite
            have = set(configs.available(self.engine))
            update["targets"] = [
                t.model_copy(update={"config": sized, "name": t.label})  # its name stays (the base names it)
                if (sized := re.sub(r"_c\d+r\d+$", f"_{c.profile}", t.config)) in have
                else t
                for t in self.targets
            ]
        return self.model_copy(update=update)

    def parts(self) -> list[Study]:
        """The study once per server class and setup, or itself when it names neither."""
        classes: list[str | None] = [c.name for c in self.hosts.classes] or [None]
        setups: list[str | None] = list(self.hosts.setups) or [None]
        if classes == [None] and setups == [None]:
            return [self]
        return [self.of_class(c, s) for c in classes for s in setups]

    def server_class(self, name: str) -> ServerClass:
        for c in self.hosts.classes:
            if c.name == name:
                return c
        raise KeyError(name)

    @property
    def workspace_dir(self) -> Path:
        return Path(self.workspace).expanduser().resolve()

    def target(self, label: str) -> Target:
        for t in self.targets:
            if t.label == label:
                return t
        raise KeyError(label)

    @property
    def base_target(self) -> Target:
        return self.target(self.base)

    def steps(self) -> list[str]:
        """The suite's steps in run order, named sets expanded."""
        return self.bench.steps()

    def counted_steps(self) -> dict[str, Any]:
        """The steps whose instructions are counted (step -> the count it shares with others): the suite's, or
        those of them measure.instruction_steps names."""
        counted = self.bench.instruction_steps()
        wanted = self.measure.instruction_steps
        if not wanted:
            return counted
        # A step that shares its count with a named one (point-query.pre with point-query) comes with it.
        keys = {k for s, k in counted.items() if any(_names(w, s) for w in wanted)}
        return {s: k for s, k in counted.items() if k in keys}

    def measurement_key(self) -> str:
        """A hash of everything that changes what a measurement means (not targets or repeats)."""
        return self._key(self.suite.model_dump())

    def legacy_measurement_key(self) -> str:
        """The key of runs started before each suite had a settings model of its own (see
        suites.registry.legacy_dump): such a run continues as if it had the new key."""
        return self._key(suite_registry.legacy_dump(self.suite))

    def _key(self, suite: dict[str, Any]) -> str:
        what: dict[str, Any] = {"engine": self.engine, "suite": suite}
        if self.measure.placement != "none":  # kept out when unset, so older runs keep their key
            what["placement"] = self.measure.placement
        blob = json.dumps(what, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _untagged(loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    """An error's location without the suite union's tag: ("suite", "ibench", "rows") -> ("suite", "rows")."""
    if len(loc) > 1 and loc[0] == "suite" and loc[1] in suite_registry.names():
        return (loc[0], *loc[2:])
    return loc


def _loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in _untagged(loc):
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out or "(top level)"


def _allowed_keys(model: type[BaseModel]) -> str:
    return ", ".join(k for k in model.model_fields if k not in ("path", "part_class", "part_setup"))


def _model_at(loc: tuple[int | str, ...]) -> type[BaseModel]:
    """The model whose field set the location points into (for listing allowed keys)."""
    if len(loc) > 2 and loc[0] == "suite" and loc[1] in suite_registry.names():
        return suite_registry.suite_class(str(loc[1])).settings_model
    model: type[BaseModel] = Study
    nested: dict[str | int, type[BaseModel]] = {
        "targets": Target,
        "variants": VariantSpec,
        "measure": Measure,
        "hosts": Hosts,
        "classes": ServerClass,
    }
    for part in loc[:-1]:
        model = nested.get(part, model)
    return model


SERIES_AXES = ("source", "variant", "compiler", "config", "build_copy")


def _series_problems(study: Study) -> list[tuple[str, str]]:
    """A series moves along one axis: its targets may differ in one of SERIES_AXES, not in two."""
    if len(study.targets) < 3:
        return [("series", f"a series needs at least 3 targets to show a trend, not {len(study.targets)}")]
    first = study.targets[0]
    varying = [a for a in SERIES_AXES if any(getattr(t, a) != getattr(first, a) for t in study.targets)]
    if len(varying) > 1:
        return [
            (
                "series",
                f"the targets of a series may differ in one of {', '.join(SERIES_AXES)}; these differ in "
                f"{' and '.join(varying)}, so a change along the series could come from either",
            )
        ]
    return []


def _hosts_problems(study: Study) -> list[tuple[str, str]]:
    hosts = study.hosts
    problems: list[tuple[str, str]] = []
    if hosts.scheduler == "local" and hosts.classes:
        problems.append(("hosts.classes", "server classes are for a batch scheduler: set hosts.scheduler = 'slurm'"))
    if hosts.scheduler == "slurm" and not hosts.classes:
        problems.append(("hosts.classes", "name at least one server class (a partition or a node feature) to run on"))
    seen: dict[str, int] = {}
    for i, c in enumerate(hosts.classes):
        j = seen.setdefault(c.name, i)
        if j != i:
            problems.append((f"hosts.classes[{i}].name", f"duplicate class name {c.name!r} (also classes[{j}])"))
        if c.partition is None and c.constraint is None:
            problems.append((f"hosts.classes[{i}]", "name its nodes: a partition, a constraint (node feature) or both"))
    if hosts.io_bound == "size" and "io-bound" in hosts.setups:
        unsized = [c.name for c in hosts.classes if c.profile is None] if hosts.classes else ["(this machine)"]
        if unsized:
            problems.append(
                (
                    "hosts.io_bound",
                    f"'size' sizes the tables by a server class's memory; {', '.join(unsized)} has no profile "
                    "(e.g. profile = 'c8r32'): give it one, or cap the memory (io_bound = 'cap')",
                )
            )
    if len(set(hosts.setups)) != len(hosts.setups):
        problems.append(("hosts.setups", "a setup must not repeat"))
    capped = "io-bound" in hosts.setups and hosts.io_bound == "cap"
    if capped and engine_registry.engine_named(study.engine).kind != "server":
        problems.append(
            (
                "hosts.setups",
                f"the io-bound setup caps a server's memory; {study.engine} has no server process (size its tables "
                "instead: io_bound = 'size' with a server class's profile)",
            )
        )
    return problems


def source_kind(spec: str) -> str | None:
    """Which kind of source a target's `source` names, or None when it names none."""
    if spec == "system" or re.fullmatch(r"system:\d+", spec):
        return "system"
    for kind in ("debian", "git", "tarball", "crate", "dir"):
        if spec.startswith(kind + ":") and len(spec) > len(kind) + 1:
            return kind
    # A bare version: upstream (15.18) or Debian's (15.18-0+deb12u1).
    if re.fullmatch(r"\d+\.\d+(\.\d+)?(-[0-9A-Za-z.+~]+)?", spec):
        return "debian"
    return None


def _describe(err: Any) -> str:
    kind = err["type"]
    loc = tuple(err["loc"])
    value = err.get("input")
    if kind == "missing":
        return "missing required field"
    if kind == "extra_forbidden":
        owners = [n for n in suite_registry.owner_of(str(loc[-1])) if len(loc) > 2 and n != loc[1]]
        if loc[0] == "suite" and owners:
            return f"is not a setting of the {loc[1]} suite (it is one of the {' and '.join(owners)} suite's)"
        return f"unknown key; allowed keys: {_allowed_keys(_model_at(loc))}"
    if kind == "union_tag_invalid":
        return f"{value if value is not None else err.get('ctx', {}).get('tag')!r} is not a suite; have: " + ", ".join(
            suite_registry.names()
        )
    if kind == "literal_error":
        expected = err.get("ctx", {}).get("expected", "")
        return f"{value!r} is not allowed; expected {expected}"
    if kind in ("greater_than", "greater_than_equal"):
        op, bound = (">", err["ctx"].get("gt")) if kind == "greater_than" else (">=", err["ctx"].get("ge"))
        return f"must be {op} {bound}, got {value!r}"
    if kind == "too_short":
        return "must not be empty"
    if kind == "string_pattern_mismatch" and loc[-1] == "profile":
        return f"{value!r} is not a server size: write c<cores>r<GB of RAM>, e.g. c8r32"
    if kind == "string_pattern_mismatch":
        return f"{value!r} is not a valid name (letters, digits and . _ / + - only)"
    if kind.endswith("_type"):
        expected = kind.removesuffix("_type").replace("_", " ")
        got = type(value).__name__ if value is not None else "nothing"
        expected = {
            "int": "an integer",
            "string": "a string",
            "bool": "true or false",
            "list": "a list",
            "model": "a table",
            "model attributes": "a table",
            "dict": "a table",
        }.get(expected, expected)
        return f"expected {expected}, got {got} {value!r}"
    return str(err["msg"])


def _names(wanted: str, step: str) -> bool:
    """Whether measure.instruction_steps' `wanted` names `step`: itself, or its microbenchmark (before '_' or '.')."""
    return wanted in (step, re.split(r"[._]", step, maxsplit=1)[0])


def _semantic_problems(study: Study) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    labels = [t.label for t in study.targets]
    for label, n in Counter(labels).items():
        if n > 1:
            idx = [i for i, x in enumerate(labels) if x == label]
            problems.append((f"targets[{idx[1]}]", f"duplicate target name {label!r} (also targets[{idx[0]}])"))
    if study.base not in labels:
        problems.append(("base", f"{study.base!r} is not a target; have: {', '.join(labels)}"))
    slugs: dict[str, int] = {}
    for i, t in enumerate(study.targets):
        j = slugs.setdefault(t.slug, i)
        if j != i and study.targets[j].label != t.label:
            problems.append(
                (
                    f"targets[{i}]",
                    f"targets {study.targets[j].label!r} (targets[{j}]) and {t.label!r} would share the data "
                    f"directory {t.slug!r}; rename one",
                )
            )

    for i, t in enumerate(study.targets):
        try:
            configs.load(study.engine, t.config)
        except DbsweepError as e:
            problems.append((f"targets[{i}].config", str(e)))
        variants = [*VARIANTS, *(v.name for v in study.variants)]
        if t.variant not in variants:
            problems.append((f"targets[{i}].variant", f"unknown variant {t.variant!r}; have: {', '.join(variants)}"))
        kind = source_kind(t.source)
        if kind is None:
            forms = engine_registry.engine_named(study.engine).source_forms
            problems.append((f"targets[{i}].source", f"unknown source {t.source!r}; {forms}"))
        elif kind == "system" and t.variant != "def" and t.variant in variants:
            problems.append(
                (
                    f"targets[{i}].variant",
                    f"source {t.source!r} is the prebuilt {engine_registry.engine_named(study.engine).title} from "
                    "Debian's packages, so its only variant is 'def'; build from source (e.g. source = '15.18') "
                    "for other variants",
                )
            )
        if kind == "system" and t.compiler:
            problems.append(
                (f"targets[{i}].compiler", f"source {t.source!r} is prebuilt; a compiler applies to builds from source")
            )
        elif t.compiler and t.variant in variants:
            custom = {v.name: v for v in study.variants}
            spec = custom.get(t.variant)
            pgo = spec.pgo if spec is not None else recipes.resolve(t.variant).pgo
            if pgo and not t.compiler.startswith("gcc"):
                problems.append(
                    (f"targets[{i}].compiler", f"variant {t.variant!r} is profile-guided, supported with gcc only")
                )
        if kind == "system" and t.build_copy:
            problems.append(
                (
                    f"targets[{i}].build_copy",
                    f"source {t.source!r} is a prebuilt install, which cannot be built again; build_copy needs a "
                    "source that is built (e.g. source = '15.18')",
                )
            )
    if study.series:
        problems.extend(_series_problems(study))
    problems.extend(_hosts_problems(study))
    names = [v.name for v in study.variants]
    for i, v in enumerate(study.variants):
        try:
            recipes.from_table(v.model_dump(), where=f"variants[{i}]")
        except StudyError as e:
            problems.extend((p.split(": ", 1)[0], p.split(": ", 1)[1]) for p in e.problems)
        if v.name in VARIANTS:
            problems.append((f"variants[{i}].name", f"{v.name!r} is a built-in variant; choose another name"))
        elif names.index(v.name) != i:
            problems.append((f"variants[{i}].name", f"duplicate variant name {v.name!r}"))

    suite = study.suite
    bench = study.bench
    engine = engine_registry.engine_named(study.engine)
    if engine.kind not in bench.kinds:
        fits = [n for n in engine_registry.names() if engine_registry.engine_named(n).kind in bench.kinds]
        problems.append(
            (
                "suite.name",
                f"the {suite.name} suite does not run against {engine.title} (a {engine.kind} engine); "
                f"it runs against: {', '.join(fits)}",
            )
        )
    sets = tuple(bench.sets())
    if isinstance(suite.steps, str):
        if suite.steps not in sets:
            problems.append(("suite.steps", f"unknown step set {suite.steps!r}; have: {', '.join(sets)}"))
    elif suite.steps is not None:
        for i, s in enumerate(suite.steps):
            if bench.canonical(s) is None:
                near = difflib.get_close_matches(s, bench.step_names(), n=3)
                hint = f"did you mean {' or '.join(map(repr, near))}? " if near else ""
                have = ", ".join(bench.step_names())
                problems.append((f"suite.steps[{i}]", f"unknown {suite.name} step {s!r}; {hint}have: {have}"))
    if len(set(suite.clients)) != len(suite.clients):
        problems.append(("suite.clients", "client counts must not repeat"))
    counted = list(bench.instruction_steps()) if not problems else []
    for i, w in enumerate(study.measure.instruction_steps if counted else []):
        if not any(_names(w, c) for c in counted):
            said = f"{w!r} is no step the study counts; it counts: {', '.join(counted)}"
            problems.append((f"measure.instruction_steps[{i}]", said))
    problems.extend(bench.settings_problems())
    problems.extend(unsafe.study_problems(study))
    return problems


def load_study(path: str | Path) -> Study:
    """Reads and validates a study file; raises StudyError naming every problem."""
    p = Path(path)
    where = paths.shown(p)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise StudyError([f"{where}: no such study file"]) from None
    except (OSError, UnicodeDecodeError) as e:
        raise StudyError([f"{where}: cannot read: {e}"]) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise StudyError([f"{where}: not valid TOML: {e}"]) from None
    for own in ("path", "part_class", "part_setup"):
        if own in data:
            raise StudyError([f"{where}: {own}: unknown key; allowed keys: {_allowed_keys(Study)}"])
    data = ranges.expand(data, where)
    try:
        study = Study.model_validate({**data, "path": p.resolve()})
    except ValidationError as e:
        raise StudyError([f"{where}: {_loc(tuple(err['loc']))}: {_describe(err)}" for err in e.errors()]) from None
    problems = _semantic_problems(study)
    if problems:
        raise StudyError([f"{where}: {loc}: {msg}" for loc, msg in problems])
    return study
