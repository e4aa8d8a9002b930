"""The canary on this machine: its rate over a few rounds, as a run times it before each round (a child
process, the fixed number of iterations), with the CV of the rates, the share of each round's wall time
the child spent on a CPU, the host's steal share over the rounds, and the host's tuning facts as a run
records them. Prints figures; no assertions (a measurement, not a test).

    .venv/bin/python bench/canary.py --rounds 8 --pause 2
"""

from __future__ import annotations

import argparse
import statistics
import time

from dbsweep.measure import canary, host_delta, snapshot_host, tuning
from dbsweep.report.noise import tuning_facts
from dbsweep.verdicts import stats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--pause", type=float, default=2.0, help="seconds between rounds, as a step would take")
    ap.add_argument("--iterations", type=int, default=canary.ITERATIONS)
    args = ap.parse_args()

    for label, value in tuning_facts({"tuning": tuning.read_tuning().as_dict()}):
        print(f"{label:>24}: {value}")
    print()
    rates: list[float] = []
    before = snapshot_host()
    print(f"{'round':>5} {'M it/s':>8} {'wall s':>7} {'on CPU':>7}  round's host steal")
    for r in range(1, args.rounds + 1):
        a = snapshot_host()
        run = canary.run(args.iterations)
        d = host_delta(a, snapshot_host())
        rates.append(run.rate)
        print(
            f"{r:>5} {run.rate / 1e6:>8.3f} {run.seconds:>7.3f} {100 * run.cpu_seconds / run.seconds:>6.0f}%  "
            f"{d.st_pct:.1f}%"
        )
        if r < args.rounds:
            time.sleep(args.pause)
    total = host_delta(before, snapshot_host())
    cv = stats.spread(rates)
    print(
        f"\nmedian {statistics.median(rates) / 1e6:.3f} M iterations/s, min {min(rates) / 1e6:.3f}, "
        f"max {max(rates) / 1e6:.3f}; CV {'-' if cv is None else f'{cv:.1%}'} over {len(rates)} rounds"
    )
    print(
        f"host over the whole: steal {total.st_pct:.1f}%, busy {total.cpu_pct:.0f}% of all CPUs, {total.seconds:.0f} s"
    )


if __name__ == "__main__":
    main()
