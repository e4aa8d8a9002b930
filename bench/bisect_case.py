"""A bisection on a real engine, timed: a git repository made from SQLite's source tree (Debian's 3.40.1; the
tree, then 12 harmless commits, one of which adds a loop to sqlite3_step), bisected by `dbsweep bisect`.
Prints the wall time, the builds made and the answer. No assertions: a measurement.

    .venv/bin/python bench/bisect_case.py --workspace /tmp/bisect-case [--culprit 8] [--iterations 300] [--by qps]

A second call with the same workspace replays the bisection from its store (no build, no probe repeated).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.bisectrepo import make  # noqa: E402

from dbsweep.engines.registry import engine_named  # noqa: E402
from dbsweep.sources import debian  # noqa: E402

STUDY = """\
name = "case"
engine = "sqlite"
base = "head"
workspace = "{ws}"

[measure]
instructions = true
instruction_seconds = 1

[[variants]]
name = "o1"
cflags = "-O1"

[suite]
name = "sysbench"
steps = {steps}
tables = 1
rows = 2000
clients = [1]
read_seconds = 2
write_seconds = 2

[[targets]]
name = "head"
source = "git:{repo}@main"
variant = "o1"
config = "wal_normal"
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workspace", type=Path, required=True)
    ap.add_argument("--culprit", type=int, default=8, help="the commit (1-12) that adds the loop")
    ap.add_argument("--iterations", type=int, default=300, help="the loop's turns per statement step")
    ap.add_argument("--by", default="instructions", choices=["instructions", "qps"])
    ap.add_argument("--steps", nargs="+", default=["point-query", "update-index"])
    args = ap.parse_args()
    ws = args.workspace.resolve()
    ws.mkdir(parents=True, exist_ok=True)
    tree = debian.resolve_debian("3.40.1", "3.40.1", ws / "sources", naming=engine_named("sqlite").naming)
    repo = ws / "repo"
    if not repo.is_dir():
        make(tree.path, repo, args.culprit, args.iterations)
    study = ws / "case.toml"
    steps = "[" + ", ".join(f'"{s}"' for s in args.steps) + "]"
    study.write_text(STUDY.format(ws=ws, repo=repo, steps=steps))
    good = subprocess.run(
        ["git", "-C", str(repo), "rev-list", "--max-parents=0", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    started = time.monotonic()
    r = subprocess.run(
        [sys.executable, "-m", "dbsweep", "bisect", str(study), "--good", good, "--bad", "main", "--by", args.by],
        cwd=ROOT,
        check=False,
    )
    print(f"dbsweep bisect exited {r.returncode} after {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
