"""What the server engines' instances share: a free loopback port, ownership of the files they make for the
server's user, starting on a port another process may take first and waiting until the server answers (each
engine gives its probe), how a server process ended, the lines of its log that explain a failure (each engine
gives the patterns its own server writes), and stopping a server a killed dbsweep left behind once the engine
has proven the process is that server."""

from __future__ import annotations

import contextlib
import logging
import os
import pwd
import re
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from dbsweep import procs
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
