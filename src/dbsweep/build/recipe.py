"""What an engine supplies to be built: a `Recipe`. The cache (`build.cache`) does the rest for every engine.

The cache keys a build, takes the lock, makes a temporary entry, cleans the environment, runs the steps
the recipe gives it with their output going to the build log, counts compiled objects for the progress
(`build.objects`), drives the PGO phases, keeps the log of a failed build, records build.json and renames
the entry into place. The recipe says, for one `Phase` (a configure, compile and install of a tree into a prefix):

* the steps: `configure(phase)`, `compile(phase)` and `install(phase)`, each a list of `Step`s (an argv,
  maybe extra environment) run in the phase's empty build directory, in that order. The install goes
  under `phase.destdir` when there is one (DESTDIR), so the install prefix can be the final directory;
* `options(variant, version)`: the build options every build of this source version gets, then the
  variant's own (part of the cache key);
* `artefact`: the file under the install directory whose presence marks a finished install;
* for the progress: `object_line`, the line of a compile step's output that is one object (a step that
  compiles without printing one gives its `objects`), and `objects_in(tree)`, the objects its sources
  make (else `objects_estimate`) until a build of the same major version in the cache has counted them;
* `probe(install_dir)`: what the install says about itself (its version line, its compiler and flags as
  its build system recorded them), stored in build.json under the recipe's own keys, and `facts(record)`
  to read it back; `install_of(...)`: the engine's `Install` of a finished build;
* the PGO hooks: `instrumented(phase, profile)` and `optimised(phase, profile)` (by default gcc's
  `-fprofile-generate` / `-fprofile-use` in CFLAGS and LDFLAGS), `train(run)` on the instrumented install,
  run as `training_user()`, and `check_profile(...)` that the training left a profile of the code that
  matters; `training()` describes the training workload (part of the key of a PGO build);
* `explain(failure)`: plain words for a failed step, when the recipe recognises the failure.

Four build systems fit it:

* **configure and make (Postgres)**: `<tree>/configure --prefix=P CC=.. CFLAGS=..` run in the build
  directory (a VPATH build: one unpacked tree serves every variant), `make -jN`, `make install DESTDIR=..`
  plus the contrib modules the benchmarks need; artefact `bin/postgres`; `pg_config` is the probe.
* **CMake (MariaDB)**: `configure` is one `cmake -S <tree> -B . -DCMAKE_BUILD_TYPE=RelWithDebInfo
  -DCMAKE_INSTALL_PREFIX=P -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++` with the variant's flags as the
  build type's (`-DCMAKE_C[XX]_FLAGS_RELWITHDEBINFO=..`, which come last on every compile) and its LDFLAGS
  as `-DCMAKE_{EXE,SHARED,MODULE}_LINKER_FLAGS=..`, `-DCMAKE_C[XX]_COMPILER_LAUNCHER=ccache` when the
  phase uses ccache and `options()` giving `-DPLUGIN_xxx=NO` for the storage engines a benchmark never
  loads; `compile` is `cmake --build . --parallel N` (`object_line` matches cmake's "Building CXX object"
  lines), `install` is `cmake --install .` with `Step.env={"DESTDIR": ...}` and a copy of CMakeCache.txt;
  artefact `bin/mariadbd`; the probe runs `mariadbd --version` and reads the compiler and flags from that
  CMake cache.
* **a library (SQLite)**: `<tree>/configure` and `make sqlite3.c shell.c` only generate the amalgamation;
  the recipe's own compile steps build `sqlite3.o` with the variant's flags and link `lib/libsqlite3.so` and
  the `sqlite3` shell from it; artefact `lib/libsqlite3.so` (the load client opens it: there is no server);
  the probe asks the library itself (ctypes) for its version and compile options; its training runs the
  load client on the instrumented library, and `check_profile` looks for `sqlite3.o`'s `.gcda`.
* **a tool (RocksDB's db_bench)**: no configure: its make builds in the tree, so `configure` is one step
  that copies the tree into the build directory (`cp -a <tree>/. .`); `compile` is
  `make -jN db_bench DEBUG_LEVEL=0 CC=.. CXX=.. EXTRA_CXXFLAGS=.. EXTRA_LDFLAGS=..` (the recorded
  "configure command" is then that make line, the first compile step); `install` is
  `install -D db_bench <destdir><prefix>/bin/db_bench`; artefact `bin/db_bench`; `options()` holds
  `DEBUG_LEVEL=0` and the variant's make variables.

No engine's name appears in build/: each engine's recipe lives in its package (`engines/<name>/build.py`).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from dbsweep.build.variants import Variant
from dbsweep.errors import DbsweepError
from dbsweep.sources import SourceTree

if TYPE_CHECKING:
    from dbsweep.engines.base import Install

LogFn = Callable[[str], None]
ProgressFn = Callable[[float, str], None]
AttachFn = Callable[[str, Path], None]  # (title, file): appends a file to the build log

# A compiler run that makes one object file, as make echoes it (gcc and clang alike).
COMPILE_LINE = re.compile(rb"(^|\s)-c\s(.*\s)?-o\s+\S+\.o(\s|$)")


@dataclass(frozen=True)
class Step:
    """One command of a build, run in the phase's build directory."""

    what: str  # names it in messages and the log: "configure", "make", "make install"
    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)  # on top of the cleaned environment
    compiles: bool = False  # its output is counted in objects (`Recipe.object_line`) for the progress
    objects: int = 0  # objects it makes without printing a line for each (a compile dbsweep runs itself)


@dataclass(frozen=True)
class Phase:
    """One configure, compile and install of a tree, as the cache asks a recipe for it."""

    tree: SourceTree
    variant: Variant
    compiler: str  # the C compiler command, as the variant names it: gcc, clang-16
    build_dir: Path  # empty when the phase begins; every step runs here
    prefix: Path  # where the install lives when it is done (rpaths and the like name it)
    destdir: Path | None  # where the install steps stage it (DESTDIR), or None: straight into `prefix`
    cflags: tuple[str, ...]  # empty: the engine's build chooses
    ldflags: tuple[str, ...]
    jobs: int
    ccache: bool  # compile through ccache
    tool_args: tuple[str, ...] = ()  # the recipe's own extra arguments for this phase (a PGO hook sets them)


@dataclass(frozen=True)
class Facts:
    """What an install says about itself, as its recipe recorded it in build.json."""

    version: str  # the binary's own version line
    cc: str  # the compiler command its build system recorded
    cflags: str
    ldflags: str
    configure: str  # its build system's record of the options it was configured with


@dataclass(frozen=True)
class TrainingRun:
    """What a PGO training run gets: the instrumented install, and a place of its own."""

    tree: SourceTree
    install_dir: Path  # the instrumented install (its prefix)
    scratch: Path  # a directory for the run's data and logs, which `user` can write
    user: str | None  # who runs the instrumented binary (None: dbsweep's own user)
    progress: ProgressFn  # 0..1 through the training
    say: LogFn  # one line for the user
    attach: AttachFn  # a log of the run into the build log


@dataclass(frozen=True)
class Failure:
    """A step that failed, for `Recipe.explain`."""

    step: Step
    tail: str  # the build log's last lines
    phase: Phase
    attach: AttachFn  # e.g. configure's own log, into the kept build log


class Recipe(ABC):
    """How one engine is built. Stateless apart from what changes every build of it (the PGO training)."""

    engine: ClassVar[str]  # names cache entries (`<engine>-<version>-<variant>-<key12>`); part of the key
    artefact: ClassVar[str]  # the file under install/ that a finished install has, e.g. "bin/server"
    # Objects a compile makes, for the progress until a build of the same major in the cache (or `objects_in`) says.
    objects_estimate: ClassVar[int] = 1000
    object_line: ClassVar[re.Pattern[bytes]] = COMPILE_LINE  # a compile step's output line for one object
    # What the engine's build uses when given no CFLAGS; kept when dbsweep adds flags of its own (PGO's).
    default_cflags: ClassVar[tuple[str, ...]] = ("-O2",)
    # Environment variables the engine's build reads besides the usual CC, CFLAGS, ... (which go anyway).
    leaky_env: ClassVar[tuple[str, ...]] = ()
    supports_pgo: ClassVar[bool] = False

    # ---- the tree and the key -------------------------------------------------------------------------

    def check_tree(self, tree: SourceTree) -> None:  # noqa: B027 - optional: a recipe may take any tree
        """Raises DbsweepError, before anything is built, for a tree this recipe cannot build."""

    @abstractmethod
    def options(self, variant: Variant, version: str) -> list[str]:
        """The build options for this source version (the engine's own, then the variant's `configure`);
        without the install prefix, the compiler and the flags, which each phase adds."""

    def training(self) -> dict[str, Any] | None:
        """The PGO training workload, described (in the key and the record of a PGO build)."""
        return None

    def extra_installs(self) -> list[str]:
        """Modules installed beside the engine (Postgres's contrib modules): in the key, since an install
        without one is not the same install."""
        return []

    def objects_in(self, tree: SourceTree) -> int | None:
        """The objects a compile of `tree` makes, counted from its sources, for the progress of its first build
        (later ones take the count of the last build of its major version); None: `objects_estimate`."""
        return None

    # ---- the steps --------------------------------------------------------------------------------------

    @abstractmethod
    def configure(self, phase: Phase) -> list[Step]:
        """The steps that prepare the build directory (configure, cmake); the first one is recorded as the
        build's configure command. May be empty."""

    @abstractmethod
    def compile(self, phase: Phase) -> list[Step]:
        """The steps that compile (mark them `compiles` to count the objects their output shows, or give the
        `objects` a step makes itself)."""

    @abstractmethod
    def install(self, phase: Phase) -> list[Step]:
        """The steps that install into `phase.prefix`, under `phase.destdir` when it is set."""

    # ---- the finished install -----------------------------------------------------------------------------

    @abstractmethod
    def probe(self, install_dir: Path) -> dict[str, Any]:
        """What the install says about itself, as fields of build.json (the recipe's own names)."""

    @abstractmethod
    def facts(self, record: Mapping[str, Any]) -> Facts:
        """The probe's answers, read back from build.json; KeyError or TypeError when they are not there."""

    @abstractmethod
    def install_of(self, bindir: Path, source: str, provenance: dict[str, Any]) -> Install:
        """The engine's Install of a finished build (`provenance["version"]` is the binary's version line)."""

    # ---- profile-guided builds ------------------------------------------------------------------------------

    def instrumented(self, phase: Phase, profile: Path) -> Phase:
        """The phase that builds a binary which writes its profile into `profile` as it runs."""
        generate = f"-fprofile-generate={profile}"
        return replace(phase, cflags=(*phase.cflags, generate), ldflags=(*phase.ldflags, generate))

    def optimised(self, phase: Phase, profile: Path) -> Phase:
        """The phase that builds with the profile the training left."""
        use = f"-fprofile-use={profile}"
        # -Wno-missing-profile: configure's flag tests see every warning as a failure (Postgres's then drop
        # -fwrapv and the like), and each conftest has no profile.
        return replace(
            phase,
            cflags=(*phase.cflags, use, "-fprofile-correction", "-Wno-missing-profile"),
            ldflags=(*phase.ldflags, use),
        )

    def training_user(self) -> str | None:
        """Who runs the instrumented binary (the profile directory is given to that user)."""
        return None

    def train(self, run: TrainingRun) -> None:
        """Runs the training workload on the instrumented install; raises DbsweepError when it fails."""
        raise DbsweepError(f"{self.engine} builds have no PGO training run")

    def check_profile(self, profile: Path, user: str | None, note: LogFn) -> dict[str, Any]:
        """Checks that the training left a profile worth building with; returns what to record of it."""
        files = list(profile.glob("*.gcda"))
        note(f"PGO profile: {len(files)} files in {profile}")
        if not files:
            who = f"user {user!r}" if user else "the training run"
            raise DbsweepError(
                f"the PGO training run left no profile data in {profile}; {who} must be able to write there"
            )
        return {"profile_files": len(files), "profile_bytes": sum(f.stat().st_size for f in files)}

    def check_server_profile(
        self, profile: Path, user: str | None, note: LogFn, markers: tuple[str, ...]
    ) -> dict[str, Any]:
        """`check_profile` for a server: some of the profile must come from the server's own code, whose
        objects' paths contain one of `markers` (gcc names each profile after its object's absolute path,
        '/' turned into '#': "#src#backend#")."""
        files = list(profile.glob("*.gcda"))
        server_files = [f for f in files if any(m in f.name for m in markers)]
        note(f"PGO profile: {len(files)} files, {len(server_files)} from the server, in {profile}")
        if not server_files:
            who = f"user {user!r}" if user else "the server"
            raise DbsweepError(
                f"the PGO training run left no profile data for the server in {profile} "
                f"({len(files)} files in all); {who} must be able to write there"
            )
        return {
            "profile_files": len(files),
            "server_profile_files": len(server_files),
            "profile_bytes": sum(f.stat().st_size for f in files),
        }

    # ---- failures -----------------------------------------------------------------------------------------

    def explain(self, failure: Failure) -> str:
        """A sentence or two on why the step failed (appended to the message), or ""."""
        return ""


def major_version(version: str) -> int:
    """15 for "15.18", 18 for "18beta1", 9 for "9.6.24": the leading number of a version."""
    m = re.match(r"^(\d+)", version.strip())
    if m is None:
        raise DbsweepError(f"cannot tell the major version of {version!r}")
    return int(m.group(1))
