"""The instruction verdict of every target and step of a stored run, against the study's base: instructions
per query, the ratio to the base, and the verdict `verdicts.stats.
instruction_verdict` gives (a change beyond the 0.2 % floor, or three times the measured spread, is real).
The reports show the ratio; this prints the verdicts beside it, until the reports carry them. Reads the
store read-only; prints a table, no assertions.

    .venv/bin/python bench/instruction_verdicts.py studies/sqlite-versions.toml [--run N]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from dbsweep.results.store import Store
from dbsweep.study import load_study
from dbsweep.verdicts import stats


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("study", type=Path)
    ap.add_argument("--run", type=int, help="the run id (default: the study's latest)")
    args = ap.parse_args()
    study = load_study(args.study)
    store = Store(study.workspace_dir / "results.db", read_only=True)
    latest = store.latest_run(study.title)
    if latest is None:
        raise SystemExit(f"{args.study}: no run in {study.workspace_dir / 'results.db'}")
    run = args.run or latest[0]
    counts = store.instruction_counts(run)
    steps = sorted({s for _, s in counts}, key=list(study.bench.instruction_steps()).index)
    others = [t.label for t in study.targets if t.label != study.base]
    print(f"run {run}: instructions per query of {study.base}; of the others, the ratio to it and the verdict")
    print("step".ljust(34) + "".join(t[:26].rjust(28) for t in [study.base, *others]))
    tally = {t: {"faster": 0, "slower": 0, "same": 0, "none": 0} for t in others}
    for step in steps:
        base = counts.get((study.base, step), {})
        cols = [f"{base['per_query']:,.0f}" if base.get("per_query") else "-"]
        for t in others:
            c = counts.get((t, step), {})
            if not c.get("per_query") or not base.get("per_query"):
                cols.append("not counted")
                tally[t]["none"] += 1
                continue
            spread = max(c.get("spread") or 0.0, base.get("spread") or 0.0)
            v = stats.instruction_verdict(base["per_query"], c["per_query"], spread)
            tally[t][v] += 1
            cols.append(f"{c['per_query'] / base['per_query']:.4f} {v}")
        print(step[:33].ljust(34) + "".join(x.rjust(28) for x in cols))
    for t, n in tally.items():
        print(f"{t}: " + ", ".join(f"{k} {v}" for k, v in n.items() if v))


if __name__ == "__main__":
    main()
