"""Can dbsweep see a small CPU regression? A Postgres with a deliberately injected cost per statement.

The source of Postgres 15.18 (Debian's) is copied and patched once: exec_execute_message() spins
`dbsweep.spin` iterations of a volatile loop per executed statement, the count read once per backend
from a custom setting. One build serves every target; the targets differ only in their config:

  base   spin 0            the reference
  aa     spin 0            the same as base (A-A: must come out `same`)
  inj2   spin for ~2 %     of a point query's instructions
  inj5   spin for ~5 %

The spin counts are chosen from valgrind instruction counts (spin 0 vs spin 2000). Then one study runs
point-query and read-only_range=100 at 1 client, interleaved over R rounds, with instruction counts on.
It prints, per target and step, the verdict the first 2, 3, ..., R rounds would give by QPS and by
cpu/o, when the verdict first became `slower` and stayed, the minutes that took, and the verdict by
instructions per operation. No assertions: a measurement.

    .venv/bin/python bench/sensitivity.py --rounds 6 --seconds 15
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from dbsweep.engines import postgres
from dbsweep.engines.postgres.source import NAMING
from dbsweep.engines.registry import engine_named
from dbsweep.measure import instructions
from dbsweep.results.store import Store
from dbsweep.runner import store_path
from dbsweep.sources.resolve import resolve
from dbsweep.study import load_study
from dbsweep.suites.sysbench import Sysbench, SysbenchSettings
from dbsweep.verdicts import by_repetition, judge
from dbsweep.verdicts.calibrate import first_rounds

ROOT = Path(__file__).resolve().parents[1]
PATCH_ANCHOR = "\tportal = GetPortalByName(portal_name);\n\tif (!PortalIsValid(portal))\n"
PATCH = """\t/* dbsweep sensitivity benchmark: a deliberate CPU cost per executed statement */
\t{
\t\tstatic int	dbsweep_spin = -1;
\t\tvolatile int dbsweep_i;

\t\tif (dbsweep_spin < 0)
\t\t{
\t\t\tconst char *v = GetConfigOption("dbsweep.spin", true, false);

\t\t\tdbsweep_spin = v ? atoi(v) : 0;
\t\t}
\t\tfor (dbsweep_i = 0; dbsweep_i < dbsweep_spin; dbsweep_i++)
\t\t\t;
\t}

"""

STUDY = """\
name = "sensitivity"
description = "Injected CPU cost per statement: A-A, ~2 %, ~5 %"
engine = "postgres"
base = "base"
repeats = {rounds}
workspace = "{ws}"

[suite]
steps = ["point-query", "read-only"]
rows = 100000
clients = [1]
read_seconds = {seconds}
write_seconds = {seconds}
warmup_seconds = 3
maintenance_seconds = 5

[measure]
instructions = true
placement = "{placement}"

{targets}
"""


def _dbsweep(*args: str, env: dict[str, str]) -> None:
    subprocess.run([str(ROOT / ".venv/bin/dbsweep"), *args], check=True, env=env)


def patched_source(ws: Path) -> Path:
    """Postgres 15.18 with the spin in exec_execute_message (made once, kept in the workspace)."""
    dest = ws / "src-15.18-spin"
    if (dest / "configure").is_file():
        return dest
    tree = resolve("15.18", ws / "sources", print, naming=NAMING)
    tmp = ws / "src-15.18-spin.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(tree.path, tmp, symlinks=True)
    c = tmp / "src/backend/tcop/postgres.c"
    text = c.read_text()
    # The first portal lookup after exec_execute_message's definition (describe has one too).
    start = text.index("\nexec_execute_message(const char *portal_name, long max_rows)")
    at = text.index(PATCH_ANCHOR, start)
    c.write_text(text[:at] + PATCH + text[at:])
    tmp.rename(dest)
    return dest


def configs_dir(ws: Path, spins: dict[str, int]) -> Path:
    d = ws / "configs" / "postgres"
    d.mkdir(parents=True, exist_ok=True)
    base = (ROOT / "configs" / "postgres" / "cx10a_c2r24.conf").read_text()
    for name, spin in spins.items():
        (d / f"spin_{name}.conf").write_text(
            f"# sensitivity: cx10a plus an injected cost\n{base}\ndbsweep.spin = {spin}\n"
        )
    return ws / "configs"


def per_iteration(install: postgres.Install, ws: Path) -> tuple[float, float]:
    """Instructions per point query at spin 0, and per spin iteration (from spin 2000)."""
    base = (ROOT / "configs" / "postgres" / "cx10a_c2r24.conf").read_text()
    counts = []
    suite = Sysbench(SysbenchSettings(rows=100000))
    step = "point-query_range=100"
    amount = None
    for spin in (0, 2000):
        c = instructions.instructions_per_op(
            engine_named("postgres"),
            install,
            base + f"\ndbsweep.spin = {spin}\n",
            ws / f"count-{spin}",
            step=step,
            load=[suite.command("load", 1)],
            plan=suite.instruction_plan(step, 2, amount),
            tables=suite.tables(),
        )
        amount = c.amount  # the same events for both
        counts.append(c.per_query)
        print(f"spin {spin}: {c.per_query:,.0f} instructions per point query (spread {c.spread:.1e})", flush=True)
    return counts[0], (counts[1] - counts[0]) / 2000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--seconds", type=int, default=15)
    ap.add_argument("--placement", choices=["none", "same", "split"], default="none")
    # Kept across runs (the build and the loaded copy for valgrind) and reachable by the server user.
    ap.add_argument("--workspace", type=Path, default=Path("/var/tmp/dbsweep-sensitivity"))  # noqa: S108
    ap.add_argument("--build-only", action="store_true", help="prepare the source and build it, then stop")
    args = ap.parse_args()
    ws: Path = args.workspace
    ws.mkdir(parents=True, exist_ok=True)
    ws.chmod(0o755)
    src = patched_source(ws)
    # The study's configs live in the workspace; this process reads them too (load_study).
    os.environ["DBSWEEP_CONFIGS"] = str(configs_dir(ws, {"0": 0}))
    env = dict(os.environ)
    # Build first (never while measuring), with a throwaway study naming only the source.
    probe = Path(tempfile.mkdtemp()) / "probe.toml"
    probe.write_text(
        STUDY.format(
            rounds=1,
            ws=ws,
            seconds=1,
            placement="none",
            targets=f'[[targets]]\nname = "base"\nsource = "dir:{src}"\nconfig = "spin_0"\n',
        )
    )
    _dbsweep("build", str(probe), env=env)
    if args.build_only:
        return
    install = _install_of(load_study(probe), env)
    q0, per_iter = per_iteration(install, ws)
    spins = {"0": 0, "2": round(0.02 * q0 / per_iter), "5": round(0.05 * q0 / per_iter)}
    print(f"{per_iter:.2f} instructions per spin iteration; spins: 2 % = {spins['2']}, 5 % = {spins['5']}")
    os.environ["DBSWEEP_CONFIGS"] = env["DBSWEEP_CONFIGS"] = str(configs_dir(ws, spins))
    targets = "".join(
        f'[[targets]]\nname = "{name}"\nsource = "dir:{src}"\nconfig = "spin_{spin}"\n\n'
        for name, spin in (("base", "0"), ("aa", "0"), ("inj2", "2"), ("inj5", "5"))
    )
    study_file = ws / "sensitivity.toml"
    study_file.write_text(
        STUDY.format(rounds=args.rounds, ws=ws, seconds=args.seconds, placement=args.placement, targets=targets)
    )
    _dbsweep("run", str(study_file), env=env)
    report(load_study(study_file), args.seconds)


def _install_of(study: object, env: dict[str, str]) -> postgres.Install:
    from rich.progress import Progress

    from dbsweep.installs import get_install
    from dbsweep.study import Study

    assert isinstance(study, Study)
    os.environ.update(env)
    with Progress() as progress:  # built already: this only finds it in the cache
        install = get_install(study, study.targets[0], progress)
    assert isinstance(install, postgres.Install)
    return install


def report(study: object, seconds: int) -> None:
    from dbsweep.study import Study

    assert isinstance(study, Study)
    store = Store(store_path(study))
    run_id = store.latest_run(study.title)
    assert run_id is not None
    rid = run_id[0]
    rows = store.results(rid)
    per_op = store.per_op(rid)
    qps = by_repetition(rows)
    cpu = by_repetition(rows, lambda r: per_op.get(r.cell_id, {}).get("cpu/o"))
    counts = store.instruction_counts(rid)
    round_minutes = sum(1 for r in rows if r.repetition == 1) * (seconds + 8) / 60  # steps + warm-up/load
    print(f"\nverdicts after 2..{study.repeats} rounds (one round = every target once, ~{round_minutes:.1f} min):")
    for step in study.steps():
        b_q, b_c = qps.get(("base", step, 1), {}), cpu.get(("base", step, 1), {})
        b_i = counts.get(("base", step), {}).get("per_query")
        for t in ("aa", "inj2", "inj5"):
            t_q, t_c = qps.get((t, step, 1), {}), cpu.get((t, step, 1), {})
            line_q, line_c = [], []
            for k in range(2, min(len(b_q), len(t_q)) + 1):
                line_q.append(judge(first_rounds(b_q, k), first_rounds(t_q, k), study).verdict)
                if b_c and t_c:
                    line_c.append(
                        judge(first_rounds(b_c, k), first_rounds(t_c, k), study, higher_is_better=False).verdict
                    )
            t_i = counts.get((t, step), {}).get("per_query")
            ins = ""
            if b_i and t_i:
                from dbsweep.verdicts.stats import instruction_verdict

                ins = f"instructions {t_i / b_i - 1:+.2%} -> {instruction_verdict(b_i, t_i)}"
            rq = (sorted(t_q.values())[len(t_q) // 2] / sorted(b_q.values())[len(b_q) // 2]) if t_q and b_q else 0
            print(f"{step:24} {t:5} rQPS {rq:.3f}  QPS: {' '.join(line_q)}")
            print(f"{'':24} {'':5}             cpu/o: {' '.join(line_c)}  {ins}")
            first = _settled(line_q, "slower" if t != "aa" else "same")
            if first is not None:
                print(f"{'':24} {'':5}             QPS settled after {first} rounds (~{first * round_minutes:.0f} min)")
    store.close()


def _settled(verdicts: Sequence[str], want: str) -> int | None:
    """The round count from which the verdict is `want` and stays so (verdicts start at 2 rounds)."""
    for i in range(len(verdicts)):
        if all(v == want for v in verdicts[i:]):
            return i + 2
    return None


if __name__ == "__main__":
    if os.geteuid() != 0:
        sys.exit("run as root (servers run as the dbsweep user, as in a study)")
    main()
