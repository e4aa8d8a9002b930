"""How repeatable is an instruction count, per step kind? Two identical targets (the same install and config),
each from its own load, counted by the instruction pass; their difference is the A-A floor of the instruction
verdict for that step. Prints, per step: instructions per event of A and B, |B/A - 1| over every process and
over the foreground alone, each side's spread over its pairs, and the foreground's share. No assertions: a
measurement.

    .venv/bin/python bench/instruction_aa.py --rows 20000 --steps point-query update-index
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from dbsweep.engines.registry import engine_named
from dbsweep.measure.instructions import InstructionCount, instructions_per_op
from dbsweep.suites.sysbench import Sysbench, SysbenchSettings
from dbsweep.suites.sysbench.steps import ALIASES

DEFAULT_STEPS = [
    "load",
    "point-query",
    "random-points",
    "range-covered-pk",
    "read-only",
    "scan",
    "update-index",
    "update-nonindex",
    "update-one",
    "delete",
    "insert",
    "write-only_range=10000",
    "read-write",
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--seconds", type=int, default=2, help="the timed probe that sets the events counted")
    ap.add_argument("--tool", choices=["cachegrind", "callgrind"], default="cachegrind")
    ap.add_argument("--steps", nargs="*", default=DEFAULT_STEPS)
    ap.add_argument("--home", type=Path, default=Path("/var/tmp/dbsweep-bench-aa"))  # noqa: S108
    args = ap.parse_args()
    steps = [ALIASES.get(s, s) for s in args.steps]
    suite = Sysbench(SysbenchSettings(rows=args.rows))
    engine = engine_named("postgres")
    install = engine.system_install("system")
    config = "shared_buffers=256MB\n"
    print(f"Postgres {install.short_version} (Debian's), {args.rows:,} rows, {args.tool}", flush=True)
    head = f"{'step':<28}{'A/event':>12}{'B/event':>12}{'|B/A-1|':>10}{'fg only':>10}{'spread A':>10}{'spread B':>10}"
    print(head + f"{'fg share':>10}{'amount':>9}{'s':>6}", flush=True)
    for step in steps:
        t0 = time.monotonic()
        counts: list[InstructionCount] = []
        amount = None
        for side in "ab":
            c = instructions_per_op(
                engine,
                install,
                config,
                args.home / side,
                step=step,
                load=[suite.command("load", 1)],
                plan=suite.instruction_plan(step, args.seconds, amount),
                tables=suite.tables(),
                tool=args.tool,
            )
            amount = c.amount
            counts.append(c)
        a, b = counts
        fg_a, fg_b = a.by_role.get("foreground", 0), b.by_role.get("foreground", 0)
        fg = abs(fg_b / fg_a - 1) if fg_a else float("nan")
        print(
            f"{step:<28}{a.per_event:>12,.0f}{b.per_event:>12,.0f}{abs(b.per_event / a.per_event - 1):>10.4%}"
            f"{fg:>10.4%}{a.spread:>10.4%}{b.spread:>10.4%}{a.foreground_share or 0:>10.1%}{a.amount:>9,}"
            f"{time.monotonic() - t0:>6.0f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
