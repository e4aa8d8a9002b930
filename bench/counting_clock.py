"""Whether the load client's count of an embedded engine depends on how long the run took.

SQLite runs inside dbsweep-load, so a count of it is the client's whole work. The same events, counted by
cachegrind once on a CPU of their own and once on a CPU shared with busy processes (`yes`, at the same
priority), must count the same: anything the client does by the clock (a line a second, a reporter that
wakes to look at a flag) or in proportion to its latencies (a histogram's summary walks more buckets the
wider they spread) shows up as a difference. Prints, for the plain client and for `--counting` (what
dbsweep's counted runs pass), the instructions of each run and the difference per event; no assertions (a
measurement, not a test).

    .venv/bin/python bench/counting_clock.py --events 20000 --busy 3
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOAD = ROOT / "load" / "target" / "release" / "dbsweep-load"
LIBRARY = "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0"


def instructions(out: Path) -> int:
    """cachegrind's total Ir of a finished run."""
    summary = next(ln for ln in out.read_text().splitlines() if ln.startswith("summary:"))
    return int(summary.split()[1])


def counted(common: list[str], extra: list[str], events: int, cpu: int, busy: int, out: Path) -> tuple[int, str]:
    """One run of `events` point queries under cachegrind on `cpu`, beside `busy` processes spinning on it."""
    hogs = [subprocess.Popen(["taskset", "-c", str(cpu), "yes"], stdout=subprocess.DEVNULL) for _ in range(busy)]
    try:
        run = subprocess.run(
            [
                "taskset", "-c", str(cpu),
                "valgrind", "--tool=cachegrind", "--cache-sim=no", "--branch-sim=no", "--fair-sched=yes",
                f"--cachegrind-out-file={out}",
                str(LOAD), "sysbench", "point-query", *common,
                "--seconds", "3600", "--warmup", "0", "--events", str(events), *extra,
            ],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    summary = run.stdout.strip().splitlines()[-1]
    seconds = summary.split('"seconds":')[1].split(",")[0]
    return instructions(out), seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=20_000)
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--busy", type=int, default=3, help="busy processes beside the second run (default 3)")
    args = ap.parse_args()
    cpu = max(os.sched_getaffinity(0))
    with tempfile.TemporaryDirectory() as d:
        db = Path(d) / "db"
        common = ["--engine", "sqlite", "--library", LIBRARY, "--database", str(db), "--pragma", "journal_mode=WAL"]
        common += ["--rows", str(args.rows)]
        subprocess.run([str(LOAD), "sysbench", "prepare", *common], capture_output=True, check=True)
        print(f"{args.events:,} SQLite point queries, rows {args.rows:,}, CPU {cpu}; busy: {args.busy} x yes")
        print(f"{'client':<12} {'alone':>14} {'s':>6} {'shared':>14} {'s':>6} {'difference':>11} {'per event':>10}")
        for name, extra in (("plain", []), ("--counting", ["--counting"])):
            alone, s1 = counted(common, extra, args.events, cpu, 0, Path(d) / "alone")
            shared, s2 = counted(common, extra, args.events, cpu, args.busy, Path(d) / "shared")
            diff = shared - alone
            print(
                f"{name:<12} {alone:>14,} {float(s1):>6.2f} {shared:>14,} {float(s2):>6.2f} {diff:>+11,} "
                f"{diff / args.events:>+10.2f}"
            )


if __name__ == "__main__":
    main()
