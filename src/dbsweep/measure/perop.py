"""Per-operation hardware cost of a step: the method's `cpu/o`, `cs/o`, `r/o`, `rKB/o`, `wKB/o` and friends.

`per_op(m, ops)` divides a step's measures by its operations (queries, or rows
for load steps: whatever the step's rate counts). Keys, as stored in results and
shown in reports:

=================  ==========================================================================
key                meaning
=================  ==========================================================================
``o/s``            operations per second over the window: ops / elapsed (the method's Q)
``cpu/o``          server CPU microseconds per operation: (user + sys of the server's process
                   tree) x 10^6 / ops
``cs/o``           the server's own context switches (voluntary + involuntary) per operation
``host_cs/o``      host-wide context switches (vmstat ``cs``) per operation = mean(cs/s) / Q
``r/o``            device reads per operation = mean(r/s) / Q
``w/o``            device writes per operation = mean(w/s) / Q
``rKB/o``          KB read from the device per operation = mean(rkB/s) / Q
``wKB/o``          KB written to the device per operation = mean(wkB/s) / Q
``client_cpu/o``   load-client CPU microseconds per operation
``host_cpu/o``     the seeds' §3.1 ``cpu/o``: mean(us + sy) / Q, in percent of all host CPUs per
                   (operation/s); comparable only between runs on the same host
``cpupq``          the same host CPU in microseconds per operation, §3.2's ``cpupq`` =
                   mean(us + sy) x ncpu x 10^4 / Q (also §3.1's conversion of ``cpu/o``)
=================  ==========================================================================

The device keys are None when the data directory has no block device, the
client key when no client was attached; everything is None when ops or the
elapsed time is not positive. Means are time-weighted over the window, which is
the mean of per-second samples when the intervals are equal.
"""

from __future__ import annotations

from .step import StepMeasures

KEYS = ("o/s", "cpu/o", "cs/o", "host_cs/o", "r/o", "w/o", "rKB/o", "wKB/o", "client_cpu/o", "host_cpu/o", "cpupq")


def _div(n: float | None, d: float) -> float | None:
    return None if n is None else n / d


def per_op(m: StepMeasures, ops: float) -> dict[str, float | None]:
    if ops <= 0 or m.elapsed_s <= 0:
        return dict.fromkeys(KEYS)
    qps = ops / m.elapsed_s
    client_cpu = m.client_cpu_s
    return {
        "o/s": qps,
        "cpu/o": m.server_cpu_s * 1e6 / ops,
        "cs/o": m.server_cs / ops,
        "host_cs/o": m.host_cs / ops,
        "r/o": _div(m.dev_reads, ops),
        "w/o": _div(m.dev_writes, ops),
        "rKB/o": _div(m.dev_read_kb, ops),
        "wKB/o": _div(m.dev_write_kb, ops),
        "client_cpu/o": None if client_cpu is None else client_cpu * 1e6 / ops,
        "host_cpu/o": m.host_cpu_pct / qps,
        "cpupq": m.host_cpu_pct * m.ncpu * 1e4 / qps,
    }
