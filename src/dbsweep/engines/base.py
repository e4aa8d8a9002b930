"""What an engine is: the boundary every database engine implements, so that the plan, the runner, the
samplers, preflight and the reports never need an engine's name, and no module outside `engines/`
imports a database driver.

Four kinds of engine fit it: a server built with configure and make (Postgres), a server built with CMake
and configured by `my.cnf` sections (MariaDB), an embedded library the load client opens (SQLite: no
server process, so the samplers charge the CPU to the client), and an engine whose benchmark tool is the
client itself (RocksDB's db_bench).

An `Engine` says where its code comes from (Debian's package names, how to read a tree's version, its
installed packages), how a build is made (`recipe`), how a config diff is read, checked against the
binary and fitted to a version, and makes `Instance`s: one data directory each, initialised, started,
probed and stopped, with the statistics, sizes and log lines a step needs.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from dbsweep import machine
from dbsweep.errors import DbsweepError

if TYPE_CHECKING:
    from dbsweep.build.recipe import Recipe
    from dbsweep.configdiff import ConfigDiff, Setting
    from dbsweep.sources import Naming

Kind = Literal["server", "embedded", "tool"]


class EngineError(DbsweepError):
    """The engine refused or failed something a step needed (a statement, a connection): the message is the
    engine's own, in one line."""


@dataclass(frozen=True)
class Install:
    """An engine's installation: where its programs are, its version, and what produced it."""

    bindir: Path
    version: str  # as the binary prints it, e.g. "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)"
    source: str  # the target's `source`
    provenance: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    short_version: str = ""  # e.g. "15.18"; the engine fills it in

    def bin(self, name: str) -> Path:
        return self.bindir / name


@dataclass(frozen=True)
class Access:
    """How the load client reaches an instance: its command-line arguments and environment (a password
    travels in the environment, never on a command line), and for an embedded engine, whose code runs
    inside the client, the command the client runs under (valgrind, while instructions are counted). A tool
    engine, whose own benchmark program is the client (db_bench), names that program."""

    args: list[str]
    env: dict[str, str]
    wrapper: list[str] = field(default_factory=list)
    program: Path | None = None  # the engine's own client; None: dbsweep-load
    # What that program can run (db_bench's benchmarks), for a suite to fit its steps to an old one; empty: all.
    operations: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Watermark:
    """Who the server was, and how far its log went, when a step began."""

    pid: int
    started: float  # the process's start time (seconds since the epoch, as the kernel gives it)
    log_offset: int
    identity: str = ""  # what else the engine holds a step against (an embedded engine: its file's identity)


class Instance(ABC):
    """One data directory of an engine and, while it runs, its server."""

    home: Path  # holds the data directory, the password and the logs
    config_name: str
    config_text: str
    user: str | None
    # A command the server runs under (e.g. valgrind); None runs it directly.
    wrapper: list[str] | None
    # Whether one server process serves every client with threads (MariaDB) rather than a process per
    # connection (Postgres's backends): the instruction count then charges that whole process to the clients.
    threaded: ClassVar[bool] = False
    # For a threaded server, functions that only a thread serving a client runs (its connection handler): the
    # instruction count is then taken per thread, and those threads are the foreground; the others (timers,
    # background flushing) are counted apart, since their work follows the clock rather than the statements.
    client_thread_functions: ClassVar[tuple[str, ...]] = ()
    # Whether a count may run the server and its client in lockstep (`placement.Lockstep`: one CPU, one fixed
    # real-time priority). A server whose threads wait for each other by spinning cannot: the spinning thread
    # never lets the one it waits for run, and the count runs under the normal scheduler, pinned all the same.
    lockstep: ClassVar[bool] = True

    @property
    @abstractmethod
    def datadir(self) -> Path: ...

    @property
    @abstractmethod
    def log(self) -> Path: ...

    @abstractmethod
    def initialized(self) -> bool:
        """Whether the data directory was made and configured by `init`."""

    @abstractmethod
    def init(self) -> None:
        """A fresh data directory with the config diff applied and generated credentials."""

    @abstractmethod
    def start(self, timeout: float | None = None) -> None:
        """Starts the server on loopback and a private socket; returns when it answers. Raises ServerError
        with the lines of its log that say why it did not."""

    @abstractmethod
    def stop(self) -> None:
        """Stops the server; idempotent, never leaves a process behind."""

    def remove(self) -> None:
        """Stops the server and removes the home directory."""
        self.stop()
        shutil.rmtree(self.home, ignore_errors=True)

    @property
    @abstractmethod
    def pid(self) -> int | None:
        """The server's main process while it runs; None for an embedded engine (the client does the work)."""

    @abstractmethod
    def watermark(self) -> Watermark:
        """The server's identity and the end of its log now, to hold a step against."""

    @abstractmethod
    def disturbance_since(self, mark: Watermark) -> str | None:
        """Why the server that served a step is not the whole server that began it, in one sentence with its
        evidence (it died, it is another process, it crash-restarted); None when it is the same."""

    @abstractmethod
    def access(self, via_socket: bool = False) -> Access:
        """How the load client reaches this instance."""

    @abstractmethod
    def postwrite(self, tables: list[str], budget: float, say: Callable[[str], None]) -> dict[str, Any]:
        """The method's maintenance after writes (e.g. VACUUM and a checkpoint), then a wait to `budget`
        seconds; returns how long each part took. Raises EngineError."""

    @abstractmethod
    def statistics(self) -> dict[str, Any]:
        """The server's own statistics after a step (views or status counters), for the store."""

    @abstractmethod
    def data_bytes(self) -> int | None:
        """The database's size as the engine reports it (None when it cannot say)."""

    def tables(self) -> set[str] | None:
        """The tables of the running instance's database, or None when the engine has none to name (a tool's key
        space): a resume on a kept data directory checks it still holds the ones its cells need."""
        return None

    @abstractmethod
    def settings(self) -> list[dict[str, Any]]:
        """The settings that differ from the built-in defaults, as the running server reports them."""

    @abstractmethod
    def server_version(self) -> str:
        """The version the running server reports."""

    @abstractmethod
    def log_excerpt(self, start: int = 0) -> str:
        """The lines of the server's log from byte `start` that explain a failure (indented, one per line)."""

    # ---- a settled, quiet state for counting instructions (measure.instructions) --------------------------

    quiet_config: ClassVar[str] = ""  # appended to the config while instructions are counted

    def settle(self) -> None:  # noqa: B027 - optional: an engine without background work needs nothing here
        """Brings the tables to a state every target reaches alike (nothing left for background work)."""

    def prewarm(self, tables: list[str]) -> None:  # noqa: B027 - optional, as settle
        """Reads the tables and their indexes into the engine's cache."""

    # What `held_still` holds, as the count records it beside the quiet config's settings.
    held_during_count: ClassVar[tuple[str, ...]] = ()

    # For a threaded server: a statement, and a function of the server only that statement runs (`*` a
    # wildcard). A session's count has callgrind dump every thread's counts as a connection of its own enters
    # it (`--dump-before`): the statement marks where a run starts and ends. None: its reads restart the server.
    dump_marker: ClassVar[tuple[str, str] | None] = None

    def marker(self) -> contextlib.AbstractContextManager[Callable[[], None]]:
        """A connection of the server's own kept open, yielding what runs `dump_marker`'s statement on it."""
        raise EngineError(f"{type(self).__name__} has no statement that marks a count's runs")

    def held_still(self) -> contextlib.AbstractContextManager[None]:
        """Holds, for a counted run, background work whose share of the foreground's would follow timing rather
        than the statements (nothing unless the engine says)."""
        return contextlib.nullcontext()

    def workers(self) -> set[int]:
        """The processes that serve clients now (for the instruction count of the one that served a run)."""
        return set()

    def roles(self) -> dict[int, str]:
        """The server's background processes now, by role (e.g. "walwriter"): the instruction count's split of
        the work per process. Empty unless the engine can say."""
        return {}

    def save_state(self, dest: Path) -> None:
        """Keeps a copy of the stopped instance's home (its data and the credentials that open it) in `dest`,
        owners and modes included, to start every counted run from the same state."""
        _copy_tree(self.home, dest)

    def restore_state(self, src: Path) -> None:
        """Replaces the stopped instance's home with the copy `save_state` kept."""
        _copy_tree(src, self.home)


@dataclass(frozen=True)
class Costs:
    """Rough seconds of an engine's fixed costs on a small VM (2 vCPUs), for preflight's estimate: good for
    "minutes or hours?", not for a schedule. The defaults are Postgres's."""

    start_s: float = 4.0  # a fresh data directory (2.6 s) and a start (1.4 s)
    valgrind_starts_s: float = 45.0  # valgrind's start-ups for one counted step (the server, each run's backend)
    build_s: float = 180.0  # a build from source with every core (15.18 at -O2: 165 s)
    lto_build_s: float = 240.0  # LTO's link takes a minute more (15.18 at -O3 -flto: 232 s)


class Engine(ABC):
    """One database engine."""

    name: ClassVar[str]
    title: ClassVar[str]  # as messages name it: "Postgres"
    kind: ClassVar[Kind]
    # What a study may write as a target's `source`, for error messages.
    source_forms: ClassVar[str]
    costs: ClassVar[Costs] = Costs()
    # The class of its instances: what an instruction count holds still (`quiet_config`, `held_during_count`) is
    # read from it without starting one, so a count taken under other held settings is known to be stale.
    instance_type: ClassVar[type[Instance]]

    # ---- sources, builds and installs ------------------------------------------------------------------

    @property
    @abstractmethod
    def naming(self) -> Naming:
        """How the engine's source is named, as the fetchers need it: its Debian source packages, the version
        an unpacked tree declares, what a build writes into a tree."""

    def tree_version(self, tree: Path) -> str:
        """The upstream version an unpacked source tree declares; raises DbsweepError for a tree that is not
        this engine's."""
        return self.naming.tree_version(tree)

    @abstractmethod
    def recipe(self) -> Recipe:
        """How the engine is built from source (`build.recipe.Recipe`)."""

    @abstractmethod
    def system_versions(self) -> list[str]:
        """The versions installed from Debian's packages (`source = "system"` or `"system:N"`)."""

    @abstractmethod
    def system_install(self, spec: str) -> Install:
        """The install a `system` source names; raises DbsweepError when it is not installed."""

    # ---- configs --------------------------------------------------------------------------------------

    config_suffix: ClassVar[str] = ".conf"

    @abstractmethod
    def parse_config(self, lines: list[tuple[str, str]]) -> tuple[Setting, ...]:
        """The settings of a config diff's lines (each with its origin `file:line`); raises DbsweepError
        naming the line it cannot read."""

    @abstractmethod
    def include_target(self, line: str) -> str | None:
        """The file a line includes (the engine's own include syntax), or None."""

    @abstractmethod
    def known_settings(self, install: Install) -> set[str]:
        """The names of every setting the binary knows, lower case."""

    def fit_config(
        self, diff: ConfigDiff, install: Install, optional: set[str], allowed: Collection[str] = ()
    ) -> tuple[str, list[str]]:
        """The diff's text for this install: a setting it lacks is an error unless `optional`, then it is left
        out and listed in the second value. An unsafe setting the study does not allow (`allowed`, its
        allow_unsafe_settings) is an error first, so nothing unsafe starts even when a config changed since the
        study was checked."""
        self.refuse_unsafe(diff, allowed)
        return self.fit_to_install(diff, install, optional)

    @abstractmethod
    def fit_to_install(self, diff: ConfigDiff, install: Install, optional: set[str]) -> tuple[str, list[str]]:
        """`fit_config`'s work once the diff's unsafe settings are known to be allowed."""

    # By name, why each setting is unsafe: it changes who gets in or how the server is reached, loads code, runs
    # commands, or writes outside the instance's directory. A config that sets one is refused (when the study is
    # loaded and again by `fit_config`) unless the study names it in `allow_unsafe_settings`. Each engine's list
    # lives in its config module, beside the settings dbsweep owns outright (which no study can allow).
    unsafe_settings: ClassVar[Mapping[str, str]] = {}

    def unsafe_name(self, name: str) -> str:
        """A setting's name as `unsafe_settings` spells it, by the server's own rules (case, spellings)."""
        return name.strip().lower()

    def unsafe_entry(self, setting: Setting) -> str | None:
        """The entry of `unsafe_settings` a config line sets, or None when the line is safe (an engine may read
        its value too: a path inside the data directory is safe)."""
        name = self.unsafe_name(setting.name)
        return name if name in self.unsafe_settings else None

    def unsafe_in(self, settings: Iterable[Setting]) -> list[UnsafeSetting]:
        """The unsafe lines among `settings`, in order."""
        out = []
        for s in settings:
            entry = self.unsafe_entry(s)
            if entry is not None:
                out.append(UnsafeSetting(entry, self.unsafe_settings[entry], s))
        return out

    def refuse_unsafe(self, diff: ConfigDiff, allowed: Collection[str]) -> list[UnsafeSetting]:
        """The diff's unsafe settings when `allowed` names each; else raises DbsweepError naming the config's
        file and line, why, and how a study allows them."""
        found = self.unsafe_in(diff.settings)
        names = {self.unsafe_name(a) for a in allowed}
        refused = [u for u in found if u.name not in names]
        if refused:
            raise DbsweepError(_refusal(diff.name, refused))
        return found

    @abstractmethod
    def connection_limit(self, diff: ConfigDiff) -> tuple[int, str] | None:
        """How many connections a server with this config takes (and where that comes from); None when the
        engine has no such limit."""

    def check_values(self, diff: ConfigDiff, install: Install, text: str) -> list[str]:
        """Why this install would refuse the diff's values, found before any work: `text` is the diff as
        `fit_config` made it for the install, and the engine's own binary reads it and exits (a scratch file
        in a temporary directory at most, never a server). Each problem is one or two sentences naming the
        config's file and line, the setting, its value and the engine's own words, or a size beyond this
        machine (its memory, the threads it can start) with the estimate and the limit. Default: none."""
        return []

    # What a server starts for each connection ("a backend process"), "" for nothing: preflight counts the threads
    # and processes a step starts against what the machine can start (`machine.client_problems`).
    connection_task: ClassVar[str] = ""
    # Why the engine generates an auto-increment id only as the table's primary key ("" when any column may have
    # one): a suite whose table gives the id a secondary index instead cannot make it.
    generated_id_needs_key: ClassVar[str] = ""

    # Where the engine's clients are threads of one process: how many per CPU it runs well with (0: only the
    # machine's limits bound them), what those threads are, what happens past that (with the figures measured),
    # and what to call them.
    clients_per_cpu: ClassVar[int] = 0
    clients_are: ClassVar[str] = ""
    past_the_cap: ClassVar[str] = ""
    clients_word: ClassVar[str] = "clients"

    def client_cap(self) -> tuple[int, str] | None:
        """The most clients the engine runs well on this machine and why, in a sentence with the figures behind
        it; None: only the machine's limits bound them."""
        if not self.clients_per_cpu:
            return None
        n = machine.cpus()
        cap = self.clients_per_cpu * n
        return cap, (
            f"its clients are {self.clients_are}, and past {self.clients_per_cpu} per CPU {self.past_the_cap}; "
            f"this machine has {n} CPU{'s' if n != 1 else ''}, so use at most {cap:,} {self.clients_word}"
        )

    # ---- instances ------------------------------------------------------------------------------------

    @abstractmethod
    def server_user(self) -> str | None:
        """The unprivileged user servers run as when dbsweep is root (None: as ourselves)."""

    @abstractmethod
    def instance(
        self,
        install: Install,
        home: Path,
        config_name: str,
        config_text: str,
        user: str | None,
        wrapper: list[str] | None = None,
    ) -> Instance:
        """A (not yet initialised or started) instance in `home`."""

    @abstractmethod
    def stop_stale(self, datadir: Path) -> None:
        """Stops a server left on `datadir` only if it is provably that server; else sets its PID file aside."""

    def storage_bytes(self, diff: ConfigDiff | None, table_bytes: int) -> int:
        """Roughly how large a data directory grows with `table_bytes` of tables and indexes (for preflight's
        warnings): the engine's own files, logs and journals on top."""
        return table_bytes

    def compile_flags(self, install: Install) -> str:
        """What the install was compiled with (flags and configure line), for checks such as valgrind's."""
        return " ".join(str(install.provenance.get(k, "")) for k in ("cflags", "configure"))


@dataclass(frozen=True)
class UnsafeSetting:
    """A config line that changes who gets in or what runs (`Engine.unsafe_settings`)."""

    name: str  # its entry in unsafe_settings, as a study's allow_unsafe_settings names it
    reason: str
    setting: Setting


def refused_value(config: str, setting: Setting, engine: str, words: str) -> str:
    """The problem of a value the engine refuses, in the engine's own words ("MariaDB 10.11.14" as `engine`)."""
    return (
        f"config {config} sets {setting.name} = {setting.value} ({setting.origin}), which {engine} refuses: "
        f"{words.rstrip('.')}."
    )


def refused_config(config: str, engine: str, words: str) -> str:
    """The problem of a config the engine refuses where its words name no setting of it."""
    return f"{engine} refuses config {config}: {words.rstrip('.')}."


def over_memory(config: str, setting: Setting, what: str, estimate: int, own: int) -> str | None:
    """The problem of a setting that makes `what` (e.g. "MariaDB's caches") take more than this machine's memory,
    with the estimate, the limit and the most the setting may be (`own`: its share of the estimate); None when
    it fits."""
    limit = machine.memory()
    if estimate <= limit.value:
        return None
    room = max(0, limit.value - (estimate - own))
    return (
        f"config {config} sets {setting.name} = {setting.value} ({setting.origin}): {what} would take about "
        f"{machine.shown_bytes(estimate)}, more than this machine's memory ({machine.shown_bytes(limit.value)}, "
        f"{limit.where}); {setting.name} may be at most {machine.shown_bytes(room)} here."
    )


def over_tasks(config: str, setting: Setting, count: int, what: str) -> str | None:
    """The problem of a setting that starts `count` threads (`what` they are) where the machine cannot; None
    when it can."""
    free = machine.tasks()
    if count <= free.value:
        return None
    return (
        f"config {config} sets {setting.name} = {setting.value} ({setting.origin}): {count:,} {what}, more than "
        f"this machine can start now ({free.value:,}: {free.where})."
    )


def setting_named(words: str, settings: Iterable[Setting]) -> Setting | None:
    """The setting an engine's message is about, however the engine spells it: `innodb-flush-method` or
    `innodb_flush_method`, any case, or as words (`Cache type` for cache_type); the longest name wins, and the
    last line of a setting given twice (the one that counts)."""
    low = words.lower()
    found: Setting | None = None
    for s in settings:
        name = s.name.lower().removeprefix("loose_")
        forms = {name, name.replace("_", "-"), name.replace("_", " ")}
        if any(re.search(rf"(?<![A-Za-z0-9_]){re.escape(f)}(?![\w-])", low) for f in forms) and (
            found is None or len(s.name) >= len(found.name)
        ):
            found = s
    return found


def _refusal(config: str, refused: list[UnsafeSetting]) -> str:
    """Why a config is refused, in two sentences: its first unsafe line, the others, and the study's fix."""
    first = refused[0]
    s = first.setting
    others = [f"{u.setting.name} ({u.setting.origin})" for u in refused[1:]]
    more = f" (also unsafe: {', '.join(others)})" if others else ""
    names = ", ".join(f'"{n}"' for n in dict.fromkeys(u.name for u in refused))
    return (
        f"config {config} sets {s.name} ({s.origin}), which {first.reason}{more}. "
        f"A study that means it must say so at its top level: allow_unsafe_settings = [{names}]."
    )


def _copy_tree(src: Path, dest: Path) -> None:
    """dest becomes a copy of src; `cp -a` keeps the owners (the server runs as its own user)."""
    shutil.rmtree(dest, ignore_errors=True)
    r = subprocess.run(["cp", "-a", "--", str(src), str(dest)], capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise EngineError(f"cannot copy {src} to {dest}: {r.stderr.strip()}")


def debian_package_of(path: Path) -> str:
    """The Debian package that installed `path` and its version ("mariadb-server 1:10.11.18-0+deb12u1"), for the
    provenance of a `system` install."""
    r = subprocess.run(["dpkg-query", "-S", str(path)], capture_output=True, text=True, check=False)
    package = r.stdout.split(":", 1)[0].strip() if r.returncode == 0 else ""
    if not package:
        return "unknown package"
    v = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", package], capture_output=True, text=True, check=False)
    return f"{package} {v.stdout.strip()}"


def path_identity(path: Path) -> str:
    """A file's or directory's identity (device and inode), "" when it is gone: a step is held against it."""
    try:
        st = path.stat()
    except OSError:
        return ""
    return f"{st.st_dev}:{st.st_ino}"


def path_watermark(data: Path, log: Path) -> Watermark:
    """Where a step of an engine without a server began: how far its log went, and the identity of the file
    or directory that holds its data."""
    offset = log.stat().st_size if log.is_file() else 0
    return Watermark(pid=0, started=0.0, log_offset=offset, identity=path_identity(data))


def path_disturbance(mark: Watermark, data: Path, what: str, replaced: str = "") -> str | None:
    """Why a step of an engine without a server was disturbed, or None: no server can die or restart (a client
    that ended early says so itself), but its data (`what`, e.g. "database file") must be the one the step
    began on."""
    now = path_identity(data)
    if not now:
        return f"the {what} {data} disappeared during the step"
    if mark.identity and now != mark.identity:
        return f"the {what} {data} was replaced during the step{replaced}"
    return None
