"""Runs pgbench for one step: Postgres's own benchmark client, one fixed binary for every target of a study. Its
`-P 1` progress lines (stderr) are the step's per-second lines while it runs; when it ends, its per-transaction
logs (`-l`), cut at the end of the warm-up, are the step's result (`logs.measured`), with its CPU from the
kernel's account of the finished process (wait4). The load (`pgbench -i`) reports its rows and the seconds of
each of its phases.

The command a suite builds is pgbench's whole command line but the connection: the binary, then its options.
The connection comes from the instance's `Access` (the load client's `--host/--port/--user/--dbname`), and its
password travels as PGPASSWORD in pgbench's environment only."""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbsweep import procs
from dbsweep.engines.base import Access
from dbsweep.errors import DbsweepError, StepError
from dbsweep.loadclient import StepOutput
from dbsweep.results.model import EndedEarly, Latency, StepResult
from dbsweep.suites.pgbench import output, steps

# Where Debian installs each major version's programs: /usr/lib/postgresql/<major>/bin/pgbench. /usr/bin/pgbench
# is Debian's pg_wrapper, a script that picks a version by the cluster it finds: never the fixed binary wanted.
DEBIAN_ROOT = Path("/usr/lib/postgresql")
WRAPPER = "pg_wrapper"
_POLL_S = 0.25
_VERSION = re.compile(r"^pgbench \(PostgreSQL\) (?P<version>\d+(?:\.\d+)*)")
# The load client's connection flags and pgbench's for the same thing; the database is pgbench's last argument.
_FLAGS = {"--host": "--host", "--port": "--port", "--user": "--username"}


@dataclass(frozen=True)
class Program:
    """A pgbench binary and what it says it is (`pgbench --version`)."""

    path: Path
    version: str  # "pgbench (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)"

    @property
    def number(self) -> str:
        """15.18"""
        m = _VERSION.match(self.version)
        return m["version"] if m else ""


def _major(d: Path) -> tuple[int, ...]:
    return tuple(int(p) for p in d.name.split(".")) if re.fullmatch(r"\d+(?:\.\d+)?", d.name) else ()


def debian_majors(root: Path | None = None) -> list[str]:
    """The major versions installed under Debian's root, oldest first (whether or not they carry pgbench)."""
    root = root or DEBIAN_ROOT
    if not root.is_dir():
        return []
    return [d.name for d in sorted((d for d in root.iterdir() if _major(d)), key=_major)]


def newest_debian(root: Path | None = None) -> Path | None:
    """The newest Debian-installed /usr/lib/postgresql/<major>/bin/pgbench; None when no major has one."""
    root = root or DEBIAN_ROOT
    found = [root / m / "bin" / "pgbench" for m in debian_majors(root)]
    found = [p for p in found if p.is_file() and os.access(p, os.X_OK)]
    return found[-1] if found else None


@functools.lru_cache(maxsize=16)
def _version(path: str, mtime_ns: int) -> str:
    try:
        r = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30, check=False, env=_env({}))
    except (OSError, subprocess.TimeoutExpired) as e:
        raise DbsweepError(f"{path} --version did not run: {e}") from None
    line = (r.stdout.strip().splitlines() or [""])[0]
    if r.returncode != 0 or not _VERSION.match(line):
        said = line or (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[0]
        raise DbsweepError(f"{path} is not pgbench: `--version` printed {said!r}")
    return line


def program(path: Path) -> Program:
    """The binary at `path` with its version; DbsweepError when it is not there, not executable, Debian's wrapper
    or does not answer `--version` as pgbench does."""
    if not path.is_file():
        raise DbsweepError(f"{path} does not exist")
    if not os.access(path, os.X_OK):
        raise DbsweepError(f"{path} is not executable")
    if path.resolve().name == WRAPPER:
        raise DbsweepError(
            f"{path} is Debian's {WRAPPER}, which picks a pgbench by the clusters it finds rather than running one "
            "fixed binary; name /usr/lib/postgresql/<major>/bin/pgbench"
        )
    return Program(path, _version(str(path), path.stat().st_mtime_ns))


def _env(extra: dict[str, str]) -> dict[str, str]:
    """pgbench's environment: dbsweep's without any PG* variable (PGOPTIONS, PGHOST, ... would change what it
    runs or where), messages in English (they are parsed), and `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    return {**env, "LC_ALL": "C", "LANG": "C", **extra}


def connection(conn: Access) -> tuple[list[str], dict[str, str]]:
    """pgbench's connection arguments (the database last) and environment (PGPASSWORD) for the load client's."""
    args = list(conn.args)
    if len(args) % 2:
        raise StepError(f"the instance's connection arguments do not come in pairs: {' '.join(args)}")
    out: list[str] = []
    dbname: str | None = None
    for flag, value in zip(args[::2], args[1::2], strict=True):
        if flag == "--dbname":
            dbname = value
        elif flag in _FLAGS:
            out += [_FLAGS[flag], value]
        else:
            raise StepError(f"pgbench cannot take the instance's connection argument {flag} {value}")
    if dbname is not None:
        out.append(dbname)
    extra = {k: v for k, v in conn.env.items() if k != "DBSWEEP_PASSWORD"}
    if "DBSWEEP_PASSWORD" in conn.env:
        extra["PGPASSWORD"] = conn.env["DBSWEEP_PASSWORD"]
    return out, _env(extra)


# ---- what a command runs ------------------------------------------------------------------------------------


def _value(args: Sequence[str], short: str, long: str | None = None) -> str | None:
    """The value of an option as `-x V`, `-xV`, `--long=V` or `--long V` (the last one given)."""
    found = None
    for i, a in enumerate(args):
        if a == short or (long is not None and a == long):
            found = args[i + 1] if i + 1 < len(args) else None
        elif long is not None and a.startswith(long + "="):
            found = a.partition("=")[2]
        elif a.startswith(short) and len(a) > len(short) and not a.startswith("--"):
            found = a[len(short) :]
    return found


def script_of(args: Sequence[str]) -> tuple[str, int]:
    """What a command runs (`builtin:NAME` or the script file's path) and its SQL statements per transaction."""
    builtin = _value(args, "-b", "--builtin")
    if builtin is not None:
        name = builtin.partition("@")[0]
        if name not in steps.BUILTINS:
            raise StepError(f"pgbench's built-in script {name!r} is not one this suite knows")
        return f"builtin:{name}", steps.BUILTINS[name].statements
    path = _value(args, "-f", "--file")
    if path is None:
        raise StepError("a pgbench command names no script (-b NAME or -f FILE)")
    file = Path(path.partition("@")[0])
    try:
        return str(file), steps.statements_in(file.read_text())
    except OSError as e:
        raise StepError(f"pgbench's script {file} cannot be read: {e.strerror or e}") from None


def step_of(args: Sequence[str]) -> str:
    """The step a command runs, when the caller does not say: the load, a built-in script, or custom:FILE."""
    if "-i" in args or "--initialize" in args:
        return steps.LOAD
    what, _ = script_of(args)
    return what.removeprefix("builtin:") if what.startswith("builtin:") else steps.CUSTOM + Path(what).stem


# ---- running it --------------------------------------------------------------------------------------------


@dataclass
class _Live:
    """What the run said on stderr as it went: the per-second lines and the clients that aborted."""

    warmup: float
    loading: bool
    seconds: list[dict[str, Any]]
    aborts: dict[int, tuple[str, float]]  # client -> (pgbench's words, seconds into the run)
    errors: list[str]
    last_t: float = 0.0
    last_rows: int = 0
    rows_total: int | None = None

    def take(self, line: str, at: float, on_second: Callable[[dict[str, Any]], None] | None) -> None:
        new: dict[str, Any] | None = None
        if self.loading:
            got = output.load_progress(line)
            if got is not None:
                done, self.rows_total, elapsed = got
                new = {"type": "second", "t": round(elapsed, 3), "phase": "measure", "ops": done - self.last_rows}
                new |= {"errors": 0, "max_us": 0}
                self.last_rows = done
        elif (s := output.progress(line)) is not None:
            span = max(s.t - self.last_t, 1e-9)
            self.last_t = s.t
            phase = "warmup" if s.t <= self.warmup + 1e-6 else "measure"
            new = {"type": "second", "t": round(s.t), "phase": phase, "ops": round(s.tps * span)}
            new |= {"errors": s.failed or 0, "max_us": 0, "tps": s.tps, "lat_ms": s.latency_ms}
        if new is not None:
            self.seconds.append(new)
            if on_second is not None:
                on_second(new)
            return
        client = output.aborted(line)
        if client is not None:
            self.aborts.setdefault(client, (output.message(line), at))
        if line.startswith("pgbench: error:") or line.startswith(("FATAL:", "ERROR:")):
            self.errors.append(output.message(line))


def _new_lines(path: Path, offset: int) -> tuple[list[str], int]:
    """Complete lines written to `path` since `offset` (pgbench ends its load's progress lines in \\r on a
    terminal, \\n otherwise: both end a line)."""
    try:
        with path.open("rb") as f:
            f.seek(offset)
            data = f.read()
    except OSError:
        return [], offset
    end = max(data.rfind(b"\n"), data.rfind(b"\r"))
    if end < 0:
        return [], offset
    text = data[: end + 1].decode(errors="replace")
    return [ln for ln in re.split(r"[\r\n]", text) if ln.strip()], offset + end + 1


def run(
    command: Sequence[str],
    conn: Access,
    log: Path,
    on_second: Callable[[dict[str, Any]], None] | None = None,
    *,
    step: str | None = None,
    warmup: float = 0.0,
    cpus: frozenset[int] | None = None,
    on_start: Callable[[int], None] | None = None,
    on_summary: Callable[[], None] | None = None,
) -> StepOutput:
    """Runs `COMMAND` (the pgbench binary and its options) against `conn`; returns the step's result, named
    `step` (by default from the command), its measured part the transactions that ended after `warmup` seconds.

    pgbench's stderr is the step's log; its stdout (the summary it prints) goes beside it (`.out`), and its
    per-transaction logs (when the command has `-l`) into a directory beside it (`.transactions/`)."""
    if not command:
        raise StepError("an empty pgbench command")
    try:
        prog = program(Path(command[0]))
    except DbsweepError as e:
        raise StepError(f"pgbench cannot run: {e}") from None
    args = list(command[1:])
    step = step or step_of(args)
    loading = step == steps.LOAD
    conn_args, env = connection(conn)
    log.parent.mkdir(parents=True, exist_ok=True)
    out_file = log.with_name(log.name + ".out")
    logged = "-l" in args or "--log" in args
    tx_dir = log.with_name(log.name + ".transactions")
    shutil.rmtree(tx_dir, ignore_errors=True)
    extra: list[str] = []
    if logged:
        tx_dir.mkdir(parents=True)
        extra.append(f"--log-prefix={tx_dir / 'pgbench_log'}")
    argv = [*conn.wrapper, str(prog.path), *args, *extra, *conn_args]
    live = _Live(warmup=warmup, loading=loading, seconds=[], aborts={}, errors=[])
    started = time.monotonic()
    with log.open("wb") as err, out_file.open("wb") as out:
        proc = procs.spawn(argv, stdout=out, stderr=err, env=env, cpus=cpus)
        try:
            if on_start is not None:
                on_start(proc.pid)
            offset = 0

            def poll() -> None:
                nonlocal offset
                lines, offset = _new_lines(log, offset)
                for line in lines:
                    live.take(line, time.monotonic() - started, on_second)

            usage = procs.follow(proc, poll, on_summary, _POLL_S)
        finally:
            procs.terminate(proc)
    wall = time.monotonic() - started
    tail_text = log.read_bytes()[offset:].decode(errors="replace")
    for line in re.split(r"[\r\n]", tail_text):
        if line.strip():
            live.take(line, wall, on_second)
    stderr_text = log.read_text(errors="replace")
    stdout_text = out_file.read_text(errors="replace")
    rc = proc.returncode
    if rc is not None and rc < 0:
        raise StepError(f"pgbench was killed by {procs.killed_by(rc)} before the step ended")
    shown = [prog.path.name, *args, *extra, *conn_args]
    detail: dict[str, Any] = {
        "pgbench": str(prog.path),
        "pgbench_version": prog.version,
        "command": shown,
        "u_cpu": usage.ru_utime,
        "s_cpu": usage.ru_stime,
        "rss_kb": usage.ru_maxrss,
        "wall_s": wall,
    }
    common: dict[str, Any] = {
        "suite": "pgbench",
        "step": step,
        "client_cpu_user_s": usage.ru_utime,
        "client_cpu_sys_s": usage.ru_stime,
        "client_max_rss_kb": usage.ru_maxrss,
    }
    if loading:
        return _loaded(args, rc, stderr_text, live, detail, common)
    return _ran(args, rc, stdout_text, stderr_text, live, tx_dir if logged else None, warmup, wall, detail, common)


def _tail(text: str, n: int = 3) -> str:
    lines = [output.message(ln) for ln in text.strip().splitlines() if ln.strip()]
    return "; ".join(lines[-n:]) or "it printed nothing"


def _loaded(
    args: list[str], rc: int | None, stderr_text: str, live: _Live, detail: dict[str, Any], common: dict[str, Any]
) -> StepOutput:
    if rc != 0:
        raise StepError(f"pgbench -i failed (exit {rc}): {_tail(stderr_text)}")
    try:
        done = output.loaded(stderr_text)
    except ValueError as e:
        raise StepError(f"pgbench -i printed no result: {e}; its last lines: {_tail(stderr_text)}") from None
    scale = int(_value(args, "-s", "--scale") or 1)
    rows = live.rows_total or steps.ROWS_PER_SCALE * scale
    rate = rows / done.seconds if done.seconds > 0 else 0.0
    detail |= {"scale": scale, "phases": done.phases, "load_s": done.seconds}
    result = StepResult(
        **common,
        ops_name="rows",
        operations=rows,
        events=rows,
        seconds=done.seconds,
        rate=rate,
        tps=rate,
        detail=detail,
    )
    return StepOutput(result=result, seconds=live.seconds)


def _ran(
    args: list[str],
    rc: int | None,
    stdout_text: str,
    stderr_text: str,
    live: _Live,
    tx_dir: Path | None,
    warmup: float,
    wall: float,
    detail: dict[str, Any],
    common: dict[str, Any],
) -> StepOutput:
    said = output.summary(stdout_text)
    if said.transactions is None:
        # Nothing ran: a connection refused, an option it does not know, a script it cannot parse.
        raise StepError(f"pgbench failed (exit {rc}): {_tail(stderr_text)}")
    script, per_event = script_of(args)
    clients = int(_value(args, "-c", "--client") or 1)
    detail |= {
        "script": script,
        "statements_per_event": per_event,
        "warmup_s": warmup,
        "mode": said.fields.get("query mode", _value(args, "-M", "--protocol") or "simple"),
        "clients": int(said.fields.get("number of clients", clients)),
        "threads": int(said.fields.get("number of threads", _value(args, "-j", "--jobs") or 1)),
        "scale_factor": said.fields.get("scaling factor"),
        "pgbench_summary": {
            "transactions": said.transactions,
            "failed": said.failed,
            "tps": said.tps,
            "latency_ms": said.latency_ms,
            "stddev_ms": said.stddev_ms,
        },
    }
    if not script.startswith("builtin:"):
        detail["script_sha256"] = hashlib.sha256(Path(script).read_bytes()).hexdigest()
    if tx_dir is not None:
        from dbsweep.suites.pgbench import logs  # numpy: only where a step's logs are read

        files = sorted(tx_dir.glob("pgbench_log.*"))
        m = logs.measured(logs.read_logs(files), warmup)
        detail |= {"transaction_logs": len(files), "latency_stddev_us": m.stddev_us, "start_epoch_us": m.start_us}
        events, warm_events, seconds, rate = m.events, m.warmup_events, m.seconds, m.rate
        lat, hist, errors, lines = m.latency, m.histogram, m.errors, m.lines
    else:
        # A run without logs (the instruction pass's): pgbench's own account of the whole run.
        events, warm_events = said.transactions, 0
        rate = said.tps or 0.0
        seconds = events / rate if rate > 0 else wall
        lat = Latency(mean=(said.latency_ms or 0.0) * 1000)
        hist = None
        errors = dict(said.failures) or ({"failed": said.failed} if said.failed else {})
        lines = live.seconds
    detail |= {"warmup_events": warm_events, "statements": events * per_event}
    samples = [message for message, _ in live.aborts.values()][:3]
    if sum(errors.values()):
        samples.append(
            f"pgbench counted {sum(errors.values())} failed transactions "
            f"({', '.join(f'{k} {v}' for k, v in errors.items())}): serialization or deadlock failures"
        )
    ended = None
    if live.aborts or rc != 0:
        lost = len(live.aborts) or clients
        at = min((at for _, at in live.aborts.values()), default=wall)
        why = next(iter(live.aborts.values()))[0] if live.aborts else (live.errors[-1] if live.errors else "")
        exited = f"pgbench exited {rc}" if rc not in (0, None) else ""
        reason = f"{why} ({exited})" if why and exited else why or exited
        ended = EndedEarly(connections_lost=lost, at_s=at, reason=reason)
        detail["aborted"] = [message for message, _ in live.aborts.values()]
    result = StepResult(
        **common,
        ops_name="transactions",
        operations=events,
        events=events,
        seconds=seconds,
        rate=rate,
        tps=rate,
        latency_us=lat,
        histogram=hist,
        errors=errors,
        error_count=sum(errors.values()),
        error_samples=samples,
        ended_early=ended,
        detail=detail,
    )
    return StepOutput(result=result, seconds=lines)
