"""What a run of a study would reject, and what it would cost, known before any work.

`check` finds what `dbsweep run` would refuse or fail on: sizes the load client cannot take, more
connections than a target's config lets in, more clients than the machine can start, a step listed twice,
sources that cannot exist, and config settings and values the target's binary does not take (where that binary
is there without building). It also estimates the run's wall time and its largest data directory from the
study's settings alone.

Nothing here builds, fetches, downloads, starts a server or writes outside a temporary directory. It reads the
workspace's caches (sources/, builds/) and runs only commands that change nothing: the engine's binary asked
what it knows and whether it takes a config's values (`postgres --describe-config` and `-C`, `mariadbd --verbose
--help`, a scratch database of the sqlite3 shell or db_bench in a temporary directory), `apt-get indextargets`
over the cached Debian lists, `git rev-parse` in a cached clone or a local repository, and the compiler's
`--version` (the build cache's key holds it).
"""

from __future__ import annotations

import functools
import math
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from dbsweep import configdiff, configs, installs, machine, memcap, paths, placement, plan, unsafe
from dbsweep.build import bolt, cache, compiler
from dbsweep.build import variants as recipes
from dbsweep.engines.base import Costs, Engine, Install
from dbsweep.engines.registry import engine_named
from dbsweep.errors import DbsweepError
from dbsweep.measure import instructions, session
from dbsweep.sources import SourceTree, crate, debian, git, localdir, tarball
from dbsweep.study import Study, source_kind
from dbsweep.suites.base import Connections
from dbsweep.suites.loading import unloaded

# ---- The estimate's figures --------------------------------------------------------------------------------
# Rough figures measured on a small VM (2 vCPUs, 24 GB, one virtio disk) with Debian's Postgres 15 and the
# cx10a_c2r24 config; the valgrind and build figures are rougher still. Good for "minutes or hours, megabytes
# or gigabytes?", not for a schedule: a faster machine or a slower config moves them several-fold. Each
# suite keeps its own rates (its load, its steps, its bytes per row); the engine its storage overhead.
# An engine's own fixed costs (starts, valgrind's start-ups, builds) are its `Engine.costs`; Postgres's:
SERVER_START_S = Costs().start_s
STEP_OVERHEAD_S = 1.0
# The instruction pass, per target and counted step: each of its four runs starts the server under valgrind
# from the pristine copy and stops it (about three such starts' worth of start-up in all, measured), then two
# pairs of a short (instruction_seconds) and a long (3x) run. Rough: valgrind's slowdown depends on the step.
VALGRIND_STARTS = 3
VALGRIND_START_S = Costs().valgrind_starts_s / VALGRIND_STARTS
INSTRUCTION_PAIRS = 2
# A threaded server's warm-up in a session: a long run (3x a short one, which is a quarter of the probe).
LONG_RUN_SHARE = 3 / 4
# A build from source with every core of the VM, LTO's link a minute more; a PGO build's profile (an instrumented
# build and its training, shared by pgo and pgo_lto) is counted once, apart.
BUILD_S = Costs().build_s
LTO_BUILD_S = Costs().lto_build_s
# A PGO build's instrumented build and training (once per profile: pgo and pgo_lto share one), in plain builds.
PROFILE_FACTOR = 1.0
BOLT_S = 150.0  # BOLT's part of a build: instrument, train, rewrite (Postgres 15: about 110 s beside other work)
# Warnings.
LONG_RUN_S = 24 * 3600.0
FULL_SHARE = 0.8  # of the free space
# Connections dbsweep itself holds beside a step's: the statistics snapshot after each step.
DBSWEEP_HELD = 1

Found = tuple[str, str]  # (field, message)


@dataclass
class Estimate:
    """What a run of the study would cost, from its settings alone."""

    seconds: float  # the whole run's wall time
    parts: dict[str, float]  # builds, server starts, loads, steps, maintenance, instructions: they add up to seconds
    builds_needed: int  # (source, variant) pairs not yet in the build cache
    data_bytes: int  # the largest data directory the run makes (one at a time unless --keep-data)
    cells: int
    counts_only: bool = False  # run --counts-only: the instruction counts alone, no timed cell


@dataclass
class Preflight:
    problems: list[str]  # "FILE: FIELD: message", each a reason `dbsweep run` would refuse or fail
    warnings: list[str]  # same form: the run would work, but look first
    estimate: Estimate


def check(study: Study, *, counts_only: bool = False, here: bool = True) -> Preflight:
    """Everything `dbsweep run` would reject in `study`, found without doing any of the work, and its cost.

    `here=False` is for a study that runs on other machines (Slurm's nodes): what holds wherever it runs (sizes,
    sources, configs, the connections a config allows) is checked; what only this machine decides (its CPUs, how
    many threads it can start, what valgrind can run on its CPU) is left to the node's job."""
    where = paths.shown(study.path)
    look = _Look(study)
    problems = [
        *study.bench.size_problems(),
        *_duplicate_steps(study),
        *unloaded(study.bench),
        *(_placement_problems(study) if here else []),
        *look.problems,
        *_config_problems(study, look),
        *_connection_problems(study, look),
        *study.bench.engine_problems(look.engine),
        *(machine.client_problems(look.engine, study.bench) if here else []),
        *_setup_problems(study),
    ]
    est = estimate(study, look, counts_only=counts_only)
    warnings = [*look.warnings, *_warnings(study, est), *(_unrunnable_by_valgrind(study, look) if here else [])]
    warnings += unsafe.warnings(study)
    return Preflight(
        problems=[f"{where}: {f}: {m}" for f, m in problems],
        warnings=[f"{where}: {f}: {m}" for f, m in warnings],
        estimate=est,
    )


def describe(estimate: Estimate) -> str:
    """One line: 'estimated wall time 1 h 25 min (2 builds ≈ 10 min, 48 cells); largest data directory ≈ 2.4 GB'."""
    e = estimate
    builds = ""
    if e.builds_needed:
        plural = "s" if e.builds_needed != 1 else ""
        builds = f"{e.builds_needed} build{plural} ≈ {duration(e.parts.get('builds', 0.0))}, "
    cells = "instruction counts only" if e.counts_only else f"{e.cells} cell{'s' if e.cells != 1 else ''}"
    return f"estimated wall time {duration(e.seconds)} ({builds}{cells}); largest data directory ≈ {size(e.data_bytes)}"


def duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"


def size(n: float) -> str:
    if n < 1e9:
        return f"{n / 1e6:.0f} MB"
    if n < 1e12:
        return f"{n / 1e9:.1f} GB"
    return f"{n / 1e12:.1f} TB"


# ---- 3. steps listed twice ---------------------------------------------------------------------------------------


def _duplicate_steps(study: Study) -> list[Found]:
    steps = study.suite.steps
    if not isinstance(steps, list):
        return []
    out: list[Found] = []
    first: dict[str, int] = {}
    for j, name in enumerate(steps):
        full = study.bench.canonical(name) or name
        i = first.setdefault(full, j)
        if i != j:
            same = f"{steps[i]!r}" + (f" (both are {full})" if steps[i] != name else "")
            out.append(
                (
                    f"suite.steps[{j}]",
                    f"{name!r} is the same step as suite.steps[{i}], {same}; a step runs once per client count, "
                    "so list each step once",
                )
            )
    return out


def _setup_problems(study: Study) -> list[Found]:
    """The io-bound setup's memory cap must be possible here (through Slurm, the node's job finds out)."""
    hosts = study.hosts
    if "io-bound" not in hosts.setups or hosts.io_bound != "cap" or hosts.scheduler != "local":
        return []
    why = memcap.check()
    if why is None:
        return []
    return [("hosts.setups", f"the io-bound setup caps the server's memory with a cgroup, not possible here: {why}")]


def _placement_problems(study: Study) -> list[Found]:
    try:
        placement.assign(study.measure.placement)
    except ValueError as e:
        return [("measure.placement", f"{e}; use 'none' or 'same' on this machine")]
    return []


# ---- 4. sources, and what the caches already hold ------------------------------------------------------------


@dataclass
class _Known:
    """What the caches say about one target, without fetching or building."""

    variant: recipes.Variant | None = None
    install: Install | None = None  # the binary, when it is there without building
    settings: set[str] | None = None  # the settings that binary knows
    settings_error: str | None = None


class _Look:
    """Each target's source, build and binary as the workspace's caches and the system know them."""

    def __init__(self, study: Study) -> None:
        self.study = study
        self.engine = engine_named(study.engine)
        self.recipe = installs.recipe_of(study.engine)
        self.naming = installs.naming_of(study.engine)
        self.problems: list[Found] = []
        self.warnings: list[Found] = []
        self._pool_notes: dict[str, str] = {}  # source -> why the run will look for it in Debian's pool
        self.known: list[_Known] = []
        # (source, variant, build copy) -> the build to make
        self.needed: dict[tuple[str, str, int], recipes.Variant] = {}
        ws = study.workspace_dir
        self.sources_root = ws / "sources"
        self.builds_root = ws / "builds"
        self._builds = cache.list_builds(self.builds_root, self.recipe)
        self._identities = {_identity(b) for b in self._builds}
        self._trees: dict[str, tuple[str | None, SourceTree | None]] = {}
        self._listing: list[debian.DebianSource] | bool | None = False  # False: not read yet
        self._settings: dict[Path, set[str] | str] = {}
        try:
            custom = installs.custom_variants(self.study)
        except DbsweepError:
            custom = {}  # load_study reported it
        for i, t in enumerate(self.study.targets):
            k = _Known()
            self.known.append(k)
            kind = source_kind(t.source)
            if kind is None:
                continue  # load_study reported it
            if kind == "system":
                k.install = self._system(i, t.source)
            else:
                try:
                    k.variant = recipes.resolve_for(t.variant, t.compiler, custom)
                except DbsweepError:
                    continue  # load_study reported it
                k.install = self._built(i, t.source, kind, k.variant, t.build_copy)
            if k.install is not None:
                got = self._known_settings(k.install)
                if isinstance(got, str):
                    k.settings_error = got
                else:
                    k.settings = got

    def _system(self, i: int, spec: str) -> Install | None:
        engine = self.engine
        versions = engine.system_versions()
        want = spec.partition(":")[2]
        if not versions:
            self.problems.append(
                (
                    f"targets[{i}].source",
                    f"{spec!r} names {engine.title} from Debian's packages, but none is installed; install it "
                    "(scripts/setup.sh does) or build from source",
                )
            )
            return None
        if want and want not in versions:
            self.problems.append(
                (
                    f"targets[{i}].source",
                    f"{engine.title} {want} from Debian's packages is not installed; installed: "
                    f"{', '.join(versions)} (use 'system:{versions[-1]}'), or build it from a source: a version "
                    "such as '15.18', git:, tarball: or dir:",
                )
            )
            return None
        try:
            return engine.system_install(spec)
        except (DbsweepError, OSError):
            return None

    @functools.cached_property
    def uncountable(self) -> dict[str, str]:
        """target label -> the flag that keeps valgrind from running its build on this CPU: it gets no counts."""
        if not self.study.measure.instructions:
            return {}
        return installs.uncountable(self.study, instructions.host_cpu_flags())

    def _built(self, i: int, spec: str, kind: str, variant: recipes.Variant, copy: int = 0) -> Install | None:
        """The cached build's install, or None (noting the build as needed)."""
        why = compiler.missing(variant.compiler, variant) or (bolt.missing() if variant.bolt else None)
        if why is not None:
            self.problems.append((f"targets[{i}].variant", f"variant {variant.name!r}: {why}"))
        problem, tree = self._source(spec, kind)
        if problem is not None:
            self.problems.append((f"targets[{i}].source", problem))
        if spec in self._pool_notes:
            self.warnings.append((f"targets[{i}].source", self._pool_notes.pop(spec)))
        found = self._cached(tree, variant, copy)
        if found is None:
            self.needed.setdefault((spec, variant.name, copy), variant)
            # BOLT rewrites a copy of its base build, which is made first when it is not cached.
            base = recipes.bolt_base(variant) if variant.bolt else None
            if base is not None and self._cached(tree, base, copy) is None:
                self.needed.setdefault((spec, base.name, copy), base)
            return None
        return found.install

    def profile_to_train(self, spec: str, variant: recipes.Variant, copy: int) -> str | None:
        """The PGO profile `variant` is built with, when it is still to train (its key where the tree is known, so
        that variants of one recipe count it once); None when the build cache keeps it (`cache.Profile`)."""
        _, tree = self._trees.get(spec, (None, None))
        if self._keyable(tree, variant):
            assert tree is not None
            try:
                kept = cache.Profile.of(self.recipe, tree, variant, self.builds_root, copy)
                return None if kept.facts() is not None else kept.key
            except DbsweepError:
                pass
        return f"{spec} {recipes.profile_source(variant).recipe()} {copy}"

    def _keyable(self, tree: SourceTree | None, variant: recipes.Variant) -> bool:
        """Whether a build of `tree` at `variant` can be keyed: the tree and the compiler are there."""
        return tree is not None and tree.identity in self._identities and shutil.which(variant.compiler) is not None

    def _cached(self, tree: SourceTree | None, variant: recipes.Variant, copy: int) -> cache.Build | None:
        """The build of `tree` at `variant` in the cache, when the tree and the compiler are there to key it."""
        if tree is None or not self._keyable(tree, variant):
            return None
        try:
            return cache.find(self.recipe, tree, variant, self.builds_root, copy)
        except DbsweepError:
            return None

    def _source(self, spec: str, kind: str) -> tuple[str | None, SourceTree | None]:
        if spec not in self._trees:
            try:
                self._trees[spec] = self._resolve_cached(spec, kind)
            except DbsweepError as e:
                self._trees[spec] = (str(e), None)
            except OSError as e:
                self._trees[spec] = (f"cannot read source {spec!r}: {e}", None)
        return self._trees[spec]

    def _resolve_cached(self, spec: str, kind: str) -> tuple[str | None, SourceTree | None]:
        """Why the source cannot exist (or None), and its tree when the source cache already holds it. Mirrors
        sources/resolve.py and each kind's cache layout, without fetching."""
        root = self.sources_root
        _, _, rest = spec.partition(":")
        rest = rest.strip()
        if kind == "debian":
            version = rest if spec.startswith("debian:") else spec.strip()
            tree = debian.cached_tree(spec, version, root, naming=self.naming)
            if tree is not None:
                return None, tree
            listing = self._debian_listing()
            why = debian.not_listed(listing, version, naming=self.naming) if listing is not None else None
            if why is None:
                return None, None  # listed, or no lists cached: say nothing
            age = debian.listing_age(root)
            updated = f"updated {duration(age)} ago" if math.isfinite(age) else "never refreshed"
            assert listing is not None
            if debian.pool_candidates(listing, version, naming=self.naming):
                self._pool_notes[spec] = (
                    f"{why} (lists {updated}); the run will look for it in the pool of Debian's archive and use it "
                    "only if a Debian uploader's signature vouches for it"
                )
                return None, None
            return (
                f"{why} (in the Debian source lists cached in {paths.shown(root / 'apt')}, {updated}); "
                "use one of those versions",
                None,
            )
        if kind == "dir":
            path = Path(rest).expanduser().resolve()
            if not path.is_dir():
                return f"source directory {rest} does not exist; dir: names a {self.engine.title} source tree", None
            self.engine.tree_version(path)  # raises when it is not the engine's tree
            if any(i.startswith("dir:") for i in self._identities):  # hash only when a dir build could match
                return None, localdir.resolve_dir(spec, rest, naming=self.naming)
            return None, None
        if kind == "tarball":
            if not tarball.is_url(rest) and not Path(rest).expanduser().is_file():
                return f"tarball {rest} does not exist; tarball: names a local file or an http(s) URL", None
            # Hashing a local tarball costs a read of it: only when a tarball build could match.
            if tarball.is_url(rest) or any(i.startswith("sha256:") for i in self._identities):
                return None, tarball.cached_tarball(spec, rest, root)
            return None, None
        if kind == "crate":
            try:
                return None, crate.cached_crate(spec, rest, root)
            except DbsweepError as e:
                return str(e), None
        if kind == "git":
            return self._git(spec, rest)
        return None, None

    def _git(self, spec: str, rest: str) -> tuple[str | None, SourceTree | None]:
        url, ref = git.split_spec(rest)
        tree = git.cached_git(spec, rest, self.sources_root)
        if tree is not None or git.is_remote(url):
            return None, tree
        url = str(Path(url).expanduser().resolve())
        if not Path(url).exists():
            return f"git repository {url} does not exist; git: names a repository (URL or local path) and a ref", None
        try:
            r = subprocess.run(
                ["git", "-C", url, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"],
                capture_output=True,
                text=True,
                check=False,
                stdin=subprocess.DEVNULL,
            )
        except OSError:
            return "git sources need `git`, which is not installed", None
        if "not a git repository" in r.stderr:
            return f"{url} is not a git repository; git: names a repository (URL or local path) and a ref", None
        if r.returncode != 0:
            return f"git ref {ref!r} is not a tag, branch or commit of {url}; name one that is", None
        return None, None

    def _debian_listing(self) -> list[debian.DebianSource] | None:
        if self._listing is False:
            try:
                self._listing = debian.cached_listing(self.sources_root, naming=self.naming)
            except DbsweepError:
                self._listing = None  # unreadable lists: a run would refresh them, so say nothing
        return self._listing if isinstance(self._listing, list) else None

    def _known_settings(self, install: Install) -> set[str] | str:
        if install.bindir not in self._settings:
            try:
                self._settings[install.bindir] = self.engine.known_settings(install)
            except DbsweepError as e:
                self._settings[install.bindir] = str(e)
            except OSError as e:
                self._settings[install.bindir] = f"cannot run the {self.engine.title} in {install.bindir}: {e}"
        return self._settings[install.bindir]


def _identity(b: cache.Build) -> str:
    source = b.metadata.get("source")
    return str(source.get("identity", "")) if isinstance(source, dict) else ""


# ---- 5. settings the binary does not know ---------------------------------------------------------------------


def _config_problems(study: Study, look: _Look) -> list[Found]:
    """The config diff fitted to each binary that is already there, exactly as the runner fits it, and its values
    read by that binary (`Engine.check_values`: once per install and config)."""
    out: list[Found] = []
    optional = {s.lower() for s in study.optional_settings}
    checked: dict[tuple[Install, str, str], list[str]] = {}
    for i, (t, k) in enumerate(zip(study.targets, look.known, strict=True)):
        if k.install is None:
            continue
        if k.settings_error is not None:
            out.append((f"targets[{i}].source", k.settings_error))
            continue
        assert k.settings is not None
        try:
            diff = configs.load(study.engine, t.config)
            text, _ = look.engine.fit_config(diff, k.install, optional, study.allow_unsafe_settings)
            key = (k.install, t.config, text)
            if key not in checked:
                checked[key] = look.engine.check_values(diff, k.install, text)
        except DbsweepError as e:
            out.append((f"targets[{i}].config", str(e)))
            continue
        out += [(f"targets[{i}].config", m) for m in checked[key]]
    return out


# ---- 2. connections ----------------------------------------------------------------------------------------------


def connection_need(study: Study) -> Connections:
    """The most connections a run opens at once on one server: the suite's steps (with the one dbsweep holds
    beside them for its statistics) and the postwrite maintenance (one connection per table)."""
    held = f"{DBSWEEP_HELD} that dbsweep holds for its statistics"
    suite = study.bench
    cands = [Connections(c.need + DBSWEEP_HELD, c.what, f"{c.how} + {held}") for c in suite.connections()]
    if suite.maintenance_points():
        n = len(suite.tables())
        cands.append(
            Connections(n, "the postwrite maintenance", f"one maintenance connection per table, {n} in parallel")
        )
    # A suite driving the engine's own tool opens no connections.
    return max(cands, key=lambda c: c.need, default=Connections(0, "nothing", "no connections"))


def _connection_problems(study: Study, look: _Look) -> list[Found]:
    need = connection_need(study)
    out: list[Found] = []
    for i, t in enumerate(study.targets):
        try:
            limit = look.engine.connection_limit(configs.load(study.engine, t.config))
        except DbsweepError as e:
            if "not a config name" not in str(e) and "no config" not in str(e):  # load_study reported those
                out.append((f"targets[{i}].config", str(e)))
            continue
        if limit is not None and need.need > limit[0]:
            out.append(
                (
                    f"targets[{i}].config",
                    f"target {t.label!r}: config {t.config} allows {limit[0]} connections (max_connections, "
                    f"{limit[1]}), but {need.what} needs {need.need} ({need.how}); set max_connections to at least "
                    f"{need.need} in the config, or use fewer clients or tables",
                )
            )
    return out


# ---- the estimate ------------------------------------------------------------------------------------------------


def estimate(study: Study, look: _Look | None = None, *, counts_only: bool = False) -> Estimate:
    """The run's wall time and largest data directory, from the study's settings and the build cache; with
    `counts_only`, of the instruction counts alone (run --counts-only)."""
    look = look if look is not None else _Look(study)
    groups = 0 if counts_only else study.repeats * len(study.targets)
    d = study.bench.duration()
    # A build valgrind cannot run gets no count: no pass, and under --counts-only no build either.
    counted = [i for i, t in enumerate(study.targets) if t.label not in look.uncountable]
    needed = look.needed
    if counts_only:
        wanted = {
            (study.targets[i].source, name, study.targets[i].build_copy)
            for i in counted
            if (v := look.known[i].variant) is not None
            for name in (v.name, *([recipes.bolt_base(v).name] if v.bolt else []))  # BOLT's base is built first
        }
        needed = {k: v for k, v in needed.items() if k in wanted}
    # One instrumented build and training per profile not kept, however many PGO builds it makes.
    profiles = {look.profile_to_train(spec, v, copy) for (spec, _, copy), v in needed.items() if v.pgo and not v.bolt}
    profiles.discard(None)
    parts = {
        "builds": sum(_build_seconds(v, look.engine.costs) for v in needed.values())
        + len(profiles) * PROFILE_FACTOR * look.engine.costs.build_s,
        "server starts": groups * look.engine.costs.start_s,
        "loads": groups * d.setup,
        "steps": groups * d.steps,
        "maintenance": groups * d.maintenances * d.maintenance_each,
        "instructions": len(counted) * _instruction_seconds(study, d.setup, look.engine.costs),
    }
    data = max((_data_bytes(study, look.engine, t.config) for t in study.targets), default=0)
    return Estimate(
        seconds=sum(parts.values()),
        parts=parts,
        builds_needed=len(needed),
        data_bytes=data,
        cells=0 if counts_only else len(plan.cells(study)),
        counts_only=counts_only,
    )


def _build_seconds(v: recipes.Variant, costs: Costs) -> float:
    if v.bolt:  # its base build is counted as a build of its own
        return BOLT_S
    lto = any("-flto" in f for f in (*v.cflags, *v.ldflags))
    return costs.lto_build_s if lto else costs.build_s


def _instruction_seconds(study: Study, load_s: float, costs: Costs) -> float:
    """One target's valgrind pass (measure.instructions): a load, then each step's work under valgrind."""
    m = study.measure
    shared = set(study.counted_steps().values()) if m.instructions else set()
    if not shared:
        return 0.0
    # The engine's start-ups were measured with the default number of pairs; each pair runs 1 + 3 times the probe.
    starts = costs.valgrind_starts_s * m.instruction_pairs / INSTRUCTION_PAIRS
    # A probe and a short and a long run per pair, each with the suite's warm-up.
    warmup = (1 + 2 * m.instruction_pairs) * study.bench.instruction_warmup_seconds()
    per_step = starts + 1 + m.instruction_pairs * 4 * m.instruction_seconds + warmup + STEP_OVERHEAD_S
    # Reads counted in a session: no start, and short runs a quarter of the probe's (session.SHARE_OF_PROBE).
    engine = engine_named(study.engine)
    reads = {
        key
        for step, key in study.counted_steps().items()
        if session.can_share(engine, engine.instance_type, study.bench.instruction_plan(step, m.instruction_seconds))
    }
    per_read = 1 + m.instruction_pairs * m.instruction_seconds + warmup + STEP_OVERHEAD_S
    if engine.instance_type.threaded:  # its warm-up is a long run, three quarters of the probe
        per_read += LONG_RUN_SHARE * m.instruction_seconds
    # The session's one start under valgrind, and its stop (minutes for MySQL).
    session_start = costs.valgrind_starts_s / VALGRIND_STARTS if reads else 0.0
    # Counts taken at once share the steps; each of them loads its own pristine copy.
    jobs = len(placement.one_cpu_each(m.instruction_jobs or len(os.sched_getaffinity(0))))
    return costs.start_s + load_s + session_start + (len(shared - reads) * per_step + len(reads) * per_read) / jobs


def _data_bytes(study: Study, engine: Engine, config: str) -> int:
    """A data directory at its largest: the suite's tables and indexes, and what the engine adds to them."""
    tables = study.bench.data_bytes()
    try:
        diff: configdiff.ConfigDiff | None = configs.load(study.engine, config)
    except DbsweepError:
        diff = None
    return engine.storage_bytes(diff, tables)


# ---- warnings -----------------------------------------------------------------------------------------------------


def _warnings(study: Study, est: Estimate) -> list[Found]:
    out: list[Found] = []
    if est.seconds > LONG_RUN_S:
        out.append(
            (
                "(top level)",
                f"would run for about {est.seconds / 3600:,.0f} h; fewer repeats, targets, steps or client "
                "counts, or shorter steps, make it shorter",
            )
        )
    where = _existing_parent(study.workspace_dir)
    try:
        free = shutil.disk_usage(where).free
    except OSError:
        free = None
    if free is not None and est.data_bytes > FULL_SHARE * free:
        how = "more than the" if est.data_bytes > free else f"more than {FULL_SHARE:.0%} of the"
        out.append(
            (
                "workspace",
                f"the largest data directory (≈ {size(est.data_bytes)}) is {how} free space of the filesystem "
                f"holding {paths.shown(where)} ({size(free)} free); use fewer rows or tables, or a workspace on a "
                "larger filesystem",
            )
        )
    if study.measure.instructions and study.bench.instruction_steps() and shutil.which("valgrind") is None:
        out.append(("measure.instructions", "valgrind is not installed, so no instruction counts would be taken"))
    jobs = study.measure.instruction_jobs
    if study.measure.instructions and jobs is not None and jobs > len(placement.one_cpu_each(jobs)):
        cpus = len(placement.one_cpu_each(jobs))
        out.append(
            (
                "measure.instruction_jobs",
                f"{jobs} counts at once, but dbsweep may use only {cpus} CPU{'s' if cpus != 1 else ''}: "
                f"it takes {cpus} at a time",
            )
        )
    for name in ("instructions", "profile"):
        if getattr(study.measure, name) and not study.bench.instruction_steps():
            out.append(
                (f"measure.{name}", f"the {study.suite.name} suite has no steps to count or profile yet; it is ignored")
            )
    engine = engine_named(study.engine)
    if study.measure.profile and study.bench.instruction_steps() and engine.kind != "server":
        out.append(
            (
                "measure.profile",
                f"the profile pass samples a server, and {engine.title} runs inside its client; it is ignored",
            )
        )
    return out


def _unrunnable_by_valgrind(study: Study, look: _Look) -> list[Found]:
    """Targets whose build valgrind cannot run on this CPU (AVX-512 code): said before the run, not after it."""
    if not (study.measure.instructions and study.bench.instruction_steps()):
        return []
    found = look.uncountable
    return [
        (
            f"targets[{i}].variant",
            f"valgrind cannot run a build with {found[t.label]} on this CPU (it emits AVX-512 instructions), so "
            f"{t.label} gets no instruction counts: the report shows them as not counted",
        )
        for i, t in enumerate(study.targets)
        if t.label in found
    ]


def _existing_parent(path: Path) -> Path:
    for p in (path, *path.parents):
        if p.exists():
            return p
    return Path("/")
