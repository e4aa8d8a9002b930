"""What opening the results store costs as it grows: every open reads each table once (so a damaged or
truncated store fails at once with a plain message, not halfway through a report). Fills a store with
synthetic cells (one-minute steps: 60 per-second samples and 60 host samples each, a histogram, per-op
rows, server statistics), then times a writer's and a reader's open. Prints figures; no assertions.

    .venv/bin/python bench/store_open.py --cells 500 2000 8000
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from dbsweep.results.model import CellKey, CellResult
from dbsweep.results.store import Store, now


def fill(store: Store, cells: int) -> None:
    run = store.new_run(store.study_id("bench", "bench.toml"), "k", "")
    target = store.ensure_target(run, "a", "postgres", {"source": "system", "variant": "def", "config": "c"})
    summary = {
        "ops_name": "queries",
        "operations": 600_000,
        "events": 600_000,
        "seconds": 60.0,
        "rate": 10_000.0,
        "tps": 10_000.0,
        "latency_us": {"p50": 90, "p95": 120, "p99": 200, "max": 3000, "mean": 95.0},
        "histogram": "HISTFAAAA" + "x" * 1500,
    }
    host = {"cpu": {"user": 1.0, "system": 0.5}, "device": {"r": 1, "w": 2}, "server": {"cpu": 0.9}, "pad": "y" * 700}
    for i in range(cells):
        store.write_cell(
            run,
            target,
            CellResult(
                CellKey("a", f"step{i % 40}", 1, i // 40 + 1),
                "done",
                now(),
                now(),
                summary=summary,
                seconds_lines=[
                    {"t": t, "phase": "measure", "ops": 10_000, "errors": 0, "max_us": 900} for t in range(60)
                ],
                measures={"server_cpu_s": 50.0},
                per_op={"cpu/o": 50.0, "cs/o": 1.0, "r/o": 0.0},
                host_samples=[{"t": float(t), **host} for t in range(60)],
                server_stats={"pg_stat_database": [{"xact_commit": 1, "pad": "z" * 2000}]},
            ),
        )


def timed(path: Path, read_only: bool, rounds: int = 5) -> float:
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        Store(path, read_only=read_only).close()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cells", type=int, nargs="+", default=[500, 2000, 8000])
    args = ap.parse_args()
    print(f"{'cells':>7} {'store MB':>9} {'open (write) ms':>16} {'open (read-only) ms':>20}")
    with tempfile.TemporaryDirectory(dir="/var/tmp") as d:
        path = Path(d) / "results.db"
        have = 0
        for n in sorted(args.cells):
            store = Store(path)
            fill(store, n - have)
            store.close()
            have = n
            mb = path.stat().st_size / 2**20
            print(f"{n:>7} {mb:>9.1f} {timed(path, False) * 1e3:>16.1f} {timed(path, True) * 1e3:>20.1f}")


if __name__ == "__main__":
    main()
