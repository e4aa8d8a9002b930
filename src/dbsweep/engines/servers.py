"""What the server engines' instances share: a free loopback port, ownership of the files they make for the
server's user, starting on a port another process may take first and waiting until the server answers (each
engine gives its probe), how a server process ended, the lines of its log that explain a failure (each engine
gives the patterns its own server writes), and stopping a server a killed dbsweep left behind once the engine
has proven the process is that server. `ServerInstance` puts these together into one lifecycle (a fresh home,
start, watermark, the first signs of a disturbance, stop) that each server engine's `Server` fills in."""

from __future__ import annotations

import contextlib
import logging
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import psutil

from dbsweep import procs
from dbsweep.engines.base import Install, Instance, Watermark
from dbsweep.errors import ServerError

_log = logging.getLogger(__name__)


def chown(path: Path, user: str | None) -> None:
    """Gives `path` to the server's user (None: it stays ours)."""
    if user is not None:
        pw = pwd.getpwnam(user)
        os.chown(path, pw.pw_uid, pw.pw_gid)


def server_user(users: tuple[str, ...], refusal: str) -> str | None:
    """The user servers run as: None (ourselves) unless we are root; then $DBSWEEP_SERVER_USER or the first
    of `users` that exists. `refusal` says why root will not do ("Postgres refuses to")."""
    if os.geteuid() != 0:
        return None
    wanted = os.environ.get("DBSWEEP_SERVER_USER")
    for name in [wanted] if wanted else users:
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise ServerError(
        f"dbsweep runs as root but {refusal}; create the user 'dbsweep' "
        "(scripts/setup.sh does) or set DBSWEEP_SERVER_USER to an unprivileged user."
    )


def free_port() -> int:
    """A TCP port on loopback that nothing listens on now."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])
    except OSError as e:
        raise ServerError(f"no free TCP port on 127.0.0.1 for the server ({e.strerror}).") from None


def socket_dir(home: Path, limit: int, user: str | None) -> tuple[Path, bool]:
    """A 0700 directory of the server's user for its Unix socket: `home`/sock, or, when that path is longer
    than `limit` (the socket's path must fit sun_path), a new private one in /tmp. Returns it and whether it
    is such a temporary directory (to remove after the server stops)."""
    wanted = home / "sock"
    if len(str(wanted)) <= limit:
        wanted.mkdir(exist_ok=True)
        path, temporary = wanted, False
    else:
        path, temporary = Path(tempfile.mkdtemp(prefix="dbsweep-")), True
    path.chmod(0o700)
    chown(path, user)
    return path, temporary


def check_reachable(home: Path, user: str | None) -> None:
    """The server's user must reach its home (the data directory under it); a private parent (mode 700)
    stops it, and the error names that parent."""
    if user is None:
        return
    if procs.run_as(["test", "-w", home], user=user).returncode == 0:
        return
    blocking = next((p for p in reversed(home.parents) if not p.stat().st_mode & 0o001), None)
    where = f"{blocking} is private (mode {blocking.stat().st_mode & 0o777:o})" if blocking else "permissions"
    raise ServerError(
        f"the server runs as user {user!r}, who cannot reach {home}: {where}; "
        "put the workspace somewhere that user can reach (e.g. under /tmp or /srv)."
    )


def log_size(log: Path) -> int:
    try:
        return log.stat().st_size
    except OSError:
        return 0


class NotReady(Exception):
    """What a probe of a starting server got instead of an answer; `refused` when the server answered and refused
    dbsweep's credentials (waiting will not change that)."""

    def __init__(self, message: str, *, refused: bool = False) -> None:
        super().__init__(message)
        self.refused = refused


def start_on_a_free_port(
    launch: Callable[[], None],
    ready: Callable[[], None],
    abandon: Callable[[], None],
    bind_failed: Callable[[], bool],
    attempts: int = 3,
) -> None:
    """`launch`es the server on a free port and waits until it is `ready`; when it is not, `abandon`s it, and when
    another process took the port between our probe and the server's bind (`bind_failed`), tries another."""
    for attempt in range(attempts):
        launch()
        try:
            ready()
            return
        except ServerError:
            abandon()
            if attempt < attempts - 1 and bind_failed():
                continue
            raise


def wait_ready(
    proc: subprocess.Popen[bytes],
    title: str,
    log: Path,
    timeout: float,
    probe: Callable[[], None],
    explain: Callable[[], str],
    *,
    hold: Callable[[], bool] | None = None,
    gave_up: Callable[[], bool] | None = None,
) -> None:
    """Returns once `probe` gets an answer from the server `proc` started; raises ServerError, with the lines of
    its log `explain` picks, when it exits, gives up (`gave_up`: the log says it is on its way out, under a
    wrapper that may take long), refuses our credentials or does not answer within `timeout`. While `hold`
    says it is too early, nothing is probed."""
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        if hold is not None and proc.poll() is None and hold():
            time.sleep(0.1)
            continue
        if proc.poll() is not None:
            raise ServerError(
                f"{title} exited during start ({describe_exit(proc.returncode)}); from {log}:\n{explain()}"
            )
        if gave_up is not None and gave_up():
            raise ServerError(f"{title} aborted its start; from {log}:\n{explain()}")
        try:
            probe()
            return
        except NotReady as e:
            last = str(e)
            if e.refused:
                raise ServerError(f"{title} refused dbsweep's generated credentials: {last}") from None
            time.sleep(0.1)
    raise ServerError(f"{title} did not answer within {timeout:.0f} s ({last}); from {log}:\n{explain()}")


def describe_exit(code: int | None) -> str:
    """How a process ended, in words: its exit code, or the signal that killed it."""
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def explaining_lines(
    lines: list[str], explaining: re.Pattern[str], limit: int = 12, noise: re.Pattern[str] | None = None
) -> str:
    """Of a server's output, the lines that explain a failure (`explaining`), else the last ones; `noise`
    drops routine lines that explain nothing. Indented, one per line."""
    lines = [ln for ln in lines if ln.strip() and not (noise and noise.search(ln))]
    hits = [ln for ln in lines if explaining.search(ln)]
    chosen = (hits or lines)[-limit:]
    return "\n".join("    " + ln for ln in chosen) if chosen else "    (the log is empty)"


def log_lines(
    log: Path, explaining: re.Pattern[str], limit: int = 12, start: int = 0, noise: re.Pattern[str] | None = None
) -> str:
    """`explaining_lines` of a server log from byte `start`."""
    try:
        with log.open("rb") as f:
            f.seek(start)
            lines = f.read().decode(errors="replace").splitlines()
    except OSError:
        return f"    (no log at {log})"
    return explaining_lines(lines, explaining, limit, noise)


def stop_left_behind(
    datadir: Path,
    pidfile: Path,
    pid: int,
    proc: psutil.Process | None,
    proof: str | None,
    *,
    server: str,
    stop: tuple[signal.Signals, str],
    last: tuple[signal.Signals, str],
    patience: int,
) -> None:
    """Stops the server a killed dbsweep left on `datadir` when `proof` (the engine's reason to know that
    `proc` is that server) is given: `stop` (signal, what it does), then `last` after `patience` seconds.
    Without proof, or with no process, the PID file is set aside (renamed), never signalled: PIDs are
    recycled. `server` names the process in messages ("postmaster")."""
    if proc is None or proof is None:
        aside = pidfile.with_name(f"{pidfile.name}.stale-{int(time.time())}")
        with contextlib.suppress(OSError):
            pidfile.rename(aside)
        who = "no process" if proc is None else f"a process that is not this data directory's {server}"
        _log.warning("stale PID file in %s names PID %s, %s; set it aside as %s", datadir, pid, who, aside.name)
        return
    _log.warning("a server left behind on %s is still running (%s): stopping it (%s)", datadir, proof, stop[1])
    with contextlib.suppress(psutil.Error):
        proc.send_signal(stop[0])
        try:
            proc.wait(timeout=5)
            return
        except psutil.TimeoutExpired:
            _log.warning(
                "waiting up to %d s more for the server on %s (PID %d) to shut down", patience - 5, datadir, pid
            )
        try:
            proc.wait(timeout=patience - 5)
        except psutil.TimeoutExpired:
            _log.warning("the server on %s (PID %d) did not shut down in %d s: %s", datadir, pid, patience, last[1])
            proc.send_signal(last[0])
            proc.wait(timeout=30)


@dataclass
class ServerInstance(Instance):
    """An instance whose server is a process dbsweep starts: a home in the workspace (the data directory, the
    password, the log) and, while it runs, its process on a free loopback port and a private socket. An engine
    gives what differs: its data directory and init, the server's command line, its probe, its log's patterns,
    how a server left behind is proven and stopped, and the hooks around a start and a stop."""

    install: Install
    home: Path  # holds the data directory, the password and the logs
    config_name: str
    config_text: str
    user: str | None = None
    port: int = 0
    socket_dir: Path | None = None
    proc: subprocess.Popen[Any] | None = None
    _own_socket_dir: bool = False
    _log_start: int = 0  # where this start's lines begin in the (appended) server log
    # A command the server runs under, e.g. ["valgrind", "--tool=cachegrind", ...]; None runs it directly.
    wrapper: list[str] | None = None

    # The server in messages ("Postgres"), and its process in the sentences that say it died ("its postmaster")
    # and that another process holds its PID now ("the server's postmaster").
    title: ClassVar[str]
    died_process: ClassVar[str]
    replaced_process: ClassVar[str]
    # Its clean shutdown: sent by `stop`, and by the kernel when dbsweep dies, so that the data directory stays
    # consistent for a resume.
    shutdown_signal: ClassVar[signal.Signals]
    # The longest socket directory path whose socket (and whatever the server puts beside it) fits sun_path.
    socket_path_max: ClassVar[int]
    # Seconds to wait for the server to answer, directly and under a wrapper (valgrind is tens of times slower).
    ready_timeout: ClassVar[float]
    wrapped_ready_timeout: ClassVar[float]
    # The lines of its log that explain a failure, and routine ones that explain nothing.
    explaining: ClassVar[re.Pattern[str]]
    noise: ClassVar[re.Pattern[str] | None] = None

    # ---- what each engine gives

    @abstractmethod
    def _server_argv(self) -> list[str | Path]:
        """The server's command line (after the wrapper), for the port and socket directory just picked."""

    @abstractmethod
    def _probe(self) -> None:
        """Returns when the server answers; raises NotReady with what it got instead."""

    @abstractmethod
    def _bind_failed(self) -> bool:
        """Whether the log says the server lost its port to another process (a start on another port may work)."""

    @abstractmethod
    def _stop_stale(self) -> None:
        """Stops a server a killed dbsweep left on the data directory, if it is provably that server."""

    def _before_launch(self) -> None:
        """What the server needs once its port and socket directory are known, before it is launched."""

    def _after_ready(self) -> None:
        """What a start does once the server answers (a failure raises ServerError and abandons the start)."""

    def _too_early_to_probe(self) -> bool:
        """Whether the starting server says it is not ready yet, so that a probe would only cost it work."""
        return False

    def _gave_up(self) -> bool:
        """Whether the log says the server is on its way out of its start (under a wrapper, exiting takes long)."""
        return False

    def _abandon(self) -> None:
        """Stops a server whose start failed."""
        self.stop()

    def _after_stop(self) -> None:
        """What is left to stop once the server's process is gone."""

    # ---- the shared lifecycle

    @property
    def log(self) -> Path:
        return self.home / "server.log"

    @property
    def password_file(self) -> Path:
        return self.home / "password"

    @property
    def password(self) -> str:
        return self.password_file.read_text().strip()

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None and self.proc.poll() is None else None

    def log_excerpt(self, start: int = 0) -> str:
        return log_lines(self.log, self.explaining, start=start, noise=self.noise)

    def _fresh_home(self) -> str:
        """An empty home (0700) of the server's user, who must reach it, with a generated password (0600);
        returns the password. A server still running on the old one is stopped first."""
        self._stop_stale()
        if self.home.exists():
            shutil.rmtree(self.home)
        self.home.mkdir(parents=True)
        chown(self.home, self.user)
        self.home.chmod(0o700)
        self._check_reachable()
        password = secrets.token_urlsafe(24)
        self._private_file(self.password_file, password + "\n")
        return password

    def _private_file(self, path: Path, text: str) -> None:
        path.write_text(text)
        path.chmod(0o600)
        chown(path, self.user)

    def _check_reachable(self) -> None:
        check_reachable(self.home, self.user)

    def _pick_socket_dir(self) -> Path:
        path, self._own_socket_dir = socket_dir(self.home, self.socket_path_max, self.user)
        return path

    def start(self, timeout: float | None = None) -> None:
        """Starts on a free loopback port and a private socket (under `wrapper`, if any); waits until it answers."""
        if timeout is None:
            timeout = self.wrapped_ready_timeout if self.wrapper else self.ready_timeout
        self._stop_stale()

        def launch() -> None:
            self.socket_dir = self._pick_socket_dir()
            self.port = free_port()
            self._before_launch()
            self._log_start = log_size(self.log)
            logf = self.log.open("ab")
            try:
                self.proc = procs.spawn(
                    [*(self.wrapper or []), *self._server_argv()],
                    user=self.user,
                    stdout=logf,
                    stderr=subprocess.STDOUT,
                    death_signal=self.shutdown_signal,
                )
            finally:
                logf.close()

        def ready() -> None:
            self._wait_ready(timeout)
            self._after_ready()

        start_on_a_free_port(launch, ready, self._abandon, self._bind_failed)

    def _wait_ready(self, timeout: float) -> None:
        assert self.proc is not None
        wait_ready(
            self.proc,
            self.title,
            self.log,
            timeout,
            self._probe,
            lambda: self.log_excerpt(self._log_start),
            hold=self._too_early_to_probe,
            gave_up=self._gave_up,
        )

    def _log_since_start(self) -> str:
        """What the server wrote to its log since this start."""
        try:
            with self.log.open("rb") as f:
                f.seek(self._log_start)
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def _stop(self, timeout: float) -> None:
        """The clean shutdown (then a kill after `timeout`), the server left behind if any, and our socket
        directory: never leaves the server behind."""
        if self.proc is not None:
            procs.terminate(self.proc, self.shutdown_signal, timeout=timeout)
            self.proc = None
        self._stop_stale()
        self._after_stop()
        if self._own_socket_dir and self.socket_dir is not None:
            shutil.rmtree(self.socket_dir, ignore_errors=True)
            self.socket_dir = None

    def watermark(self) -> Watermark:
        """The server's identity and the end of its log now, to hold a step against (`disturbance_since`)."""
        assert self.proc is not None, "a started server"
        try:
            started = psutil.Process(self.proc.pid).create_time()
        except psutil.Error:
            started = 0.0
        return Watermark(self.proc.pid, started, log_size(self.log))

    def disturbance_since(self, mark: Watermark) -> str | None:
        """Why the server that served a step is not the process that began it (it died, or its PID is another
        process's now), in one sentence with its evidence; None when it is the same process."""
        excerpt = f"from {self.log}:\n{self.log_excerpt(mark.log_offset)}"
        if self.proc is None or self.proc.pid != mark.pid or self.proc.poll() is not None:
            code = self.proc.returncode if self.proc is not None and self.proc.pid == mark.pid else None
            how = describe_exit(code) if code is not None else "gone"
            return f"the server died during the step: {self.died_process} (PID {mark.pid}) {how}; {excerpt}"
        try:
            started = psutil.Process(mark.pid).create_time()
        except psutil.Error:
            started = -1.0
        if started != mark.started:
            return f"{self.replaced_process} (PID {mark.pid}) is not the process that started the step"
        return None
