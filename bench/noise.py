"""This machine's noise: CV of QPS and of cpu/o for five microbenchmarks at 1 client, with and without
pinning client and server to one CPU. Each placement is an A-A calibration (`dbsweep calibrate`): one
target (Debian's Postgres 15, cx10a) against itself, interleaved over the given rounds. Prints the
calibration tables; no assertions (a measurement, not a test).

    .venv/bin/python bench/noise.py --rounds 3 --seconds 20
"""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STEPS = "point-query,range-covered-pk,read-only,update-nonindex,insert"

STUDY = """\
name = "noise"
engine = "postgres"
base = "pg15"
workspace = "{ws}"

[suite]
steps = [{steps}]
rows = 100000
clients = [1]
read_seconds = {seconds}
write_seconds = {seconds}
warmup_seconds = 3
maintenance_seconds = 5

[[targets]]
name = "pg15"
source = "system"
config = "cx10a_c2r24"
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--placements", nargs="+", default=["none", "same"], choices=["none", "same", "split"])
    ap.add_argument("--workspace", type=Path, default=Path("/var/tmp/dbsweep-noise"))  # noqa: S108
    args = ap.parse_args()
    args.workspace.mkdir(parents=True, exist_ok=True)
    args.workspace.chmod(0o755)
    study = args.workspace / "noise.toml"
    steps = ", ".join(f'"{s}"' for s in STEPS.split(","))
    study.write_text(STUDY.format(ws=args.workspace, steps=steps, seconds=args.seconds))
    for placement in args.placements:
        # A fresh calibration run per invocation: each placement's figures come from this run alone.
        subprocess.run(
            [
                str(ROOT / ".venv/bin/dbsweep"),
                "calibrate",
                str(study),
                "--repeats",
                str(args.rounds),
                "--placement",
                placement,
                "--fresh",
            ],
            check=True,
        )


if __name__ == "__main__":
    main()
