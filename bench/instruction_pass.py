"""How long does the instruction pass take, and does the faster pass count the same? The set32 sysbench
study on Debian's Postgres at 100k rows, two targets of one install and config (an A-A pair), counted by the
pass as `dbsweep run --counts-only` takes it (the reads of a target in one session, every counted run in
lockstep, a count per CPU); then target a's steps again by the former method (every run on a server of its
own, one count at a time, in lockstep or, with --old-scheduling normal, under the normal scheduler as version 1
ran them), each step given the new count's amount: the same events (a step draws its keys at random, from one
seed, and a write's cost depends on the writes before it).

Prints, per step: seconds per count by both methods, both figures (every process's, and the foreground's
where they differ), their difference against the floor (the larger of the default 0.2 % and the two counts'
own spreads), and the A-A difference between the new pass's two targets; then the totals. No assertions: a
measurement.

    .venv/bin/python bench/instruction_pass.py                  # about 35 minutes on 2 CPUs
    .venv/bin/python bench/instruction_pass.py --steps point-query update-index --rows 20000
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from dbsweep import placement
from dbsweep.engines.registry import engine_named
from dbsweep.measure.instructions import InstructionCount, instructions_per_op
from dbsweep.results.store import Store
from dbsweep.suites.sysbench import Sysbench, SysbenchSettings
from dbsweep.suites.sysbench.steps import ALIASES

ROOT = Path(__file__).resolve().parent.parent
FLOOR = 0.002  # the instruction verdict's default floor
CONFIG = "cx10a_c2r24"

STUDY = """\
name = "instruction-pass"
engine = "postgres"
base = "a"
workspace = "{workspace}"

[suite]
name = "sysbench"
steps = {steps}
tables = 1
rows = {rows}
clients = [1]

[[targets]]
name = "a"
source = "system:15"
config = "{config}"

[[targets]]
name = "b"
source = "system:15"
config = "{config}"

[measure]
instructions = true
instruction_seconds = {seconds}
"""


def new_pass(work: Path, steps: list[str] | None, rows: int, seconds: int) -> tuple[float, dict[tuple[str, str], Any]]:
    study = work / "study.toml"
    listed = '"set32"' if steps is None else "[" + ", ".join(f'"{s}"' for s in steps) + "]"
    study.write_text(STUDY.format(workspace=work / "ws", steps=listed, rows=rows, config=CONFIG, seconds=seconds))
    t0 = time.monotonic()
    # Exit status 1 when a count failed: it is printed below with its reason, and the rest is measured.
    r = subprocess.run([sys.executable, "-m", "dbsweep", "run", "--counts-only", str(study)], check=False, cwd=ROOT)
    if r.returncode not in (0, 1):
        raise SystemExit(f"dbsweep run failed (exit {r.returncode}); its workspace is kept in {work}")
    wall = time.monotonic() - t0
    store = Store(work / "ws" / "results.db", read_only=True)
    latest = store.latest_run("instruction-pass")
    assert latest is not None
    return wall, store.instruction_counts(latest[0])


def old_count(
    step: str, rows: int, seconds: int, amount: int | None, home: Path, lockstep: bool
) -> tuple[float, InstructionCount]:
    suite = Sysbench(SysbenchSettings(rows=rows))
    engine = engine_named("postgres")
    config = (ROOT / "configs" / "postgres" / f"{CONFIG}.conf").read_text()
    cpu = placement.one_cpu_each(1)[0]
    t0 = time.monotonic()
    count = instructions_per_op(
        engine,
        engine.system_install("system"),
        config,
        home,
        step=step,
        load=[suite.command(s, 1) for s in suite.setup_steps()],
        plan=suite.instruction_plan(step, seconds, amount),
        tables=suite.tables(),
        # A plain set of CPUs runs under the normal scheduler, as version 1 did.
        cpus=placement.Lockstep(cpu) if lockstep else cpu,
    )
    return time.monotonic() - t0, count


def pct(x: float) -> str:
    return f"{x:+.3%}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--seconds", type=int, default=1, help="measure.instruction_seconds: the timed probe")
    ap.add_argument("--steps", nargs="*", help="sysbench steps (default: the set32 set)")
    ap.add_argument("--skip-old", action="store_true", help="only time the new pass")
    ap.add_argument(
        "--old-scheduling",
        choices=["lockstep", "normal"],
        default="lockstep",
        help="the former method's runs in lockstep (the pass's own change alone) or as version 1 ran them",
    )
    args = ap.parse_args()
    steps = [ALIASES.get(s, s) for s in args.steps] if args.steps else None
    # Kept when something failed, with the servers' logs; removed after a clean pass.
    work = Path(tempfile.mkdtemp(prefix="dbsweep-pass-", dir="/var/tmp"))
    work.chmod(0o755)  # the server's user reads its way down to its data
    wall, counts = new_pass(work, steps, args.rows, args.seconds)
    mine = {st: v for (t, st), v in counts.items() if t == "a"}
    theirs = {st: v for (t, st), v in counts.items() if t == "b"}
    n = len(counts)
    distinct = len({(t, tuple(v.get("command") or [st])) for (t, st), v in counts.items()})  # .pre steps share
    print(
        f"\nnew pass: {len(mine)} steps x 2 targets ({distinct} counts) in {wall:.0f} s: {wall / n:.1f} s per "
        f"target and step, {wall / distinct:.1f} s per count"
    )
    head = f"{'step':<34}{'method':>8}{'new s':>7}{'old s':>7}{'new/event':>14}{'old/event':>14}"
    print(head + f"{'new/old-1':>11}{'floor':>8}{'within':>7}{'A-A':>10}")
    old_total = 0.0
    for step, v in mine.items():
        if v.get("error"):
            print(f"{step:<34} not counted: {v['error']}")
            continue
        fg = v.get("foreground_per_event") or v["per_event"]
        aa = theirs.get(step, {})
        aa_fg = aa.get("foreground_per_event") or aa.get("per_event")
        aa_s = pct(aa_fg / fg - 1) if aa_fg else "-"
        line = f"{step:<34}{v.get('method', '?'):>8}{v['wall_s']:>7.1f}"
        if args.skip_old:
            print(f"{line}{'':>7}{fg:>14,.1f}{'':>14}{'':>11}{'':>8}{'':>7}{aa_s:>10}", flush=True)
            continue
        # The same events by both methods: a step's keys are drawn at random (from one seed), and a range near
        # the table's end returns fewer rows, so a count over other events differs by its sampling.
        same_amount = v["amount"]
        lockstep = args.old_scheduling == "lockstep"
        old_s, old = old_count(step, args.rows, args.seconds, same_amount, work / "old", lockstep)
        old_total += old_s
        # Judged as the verdict judges: the foreground's figure when there is one.
        old_fg = old.foreground_per_event or old.per_event
        diff = fg / old_fg - 1
        floor = max(FLOOR, old.foreground_spread or old.spread, v.get("foreground_spread") or v["spread"])
        print(
            f"{line}{old_s:>7.1f}{fg:>14,.1f}{old_fg:>14,.1f}{pct(diff):>11}{floor:>8.2%}"
            f"{'yes' if abs(diff) <= floor else 'NO':>7}{aa_s:>10}",
            flush=True,
        )
    if not args.skip_old:
        each = old_total / len(mine)
        print(f"\nold method: {len(mine)} steps of one target in {old_total:.0f} s: {each:.1f} s each")
        print(f"new pass: {wall / n:.1f} s per target and step ({old_total / len(mine) / (wall / n):.1f}x faster)")
    if any(v.get("error") for v in counts.values()):
        print(f"some counts failed: the workspace is kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
