"""Sampled CPU profiles with Linux perf, folded stacks and flame graphs: where a server spends its time.

`record` attaches `perf record` to running processes (a Postgres postmaster and its children, say) for the
duration of a `with` block; `fold` turns the perf.data into folded stacks (`comm;root;...;leaf` -> samples),
which `write_folded` keeps as text so they can be drawn again without perf or the binaries; `flamegraph_svg`
and `diff_svg` draw them. `stat` counts events (`perf stat`) the same way. `detect` says what works here.

Folding and drawing are done by `dbsweep-flame` (load/src/bin/flame.rs), a thin wrapper of the `inferno`
crate: collapse-perf, flamegraph and diff-folded, the Rust port of Brendan Gregg's FlameGraph scripts.

What perf does with the processes it is given, measured with perf 6.1 (`--pid`, the default inherit on):

* It attaches to every thread each pid has when it starts, and follows what they fork or clone afterwards,
  grandchildren included: a backend the postmaster forks for a new connection is profiled, its samples
  under its own pid and its own comm. Processes that already exist are NOT followed unless their pids are
  given: pass the postmaster's pid and its existing children (`with_children(postmaster_pid)`).
* `perf record` exits on its own once every process it follows has exited (forked children included);
  `perf stat` goes on until it is stopped. Both write their results when stopped with SIGINT, then exit
  *killed by SIGINT*: that exit status is their normal one here.
* Each perf is started with its events disabled and enabled through its control pipe (`--control`, `-D -1`);
  the `with` block's body runs only once perf has acknowledged, so nothing before it is lost to perf's start-up.

Stacks (measured on a small C program and on Postgres 15): `call_graph="fp"` (perf's `-g`) walks frame
pointers: cheap (~40 bytes a sample), but only usable on code built with `-fno-omit-frame-pointer`; on code
built without it (gcc's default at -O1 and up, so most source builds) it gives the leaf frame alone. Even with
frame pointers, the caller of a leaf function that sets up no frame is missing (gcc omits it in leaves). Debian
builds its Postgres with -fno-omit-frame-pointer: fp stacks are whole there, but static functions show as
`[postgres]` without the debug symbols (postgresql-NN-dbgsym). `call_graph="dwarf"` copies 8 KiB of stack a
sample and unwinds it afterwards with the binaries' DWARF CFI (.eh_frame, which stripped binaries keep): whole
stacks without frame pointers, 10-100x the data and a slower `fold`.

Symbols are read when folding, from the binaries at their paths: fold before a build is replaced or removed
(perf's build-id cache in ~/.debug is not filled, so that a sweep of builds does not copy every one there),
and keep the folded stacks.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any, TypeAlias

import psutil

from dbsweep import paths
from dbsweep.errors import DbsweepError
from dbsweep.procs import die_with_parent

HARDWARE_EVENTS: tuple[str, ...] = ("cycles", "instructions", "cache-misses", "branch-misses")
STAT_EVENTS: tuple[str, ...] = ("task-clock", "context-switches", "cpu-migrations", "page-faults", *HARDWARE_EVENTS)
CALL_GRAPHS = re.compile(r"fp|dwarf(,\d+)?|lbr")

_ACK_TIMEOUT_S = 60.0  # for perf to attach to every thread and answer "enable"
_STOP_TIMEOUT_S = 120.0  # for perf to write its data after SIGINT (perf record reads build ids from the binaries)
_PARANOID = Path("/proc/sys/kernel/perf_event_paranoid")
# What perf script prints for `fold`: no period in the header, so inferno counts samples, not nanoseconds.
_SCRIPT_FIELDS = "comm,pid,tid,time,event,ip,sym,dso"
_NO_PERF = "perf is not on PATH (Debian: apt-get install linux-perf)"
_SAMPLES = re.compile(r"\((\d+) samples\)")

Count: TypeAlias = int | float  # hardware and software counts are integers; clocks (task-clock, cpu-clock) msec


class ProfileError(DbsweepError):
    """perf or dbsweep-flame failed; the message carries what they said."""


@dataclass(frozen=True)
class PerfSupport:
    """What perf can do on this machine, as tried just now."""

    perf: str | None  # its path, None when not on PATH
    version: str | None  # "6.1.187"
    paranoid: int | None  # /proc/sys/kernel/perf_event_paranoid
    cpu_clock: bool  # `perf record -e cpu-clock` of a process of ours gave samples
    hardware: dict[str, bool]  # each of HARDWARE_EVENTS: whether `perf stat` counted it
    reason: str | None  # one line on what does not work; None when everything does

    @property
    def can_sample(self) -> bool:
        return self.cpu_clock


def _perf_path() -> str | None:
    return shutil.which("perf")


def _one_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return "; ".join(lines[-3:]) if lines else "(no message)"


def _spinner() -> subprocess.Popen[bytes]:
    """A child that burns CPU until killed: something to sample."""
    return subprocess.Popen(
        [sys.executable, "-c", "while True: pass"],
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=die_with_parent(signal.SIGKILL),
    )


def _kill(proc: subprocess.Popen[Any]) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
    proc.wait()


def detect() -> PerfSupport:
    """Tries perf here: its version, a 0.1 s cpu-clock recording of a child of ours, and a count of the hardware
    events. Takes about a second."""
    paranoid: int | None = None
    with contextlib.suppress(OSError, ValueError):
        paranoid = int(_PARANOID.read_text().strip())
    no_hw = dict.fromkeys(HARDWARE_EVENTS, False)
    perf = _perf_path()
    if perf is None:
        return PerfSupport(None, None, paranoid, False, no_hw, _NO_PERF)
    try:
        v = subprocess.run([perf, "--version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return PerfSupport(perf, None, paranoid, False, no_hw, f"perf --version failed: {e}")
    if v.returncode != 0:
        # Debian's /usr/bin/perf is a wrapper that fails when no perf matches the running kernel.
        return PerfSupport(perf, None, paranoid, False, no_hw, f"perf does not run: {_one_line(v.stderr + v.stdout)}")
    m = re.search(r"perf version (\S+)", v.stdout)
    version = m.group(1) if m else v.stdout.strip()

    reasons: list[str] = []
    cpu_clock = False
    spinner = _spinner()
    try:
        with tempfile.TemporaryDirectory(prefix="dbsweep-perf-") as tmp, record([spinner.pid], Path(tmp)) as rec:
            time.sleep(0.1)
        cpu_clock = bool(rec.samples)
        if not cpu_clock:
            reasons.append(f"perf record -e cpu-clock took no sample of a busy process: {_one_line(rec.messages)}")
    except ProfileError as e:
        reasons.append(f"perf record -e cpu-clock failed: {_one_line(str(e))}")
    finally:
        _kill(spinner)

    hardware = dict(no_hw)
    try:
        s = subprocess.run(
            [perf, "stat", "-x,", "-e", ",".join(HARDWARE_EVENTS), "--", "true"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if s.returncode != 0:
            reasons.append(f"perf stat failed: {_one_line(s.stderr)}")
        else:
            hardware = {e: c is not None for e, c in parse_stat(s.stderr, HARDWARE_EVENTS).items()}
    except (OSError, subprocess.TimeoutExpired) as e:
        reasons.append(f"perf stat failed: {e}")
    missing = [e for e, ok in hardware.items() if not ok]
    if missing and not any(r.startswith("perf stat") for r in reasons):
        reasons.append(
            f"hardware events not supported here: {', '.join(missing)} (a VM without a virtual PMU?); "
            "sample with cpu-clock"
        )
    if paranoid is not None and paranoid > 1 and os.geteuid() != 0 and not cpu_clock:
        reasons.append(f"perf_event_paranoid is {paranoid}: run as root or lower it to 1")
    return PerfSupport(perf, version, paranoid, cpu_clock, hardware, "; ".join(reasons) or None)


def with_children(pid: int) -> list[int]:
    """`pid` and every process it has now, children of children included: what `record` and `stat` need to
    be given for a Postgres server (the postmaster, its auxiliary processes and the backends already there)."""
    proc = psutil.Process(pid)
    return [pid, *(c.pid for c in proc.children(recursive=True))]


class _Perf:
    """One perf process attached to `pids`, its events enabled once it says so, stopped with SIGINT.

    Only the process started here is ever signalled. Whatever happens (error, Ctrl-C), it is stopped before
    `start` or `stop` returns or raises, and killed if SIGINT does not stop it."""

    _what = "perf"

    def __init__(self, pids: Collection[int], out_dir: Path, perf: str | None) -> None:
        pids = list(pids)
        if not pids or any(not isinstance(p, int) or p <= 0 for p in pids):
            raise ValueError(f"pids must be positive process ids, not {pids!r}")
        self.pids = pids
        self.out_dir = out_dir
        self._perf = perf or _perf_path()
        self._proc: subprocess.Popen[bytes] | None = None
        self.perf_pid: int | None = None  # the perf process's pid, kept once it is stopped
        self._control: int | None = None
        self._ack: int | None = None
        self._log: IO[bytes] | None = None
        self.messages = ""  # perf's stderr, once stopped
        self.returncode: int | None = None

    def _args(self) -> list[str]:
        raise NotImplementedError

    def start(self) -> None:
        if self._proc is not None:
            raise ProfileError(f"{self._what} is started already")
        if self._perf is None:
            raise ProfileError(_NO_PERF)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        ctl_r, ctl_w = os.pipe()
        ack_r, ack_w = os.pipe()
        try:
            self._log = tempfile.TemporaryFile()  # noqa: SIM115  (closed in _close)
            args = [
                self._perf,
                *self._args(),
                "--control",
                f"fd:{ctl_r},{ack_w}",
                "--delay",
                "-1",  # events disabled until "enable" on the control pipe
                "--pid",
                ",".join(str(p) for p in self.pids),
            ]
            self._proc = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self._log,
                pass_fds=(ctl_r, ack_w),
                start_new_session=True,  # Ctrl-C reaches dbsweep, which stops perf in order
                preexec_fn=die_with_parent(signal.SIGKILL),
            )
        except BaseException:
            for fd in (ctl_r, ctl_w, ack_r, ack_w):
                os.close(fd)
            self._close()
            raise
        self.perf_pid = self._proc.pid
        os.close(ctl_r)
        os.close(ack_w)
        self._control, self._ack = ctl_w, ack_r
        try:
            self._enable()
        except BaseException:
            self._halt()
            raise

    def _enable(self) -> None:
        assert self._proc is not None and self._control is not None and self._ack is not None
        try:
            os.write(self._control, b"enable\n")
        except BrokenPipeError:  # perf exited before it read a word: the same failures as below, sooner
            self._proc.wait()
            raise ProfileError(self._failure()) from None
        deadline = time.monotonic() + _ACK_TIMEOUT_S
        reply = b""
        while b"ack" not in reply:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ProfileError(f"{self._what} did not start within {_ACK_TIMEOUT_S:.0f} s: {self._stderr()}")
            ready, _, _ = select.select([self._ack], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(self._ack, 64)
            if not chunk:  # perf exited: a pid that does not exist, no permission, a bad event...
                self._proc.wait()
                raise ProfileError(self._failure())
            reply += chunk

    def _stderr(self) -> str:
        if self._log is None:  # closed once stopped: what it held is in `messages`
            return self.messages
        self._log.flush()
        self._log.seek(0)
        return self._log.read().decode(errors="replace")

    def _failure(self) -> str:
        assert self._proc is not None
        lines = [ln for ln in self._stderr().splitlines() if ln.strip() and not ln.startswith("Events ")]
        said = "\n".join(f"  {ln}" for ln in lines) or "  (nothing on stderr)"
        return (
            f"{self._what} for pids {','.join(map(str, self.pids))} failed (exit status {self._proc.returncode}):\n"
            f"{said}"
        )

    def _halt(self) -> None:
        """SIGINT, wait, kill if it would not stop; always reaped, pipes closed."""
        proc = self._proc
        try:
            if proc is not None and proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(timeout=_STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    _kill(proc)
                    raise ProfileError(
                        f"{self._what} did not stop within {_STOP_TIMEOUT_S:.0f} s of SIGINT and was killed"
                    ) from None
        finally:
            if proc is not None:
                _kill(proc)  # a no-op once it exited; a Ctrl-C during the wait gets here too
                self.returncode = proc.returncode
            self.messages = self._stderr()
            self._close()

    def _close(self) -> None:
        for fd in (self._control, self._ack):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._control = self._ack = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def stop(self) -> None:
        """Stops perf and checks it ended well; raises ProfileError with perf's messages if not."""
        if self._proc is None:
            raise ProfileError(f"{self._what} was not started")
        self._halt()
        # Stopped by our SIGINT (perf re-raises it once its data is written), or ended on its own when every
        # process it followed had exited.
        if self.returncode not in (0, -signal.SIGINT):
            raise ProfileError(self._failure())
        self._proc = None

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is None:
            self.stop()
        else:
            # Do not hide the error that ends the block behind one of perf's.
            with contextlib.suppress(ProfileError):
                self.stop()


class Recorder(_Perf):
    """`perf record -e EVENT -F FREQUENCY --call-graph CALL_GRAPH --pid PIDS -o OUT_DIR/perf.data`, with the
    forks of those pids followed (see the module's docstring). Use as a context manager, or start()/stop()."""

    _what = "perf record"

    def __init__(
        self,
        pids: Collection[int],
        out_dir: Path,
        *,
        frequency: int = 499,
        event: str = "cpu-clock",
        call_graph: str = "fp",
        perf: str | None = None,
    ) -> None:
        super().__init__(pids, out_dir, perf)
        if not CALL_GRAPHS.fullmatch(call_graph):
            raise ValueError(f"call_graph is fp, dwarf, dwarf,SIZE or lbr, not {call_graph!r}")
        if frequency <= 0:
            raise ValueError(f"frequency must be positive, not {frequency}")
        self.frequency = frequency
        self.event = event
        self.call_graph = call_graph
        self.data = out_dir / "perf.data"
        self.samples: int | None = None  # as perf reported them, once stopped

    def _args(self) -> list[str]:
        # perf would keep an older file as perf.data.old: one is enough.
        self.data.unlink(missing_ok=True)
        return [
            "record",
            "-e",
            self.event,
            "-F",
            str(self.frequency),
            "--call-graph",
            self.call_graph,
            # No copy of every binary sampled into ~/.debug: fold soon, while the binaries are in place, and
            # keep the folded stacks (write_folded).
            "--no-buildid-cache",
            "-o",
            str(self.data),
        ]

    def __enter__(self) -> Recorder:
        self.start()
        return self

    def stop(self) -> None:
        try:
            super().stop()
        finally:
            m = _SAMPLES.search(self.messages)
            self.samples = int(m.group(1)) if m else None


@contextlib.contextmanager
def record(
    pids: Collection[int],
    out_dir: Path,
    *,
    frequency: int = 499,
    event: str = "cpu-clock",
    call_graph: str = "fp",
) -> Iterator[Recorder]:
    """Records `pids` (and what they fork meanwhile) for the duration of the block into out_dir/perf.data."""
    with Recorder(pids, out_dir, frequency=frequency, event=event, call_graph=call_graph) as rec:
        yield rec


def parse_stat(text: str, events: Collection[str]) -> dict[str, Count | None]:
    """Counts of `perf stat -x,` output, by event: None when perf says `<not supported>` or `<not counted>`
    (or does not print the event). Lines of the same event (hybrid CPUs' cpu_core/cpu_atom) are added up."""
    counts: dict[str, Count | None] = dict.fromkeys(events)
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        f = line.split(",")
        if len(f) < 3:
            continue
        name = f[2].split(":")[0]  # "cycles:u" when perf excluded the kernel
        m = re.fullmatch(r"[\w-]+/([\w-]+)/", name)  # "cpu_core/cycles/"
        if m:
            name = m.group(1)
        if name not in counts:
            continue
        try:
            value: Count = int(f[0])
        except ValueError:
            try:
                value = float(f[0])
            except ValueError:  # <not supported>, <not counted>
                continue
        old = counts[name]
        counts[name] = value if old is None else old + value
    return counts


class Counter(_Perf):
    """`perf stat -x, -e EVENTS --pid PIDS`, forks of the pids counted too. `counts` is set once stopped."""

    _what = "perf stat"

    def __init__(
        self,
        pids: Collection[int],
        events: Collection[str] = STAT_EVENTS,
        *,
        out_dir: Path | None = None,
        perf: str | None = None,
    ) -> None:
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if out_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="dbsweep-stat-")
            out_dir = Path(self._tmp.name)
        super().__init__(pids, out_dir, perf)
        if not events:
            raise ValueError("no events to count")
        self.events = list(events)
        self.output = out_dir / "perf-stat.csv"
        self.counts: dict[str, Count | None] = {}

    def _args(self) -> list[str]:
        return ["stat", "-x,", "-e", ",".join(self.events), "-o", str(self.output)]

    def __enter__(self) -> Counter:
        self.start()
        return self

    def stop(self) -> None:
        try:
            super().stop()
            self.counts = parse_stat(self.output.read_text(errors="replace"), self.events)
        finally:
            if self._tmp is not None:
                self._tmp.cleanup()
                self._tmp = None


def stat(pids: Collection[int], seconds: float, *, events: Collection[str] = STAT_EVENTS) -> dict[str, Count | None]:
    """Counts `events` of `pids` (and what they fork meanwhile) for `seconds`; for a block of code use
    `with Counter(pids, events) as c: ...` and read `c.counts`. Per-operation division is the caller's."""
    with Counter(pids, events) as c:
        time.sleep(seconds)
    return c.counts


# Folded stacks -------------------------------------------------------------------------------------------


def parse_folded(text: str) -> dict[str, int]:
    """`stack count` lines (the stack may hold spaces, the count is after the last one) -> stack -> samples."""
    folded: dict[str, int] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        stack, _, count = line.rstrip().rpartition(" ")
        if not stack or not count.isdigit():
            raise ProfileError(f"folded stacks, line {n}: not `frame;frame;... count`: {line[:200]!r}")
        folded[stack] = folded.get(stack, 0) + int(count)
    return folded


def format_folded(folded: Mapping[str, int]) -> str:
    return "".join(f"{stack} {count}\n" for stack, count in sorted(folded.items()) if count > 0)


def write_folded(folded: Mapping[str, int], path: Path) -> None:
    """Saves folded stacks as text (`comm;root;...;leaf samples` a line, sorted), the flame graph tools' format."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(format_folded(folded))
    tmp.replace(path)


def read_folded(path: Path) -> dict[str, int]:
    return parse_folded(path.read_text(errors="replace"))


def total_samples(folded: Mapping[str, int]) -> int:
    return sum(folded.values())


def frame_samples(folded: Mapping[str, int], frame: str) -> int:
    """Samples whose stack holds `frame` (each counted once, however deep the recursion)."""
    return sum(n for stack, n in folded.items() if frame in stack.split(";"))


def fold(perf_data: Path, *, perf: str | None = None) -> dict[str, int]:
    """`perf script` of a perf.data, folded by dbsweep-flame (inferno's collapse-perf): stack -> samples, the
    stack root first and named after the process (`postgres;__libc_start_main;...;ExecScan`)."""
    perf = perf or _perf_path()
    if perf is None:
        raise ProfileError(_NO_PERF)
    if not perf_data.is_file():
        raise ProfileError(f"no perf data at {perf_data}")
    flame = paths.flame_binary()
    with tempfile.TemporaryFile() as script_err:
        script: subprocess.Popen[bytes] | None = None
        collapse: subprocess.Popen[bytes] | None = None
        try:
            script = subprocess.Popen(
                [perf, "script", "-i", str(perf_data), "-F", _SCRIPT_FIELDS],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=script_err,
            )
            collapse = subprocess.Popen(
                [str(flame), "collapse"], stdin=script.stdout, stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
            assert script.stdout is not None
            script.stdout.close()  # collapse holds the pipe's read end now
            out, err = collapse.communicate()
            script.wait()
        finally:
            for p in (collapse, script):
                if p is not None:
                    _kill(p)
        if script.returncode != 0:
            script_err.seek(0)
            said = _one_line(script_err.read().decode(errors="replace"))
            raise ProfileError(f"perf script -i {perf_data} failed (exit status {script.returncode}): {said}")
        if collapse.returncode != 0:
            raise ProfileError(f"dbsweep-flame collapse failed: {_one_line(err.decode(errors='replace'))}")
    return parse_folded(out.decode(errors="replace"))


# Flame graphs --------------------------------------------------------------------------------------------


def _draw(args: list[str], stdin: str | None) -> str:
    r = subprocess.run(
        [str(paths.flame_binary()), *args], input=stdin, capture_output=True, text=True, timeout=600, check=False
    )
    if r.returncode != 0:
        raise ProfileError(f"dbsweep-flame {args[0]} failed: {_one_line(r.stderr)}")
    return r.stdout


def _subtitle(subtitle: str | None) -> list[str]:
    return ["--subtitle", subtitle] if subtitle else []


def flamegraph_svg(folded: Mapping[str, int], title: str, *, subtitle: str | None = None) -> str:
    """A flame graph of folded stacks: self-contained SVG (inline script and style; no font or script loaded)."""
    if total_samples(folded) <= 0:
        raise ProfileError(f"no samples to draw for {title!r}")
    return _draw(["svg", "--title", title, *_subtitle(subtitle)], format_folded(folded))


def diff_svg(
    base_folded: Mapping[str, int], target_folded: Mapping[str, int], title: str, *, subtitle: str | None = None
) -> str:
    """The differential flame graph: the target's frames, sized by its samples and coloured by how each frame's
    share of all samples changed from base to target (red: grew, blue: shrank; base scaled to the target's
    total first). Frames the target no longer has do not show: swap the arguments to see them."""
    for name, f in (("base", base_folded), ("target", target_folded)):
        if total_samples(f) <= 0:
            raise ProfileError(f"no samples in the {name} profile of {title!r}")
    with tempfile.TemporaryDirectory(prefix="dbsweep-diff-") as tmp:
        base, target = Path(tmp) / "base.folded", Path(tmp) / "target.folded"
        write_folded(base_folded, base)
        write_folded(target_folded, target)
        return _draw(["diff", "--title", title, *_subtitle(subtitle), str(base), str(target)], None)
