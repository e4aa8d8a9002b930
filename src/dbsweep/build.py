"""Builds Postgres from a source tree for a build variant, into a cache.

Each build lives in `<root>/<engine>-<version>-<variant>-<key12>/` with `install/`,
`build.log` and `build.json` (all the provenance). The key is a sha256 over what
makes the binary: source identity, the variant's recipe, the effective configure
options, the compiler's version (and what `-march=native` means on this host),
and for PGO the training workload. A build is made in `<root>/.tmp-<key>/` and
renamed into place only when complete, so a failed or killed build never looks
cached. Builds in one root run one at a time (a lock file).

The object tree is a VPATH build (`<tmp>/build/` running `<tree>/configure`), so
one unpacked source tree serves every variant, and it is removed after install.
The install prefix is the final directory (installed with DESTDIR and moved), so
rpaths and `pg_config` are right where the build ends up.

Non-PGO builds compile through ccache when it is installed (`make CC="ccache gcc"`;
hits need the same root, as the object directory's path is part of ccache's hash
with -g).

PGO (gcc only): an instrumented build (`PROFILE=-fprofile-generate=<dir>` on the
make command line, so configure's test programs leave no profiles behind), a
training run of the instrumented server as the server user, then a rebuild in the
same object directory (gcc names profiles after the objects' absolute paths) with
`-fprofile-use=<dir> -fprofile-correction` in CFLAGS. PGO builds skip ccache.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import hashlib
import json
import os
import pwd
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from dbsweep import loadclient, procs
from dbsweep.engines import postgres
from dbsweep.errors import DbsweepError
from dbsweep.sources import SourceTree
from dbsweep.variants import NAME_RE, Variant, major_version

ENGINE = "postgres"
# Bump when the way a recipe turns into a binary changes, so old cache entries stop matching.
KEY_SCHEMA = 1
META_FILE = "build.json"
LOG_FILE = "build.log"
# Objects a Postgres 15 `make` compiles (1209 for 15.18); used for progress until a build in this root says better.
OBJECTS_ESTIMATE = 1250
# Extra modules later benchmarks need (the statements' statistics, table bloat).
CONTRIB = ("pg_stat_statements", "pgstattuple")
# Environment variables that would leak into configure or make and change the binary behind our back.
_FLAG_VARS = ("CC", "CXX", "CPP", "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "LIBS", "COPT", "PROFILE", "CUSTOM_COPT")
_MAKE_VARS = ("DESTDIR", "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "GNUMAKEFLAGS", "LANG", "LANGUAGE")
_LEAKY_ENV = frozenset((*_FLAG_VARS, *_MAKE_VARS))
_COMPILE_LINE = re.compile(rb"(^|\s)-c\s(.*\s)?-o\s+\S+\.o(\s|$)")
_TAIL_LINES = 15

LogFn = Callable[[str], None]
ProgressFn = Callable[[float, str], None]


@dataclass(frozen=True)
class Training:
    """The workload a PGO build is trained on; part of the cache key and the provenance."""

    name: str = "sysbench-short"
    tables: int = 1
    rows: int = 100_000
    steps: tuple[str, ...] = ("point-query",)
    clients: int = 1
    seconds: int = 20

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "steps": ["prepare", *self.steps],
            "tables": self.tables,
            "rows": self.rows,
            "clients": self.clients,
            "seconds": self.seconds,
        }


DEFAULT_TRAINING = Training()


@dataclass(frozen=True)
class Compiler:
    name: str  # as the variant names it: gcc, clang, gcc-13
    version: str  # the first line of `<name> --version`
    native_cpu: str | None  # what -march=native means here, when the variant uses it


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
    cflags: str  # as `pg_config --cflags` reports them
    ldflags: str
    configure: str  # `pg_config --configure`
    build_seconds: float
    install_bytes: int
    created: str  # ISO 8601, UTC
    training: dict[str, Any] | None
    metadata: dict[str, Any] = field(compare=False, hash=False, repr=False)

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

    @property
    def install(self) -> postgres.Install:
        m = self.metadata
        provenance = {
            "source": m["source"]["spec"],
            "source_identity": m["source"]["identity"],
            "version": m["server_version"],
            "bindir": str(self.bindir),
            "cc": m["pg_config"].get("CC", ""),
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
        }
        return postgres.Install(self.bindir, m["server_version"], m["source"]["spec"], provenance)

    @classmethod
    def load(cls, directory: Path) -> Build | None:
        """The build in `directory`, or None when it is not a complete build."""
        try:
            m = json.loads((directory / META_FILE).read_text())
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
                cflags=m["pg_config"]["CFLAGS"],
                ldflags=m["pg_config"]["LDFLAGS"],
                configure=m["pg_config"]["CONFIGURE"],
                build_seconds=float(m["build_seconds"]),
                install_bytes=int(m["install_bytes"]),
                created=m["created"],
                training=m.get("training"),
                metadata=m,
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return b if (b.bindir / "postgres").is_file() else None


# ---- the cache -------------------------------------------------------------------------------


def compiler_for(variant: Variant) -> Compiler:
    """The variant's compiler on this host, with its version; a clear error when it is missing."""
    if shutil.which(variant.compiler) is None:
        raise DbsweepError(f"variant {variant.name!r}: the compiler {variant.compiler!r} is not installed")
    out = _output([variant.compiler, "--version"])
    version = out.splitlines()[0].strip() if out.strip() else variant.compiler
    uses_native = any("=native" in f for f in (*variant.cflags, *variant.ldflags))
    return Compiler(variant.compiler, version, _native_cpu(variant) if uses_native else None)


def _native_cpu(variant: Variant) -> str:
    """What -march=native resolves to: a build for one CPU must not be reused on another."""
    if variant.compiler_family == "gcc":
        out = _output([variant.compiler, "-march=native", "-Q", "--help=target"])
        m = re.search(r"^\s*-march=\s+(\S+)", out, re.MULTILINE)
    else:
        out = _output([variant.compiler, "-march=native", "-###", "-x", "c", "-c", os.devnull])
        m = re.search(r'"-target-cpu" "([^"]+)"', out)
    return m.group(1) if m else "unknown"


def cache_key(tree: SourceTree, variant: Variant, compiler: Compiler, training: Training | None) -> str:
    material = {
        "schema": KEY_SCHEMA,
        "engine": ENGINE,
        "source": tree.identity,
        "version": tree.version,
        "recipe": variant.recipe(),
        "configure": variant.configure_args(tree.version),
        "compiler": compiler.version,
        "native_cpu": compiler.native_cpu,
        "training": training.describe() if training is not None else None,
    }
    blob = json.dumps(material, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def entry_name(tree: SourceTree, variant: Variant, key: str) -> str:
    return f"{ENGINE}-{tree.version}-{variant.name}-{key[:12]}"


def find(tree: SourceTree, variant: Variant, root: Path, *, training: Training | None = None) -> Build | None:
    """The cached build of `tree` at `variant` in `root`, if there is one."""
    training = _training_for(variant, training)
    return find_key(Path(root).absolute(), cache_key(tree, variant, compiler_for(variant), training))


def find_key(root: Path, key: str) -> Build | None:
    if not root.is_dir():
        return None
    for d in root.glob(f"{ENGINE}-*-{key[:12]}"):
        b = Build.load(d)
        if b is not None and b.key == key:
            return b
    return None


def list_builds(root: Path) -> list[Build]:
    """Every complete build in `root`, oldest first."""
    root = Path(root)
    if not root.is_dir():
        return []
    found = (Build.load(d) for d in root.iterdir() if d.is_dir() and not d.name.startswith("."))
    return sorted((b for b in found if b is not None), key=lambda b: (b.created, b.name))


def _training_for(variant: Variant, training: Training | None) -> Training | None:
    if not variant.pgo:
        return None
    return training if training is not None else DEFAULT_TRAINING


# ---- building --------------------------------------------------------------------------------


def build(
    tree: SourceTree,
    variant: Variant,
    root: Path,
    *,
    log: LogFn | None = None,
    progress: ProgressFn | None = None,
    training: Training | None = None,
) -> Build:
    """The build of `tree` at `variant`: from the cache in `root`, or made now (and cached)."""
    root = Path(root).absolute()
    training = _training_for(variant, training)
    if not NAME_RE.match(variant.name):
        raise DbsweepError(f"variant name {variant.name!r} cannot name a build directory")
    if variant.pgo and variant.compiler_family != "gcc":
        raise DbsweepError(f"variant {variant.name!r}: profile-guided builds are supported with gcc only")
    if not (tree.path / "configure").is_file():
        raise DbsweepError(f"{tree.spec}: {tree.path} holds no configure script; is it a Postgres source tree?")
    compiler = compiler_for(variant)
    key = cache_key(tree, variant, compiler, training)
    cached = find_key(root, key)
    if cached is None:
        root.mkdir(parents=True, exist_ok=True)
        with _locked(root, log):
            cached = find_key(root, key)  # another dbsweep may have built it while we waited
            if cached is None:
                return _Builder(tree, variant, root, compiler, key, training, log, progress).run()
    if log is not None:
        log(f"{cached.name}: cached")
    if progress is not None:
        progress(1.0, "cached")
    return cached


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
        tree: SourceTree,
        variant: Variant,
        root: Path,
        compiler: Compiler,
        key: str,
        training: Training | None,
        log: LogFn | None,
        progress: ProgressFn | None,
    ) -> None:
        self.tree, self.variant, self.root, self.compiler = tree, variant, root, compiler
        self.key, self.training, self.log_fn = key, training, log
        self.span = _Span(progress, 0.0, 1.0)
        self.name = entry_name(tree, variant, key)
        self.final = root / self.name
        self.tmp = root / f".tmp-{key}"
        self.build_dir = self.tmp / "build"
        self.stage = self.tmp / "stage"
        self.log_path = self.tmp / LOG_FILE
        self.failed_log = root / "failed" / f"{self.name}.log"
        self.env = _build_env()
        self.jobs = len(os.sched_getaffinity(0))
        # PGO builds skip ccache: phase 1 objects hold a one-off profile path, phase 2 depends on the profile.
        self.ccache = not variant.pgo and shutil.which("ccache") is not None
        self.expected_objects = _expected_objects(root, tree.version)
        self.objects = 0
        self.logf: IO[bytes] | None = None
        self.extra: dict[str, Any] = {}

    def say(self, message: str) -> None:
        if self.log_fn is not None:
            self.log_fn(f"{self.name}: {message}")

    def run(self) -> Build:
        shutil.rmtree(self.tmp, ignore_errors=True)  # left behind by a killed run
        self.tmp.mkdir()
        started = time.monotonic()
        try:
            with self.log_path.open("wb") as self.logf:
                self._note(f"dbsweep build {self.name}\nkey {self.key}\nsource {self.tree.spec} at {self.tree.path}")
                configure = self._pgo() if self.variant.pgo else self._plain()
            self.logf = None
            return self._finish(configure, time.monotonic() - started)
        except BaseException:
            self._discard()
            raise

    def _plain(self) -> list[str]:
        make_vars = [f"CC=ccache {self.compiler.name}"] if self.ccache else []
        cmd = self._compile(self.final / "install", self.variant.cflags, self.variant.ldflags, make_vars, self.span)
        self._install(make_vars, self.span.part(0.92, 1.0), destdir=self.stage)
        return cmd

    def _pgo(self) -> list[str]:
        user = postgres.server_user()
        base = self.variant.cflags or ("-O2",)  # CFLAGS replace Postgres's default -O2, so keep it
        with tempfile.TemporaryDirectory(prefix="dbsweep-pgo-") as t:
            scratch = Path(t)
            scratch.chmod(0o755)  # the server user runs the instrumented install from here
            profile = scratch / "profile"
            profile.mkdir()
            # enable_coverage=yes only skips libpq's "no exit() calls" check, which gcc's profiling code fails.
            gen = [f"PROFILE=-fprofile-generate={profile}", "enable_coverage=yes"]
            self.say("PGO phase 1: instrumented build")
            phase1 = self._compile(scratch / "install", base, self.variant.ldflags, gen, self.span.part(0.0, 0.42))
            self._install(gen, self.span.part(0.40, 0.42), destdir=None)
            _chown_tree(profile, user)  # make install ran zic as root, which left profiles the server must update
            started = time.monotonic()
            self._train(scratch, user, self.span.part(0.42, 0.55))
            self.extra["pgo"] = {
                "instrumented_configure": phase1,
                "instrumented_make_vars": gen,
                "training_seconds": round(time.monotonic() - started, 1),
                "server_user": user,
                **self._check_profile(profile, user),
            }
            use = [f"-fprofile-use={profile}", "-fprofile-correction", "-Wno-missing-profile"]
            self.say("PGO phase 2: optimised build")
            span = self.span.part(0.55, 1.0)
            cmd = self._compile(
                self.final / "install", (*base, *use), (*self.variant.ldflags, f"-fprofile-use={profile}"), [], span
            )
            self._install([], span.part(0.92, 1.0), destdir=self.stage)
        return cmd

    # ---- steps

    def _compile(
        self, prefix: Path, cflags: Sequence[str], ldflags: Sequence[str], make_vars: list[str], span: _Span
    ) -> list[str]:
        """configure + make in a fresh object directory; returns the configure argv."""
        shutil.rmtree(self.build_dir, ignore_errors=True)
        self.build_dir.mkdir(parents=True)
        cmd = [str(self.tree.path / "configure"), f"--prefix={prefix}", *self.variant.configure_args(self.tree.version)]
        cmd.append(f"CC={self.compiler.name}")
        if cflags:
            cmd.append(f"CFLAGS={' '.join(cflags)}")
        if ldflags:
            cmd.append(f"LDFLAGS={' '.join(ldflags)}")
        cmd.extend(f"{k}={v}" for k, v in self.variant.configure_vars)
        self.say("configure")
        span(0.0, "configure")
        self._run("configure", cmd)
        self.objects = 0
        compile_span = span.part(0.04, 0.92)

        def on_line(line: bytes) -> None:
            if _COMPILE_LINE.search(line):
                self.objects += 1
                compile_span(self.objects / self.expected_objects, f"compile ({self.objects} objects)")

        self.say(f"make -j{self.jobs}" + (" (ccache)" if make_vars and self.ccache else ""))
        compile_span(0.0, "compile")
        self._run("make", ["make", f"-j{self.jobs}", *make_vars], on_line)
        return cmd

    def _install(self, make_vars: list[str], span: _Span, destdir: Path | None) -> None:
        self.say("install")
        span(0.0, "install")
        extra = [*make_vars, *([f"DESTDIR={destdir}"] if destdir is not None else [])]
        self._run("make install", ["make", f"-j{self.jobs}", *extra, "install"])
        for i, module in enumerate(CONTRIB, 1):
            self._run(
                f"make install of {module}", ["make", f"-j{self.jobs}", "-C", f"contrib/{module}", *extra, "install"]
            )
            span(i / len(CONTRIB), f"install {module}")

    def _train(self, scratch: Path, user: str | None, span: _Span) -> None:
        """Runs the training workload on the instrumented install; profiles are written as processes exit."""
        t = self.training
        assert t is not None
        self.say(f"PGO training run {t.name}")
        span(0.0, f"training ({t.name})")
        install = postgres.Install(scratch / "install" / "bin", self.tree.version, self.tree.spec)
        server = postgres.Server(install, scratch / "train", "pgo-training", "", user=user)
        logs = scratch / "train-logs"
        try:
            server.init()
            server.start()
            conn = loadclient.connection_to(server)
            sizes = ["--tables", str(t.tables), "--rows", str(t.rows)]
            loadclient.run(["prepare", *sizes], conn, logs / "prepare.log")
            for i, step in enumerate(t.steps, 1):
                span(i / (len(t.steps) + 1), f"training: {step}")
                args = ["run", step, *sizes, "--clients", str(t.clients), "--seconds", str(t.seconds), "--warmup", "0"]
                loadclient.run(args, conn, logs / f"{step}.log")
        except DbsweepError as e:
            raise DbsweepError(f"the PGO training run on the instrumented build failed: {e}") from e
        finally:
            server.stop()  # a clean shutdown: the server's processes write their profiles at exit
            self._append_file("training: server log", server.log)
            for f in sorted(logs.glob("*.log")) if logs.is_dir() else []:
                self._append_file(f"training: {f.name}", f)
        span(1.0, "training done")

    def _check_profile(self, profile: Path, user: str | None) -> dict[str, Any]:
        files = list(profile.glob("*.gcda"))
        # gcc names each profile after its object's absolute path, '/' turned into '#'.
        server_files = [f for f in files if "#src#backend#" in f.name]
        self._note(f"PGO profile: {len(files)} files, {len(server_files)} from the server, in {profile}")
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

    # ---- running commands and the log

    def _run(self, what: str, cmd: list[str], on_line: Callable[[bytes], None] | None = None) -> None:
        assert self.logf is not None
        self._note(f"$ {shlex.join(cmd)}")
        proc = procs.spawn(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=self.env, cwd=self.build_dir)
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
            raise self._failure(what, proc.returncode)

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

    def _failure(self, what: str, code: int) -> DbsweepError:
        assert self.logf is not None
        self.logf.flush()
        tail = self.log_path.read_bytes().decode(errors="replace").rstrip().splitlines()[-_TAIL_LINES:]
        head = f"building {self.name} failed: {what} exited with code {code}."
        if what == "configure":
            head += self._configure_diagnosis("\n".join(tail))
        body = "\n".join("    " + ln for ln in tail)
        return DbsweepError(f"{head}\nThe last lines of the build log {self.failed_log}:\n{body}")

    def _configure_diagnosis(self, tail: str) -> str:
        """Plain words for the usual configure failure: flags the compiler does not accept."""
        config_log = self.build_dir / "config.log"
        self._append_file("config.log", config_log)  # its details go to the kept log
        if "C compiler cannot create executables" not in tail:
            return ""
        complaint = self._compiler_complaint(config_log)
        return (
            f" The C compiler cannot create executables: {self.compiler.name} rejects the variant's flags "
            f"(CFLAGS={self.variant.cflags_str!r} LDFLAGS={self.variant.ldflags_str!r})."
            + (f" The compiler said: {complaint}" if complaint else "")
            + " (config.log is at the end of the build log.)"
        )

    def _compiler_complaint(self, config_log: Path) -> str:
        """The compiler's error about our flags, not its answers to configure's version probes."""
        if not config_log.is_file():
            return ""
        lines = config_log.read_text(errors="replace").splitlines()
        errors = [ln.strip() for ln in lines if "error:" in ln and not ln.startswith("configure")]
        flags = (*self.variant.cflags, *self.variant.ldflags)
        ours = [ln for ln in errors if any(f in ln for f in flags)]
        others = [ln for ln in errors if not any(p in ln for p in ("'-V'", "'-qversion'", "no input files"))]
        return (ours or others or [""])[0]

    # ---- the end

    def _finish(self, configure: list[str], seconds: float) -> Build:
        """Moves the install into place, records everything, and makes the entry visible."""
        staged = self.stage / str(self.final / "install").lstrip("/")
        install = self.tmp / "install"
        staged.rename(install)
        shutil.rmtree(self.stage)
        shutil.rmtree(self.build_dir)
        bindir = install / "bin"
        if not (bindir / "postgres").is_file():
            raise DbsweepError(f"building {self.name} installed no postgres binary; see {self.failed_log}")
        pgc = _pg_config(bindir)
        meta = {
            "schema": KEY_SCHEMA,
            "key": self.key,
            "name": self.name,
            "engine": ENGINE,
            "version": self.tree.version,
            "server_version": _output([str(bindir / "postgres"), "--version"]).strip(),
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
            "pg_config": {k: pgc.get(k, "") for k in ("CC", "CFLAGS", "LDFLAGS", "CONFIGURE", "VERSION")},
            "make_jobs": self.jobs,
            "objects": self.objects,
            "build_seconds": round(seconds, 1),
            "install_bytes": _tree_bytes(install),
            "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "training": self.training.describe() if self.training is not None else None,
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
        b = Build.load(self.final)
        assert b is not None, self.final
        return b

    def _discard(self) -> None:
        """Keeps only the log (in `<root>/failed/`); nothing of a failed build may look cached."""
        with contextlib.suppress(OSError):
            if self.log_path.is_file():
                self.failed_log.parent.mkdir(exist_ok=True)
                self.log_path.replace(self.failed_log)
        shutil.rmtree(self.tmp, ignore_errors=True)


# ---- helpers ---------------------------------------------------------------------------------


def _build_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _LEAKY_ENV and not k.startswith("LC_")}
    env["LC_ALL"] = "C"  # stable, parseable messages from configure, make and the compiler
    return env


def _output(cmd: list[str]) -> str:
    env = {**os.environ, "LC_ALL": "C"}
    r = subprocess.run(cmd, capture_output=True, text=True, errors="replace", env=env, check=False)
    return r.stdout + r.stderr


def _pg_config(bindir: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    r = subprocess.run([str(bindir / "pg_config")], capture_output=True, text=True, check=False)
    for line in r.stdout.splitlines():
        key, sep, value = line.partition(" = ")
        if sep:
            out[key.strip()] = value.strip()
    return out


def _tree_bytes(path: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            total += os.lstat(os.path.join(dirpath, name)).st_size  # noqa: PTH118 - hot loop over many files
    return total


def _expected_objects(root: Path, version: str) -> int:
    """Objects the newest build of the same major version compiled, for the progress fraction."""
    major = major_version(version)
    counts = [b.metadata.get("objects") for b in list_builds(root) if major_version(b.version) == major]
    known = [n for n in counts if isinstance(n, int) and n > 0]
    return known[-1] if known else OBJECTS_ESTIMATE


def _chown_tree(path: Path, user: str | None) -> None:
    if user is None:
        return
    pw = pwd.getpwnam(user)
    for dirpath, _dirs, files in os.walk(path):
        os.chown(dirpath, pw.pw_uid, pw.pw_gid)
        for name in files:
            os.chown(os.path.join(dirpath, name), pw.pw_uid, pw.pw_gid)  # noqa: PTH118
