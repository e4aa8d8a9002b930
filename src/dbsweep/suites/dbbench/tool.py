"""Runs db_bench for one step: the engine's own program is the client. Its per-interval rates (`--report_file`)
become the step's per-second lines as they are written, and its output, when it ends, the step's result:
the result line, the latency histogram and the stats dump's §6 columns (`output`). Its CPU comes from the
kernel's account of the finished process (wait4), whole."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from dbsweep import procs
from dbsweep.engines.base import Access
from dbsweep.errors import StepError
from dbsweep.loadclient import StepOutput
from dbsweep.results.model import Latency, StepResult
from dbsweep.suites.dbbench import output, steps

_POLL_S = 0.25


def _percentile(h: output.Histogram, q: float) -> float:
    """A percentile the histogram does not print (p90, p95), interpolated within its bucket."""
    want = q / 100 * h.count
    seen = 0
    for lo, hi, n in h.buckets:
        if n and seen + n >= want:
            return lo + (hi - lo) * (want - seen) / n
        seen += n
    return h.max


def latency(h: output.Histogram | None) -> Latency:
    if h is None:
        return Latency()
    p = h.percentiles
    return Latency(
        min=h.min,
        mean=h.average,
        p50=p.get("p50", h.median),
        p90=_percentile(h, 90),
        p95=_percentile(h, 95),
        p99=p.get("p99", 0.0),
        p999=p.get("p99.9", 0.0),
        max=h.max,
    )


def _lines(csv: Path, seen: int, last_t: float) -> tuple[list[dict[str, Any]], int, float]:
    """The per-interval rows written since `seen`, as per-second lines."""
    try:
        rows = output.interval_rates(csv.read_text(errors="replace"))
    except OSError:
        return [], seen, last_t
    out = []
    for t, qps in rows[seen:]:
        span = max(t - last_t, 1e-9)
        # db_bench reports no errors nor slowest operation per interval.
        line = {"type": "second", "t": round(t, 3), "ops": round(qps * span), "errors": 0, "max_us": 0, "qps": qps}
        out.append(line | {"phase": "measure"})
        last_t = t
    return out, len(rows), last_t


def _fit(command: Sequence[str], known: frozenset[str]) -> tuple[list[str], list[str]]:
    given = [a for a in command if a.startswith("--benchmarks=")]
    if len(given) != 1:
        raise StepError(f"a db_bench command names its benchmarks once, not {len(given)} times")
    try:
        names, lacks = steps.fitted(given[0].partition("=")[2].split(","), known)
    except ValueError as e:
        raise StepError(str(e)) from None
    return [f"--benchmarks={','.join(names)}" if a == given[0] else a for a in command], lacks


def _int_flag(command: Sequence[str], name: str, default: int) -> int:
    values = [a.partition("=")[2] for a in command if a.startswith(f"--{name}=")]
    return int(values[-1]) if values and values[-1].isdigit() else default


def default_result(command: Sequence[str]) -> str:
    """The benchmark whose result line a command's result is: the first of `--benchmarks` after the warm-up."""
    names = next(a for a in command if a.startswith("--benchmarks=")).partition("=")[2].split(",")
    return next((n for n in names if n != steps.WARMUP), names[0])


def run(
    command: Sequence[str],
    conn: Access,
    log: Path,
    on_second: Callable[[dict[str, Any]], None] | None = None,
    *,
    step: str | None = None,
    result_of: str | None = None,
    cpus: frozenset[int] | None = None,
    on_start: Callable[[int], None] | None = None,
    on_summary: Callable[[], None] | None = None,
) -> StepOutput:
    """Runs `db_bench COMMAND ACCESS` and returns the step's result, named `step`, from the result line of the
    benchmark `result_of` (by default the first of `--benchmarks` after the warm-up, which also names the step by
    default).

    The benchmarks are fitted to what this db_bench knows (`Access.operations`): an old one lacks
    waitforcompaction, and would stop at it; the result records what it left out."""
    if conn.program is None:
        raise StepError("the dbbench suite runs the engine's db_bench, and this engine names none")
    command, lacks = _fit(command, conn.operations)
    if result_of is None:
        result_of = default_result(command)
    step = step or result_of
    log.parent.mkdir(parents=True, exist_ok=True)
    csv = log.with_suffix(".csv")
    csv.unlink(missing_ok=True)
    argv = [*conn.wrapper, str(conn.program), *command, *conn.args, f"--report_file={csv}"]
    seconds: list[dict[str, Any]] = []
    started = time.monotonic()
    with log.open("w") as out:
        proc = procs.spawn(argv, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **conn.env}, cpus=cpus)
        try:
            if on_start is not None:
                on_start(proc.pid)
            seen, last_t = 0, 0.0

            def poll() -> None:
                nonlocal seen, last_t
                new, seen, last_t = _lines(csv, seen, last_t)
                for line in new:
                    seconds.append(line)
                    if on_second is not None:
                        on_second(line)

            usage = procs.follow(proc, poll, on_summary, _POLL_S)
        finally:
            procs.terminate(proc)
    wall = time.monotonic() - started
    text = log.read_text(errors="replace")
    if proc.returncode is not None and proc.returncode < 0:
        raise StepError(f"db_bench was killed by {procs.killed_by(proc.returncode)} before the step ended")
    if proc.returncode != 0:
        tail = "; ".join(ln.strip() for ln in text.strip().splitlines()[-3:])
        raise StepError(f"db_bench failed (exit {proc.returncode}): {tail}")
    try:
        res = output.result(text, result_of)
    except ValueError as e:
        raise StepError(f"db_bench printed no result for {result_of}: {e}") from None
    lsm = output.lsm_stats(text)
    # Before 7.3 the result line has no operations or seconds: the histogram counts the operations (it is
    # recorded for every one), and the rate gives the seconds they took.
    # multireadrandom records one histogram entry per batch of --batch_size keys.
    ops = res.operations
    if ops is None:
        per = _int_flag(command, "batch_size", 1) if res.name == "multireadrandom" else 1
        ops = res.histogram.count * per if res.histogram is not None else round(res.ops_per_sec * wall)
    secs = res.seconds if res.seconds is not None else (ops / res.ops_per_sec if res.ops_per_sec > 0 else wall)
    detail: dict[str, Any] = {
        "command": [conn.program.name, *command, *conn.args],
        "db_bench_result": res.name,
        "micros_per_op": res.micros_per_op,
        "mb_sec": res.mb_per_sec,
        "found": list(res.found) if res.found else None,
        "histogram_kind": res.histogram_kind,
        "histogram_buckets": [list(b) for b in res.histogram.buckets] if res.histogram else [],
        "lsm_sz_gb": lsm.lsm_gb,
        "blob_sz_gb": lsm.blob_gb,
        "c_wgb": lsm.compaction_write_gb,
        "c_mbps": lsm.compaction_mb_per_s,
        "c_wsecs": lsm.compaction_seconds,
        "c_csecs": lsm.compaction_cpu_seconds,
        "w_amp": lsm.write_amp,
        "flush_gb": lsm.flush_gb,
        "ingest_gb": lsm.ingest_gb,
        "uptime_s": lsm.uptime_s,
        "stall_pct": lsm.stall_pct,
        "nstall": lsm.stall_count,
        "u_cpu": usage.ru_utime,
        "s_cpu": usage.ru_stime,
        "rss_kb": usage.ru_maxrss,
        "wall_s": wall,
        "assertions": "Assertions are enabled" in text,
    }
    if lacks:
        detail["lacks"] = list(lacks)
    result = StepResult(
        suite="dbbench",
        step=step,
        ops_name="ops",
        operations=ops,
        events=ops,
        seconds=secs,
        rate=res.ops_per_sec,
        tps=res.ops_per_sec,
        latency_us=latency(res.histogram),
        client_cpu_user_s=usage.ru_utime,
        client_cpu_sys_s=usage.ru_stime,
        client_max_rss_kb=usage.ru_maxrss,
        detail=detail,
    )
    return StepOutput(result=result, seconds=seconds)
