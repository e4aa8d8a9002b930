"""The Insert Benchmark as the orchestrator sees it: sizes and profiles, the load client's command
for each step, what a step's result means, and the SLA of the read-write steps (methodology §2, §4.1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dbsweep.integrity import Expectation
from dbsweep.study import Suite
from dbsweep.suites import STEPS

# A read-write step fails its SLA when the background inserts fall below this share of the target.
SLA_SHARE = 0.95


@dataclass(frozen=True)
class Sizes:
    clients: int
    load_rows: int  # per client, l.i0
    write_rows: int  # per client, l.i1 + l.i2
    rw_seconds: int
    maintenance_seconds: int | None  # None: the method's budget


PROFILES: dict[str, Sizes] = {
    # About 10 minutes for two targets on a 2-core VM: 1M rows, 200k rows through the queue, 30 s per
    # read-write step, and a short wait after l.i2.
    "quick": Sizes(clients=1, load_rows=1_000_000, write_rows=200_000, rw_seconds=30, maintenance_seconds=15),
    # The seeds' small-server runs (1 client, 20M rows, 40M + 10M through the queue, 1800 s read-write
    # steps, on 32 GB of RAM), scaled to this machine's 24 GB.
    "small-server": Sizes(
        clients=1, load_rows=15_000_000, write_rows=37_500_000, rw_seconds=1800, maintenance_seconds=None
    ),
}


def sizes(suite: Suite) -> Sizes:
    """The profile's sizes with the study's own fields on top."""
    base = PROFILES[suite.profile] if suite.profile else None
    clients = suite.clients[0] if "clients" in suite.model_fields_set or base is None else base.clients

    def pick(field: str) -> int:
        value = getattr(suite, field)
        if value is not None:
            return int(value)
        assert base is not None, "validated: a profile or every size is set"
        return int(getattr(base, field))

    maint = suite.maintenance_seconds
    if maint is None and base is not None:
        maint = base.maintenance_seconds
    return Sizes(clients, pick("load_rows"), pick("write_rows"), pick("rw_seconds"), maint)


def clients(suite: Suite) -> int:
    return sizes(suite).clients


def step_rows(step: str, s: Sizes) -> int:
    """Rows each client inserts in a step (the method's 4/5 and 1/5 split of l.i1 and l.i2)."""
    if step == "l.i0":
        return s.load_rows
    if step == "l.x":
        return 100
    if step == "l.i1":
        return s.write_rows * 4 // 5
    if step == "l.i2":
        return max(1, s.write_rows // 5)
    return s.rw_seconds * STEPS[step].rate


def tables(suite: Suite) -> list[str]:
    return ["pi1"] if suite.only1t else [f"pi{i}" for i in range(1, clients(suite) + 1)]


def maintenance_budget(suite: Suite) -> float:
    """The wait after l.i2: min(1200, 60 + total l.i0 rows / 1e6) seconds, unless the study shortens it."""
    s = sizes(suite)
    if s.maintenance_seconds is not None:
        return float(s.maintenance_seconds)
    return min(1200.0, 60 + s.clients * s.load_rows / 1e6)


def command(suite: Suite, step: str) -> list[str]:
    s = sizes(suite)
    cmd = ["ibench", step, "--clients", str(s.clients), "--seed", str(suite.seed)]
    if STEPS[step].rate:
        cmd += ["--seconds", str(s.rw_seconds)]
    else:
        cmd += ["--rows", str(step_rows(step, s))]
    if suite.only1t:
        cmd.append("--only1t")
    return cmd


def progress_by_rows(suite: Suite, step: str) -> bool:
    """Inserting steps move their bar by rows; read-write steps by seconds; l.x (one CREATE INDEX) has none."""
    return step in ("l.i0", "l.i1", "l.i2")


def expected_progress(suite: Suite, step: str) -> float | None:
    """The progress bar's total: rows for the inserting steps, seconds for the read-write ones."""
    s = sizes(suite)
    if STEPS[step].rate:
        return float(s.rw_seconds)
    if progress_by_rows(suite, step):
        return float(step_rows(step, s) * s.clients)
    return None


def expectation(suite: Suite, step: str) -> Expectation:
    """A whole step inserted every row it was given; a read-write step also ran at least its seconds
    (longer when the server could not keep up with the rate: that is its SLA's business, not a fault)."""
    s = sizes(suite)
    work = ("inserted_rows", step_rows(step, s) * s.clients)
    if STEPS[step].rate:
        return Expectation(seconds=float(s.rw_seconds), may_run_long=True, work=work)
    # l.x is one CREATE INDEX per table after its few rows: seconds without a finished operation are normal.
    return Expectation(steady=step != "l.x", work=work)


def normalise(summary: dict[str, Any]) -> dict[str, Any]:
    """The fields every step result has: the method's throughput of the step (§4.1 table 1) as `rate`:
    inserted rows/s for l.i0, l.i1, l.i2; indexed rows/s for l.x; queries/s for the read-write steps."""
    s = dict(summary)
    step = str(s["step"])
    if STEPS[step].rate:
        s.update(ops_name="queries", operations=s["queries"], rate=s["qps"])
        target = s.get("target_rate")
        achieved = s.get("achieved_rate")
        # Judged here too, so the SLA rule lives in one place whatever the client reports.
        s["sla_ok"] = bool(target and achieved is not None and float(achieved) >= SLA_SHARE * float(target))
    elif step == "l.x":
        s.update(ops_name="indexed rows", operations=s["indexed_rows"], rate=s["ips"])
    else:
        s.update(ops_name="rows", operations=s["inserted_rows"], rate=s["ips"])
    s.update(events=s["operations"], tps=s["rate"])
    return s
