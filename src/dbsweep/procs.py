"""Child processes that never outlive dbsweep.

Every server and load client is started here. Each child asks the kernel to
signal it when dbsweep dies (PR_SET_PDEATHSIG), so even a SIGKILL of dbsweep
stops them; on a normal exit, an error or Ctrl-C, `stop_all` stops them in order.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import logging
import os
import pwd
import resource
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from dbsweep import placement

_log = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)

_children: list[subprocess.Popen[Any]] = []
_lock = threading.Lock()


def killed_by(returncode: int) -> str:
    """The name of the signal a negative return code says killed a child (SIGKILL), or "signal N"."""
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def die_with_parent(sig: int, cpus: frozenset[int] | None = None) -> Callable[[], None]:
    """A preexec_fn: the child gets `sig` when dbsweep dies, and runs on `cpus` if given (at the fixed priority
    if they are a `placement.Lockstep`)."""

    def preexec() -> None:
        # dbsweep stops some children with SIGINT (a server's fast shutdown, perf): when dbsweep itself was started
        # with SIGINT ignored (in the background of a script), the child would inherit that and not stop.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if cpus is not None:
            # Before exec, so every thread the child starts inherits the mask (and the priority).
            os.sched_setaffinity(0, cpus)
            if isinstance(cpus, placement.Lockstep):
                with contextlib.suppress(PermissionError):  # the caller sees it: placement.in_lockstep
                    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(placement.LOCKSTEP_PRIORITY))
        # Runs in the child after the switch to the server user: a credential change
        # clears the death signal, so it must be set here, after it.
        _libc.prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0)
        if os.getppid() == 1:  # the parent died before prctl took effect
            os.kill(os.getpid(), sig)

    return preexec


def spawn(
    args: Sequence[str | Path],
    *,
    user: str | None = None,
    death_signal: int = signal.SIGKILL,
    stdout: int | IO[Any] | None = None,
    stderr: int | IO[Any] | None = None,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    text: bool = False,
    cpus: frozenset[int] | None = None,
    stdin: int | IO[Any] = subprocess.DEVNULL,
) -> subprocess.Popen[Any]:
    """Starts a child in its own session (so Ctrl-C reaches dbsweep, which stops it in order),
    optionally pinned to `cpus`; it reads nothing unless given a `stdin`."""
    kwargs: dict[str, Any] = {}
    if user is not None and os.geteuid() == 0:
        pw = pwd.getpwnam(user)
        kwargs.update(user=pw.pw_uid, group=pw.pw_gid, extra_groups=[])
    proc = subprocess.Popen(
        [str(a) for a in args],
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        env=env,
        cwd=cwd,
        text=text,
        start_new_session=True,
        preexec_fn=die_with_parent(death_signal, cpus),
        **kwargs,
    )
    with _lock:
        _children.append(proc)
    return proc


def forget(proc: subprocess.Popen[Any]) -> None:
    with _lock:
        if proc in _children:
            _children.remove(proc)


# Waits longer than this are said out loud: a silent minute looks like a hang.
_QUIET_WAIT_S = 5.0


def terminate(proc: subprocess.Popen[Any], sig: int = signal.SIGTERM, timeout: float = 30.0) -> None:
    """Sends `sig`, waits, then kills; the process is reaped either way."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(sig)
        try:
            try:
                proc.wait(timeout=min(timeout, _QUIET_WAIT_S))
            except subprocess.TimeoutExpired:
                if timeout <= _QUIET_WAIT_S:
                    raise
                name = Path(str(proc.args[0] if isinstance(proc.args, list) else proc.args)).name
                _log.info(
                    "waiting up to %.0f s more for %s (PID %d) to stop after %s",
                    timeout - _QUIET_WAIT_S,
                    name,
                    proc.pid,
                    signal.Signals(sig).name,
                )
                proc.wait(timeout=timeout - _QUIET_WAIT_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    forget(proc)


def follow(
    proc: subprocess.Popen[Any],
    poll: Callable[[], None],
    on_exit: Callable[[], None] | None = None,
    every: float = 0.25,
) -> resource.struct_rusage:
    """Calls `poll` every `every` seconds while `proc` runs and once after it exits, then `on_exit`, then reaps it
    (setting its returncode) and returns its resource usage (`os.wait4`). The exited process is not reaped before
    `on_exit`: it stays readable for the samplers' last look."""
    ended = False
    while not ended:
        ended = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        poll()
        if not ended:
            time.sleep(every)
    if on_exit is not None:
        on_exit()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return usage


def stop_all() -> None:
    """Stops every child still running, newest first."""
    with _lock:
        procs = list(reversed(_children))
    for p in procs:
        terminate(p, signal.SIGTERM, timeout=30.0)


def run_as(
    args: Sequence[str | Path],
    *,
    user: str | None,
    env: dict[str, str] | None = None,
    timeout: float = 600,
    stdin: int | IO[Any] = subprocess.DEVNULL,
) -> subprocess.CompletedProcess[str]:
    """Runs a short command to completion (initdb and the like), as `user` when root, reading `stdin` (an open
    file: what it reads is never on a command line)."""
    proc = spawn(args, user=user, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True, stdin=stdin)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except BaseException:
        terminate(proc, signal.SIGKILL)
        raise
    forget(proc)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, None)


class _Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP, handled like Ctrl-C so cleanup runs."""


@contextlib.contextmanager
def cleanup_on_exit() -> Iterator[None]:
    """Turns SIGTERM and SIGHUP into KeyboardInterrupt and stops all children on the way out."""

    def handler(signum: int, frame: object) -> None:
        raise _Interrupted(signal.Signals(signum).name)

    old = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        # A second Ctrl-C during cleanup must not leave servers behind.
        old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            stop_all()
        finally:
            signal.signal(signal.SIGINT, old_int)
            for s, h in old.items():
                signal.signal(s, h)
