"""The build cache: an engine's source tree built at a variant, once, by the engine's `Recipe`.

Each build lives in `<root>/<engine>-<version>-<variant>-<key12>/` with `install/`, `build.log` and
`build.json` (all the provenance). The key is a sha256 over what makes the binary: the engine, the
source's identity and version, the variant's recipe, the options the engine's recipe derives for that
version, the compiler's version (and what `-march=native` means on this host), and for PGO the training
workload (and, for a build made with another variant's profile, that profile's key). A build is made in
`<root>/.tmp-<key>/` and renamed into place only when complete (build.json is written last), so a failed or
killed build never looks cached; a failed build's log is kept in `<root>/failed/`. Builds in one root run one
at a time (a lock file).

The objects go to `<tmp>/build/` (a PGO build's to its profile's object directory, below), removed after the
install. The install prefix is the final directory
(the install steps stage it with DESTDIR, and it is moved), so rpaths and the like are right where the
build ends up.

Non-PGO builds compile through ccache when it is installed (hits need the same root, as the object
directory's path is part of ccache's hash with -g).

BOLT (`variant.bolt`): the base build (`variants.bolt_base`: the same recipe without BOLT, linked with its
relocations and, with gcc, compiled for BOLT), found or made as an entry of its own, then its install copied and
its binary rewritten by llvm-bolt (instrumented, trained, optimised; `build.bolt`). PGO + LTO + BOLT thus
rewrites its base's PGO build, profile included, not a second one with a training run of its own.

PGO (gcc only): an instrumented build into a scratch prefix (`Recipe.instrumented`) of the variant's
`variants.profile_source` (the variant without LTO and BOLT's flags: `pgo`, `pgo_lto` and `pgo_lto_bolt_base`
share it), the recipe's training run on it as `Recipe.training_user()` and the recipe's check of the profile. The
profile is kept in `<root>/profiles/<engine>-<version>-<key16>/` (`data/`, and `profile.json` written last), by the
key the instrumented build would have, so that the next build from it (pgo_lto after pgo, whatever the variants are
named, or one whose optimised phase failed) neither compiles nor trains again. The optimised build with
`Recipe.optimised`'s flags compiles in the object directory the instrumented one did, `<root>/.pgo-<key12>/build`
in the root's real path (gcc names each profile file after its object's absolute path, and finds none, silently,
under another: a profile trained where the root was before it moved is trained again). PGO builds skip ccache:
the instrumented objects hold a one-off profile path, and the optimised ones depend on the profile. A build
sweeps the PGO object directories and half-kept profiles a killed one left.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import fcntl
import hashlib
import json
import os
import pwd
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from dbsweep import procs
from dbsweep.build import bolt, variants
from dbsweep.build.compiler import Compiler, compiler_for
from dbsweep.build.objects import Objects, Status, StatusFn
from dbsweep.build.recipe import Failure, LogFn, Phase, ProgressFn, Recipe, Step, TrainingRun, major_version
from dbsweep.build.variants import NAME_RE, Variant
from dbsweep.engines.base import Install
from dbsweep.errors import DbsweepError
from dbsweep.sources import SourceTree

# Bump when the way a recipe turns into a binary changes, so old cache entries stop matching.
KEY_SCHEMA = 1
META_FILE = "build.json"
LOG_FILE = "build.log"
PROFILES = "profiles"  # under a build root: the kept PGO profiles (`Profile`)
PROFILE_META = "profile.json"
BASE_SHARE = 0.9  # of a BOLT build's progress: its base build (found or made), then BOLT's own part
# Environment variables that would leak into a build and change the binary behind our back.
_FLAG_VARS = ("CC", "CXX", "CPP", "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "LIBS")
_MAKE_VARS = ("DESTDIR", "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "GNUMAKEFLAGS", "LANG", "LANGUAGE")
_TAIL_LINES = 15


@dataclass(frozen=True)
class Build:
    """A finished build in the cache, as recorded in its build.json."""

    dir: Path
    key: str
    engine: str
    version: str  # the source version, e.g. "15.18"
    variant: str
    compiler: str
    compiler_version: str
    ccache: bool
    configure_command: tuple[str, ...]  # the exact argv of the configure that made the binary
    cflags: str  # as the install's build system reports them
    ldflags: str
    configure: str  # the options the build system recorded
    build_seconds: float
    install_bytes: int
    created: str  # ISO 8601, UTC
    training: dict[str, Any] | None
    metadata: dict[str, Any] = field(compare=False, hash=False, repr=False)
    recipe: Recipe = field(compare=False, hash=False, repr=False)

    @property
    def name(self) -> str:
        return self.dir.name

    @property
    def install_dir(self) -> Path:
        return self.dir / "install"

    @property
    def bindir(self) -> Path:
        return self.install_dir / "bin"

    @property
    def log_path(self) -> Path:
        return self.dir / LOG_FILE

    @property
    def configure_cmdline(self) -> str:
        return shlex.join(self.configure_command)

    def summary(self) -> dict[str, Any]:
        """One row of `dbsweep builds`."""
        return {
            "name": self.name,
            "version": self.version,
            "variant": self.variant,
            "compiler": self.compiler_version,
            "cflags": self.cflags,
            "ldflags": self.ldflags,
            "pgo_training": self.training["name"] if self.training else None,
            "ccache": self.ccache,
            "install_bytes": self.install_bytes,
            "build_seconds": self.build_seconds,
            "created": self.created,
            "dir": str(self.dir),
        }

    def provenance(self) -> dict[str, Any]:
        """What produced the binary, as every result made with it records it."""
        m = self.metadata
        facts = self.recipe.facts(m)
        return {
            "source": m["source"]["spec"],
            "source_identity": m["source"]["identity"],
            "source_tree": m["source"].get("path", ""),  # what the functions' files are read relative to
            "version": facts.version,
            "bindir": str(self.bindir),
            "cc": facts.cc,
            "cflags": self.cflags,
            "ldflags": self.ldflags,
            "configure": self.configure,
            "variant": self.variant,
            "recipe": m["recipe"],
            "build_key": self.key,
            "build_dir": str(self.dir),
            "build_log": str(self.log_path),
            "compiler": self.compiler,
            "compiler_version": self.compiler_version,
            "configure_command": self.configure_cmdline,
            "ccache": self.ccache,
            "training": self.training,
            "copy": m.get("copy", 0),  # N > 0: the Nth separate build of the same source and variant
            # A BOLT build: llvm-bolt's version, options and profile, and the functions it folded into one.
            **({"bolt": m["bolt"], "bolt_of": m.get("bolt_of")} if m.get("bolt") else {}),
        }

    @property
    def install(self) -> Install:
        """The engine's Install of this build."""
        return self.recipe.install_of(self.bindir, self.metadata["source"]["spec"], self.provenance())

    @classmethod
    def load(cls, directory: Path, recipe: Recipe) -> Build | None:
        """The build of `recipe`'s engine in `directory`, or None when it is not a complete one."""
        try:
            m = json.loads((directory / META_FILE).read_text())
            if m["engine"] != recipe.engine:
                return None
            facts = recipe.facts(m)
            b = cls(
                dir=directory,
                key=m["key"],
                engine=m["engine"],
                version=m["version"],
                variant=m["variant"],
                compiler=m["compiler"]["name"],
                compiler_version=m["compiler"]["version"],
                ccache=bool(m["ccache"]),
                configure_command=tuple(m["configure_command"]),
                cflags=facts.cflags,
                ldflags=facts.ldflags,
                configure=facts.configure,
                build_seconds=float(m["build_seconds"]),
                install_bytes=int(m["install_bytes"]),
                created=m["created"],
                training=m.get("training"),
                metadata=m,
                recipe=recipe,
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return b if (b.install_dir / recipe.artefact).is_file() else None


# ---- the cache -------------------------------------------------------------------------------


def cache_key(recipe: Recipe, tree: SourceTree, variant: Variant, compiler: Compiler, copy: int = 0) -> str:
    """The build's content key; `copy` N > 0 is the Nth separate build of the same source and variant (an A-A
    pair of builds), made from its own copy of the tree."""
    material: dict[str, Any] = {
        "schema": KEY_SCHEMA,
        "engine": recipe.engine,
        "source": tree.identity,
        "version": tree.version,
        "recipe": variant.recipe(),
        # The engine's effective options; named "configure" since the first engine, and kept so that
        # entries made before engines were plug-ins keep their keys.
        "configure": recipe.options(variant, tree.version),
        "compiler": compiler.version,
        "native_cpu": compiler.native_cpu,
        "training": recipe.training() if variant.pgo else None,
    }
    if variant.pgo and (gen := variants.profile_source(variant)) is not variant:
        # Built with another build's profile (pgo_lto with pgo's): that build's key names the profile. Only
        # then: a variant trained on its own build keeps the key it had.
        material["profile"] = cache_key(recipe, tree, gen, compiler, copy)
    if variant.bolt:  # only then: the keys of other builds stay what they were
        t = bolt.tool()
        material["bolt"] = {
            "tool": t.version if t else None,
            "options": bolt.options(t) if t else None,
            "training": recipe.training(),
            # A copy of this build is what BOLT rewrites (`variants.bolt_base`).
            "base": cache_key(recipe, tree, variants.bolt_base(variant), compiler, copy),
        }
    if extras := recipe.extra_installs():  # only when there are any: other engines' keys stay as they were
        material["extra_installs"] = extras
    if copy:
        material["copy"] = copy
    blob = json.dumps(material, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def entry_name(recipe: Recipe, tree: SourceTree, variant: Variant, key: str, copy: int = 0) -> str:
    return f"{recipe.engine}-{tree.version}-{variant.name}{f'.copy{copy}' if copy else ''}-{key[:12]}"


@dataclass(frozen=True)
class Profile:
    """A PGO profile kept under a build root: the training's `.gcda` files of the instrumented build of
    `source` (`variants.profile_source`), found by the key that build would have (whatever a variant of that
    recipe is named), in the root's real path (a symlinked workspace reaches the same one)."""

    dir: Path
    key: str
    source: Variant

    @classmethod
    def of(cls, recipe: Recipe, tree: SourceTree, variant: Variant, root: Path, copy: int = 0) -> Profile:
        gen = variants.profile_source(variant)
        key = cache_key(recipe, tree, gen, compiler_for(gen), copy)
        return cls(Path(root).resolve() / PROFILES / f"{recipe.engine}-{tree.version}-{key[:16]}", key, gen)

    @property
    def data(self) -> Path:
        return self.dir / "data"

    @property
    def object_dir(self) -> Path:
        """Where every build from this profile compiles: gcc names a profile file after its object's absolute
        path, so the optimised build's objects must have the instrumented build's paths."""
        return self.dir.parent.parent / f".pgo-{self.key[:12]}" / "build"

    def facts(self) -> dict[str, Any] | None:
        """What the training recorded, or None when the profile is not (completely) kept, or was trained where the
        objects had other paths (the root moved): gcc would find none of it, and say nothing."""
        try:
            m = json.loads((self.dir / PROFILE_META).read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(m, dict) or m.get("key") != self.key or not self.data.is_dir():
            return None
        if m.get("object_dir") != str(self.object_dir):
            return None
        return {k: v for k, v in m.items() if k != "key"}

    def keep(self, data: Path, facts: dict[str, Any]) -> None:
        """Copies the training's profile in, the record last, so that a half-copied profile never looks kept."""
        tmp = self.dir.with_name(f".tmp-{self.dir.name}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        shutil.copytree(data, tmp / "data")
        with (tmp / PROFILE_META).open("w") as f:
            json.dump({"key": self.key, "object_dir": str(self.object_dir), **facts}, f, indent=2)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        shutil.rmtree(self.dir, ignore_errors=True)
        tmp.rename(self.dir)


def find(recipe: Recipe, tree: SourceTree, variant: Variant, root: Path, copy: int = 0) -> Build | None:
    """The cached build of `tree` at `variant` in `root` (its `copy`th separate build), if there is one."""
    return find_key(recipe, Path(root).absolute(), cache_key(recipe, tree, variant, compiler_for(variant), copy))


def find_key(recipe: Recipe, root: Path, key: str) -> Build | None:
    if not root.is_dir():
        return None
    for d in root.glob(f"{recipe.engine}-*-{key[:12]}"):
        b = Build.load(d, recipe)
        if b is not None and b.key == key:
            return b
    return None


def list_builds(root: Path, recipe: Recipe) -> list[Build]:
    """Every complete build of `recipe`'s engine in `root`, oldest first."""
    root = Path(root)
    if not root.is_dir():
        return []
    found = (Build.load(d, recipe) for d in root.iterdir() if d.is_dir() and not d.name.startswith("."))
    return sorted((b for b in found if b is not None), key=lambda b: (b.created, b.name))


# ---- building --------------------------------------------------------------------------------


def build(
    recipe: Recipe,
    tree: SourceTree,
    variant: Variant,
    root: Path,
    *,
    log: LogFn | None = None,
    progress: ProgressFn | None = None,
    status: StatusFn | None = None,
    copy: int = 0,
) -> Build:
    """The build of `tree` at `variant`: from the cache in `root`, or made now by `recipe` (and cached).
    `progress` hears the fraction done and the stage, `status` the same with the objects compiled. `copy` N > 0
    is a separate build of the same source and variant (`cache_key`); `tree` should then be a copy of its own
    (`sources.resolve.copy_of`), so the two builds differ in everything but the code."""
    root = Path(root).absolute()
    if not NAME_RE.match(variant.name):
        raise DbsweepError(f"variant name {variant.name!r} cannot name a build directory")
    if variant.pgo and variant.compiler_family != "gcc":
        raise DbsweepError(f"variant {variant.name!r}: profile-guided builds are supported with gcc only")
    if variant.bolt and not recipe.supports_pgo:
        raise DbsweepError(f"variant {variant.name!r}: {recipe.engine} builds have no training run for BOLT")
    if variant.bolt:
        bolt.require()
    if variant.pgo and not recipe.supports_pgo:
        raise DbsweepError(f"variant {variant.name!r}: {recipe.engine} has no profile-guided build")
    recipe.check_tree(tree)
    compiler = compiler_for(variant)
    key = cache_key(recipe, tree, variant, compiler, copy)
    cached = find_key(recipe, root, key)
    if cached is None:
        base = None
        if variant.bolt:
            # The build BOLT rewrites a copy of, found or made first (its own entry, shared with a target that
            # names it, `<variant>_base`): nine tenths of the progress.
            base = build(
                recipe,
                tree,
                variants.bolt_base(variant),
                root,
                log=log,
                progress=None if progress is None else lambda f, m: progress(BASE_SHARE * f, m),
                status=None if status is None else lambda s: status(_scaled(s, BASE_SHARE)),
                copy=copy,
            )
        root.mkdir(parents=True, exist_ok=True)
        with _locked(root, log):
            cached = find_key(recipe, root, key)  # another dbsweep may have built it while we waited
            if cached is None:
                builder = _Builder(recipe, tree, variant, root, compiler, key, log, progress, status, copy, base)
                return builder.run()
    if log is not None:
        log(f"{cached.name}: cached")
    if progress is not None:
        progress(1.0, "cached")
    if status is not None:
        objects = cached.metadata.get("objects")
        done = objects if isinstance(objects, int) else 0
        status(Status(1.0, "cached", done, done, compiling=False))
    return cached


def _scaled(s: Status, share: float) -> Status:
    return dataclasses.replace(s, fraction=share * s.fraction)


@contextlib.contextmanager
def _locked(root: Path, log: LogFn | None) -> Iterator[None]:
    """One build at a time per root: builds use every core, and two of the same key would collide."""
    with (root / ".lock").open("a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if log is not None:
                log(f"waiting for another build in {root} to finish")
            fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


class _Span:
    """Maps a phase's own 0..1 progress onto its share of the whole build."""

    def __init__(self, progress: ProgressFn | None, start: float, end: float) -> None:
        self.progress, self.start, self.end = progress, start, end

    def __call__(self, fraction: float, message: str) -> None:
        if self.progress is not None:
            self.progress(self.start + (self.end - self.start) * min(max(fraction, 0.0), 1.0), message)

    def part(self, start: float, end: float) -> _Span:
        width = self.end - self.start
        return _Span(self.progress, self.start + width * start, self.start + width * end)


class _Builder:
    def __init__(
        self,
        recipe: Recipe,
        tree: SourceTree,
        variant: Variant,
        root: Path,
        compiler: Compiler,
        key: str,
        log: LogFn | None,
        progress: ProgressFn | None,
        status: StatusFn | None,
        copy: int = 0,
        base: Build | None = None,
    ) -> None:
        self.recipe, self.tree, self.variant, self.root, self.compiler = recipe, tree, variant, root, compiler
        self.copy = copy
        self.base = base  # a BOLT build's: the build whose install it copies and rewrites
        self.key, self.log_fn = key, log
        self.progress_fn, self.status_fn = progress, status
        self.span = _Span(self._report, 0.0, 1.0)
        self.name = entry_name(recipe, tree, variant, key, copy)
        self.final = root / self.name
        self.tmp = root / f".tmp-{key}"
        self.build_dir = self.tmp / "build"
        self.stage = self.tmp / "stage"
        self.log_path = self.tmp / LOG_FILE
        self.failed_log = root / "failed" / f"{self.name}.log"
        self.env = build_env(recipe)
        self.jobs = len(os.sched_getaffinity(0))
        # PGO builds skip ccache: phase 1 objects hold a one-off profile path, phase 2 depends on the profile.
        self.ccache = not variant.pgo and shutil.which("ccache") is not None
        self.profile: Profile | None = None
        self.kept: dict[str, Any] | None = None  # the kept profile's record, read once (under the root's lock)
        if variant.pgo and base is None:
            self.profile = Profile.of(recipe, tree, variant, root, copy)
            self.build_dir = self.profile.object_dir
            self.kept = self.profile.facts()
        trained = self.kept is not None
        # A PGO build compiles twice, or once from a kept profile; BOLT on a copy of a build, never.
        if base is not None:
            expected, self.seconds_expected, compiles = 0, None, 0
        else:
            expected, self.seconds_expected = _expected(root, recipe, tree, variant, trained)
            compiles = 2 if variant.pgo and not trained else 1
        self.objects = Objects(recipe.object_line, expected, compiles)
        self.compiling = False  # in a compile step (the objects' rate is taken over these)
        self.stage_prefix = ""  # which phase of a PGO build
        self.logf: IO[bytes] | None = None
        self.extra: dict[str, Any] = {}
        self.current: Phase | None = None

    def say(self, message: str) -> None:
        if self.log_fn is not None:
            self.log_fn(f"{self.name}: {message}")

    def _report(self, fraction: float, stage: str) -> None:
        if self.progress_fn is not None:
            self.progress_fn(fraction, stage)
        if self.status_fn is not None:
            objects = self.objects
            stage = self.stage_prefix + stage
            self.status_fn(Status(fraction, stage, objects.done, objects.total, self.compiling, self.seconds_expected))

    def run(self) -> Build:
        shutil.rmtree(self.tmp, ignore_errors=True)  # left behind by a killed run
        _sweep(self.root)
        self.tmp.mkdir()
        started = time.monotonic()
        try:
            with self.log_path.open("wb") as self.logf:
                self._note(f"dbsweep build {self.name}\nkey {self.key}\nsource {self.tree.spec} at {self.tree.path}")
                if self.base is not None:
                    configure = self._copy_base(self.base)
                else:
                    configure = self._pgo() if self.variant.pgo else self._plain()
                if self.variant.bolt:
                    self.extra["bolt"] = self._bolt()
            self.logf = None
            return self._finish(configure, time.monotonic() - started)
        except BaseException:
            self._discard()
            raise

    def _phase(
        self,
        prefix: Path,
        destdir: Path | None,
        cflags: tuple[str, ...],
        *,
        ccache: bool,
        variant: Variant | None = None,
    ) -> Phase:
        """A compile of `variant` (the build's own by default; PGO's instrumented one is its profile source's)."""
        variant = variant or self.variant
        if variant.added_cflags:
            # Added to the variant's flags, or to the build's default level (never in place of it).
            cflags = (*(cflags or self.recipe.default_cflags), *variant.added_cflags)
        return Phase(
            tree=self.tree,
            variant=variant,
            compiler=self.compiler.name,
            build_dir=self.build_dir,
            prefix=prefix,
            destdir=destdir,
            cflags=cflags,
            ldflags=variant.ldflags,
            jobs=self.jobs,
            ccache=ccache,
        )

    def _plain(self) -> list[str]:
        phase = self._phase(self.final / "install", self.stage, self.variant.cflags, ccache=self.ccache)
        cmd = self._compile(phase, self.span)
        self._install(phase, self.span.part(0.92, 1.0))
        return cmd

    def _copy_base(self, base: Build) -> list[str]:
        """A BOLT build's start: its base build's install, copied into the stage (the binary BOLT rewrites is that
        very build's, PGO's profile included); its configure line is the base's."""
        self.say(f"BOLT on a copy of {base.name}")
        self.span(BASE_SHARE, f"copying {base.name}")
        staged = self.stage / str(self.final / "install").lstrip("/")
        staged.parent.mkdir(parents=True)
        shutil.copytree(base.install_dir, staged, symlinks=True)
        self.build_dir.mkdir(parents=True, exist_ok=True)  # nothing is compiled; _finish removes it
        self.ccache = base.ccache
        self.extra["bolt_of"] = {"name": base.name, "key": base.key, "created": base.created}
        if "pgo" in base.metadata:
            self.extra["pgo"] = base.metadata["pgo"]
        self._note(f"the install of {base.name} ({base.dir}), copied")
        return list(base.configure_command)

    def _pgo(self) -> list[str]:
        recipe, kept, facts = self.recipe, self.profile, self.kept
        assert kept is not None
        span = self.span
        if facts is None:
            self._untrained_source(kept)
            facts = self._train(kept)
            span = self.span.part(0.55, 1.0)
            reused = False
        else:
            self.say(f"PGO profile trained for {facts.get('trained_for', '?')} on {facts.get('created', '?')}, kept")
            self._note(f"PGO profile kept in {kept.dir}: {facts}")
            reused = True
        self.extra["pgo"] = {
            **facts,
            "profile_of": kept.source.name,
            "profile_key": kept.key,
            "profile": str(kept.data),
            "profile_reused": reused,
        }
        base = self.variant.cflags or recipe.default_cflags  # dbsweep's flags replace the build's default
        use = recipe.optimised(self._phase(self.final / "install", self.stage, base, ccache=False), kept.data)
        self.say("PGO phase 2: optimised build")
        self.stage_prefix = "PGO phase 2: "
        try:
            cmd = self._compile(use, span)
        except DbsweepError as e:
            if not reused:
                raise
            raise DbsweepError(
                f"{e}\nIt was compiled with the profile kept in {kept.dir}; if that profile is at fault, remove the "
                "directory and the next build trains a new one."
            ) from e
        self._install(use, span.part(0.92, 1.0))
        return cmd

    def _untrained_source(self, kept: Profile) -> None:
        """Says so when the build the profile's source names is cached without its profile (made before profiles
        were kept, or the profile removed): this build trains one of its own, and the two are no longer alike
        but for LTO."""
        if kept.source.name == self.variant.name:
            return
        cached = find_key(self.recipe, self.root, kept.key)
        if cached is not None:
            warning = (
                f"{cached.name} is cached without its PGO profile, so {self.variant.name} trains a profile of its "
                f"own: the two differ in their training too, not only in LTO. Remove {cached.dir} and build both "
                "again to share one."
            )
            self.say(warning)
            self._note(warning)
            self.extra["pgo_warning"] = warning

    def _train(self, kept: Profile) -> dict[str, Any]:
        """PGO's instrumented build of the profile's source, its training and the check of its profile, which is
        then kept (`Profile.keep`). Returns what the build records of it."""
        recipe, source = self.recipe, kept.source
        user = recipe.training_user()
        base = source.cflags or recipe.default_cflags
        with tempfile.TemporaryDirectory(prefix="dbsweep-pgo-") as t:
            scratch = Path(t)
            scratch.chmod(0o755)  # the training user runs the instrumented install from here
            profile = scratch / "profile"
            profile.mkdir()
            phase = self._phase(scratch / "install", None, base, ccache=False, variant=source)
            gen = recipe.instrumented(phase, profile)
            self.say(f"PGO phase 1: instrumented build ({source.name})")
            self.stage_prefix = "PGO phase 1: "
            phase1 = self._compile(gen, self.span.part(0.0, 0.42))
            self._install(gen, self.span.part(0.40, 0.42))
            _chown_tree(profile, user)  # an install step run as root may have left profiles the training updates
            started = time.monotonic()
            span = self.span.part(0.42, 0.55)
            self.stage_prefix = "PGO "
            run = TrainingRun(self.tree, scratch / "install", scratch, user, span, self.say, self._append_file)
            recipe.train(run)
            span(1.0, "training done")
            facts = {
                "instrumented_configure": phase1,
                "instrumented_make_vars": list(gen.tool_args),
                "instrumented_recipe": source.recipe(),
                "training": recipe.training(),
                "training_seconds": round(time.monotonic() - started, 1),
                "server_user": user,
                **recipe.check_profile(profile, user, self._note),
                "trained_by": self.name,
                "trained_for": self.variant.name,
                "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            }
            kept.keep(profile, facts)
            self._note(f"PGO profile kept in {kept.dir}")
        return facts

    def _bolt(self) -> dict[str, Any]:
        """The staged install's binary rewritten by llvm-bolt: instrumented, trained in its place, then rewritten
        with the merged profile (`build.bolt`). Returns what the build records of it."""
        recipe, t = self.recipe, bolt.require()
        install = self.stage / str(self.final / "install").lstrip("/")
        target = install / recipe.artefact
        bolt.check_relocations(target, recipe.artefact)
        user = recipe.training_user()
        self.stage_prefix = "BOLT "
        with tempfile.TemporaryDirectory(prefix="dbsweep-bolt-") as d:
            scratch = Path(d)
            scratch.chmod(0o755)  # the training user runs the install from the stage and writes its profile here
            profile = scratch / "profile"
            profile.mkdir()
            _chown_tree(profile, user)
            instrumented = scratch / f"{target.name}.instrumented"
            self.say("BOLT: instrumenting")
            self.span(0.90, "instrumenting")
            skipped: list[str] = []
            self._run_bolt(
                "llvm-bolt -instrument",
                lambda: bolt.instrument_command(t, target, instrumented, profile, skipped),
                skipped,
            )
            original = target.with_name(f"{target.name}.before-bolt")
            target.rename(original)
            shutil.copy2(instrumented, target)
            started = time.monotonic()
            try:
                run = TrainingRun(
                    self.tree, install, scratch, user, self.span.part(0.90, 0.97), self.say, self._append_file
                )
                recipe.train(run)
            finally:
                target.unlink(missing_ok=True)
                original.rename(target)
            trained = round(time.monotonic() - started, 1)
            files = bolt.profiles(profile)
            self._note(f"BOLT profile: {len(files)} files in {profile}")
            if not files:
                raise DbsweepError(
                    f"the BOLT training of {self.name} left no profile in {profile}: the instrumented "
                    f"{recipe.artefact} wrote nothing when its processes exited; see {self.failed_log}"
                )
            merged = scratch / "merged.fdata"
            self._run(Step("merge-fdata", (str(t.merge), *map(str, files), "-o", str(merged), "-q")))
            rewritten = scratch / f"{target.name}.bolt"
            self.say("BOLT: rewriting")
            self.span(0.97, "rewriting")
            self._run_bolt("llvm-bolt", lambda: bolt.optimise_command(t, target, rewritten, merged, skipped), skipped)
            same = bolt.folded(target, rewritten)
            mode = target.stat().st_mode
            shutil.copyfile(rewritten, target)
            target.chmod(mode)
            return {
                "tool": str(t.bolt),
                "version": t.version,
                "options": bolt.options(t),
                "target": recipe.artefact,
                "left_as_they_are": skipped,
                "training": recipe.training(),
                "training_seconds": trained,
                "profile_files": len(files),
                "profile_bytes": merged.stat().st_size,
                # Why instrumentation: sampling (perf record -j) needs branch-sampling counters.
                "branch_sampling": "available" if bolt.perf_branch_sampling() else "not available on this machine",
                "profile_kind": "instrumentation",
                "folded": same,
            }

    def _run_bolt(self, what: str, argv: Callable[[], list[str]], skipped: list[str]) -> None:
        """An llvm-bolt run; a function it says it cannot move is left as it is (`skipped`, recorded) and the
        run is made again, up to bolt.MAX_SKIPPED functions."""
        while True:
            mark = self.log_path.stat().st_size
            try:
                self._run(Step(what, tuple(argv())))
                return
            except DbsweepError:
                assert self.logf is not None
                self.logf.flush()
                with self.log_path.open("rb") as f:
                    f.seek(mark)
                    name = bolt.unmovable(f.read().decode(errors="replace"))
                if name is None or name in skipped or len(skipped) >= bolt.MAX_SKIPPED:
                    raise
                skipped.append(name)
                self._note(f"BOLT cannot move {name}: it is left as it is, and the run made again")

    # ---- phases

    def _compile(self, phase: Phase, span: _Span) -> list[str]:
        """The configure and compile steps in a fresh object directory; returns the configure argv."""
        self.current = phase
        shutil.rmtree(self.build_dir, ignore_errors=True)
        self.build_dir.mkdir(parents=True)
        configure = self.recipe.configure(phase)
        compile_steps = self.recipe.compile(phase)
        self.say("configure")
        span(0.0, "configure")
        for step in configure:
            self._run(step)
        objects = self.objects
        objects.start()
        compile_span = span.part(0.04, 0.92)

        def on_line(line: bytes) -> None:
            if objects.line(line):
                compile_span(objects.fraction, "compile")

        self.compiling = True
        try:
            for step in compile_steps:
                self.say(step.what + (" (ccache)" if phase.ccache else ""))
                compile_span(objects.fraction, "compile")
                self._run(step, on_line if step.compiles else None)
                if step.objects:
                    objects.made(step.objects)
                    compile_span(objects.fraction, "compile")
        finally:
            self.compiling = False
        objects.end()
        return list((configure or compile_steps)[0].argv)

    def _install(self, phase: Phase, span: _Span) -> None:
        self.current = phase
        steps = self.recipe.install(phase)
        self.say("install")
        span(0.0, "install")
        for i, step in enumerate(steps, 1):
            self._run(step)
            span(i / len(steps), step.what)

    # ---- running commands and the log

    def _run(self, step: Step, on_line: Callable[[bytes], None] | None = None) -> None:
        assert self.logf is not None
        env_words = [f"{k}={v}" for k, v in step.env.items()]
        self._note(f"$ {shlex.join([*env_words, *step.argv])}")
        proc = procs.spawn(
            list(step.argv),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env={**self.env, **step.env},
            cwd=self.build_dir,
        )
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                self.logf.write(line)
                if on_line is not None:
                    on_line(line)
            proc.wait()
        except BaseException:
            # make's compilers share its process group: stop them all, not just make.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            raise
        finally:
            procs.terminate(proc)
        if proc.returncode != 0:
            raise self._failure(step, proc.returncode)

    def _note(self, text: str) -> None:
        assert self.logf is not None
        self.logf.write(f"\n#### {text}\n".encode())
        self.logf.flush()

    def _append_file(self, title: str, path: Path) -> None:
        if self.logf is None or not path.is_file():
            return
        self._note(f"{title} ({path})")
        self.logf.write(path.read_bytes())
        self.logf.flush()

    def _failure(self, step: Step, code: int) -> DbsweepError:
        assert self.logf is not None
        self.logf.flush()
        tail = self.log_path.read_bytes().decode(errors="replace").rstrip().splitlines()[-_TAIL_LINES:]
        head = f"building {self.name} failed: {step.what} exited with code {code}."
        if self.current is not None:  # BOLT on a copy of its base compiles nothing: no phase, no recipe's say
            head += self.recipe.explain(Failure(step, "\n".join(tail), self.current, self._append_file))
        body = "\n".join("    " + ln for ln in tail)
        return DbsweepError(f"{head}\nThe last lines of the build log {self.failed_log}:\n{body}")

    # ---- the end

    def _finish(self, configure: list[str], seconds: float) -> Build:
        """Moves the install into place, records everything, and makes the entry visible."""
        staged = self.stage / str(self.final / "install").lstrip("/")
        install = self.tmp / "install"
        staged.rename(install)
        shutil.rmtree(self.stage)
        shutil.rmtree(self.build_dir.parent if self.profile is not None else self.build_dir)
        if not (install / self.recipe.artefact).is_file():
            raise DbsweepError(f"building {self.name} installed no {self.recipe.artefact}; see {self.failed_log}")
        meta = {
            "schema": KEY_SCHEMA,
            "key": self.key,
            "name": self.name,
            "engine": self.recipe.engine,
            "version": self.tree.version,
            "variant": self.variant.name,
            "recipe": self.variant.recipe(),
            "source": {
                "spec": self.tree.spec,
                "kind": self.tree.kind,
                "identity": self.tree.identity,
                "path": str(self.tree.path),
            },
            "compiler": {"name": self.compiler.name, "version": self.compiler.version},
            "native_cpu": self.compiler.native_cpu,
            "ccache": self.ccache,
            "configure_command": configure,
            "configure_cmdline": shlex.join(configure),
            **self.recipe.probe(install),
            "make_jobs": self.jobs,
            "objects": self.objects.this,  # the last compile's (a PGO build's optimised one)
            "build_seconds": round(seconds, 1),
            "install_bytes": _tree_bytes(install),
            "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "training": self.recipe.training() if self.variant.pgo else None,
            **({"copy": self.copy} if self.copy else {}),
            **self.extra,
        }
        meta_path = self.tmp / META_FILE
        with meta_path.open("w") as f:  # last: a directory with a build.json is a complete build
            json.dump(meta, f, indent=2)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        if self.final.exists():  # a leftover without build.json (find_key would have returned a complete one)
            shutil.rmtree(self.final)
        self.tmp.rename(self.final)
        self.say(f"built in {seconds:.0f} s")
        self.span(1.0, "built")
        b = Build.load(self.final, self.recipe)
        assert b is not None, self.final
        return b

    def _discard(self) -> None:
        """Keeps only the log (in `<root>/failed/`); nothing of a failed build may look cached."""
        with contextlib.suppress(OSError):
            if self.log_path.is_file():
                self.failed_log.parent.mkdir(exist_ok=True)
                self.log_path.replace(self.failed_log)
        shutil.rmtree(self.tmp, ignore_errors=True)
        if self.profile is not None:  # PGO's objects (the kept profile stays: the next try starts from it)
            shutil.rmtree(self.build_dir.parent, ignore_errors=True)


# ---- helpers ---------------------------------------------------------------------------------


def build_env(recipe: Recipe) -> dict[str, str]:
    """The environment builds run in: without what would change the binary behind the recipe's back."""
    leaky = {*_FLAG_VARS, *_MAKE_VARS, *recipe.leaky_env}
    env = {k: v for k, v in os.environ.items() if k not in leaky and not k.startswith("LC_")}
    env["LC_ALL"] = "C"  # stable, parseable messages from configure, make and the compiler
    return env


def _tree_bytes(path: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            total += os.lstat(os.path.join(dirpath, name)).st_size  # noqa: PTH118 - hot loop over many files
    return total


def _expected(
    root: Path, recipe: Recipe, tree: SourceTree, variant: Variant, trained: bool = False
) -> tuple[int, float | None]:
    """For the progress: the objects one compile of `tree` will make (as many as the newest build of the same major
    version compiled, else as the recipe counts in the tree, else its constant), and the seconds the newest such
    build of the same kind (PGO or not; from a kept profile or not) took, if there is one."""
    major = major_version(tree.version)
    alike = [b for b in list_builds(root, recipe) if major_version(b.version) == major]
    known = [n for b in alike if isinstance(n := b.metadata.get("objects"), int) and n > 0]
    seconds = [b.build_seconds for b in alike if _kind(b) == (variant.pgo, trained)]
    if known:
        objects = known[-1]
    else:
        counted = recipe.objects_in(tree)
        objects = counted if counted is not None and counted > 0 else recipe.objects_estimate
    return objects, seconds[-1] if seconds else None


def _sweep(root: Path) -> None:
    """PGO object directories and half-kept profiles a killed build left behind (gigabytes for a server): builds
    in a root run one at a time (`_locked`), so any there now is no one's."""
    for d in (*root.glob(".pgo-*"), *(root / PROFILES).glob(".tmp-*")):
        shutil.rmtree(d, ignore_errors=True)


def _kind(b: Build) -> tuple[bool, bool]:
    """(profile-guided, from a kept profile): what a build's time is like."""
    pgo = b.metadata.get("pgo")
    return bool(b.metadata.get("recipe", {}).get("pgo")), isinstance(pgo, dict) and bool(pgo.get("profile_reused"))


def _chown_tree(path: Path, user: str | None) -> None:
    if user is None:
        return
    pw = pwd.getpwnam(user)
    for dirpath, _dirs, files in os.walk(path):
        os.chown(dirpath, pw.pw_uid, pw.pw_gid)
        for name in files:
            os.chown(os.path.join(dirpath, name), pw.pw_uid, pw.pw_gid)  # noqa: PTH118
