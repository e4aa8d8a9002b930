"""What a run of a study would reject, and what it would cost, known before any work.

`check` finds what `dbsweep run` would refuse or fail on: sizes the load client cannot take, more
connections than a target's config lets in, a step listed twice, sources that cannot exist, and config
settings the target's binary does not know (where that binary is there without building). It also
estimates the run's wall time and its largest data directory from the study's settings alone.

Nothing here builds, fetches, downloads, starts a server or writes a file. It reads the workspace's
caches (sources/, builds/) and runs only read-only commands: `postgres --version` and `--describe-config`,
`apt-get indextargets` over the cached Debian lists, `git rev-parse` in a cached clone or a local
repository, and the compiler's `--version` (the build cache's key holds it).
"""

from __future__ import annotations

import math
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from dbsweep import build, configs, ibench, installs, paths, placement
from dbsweep import variants as recipes
from dbsweep.engines import postgres
from dbsweep.errors import DbsweepError
from dbsweep.runner import clients_of, maintenance_points, plan, step_seconds
from dbsweep.sources import SourceTree, debian, git, localdir, tarball, tree_version
from dbsweep.study import Study, source_kind
from dbsweep.suites import STEPS, canonical

# ---- The estimate's figures --------------------------------------------------------------------------------
# Rough figures measured on a small VM (2 vCPUs, 24 GB, one virtio disk) with Debian's Postgres 15 and the
# cx10a_c2r24 config; the valgrind and build figures are rougher still. Good for "minutes or hours, megabytes
# or gigabytes?", not for a schedule: a faster machine or a slower config moves them several-fold.
SERVER_START_S = 4.0  # initdb (2.6 s) and a start (1.4 s) of one data directory
STEP_OVERHEAD_S = 1.0  # per step and client count: connecting, preparing, the statistics after it
LOAD_ROWS_PER_S = 50_000  # the sysbench load's multi-row INSERTs (48k rows/s measured)
INDEX_ROWS_PER_S = 1_000_000  # the load's CREATE INDEX on k (1M rows in 0.8 s)
VACUUM_ROWS_PER_S = 2_000_000  # the postwrite VACUUM of every table, when it outlasts its budget
CHECKPOINT_S = 2.0
# Insert Benchmark rows per second, all clients together (53k, 16.7k and 4.5k measured at one client).
IBENCH_ROWS_PER_S = {"l.i0": 50_000, "l.i1": 15_000, "l.i2": 4_000}
IBENCH_INDEX_ROWS_PER_S = 120_000  # l.x: the three secondary indexes (1M rows in 8 s)
# The instruction pass, per target and read step: about three server starts' worth of valgrind start-up
# (the server, then each run's backend), then instructions_per_op's runs: a 1 s warm-up and two pairs of a
# short (instruction_seconds) and a long (3x) run. Rough: valgrind's slowdown depends on the step.
VALGRIND_START_S = 15.0
VALGRIND_STARTS = 3
INSTRUCTION_PAIRS = 2
# A build of Postgres from source with every core of the VM, LTO's link a minute more; a PGO build
# compiles twice (instrumented, then with the profile) and trains in between.
BUILD_S = 300.0
LTO_BUILD_S = 360.0
PGO_FACTOR = 2.0
# Data directories: an empty cluster (with its first WAL segment), then bytes per row with the indexes.
EMPTY_CLUSTER_BYTES = 48_000_000
SYSBENCH_ROW_BYTES = 270  # heap, primary key and the index on k (264 B measured)
IBENCH_ROW_BYTES = 200  # per row of load_rows + write_rows per client, three secondary indexes
# WAL the load leaves in pg_wal per byte of table (1.3 measured), until max_wal_size lets checkpoints recycle it.
WAL_PER_DATA_BYTE = 1.3
DEFAULT_MAX_WAL_BYTES = 1 << 30  # Postgres's default max_wal_size, 1GB
# Warnings.
LONG_RUN_S = 24 * 3600.0
FULL_SHARE = 0.8  # of the free space

# ---- What the load client and the server take ----------------------------------------------------------------
I32_MAX = 2**31 - 1
U32_MAX = 2**32 - 1
I64_MAX = 2**63 - 1
U64_MAX = 2**64 - 1
# The load client ends a step at `start + Duration::from_secs(warmup + seconds)` on its monotonic clock, whose
# seconds since boot are a signed 64-bit integer: the sum must fit beside the uptime (a century is left for it).
CLOCK_SECONDS_MAX = I64_MAX - 100 * 365 * 24 * 3600
# The Insert Benchmark paces its inserts in nanoseconds held in a u64: seconds x 1e9 must fit.
PACING_SECONDS_MAX = U64_MAX // 1_000_000_000
# The most rows one client's `insert` step could add per second (7k measured): only for the check that the
# sbtest tables' SERIAL ids stay within 32 bits, so it errs high.
INSERT_CEILING_PER_CLIENT = 50_000
# The sequence cache of the Insert Benchmark's tables (ALTER SEQUENCE ... CACHE 1000): each connection that
# inserts may skip up to this many ids when it ends.
IBENCH_SEQUENCE_CACHE = 1000
# The sysbench workloads whose --range changes what they draw (Workload::uses_range in
# load/src/workloads/sysbench.rs, as `dbsweep-load list --json` reports it): the client rejects a range above
# --rows for them, and for hot-points one that reaches past the last row from rows/2.
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
# Postgres's default max_connections.
DEFAULT_MAX_CONNECTIONS = 100
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


@dataclass
class Preflight:
    problems: list[str]  # "FILE: FIELD: message", each a reason `dbsweep run` would refuse or fail
    warnings: list[str]  # same form: the run would work, but look first
    estimate: Estimate


def check(study: Study) -> Preflight:
    """Everything `dbsweep run` would reject in `study`, found without doing any of the work, and its cost."""
    where = paths.shown(study.path)
    look = _Look(study)
    problems = [
        *_size_problems(study),
        *_duplicate_steps(study),
        *_placement_problems(study),
        *look.problems,
        *_config_problems(study, look),
        *_connection_problems(study, look),
    ]
    est = estimate(study, look)
    warnings = _warnings(study, est)
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
    cells = f"{e.cells} cell{'s' if e.cells != 1 else ''}"
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


# ---- 1. sizes the load client cannot take ----------------------------------------------------------------------


def _too_big(fieldname: str, value: int, limit: int, option: str, kind: str) -> Found:
    return (
        fieldname,
        f"{value} is more than the load client takes: its {option} is {kind}; the largest allowed value is {limit}",
    )


def _size_problems(study: Study) -> list[Found]:
    s = study.suite
    out: list[Found] = []
    if not 0 <= s.seed <= U64_MAX:
        out.append(
            (
                "suite.seed",
                f"{s.seed} is not a seed the load client takes: its --seed is an unsigned 64-bit integer (u64); "
                f"allowed: 0 to {U64_MAX}",
            )
        )
    for j, c in enumerate(s.clients):
        if c > U32_MAX:
            out.append(_too_big(f"suite.clients[{j}]", c, U32_MAX, "--clients", "an unsigned 32-bit integer (u32)"))
    out.extend(_ibench_sizes(study) if s.name == "ibench" else _sysbench_sizes(study))
    return out


def _sysbench_sizes(study: Study) -> list[Found]:
    s = study.suite
    steps = study.steps()
    out: list[Found] = []
    if s.tables > U32_MAX:
        out.append(_too_big("suite.tables", s.tables, U32_MAX, "--tables", "an unsigned 32-bit integer (u32)"))
    if s.rows > I32_MAX:
        out.append(_too_big("suite.rows", s.rows, I32_MAX, "--rows", "a signed 32-bit integer (i32)"))
    kinds = {STEPS[st].duration for st in steps}
    for fieldname, seconds, used in (
        ("suite.read_seconds", s.read_seconds, "read" in kinds),
        ("suite.write_seconds", s.write_seconds, bool(kinds & {"write", "insert"})),
    ):
        if used and s.warmup_seconds + seconds > CLOCK_SECONDS_MAX:
            out.append(
                (
                    fieldname,
                    f"{seconds} plus warmup_seconds ({s.warmup_seconds}) is more than the load client's clock can "
                    f"count to (signed 64-bit seconds since boot); the largest allowed value is "
                    f"{max(1, CLOCK_SECONDS_MAX - s.warmup_seconds)}",
                )
            )
    if not math.isfinite(s.zipf_exp):
        out.append(("suite.zipf_exp", f"{s.zipf_exp} is not a number the load client takes: it must be finite"))
    if s.rows > I32_MAX:
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
        could = sum(c * per_client for st in inserting for c in clients_of(study, st))
        if s.rows + could > I32_MAX:
            safe = I32_MAX - could
            hint = f"the largest rows that is safe here is {safe}" if safe >= 1 else "shorten write_seconds"
            out.append(
                (
                    "suite.rows",
                    f"the ids of the insert step could pass {I32_MAX} (sbtest's id is a SERIAL, a signed 32-bit "
                    f"integer): {s.rows} rows loaded + up to {could} inserted (at most {INSERT_CEILING_PER_CLIENT} "
                    f"rows/s per client for warmup_seconds + write_seconds at clients {s.clients}); {hint}",
                )
            )
    return out


def _ibench_sizes(study: Study) -> list[Found]:
    s = study.suite
    z = ibench.sizes(s)
    out: list[Found] = []
    for fieldname, value in (("suite.load_rows", z.load_rows), ("suite.write_rows", z.write_rows)):
        if value > U64_MAX:
            out.append(_too_big(fieldname, value, U64_MAX, "--rows", "an unsigned 64-bit integer (u64)"))
    steps = study.steps()
    if any(STEPS[st].rate for st in steps) and z.rw_seconds > PACING_SECONDS_MAX:
        out.append(
            (
                "suite.rw_seconds",
                f"{z.rw_seconds} is more than the load client can pace: it counts a read-write step's schedule in "
                f"nanoseconds held in an unsigned 64-bit integer; the largest allowed value is {PACING_SECONDS_MAX}",
            )
        )
    # Ids come from each table's BIGSERIAL and are never reused: every step's inserts add up, per table.
    sharing = z.clients if s.only1t else 1
    contributions: dict[str, int] = {"suite.load_rows": 0, "suite.write_rows": 0, "suite.rw_seconds": 0}
    for st in steps:
        rows = ibench.step_rows(st, z) + IBENCH_SEQUENCE_CACHE
        if st in ("l.i0", "l.x"):
            contributions["suite.load_rows"] += rows
        elif STEPS[st].rate:
            contributions["suite.rw_seconds"] += rows
        else:
            contributions["suite.write_rows"] += rows
    ids = sharing * sum(contributions.values())
    if ids > I64_MAX:
        biggest = max(contributions, key=lambda k: contributions[k])
        table = "pi1, which every client shares (only1t)" if s.only1t else "each client's table"
        out.append(
            (
                biggest,
                f"the ids of {table} would pass {I64_MAX} (transactionid is a BIGSERIAL, a signed 64-bit integer): "
                f"the steps insert about {ids} rows into it; lower load_rows, write_rows or rw_seconds",
            )
        )
    return out


# ---- 3. steps listed twice ---------------------------------------------------------------------------------------


def _duplicate_steps(study: Study) -> list[Found]:
    steps = study.suite.steps
    if not isinstance(steps, list):
        return []
    out: list[Found] = []
    first: dict[str, int] = {}
    for j, name in enumerate(steps):
        full = canonical(name, study.suite.name) or name
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


def _placement_problems(study: Study) -> list[Found]:
    try:
        placement.plan(study.measure.placement)
    except ValueError as e:
        return [("measure.placement", f"{e}; use 'none' or 'same' on this machine")]
    return []


# ---- 4. sources, and what the caches already hold ------------------------------------------------------------


@dataclass
class _Known:
    """What the caches say about one target, without fetching or building."""

    variant: recipes.Variant | None = None
    install: postgres.Install | None = None  # the binary, when it is there without building
    settings: set[str] | None = None  # the settings that binary knows
    settings_error: str | None = None


class _Look:
    """Each target's source, build and binary as the workspace's caches and the system know them."""

    def __init__(self, study: Study) -> None:
        self.study = study
        self.problems: list[Found] = []
        self.known: list[_Known] = []
        self.needed: dict[tuple[str, str], recipes.Variant] = {}  # (source, variant) -> the build to make
        ws = study.workspace_dir
        self.sources_root = ws / "sources"
        self.builds_root = ws / "builds"
        self._builds = build.list_builds(self.builds_root)
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
                    k.variant = recipes.resolve(t.variant, custom)
                except DbsweepError:
                    continue  # load_study reported it
                k.install = self._built(i, t.source, kind, k.variant)
            if k.install is not None:
                got = self._known_settings(k.install)
                if isinstance(got, str):
                    k.settings_error = got
                else:
                    k.settings = got

    def _system(self, i: int, spec: str) -> postgres.Install | None:
        majors = postgres.system_majors()
        want = spec.partition(":")[2]
        if not majors:
            self.problems.append(
                (
                    f"targets[{i}].source",
                    f"{spec!r} names Postgres from Debian's packages, but none is installed under "
                    f"{postgres.SYSTEM_ROOT}; install postgresql-15 (scripts/setup.sh does) or build from source "
                    "(e.g. source = '15.18')",
                )
            )
            return None
        if want and want not in majors:
            self.problems.append(
                (
                    f"targets[{i}].source",
                    f"Postgres {want} from Debian's packages is not installed; installed: {', '.join(majors)} "
                    f"(use 'system:{majors[-1]}'), or build it from a source: a version such as '15.18', git:, "
                    "tarball: or dir:",
                )
            )
            return None
        bindir = postgres.SYSTEM_ROOT / (want or majors[-1]) / "bin"
        return _install(bindir, spec)

    def _built(self, i: int, spec: str, kind: str, variant: recipes.Variant) -> postgres.Install | None:
        """The cached build's install, or None (noting the build as needed)."""
        if shutil.which(variant.compiler) is None:
            self.problems.append(
                (
                    f"targets[{i}].variant",
                    f"variant {variant.name!r} compiles with {variant.compiler}, which is not installed; "
                    "install it or choose a variant that uses an installed compiler",
                )
            )
        problem, tree = self._source(spec, kind)
        if problem is not None:
            self.problems.append((f"targets[{i}].source", problem))
        found = None
        if tree is not None and tree.identity in self._identities and shutil.which(variant.compiler):
            try:
                found = build.find(tree, variant, self.builds_root)
            except DbsweepError:
                found = None
        if found is None:
            self.needed.setdefault((spec, variant.name), variant)
            return None
        return found.install

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
            tree = debian.cached_tree(spec, version, root)
            if tree is not None:
                return None, tree
            listing = self._debian_listing()
            why = debian.not_listed(listing, version) if listing is not None else None
            if why is None:
                return None, None  # listed, or no lists cached: say nothing
            age = debian.listing_age(root)
            updated = f"updated {duration(age)} ago" if math.isfinite(age) else "never refreshed"
            return (
                f"{why} (in the Debian source lists cached in {paths.shown(root / 'apt')}, {updated}); "
                "use one of those versions",
                None,
            )
        if kind == "dir":
            path = Path(rest).expanduser().resolve()
            if not path.is_dir():
                return f"source directory {rest} does not exist; dir: names a Postgres source tree", None
            tree_version(path)  # raises when it is no Postgres tree
            if any(i.startswith("dir:") for i in self._identities):  # hash only when a dir build could match
                return None, localdir.resolve_dir(spec, rest)
            return None, None
        if kind == "tarball":
            if not tarball.is_url(rest) and not Path(rest).expanduser().is_file():
                return f"tarball {rest} does not exist; tarball: names a local file or an http(s) URL", None
            # Hashing a local tarball costs a read of it: only when a tarball build could match.
            if tarball.is_url(rest) or any(i.startswith("sha256:") for i in self._identities):
                return None, tarball.cached_tarball(spec, rest, root)
            return None, None
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
                self._listing = debian.cached_listing(self.sources_root)
            except DbsweepError:
                self._listing = None  # unreadable lists: a run would refresh them, so say nothing
        return self._listing if isinstance(self._listing, list) else None

    def _known_settings(self, install: postgres.Install) -> set[str] | str:
        if install.bindir not in self._settings:
            try:
                self._settings[install.bindir] = install.settings()
            except DbsweepError as e:
                self._settings[install.bindir] = str(e)
            except OSError as e:
                self._settings[install.bindir] = f"cannot run {install.bin('postgres')}: {e}"
        return self._settings[install.bindir]


def _identity(b: build.Build) -> str:
    source = b.metadata.get("source")
    return str(source.get("identity", "")) if isinstance(source, dict) else ""


def _install(bindir: Path, spec: str) -> postgres.Install | None:
    try:
        r = subprocess.run([bindir / "postgres", "--version"], capture_output=True, text=True, check=False)
    except OSError:
        return None
    return postgres.Install(bindir, r.stdout.strip(), spec) if r.returncode == 0 else None


# ---- 5. settings the binary does not know ---------------------------------------------------------------------


def _config_problems(study: Study, look: _Look) -> list[Found]:
    """The config diff fitted to each binary that is already there, exactly as the runner fits it."""
    out: list[Found] = []
    optional = {s.lower() for s in study.optional_settings}
    for i, (t, k) in enumerate(zip(study.targets, look.known, strict=True)):
        if k.install is None:
            continue
        if k.settings_error is not None:
            out.append((f"targets[{i}].source", k.settings_error))
            continue
        assert k.settings is not None
        try:
            diff = configs.load(study.engine, t.config)
            configs.fit_to_version(diff, k.settings, k.install.short_version, optional)
        except DbsweepError as e:
            out.append((f"targets[{i}].config", str(e)))
    return out


# ---- 2. connections ----------------------------------------------------------------------------------------------


def connection_need(study: Study) -> tuple[int, str, str]:
    """The most connections a run opens at once on one server: (how many, what opens them, how they add up)."""
    s = study.suite
    held = f"{DBSWEEP_HELD} that dbsweep holds for its statistics"
    cands: list[tuple[int, str, str]] = []
    if s.name == "ibench":
        n = ibench.clients(s)
        for st in study.steps():
            if STEPS[st].rate:
                k, who = 4, "an inserter, a delete generator, a deleter and a query connection"
            elif st in ("l.i1", "l.i2"):
                k, who = 3, "an inserter, a delete generator and a deleter"
            else:
                k, who = 1, "an inserter" + (", then one per table for CREATE INDEX" if st == "l.x" else "")
            cands.append(
                (
                    k * n + 1 + DBSWEEP_HELD,
                    f"step {st} at {n} client(s)",
                    f"{k} per client ({who}) + the load client's admin connection + {held}",
                )
            )
        tables = len(ibench.tables(s))
    else:
        cands.append((1 + DBSWEEP_HELD, "the load", f"its one connection + {held}"))
        for st in study.steps():
            warm = " (a warm-up: one client per table)" if STEPS[st].clients_are_tables else ""
            for c in clients_of(study, st):
                cands.append((c + DBSWEEP_HELD, f"step {st} at {c} client(s){warm}", f"one per client + {held}"))
        tables = s.tables
    if maintenance_points(study):
        cands.append((tables, "the postwrite maintenance", f"one VACUUM connection per table, {tables} in parallel"))
    return max(cands, key=lambda c: c[0])


def _pg_int(value: str) -> int | None:
    """An integer setting's value as Postgres reads it (decimal, 0x hex, 0 octal, or a number it rounds)."""
    v = value.strip().strip("'").strip()
    try:
        if re.fullmatch(r"[+-]?0[xX][0-9a-fA-F]+", v):
            return int(v, 16)
        if re.fullmatch(r"[+-]?0[0-7]+", v):
            return int(v, 8)
        if re.fullmatch(r"[+-]?\d+", v):
            return int(v)
        return round(float(v)) if re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", v) else None
    except ValueError:
        return None


def _pg_bytes(value: str, unit: int) -> int | None:
    """A memory setting's value in bytes (`16GB`, `'1024'` in its default unit)."""
    m = re.fullmatch(r"\s*'?\s*(\d+(?:\.\d+)?)\s*(B|kB|MB|GB|TB)?\s*'?\s*", value)
    if not m:
        return None
    units = {"B": 1, "kB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}
    return int(float(m.group(1)) * (units[m.group(2)] if m.group(2) else unit))


def _last_settings(diff: configs.ConfigDiff) -> dict[str, configs.Setting]:
    """Each setting's last line: in postgresql.conf the last one wins."""
    return {s.name.lower(): s for s in diff.settings}


def _connection_problems(study: Study, look: _Look) -> list[Found]:
    """dbsweep and its load client connect as the cluster's bootstrap superuser, so the slots Postgres
    reserves for superusers (superuser_reserved_connections, reserved_connections) are theirs too: the
    limit is max_connections itself."""
    need, what, how = connection_need(study)
    out: list[Found] = []
    for i, t in enumerate(study.targets):
        try:
            diff = configs.load(study.engine, t.config)
        except DbsweepError:
            continue  # load_study reported it
        s = _last_settings(diff).get("max_connections")
        limit = DEFAULT_MAX_CONNECTIONS if s is None else _pg_int(s.value)
        if limit is None:
            assert s is not None
            out.append(
                (
                    f"targets[{i}].config",
                    f"config {t.config} sets {s.name} = {s.value!r} ({s.origin}), which is not an integer",
                )
            )
            continue
        if need > limit:
            where = "Postgres's default" if s is None else s.origin
            out.append(
                (
                    f"targets[{i}].config",
                    f"target {t.label!r}: config {t.config} allows {limit} connections (max_connections, {where}), "
                    f"but {what} needs {need} ({how}); set max_connections to at least {need} in the config, "
                    "or use fewer clients or tables",
                )
            )
    return out


# ---- the estimate ------------------------------------------------------------------------------------------------


def estimate(study: Study, look: _Look | None = None) -> Estimate:
    """The run's wall time and largest data directory, from the study's settings and the build cache."""
    look = look if look is not None else _Look(study)
    groups = study.repeats * len(study.targets)
    instructions = _instruction_seconds(study)
    parts = {
        "builds": sum(_build_seconds(v) for v in look.needed.values()),
        "server starts": groups * SERVER_START_S,
        "loads": groups * _load_seconds(study),
        "steps": groups * _steps_seconds(study),
        "maintenance": groups * len(maintenance_points(study)) * _maintenance_seconds(study),
        "instructions": len(study.targets) * instructions,
    }
    data = max((_data_bytes(study, t.config) for t in study.targets), default=EMPTY_CLUSTER_BYTES)
    return Estimate(
        seconds=sum(parts.values()),
        parts=parts,
        builds_needed=len(look.needed),
        data_bytes=data,
        cells=len(plan(study)),
    )


def _build_seconds(v: recipes.Variant) -> float:
    lto = any("-flto" in f for f in (*v.cflags, *v.ldflags))
    base = LTO_BUILD_S if lto else BUILD_S
    return base * (PGO_FACTOR if v.pgo else 1.0)


def _table_rows(study: Study) -> int:
    """Rows in the tables while the steps run."""
    s = study.suite
    if s.name == "ibench":
        z = ibench.sizes(s)
        return z.clients * z.load_rows
    return s.rows * s.tables


def _load_seconds(study: Study) -> float:
    """One group's load: the sysbench tables, or the Insert Benchmark's l.i0, l.x, l.i1 and l.i2."""
    s = study.suite
    if s.name != "ibench":
        rows = s.rows * s.tables
        return rows / LOAD_ROWS_PER_S + rows / INDEX_ROWS_PER_S + STEP_OVERHEAD_S
    z = ibench.sizes(s)
    total = 0.0
    for st in study.steps():
        if STEPS[st].rate:
            continue
        if st == "l.x":
            total += (z.load_rows + ibench.step_rows(st, z)) * z.clients / IBENCH_INDEX_ROWS_PER_S
        else:
            total += ibench.step_rows(st, z) * z.clients / IBENCH_ROWS_PER_S[st]
        total += STEP_OVERHEAD_S
    return total


def _steps_seconds(study: Study) -> float:
    """One group's timed steps, at every client count."""
    s = study.suite
    if s.name == "ibench":
        z = ibench.sizes(s)
        return sum(z.rw_seconds + STEP_OVERHEAD_S for st in study.steps() if STEPS[st].rate)
    return sum(
        (step_seconds(study, st) + s.warmup_seconds + STEP_OVERHEAD_S) * len(clients_of(study, st))
        for st in study.steps()
    )


def _maintenance_seconds(study: Study) -> float:
    """One postwrite maintenance: its budget (as the runner sets it), or the VACUUM and CHECKPOINT when longer."""
    s = study.suite
    if s.name == "ibench":
        budget = ibench.maintenance_budget(s)
    elif s.maintenance_seconds is not None:
        budget = float(s.maintenance_seconds)
    else:
        budget = min(1200.0, 60 + s.rows * s.tables / 1e6)
    return max(budget, _table_rows(study) / VACUUM_ROWS_PER_S + CHECKPOINT_S)


def _instruction_seconds(study: Study) -> float:
    """One target's valgrind pass (measure.instructions): a load, then each distinct read step under valgrind."""
    s, m = study.suite, study.measure
    if not m.instructions or s.name != "sysbench":
        return 0.0
    reads = {
        (STEPS[st].workload, STEPS[st].range)
        for st in study.steps()
        if STEPS[st].duration == "read" and STEPS[st].group != "warm"
    }
    if not reads:
        return 0.0
    per_step = VALGRIND_STARTS * VALGRIND_START_S + 1 + INSTRUCTION_PAIRS * 4 * m.instruction_seconds + STEP_OVERHEAD_S
    rows = s.rows * s.tables
    load = SERVER_START_S + _load_seconds(study) + rows / VACUUM_ROWS_PER_S + CHECKPOINT_S
    return load + len(reads) * per_step


def _data_bytes(study: Study, config: str) -> int:
    """A data directory at its largest: the tables with their indexes, and the WAL the config lets pile up."""
    s = study.suite
    if s.name == "ibench":
        z = ibench.sizes(s)
        rows_bytes = (z.load_rows + z.write_rows) * z.clients * IBENCH_ROW_BYTES
    else:
        rows_bytes = s.rows * s.tables * SYSBENCH_ROW_BYTES
    max_wal = DEFAULT_MAX_WAL_BYTES
    try:
        setting = _last_settings(configs.load(study.engine, config)).get("max_wal_size")
    except DbsweepError:
        setting = None
    if setting is not None:
        max_wal = _pg_bytes(setting.value, 1 << 20) or max_wal  # its unit is MB
    return int(EMPTY_CLUSTER_BYTES + rows_bytes + min(max_wal, rows_bytes * WAL_PER_DATA_BYTE))


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
    if study.measure.instructions and study.suite.name == "sysbench" and shutil.which("valgrind") is None:
        out.append(("measure.instructions", "valgrind is not installed, so no instruction counts would be taken"))
    return out


def _existing_parent(path: Path) -> Path:
    for p in (path, *path.parents):
        if p.exists():
            return p
    return Path("/")
