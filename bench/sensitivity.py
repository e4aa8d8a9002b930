"""Can dbsweep see a small CPU regression, on which steps, and say where? Postgres with costs injected at
three sites of different reach, each switched on by a setting, so one build serves every target:

  exec   exec_execute_message   every statement of the extended protocol: every timed sysbench step, and
                                the Insert Benchmark's deletes (l.i1, l.i2); not the loads (simple protocol)
  sort   tuplesort_performsort  only steps that sort: read-only (ORDER BY, DISTINCT) and the load's CREATE INDEX
  wal    XLogInsert             the write path: every write step and load, none of the reads

Each site spins `dbsweep.spin_<site>` iterations of a volatile loop per call. The spins are sized from
instruction counts of a reference step per site (point-query, read-only, update-index) to about 2 %, 5 %
and 10 % of that step's instructions per event. The targets: base, an A-A twin (aa) and one target per site
and size; a sysbench study and an Insert Benchmark study run them with the instruction pass on (and
`--rounds` repetitions of the timed steps for the QPS and cpu/o verdicts). It prints, per study, a table
per target and step (touched or not, the change in instructions, each verdict, the top function of the
per-function diff) and a confusion table per verdict source: injected changes found, missed, false alarms
(a verdict on an untouched step or on the A-A twin), whether the diff's top function is the injected one,
and the time to decide. No assertions: a measurement.

    .venv/bin/python bench/sensitivity.py --rounds 2 --seconds 5
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
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

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Site:
    file: str  # in the source tree
    function: str  # as valgrind names it
    start: str  # the function's definition, to find the anchor after it
    anchor: str  # the spin goes right after this line
    ref: str  # the sysbench step the spin is sized on
    # The function the per-function diff can name: the site's own, or the one the compiler inlined it into.
    inlined_into: str = ""

    def named(self, function: str) -> bool:
        return function in (self.function, self.inlined_into)


SITES = {
    "exec": Site(
        "src/backend/tcop/postgres.c",
        "exec_execute_message",
        "\nexec_execute_message(const char *portal_name, long max_rows)",
        "\tportal = GetPortalByName(portal_name);\n",
        "point-query_range=100",
        "PostgresMain",  # a static function called once: gcc inlines it
    ),
    "sort": Site(
        "src/backend/utils/sort/tuplesort.c",
        "tuplesort_performsort",
        "\ntuplesort_performsort(Tuplesortstate *state)\n{",
        "\tMemoryContext oldcontext = MemoryContextSwitchTo(state->sortcontext);\n",
        "read-only_range=100",
    ),
    "wal": Site(
        "src/backend/access/transam/xloginsert.c",
        "XLogInsert",
        "\nXLogInsert(RmgrId rmid, uint8 info)\n{",
        "\tXLogRecPtr\tEndPos;\n",
        "update-index_range=100",
    ),
}
SIZES = (2, 5, 10)  # per cent of the reference step's instructions per event
SYSBENCH_STEPS = ["point-query", "range-covered-pk", "read-only", "update-index", "insert"]
WRITES = {"update-index_range=100", "insert_range=100"}
# Which steps each site's code runs in (the truth the verdicts are held to).
TOUCHES = {
    "sysbench": {
        "exec": {f"{s}_range=100" for s in SYSBENCH_STEPS},
        "sort": {"read-only_range=100", "load"},
        "wal": WRITES | {"load"},
    },
    "ibench": {"exec": {"l.i1", "l.i2"}, "sort": set(), "wal": {"l.i0", "l.i1", "l.i2"}},
}
GUC = "dbsweep.spin_{site}"


def spin_block(site: str) -> str:
    """C for a deliberate cost: a volatile loop of the setting's iterations, read once per process."""
    return f"""\t/* dbsweep sensitivity benchmark: a deliberate CPU cost at this site */
\t{{
\t\textern const char *GetConfigOption(const char *name, bool missing_ok, bool restrict_privileged);
\t\tstatic int	dbsweep_spin = -1;
\t\tvolatile int dbsweep_i;

\t\tif (dbsweep_spin < 0)
\t\t{{
\t\t\tconst char *v = GetConfigOption("{GUC.format(site=site)}", true, false);

\t\t\tdbsweep_spin = v ? atoi(v) : 0;
\t\t}}
\t\tfor (dbsweep_i = 0; dbsweep_i < dbsweep_spin; dbsweep_i++)
\t\t\t;
\t}}
"""


STUDY = """\
name = "{name}"
description = "Injected CPU costs at three sites: A-A, ~2 %, ~5 %, ~10 %"
engine = "postgres"
base = "base"
repeats = {rounds}
workspace = "{ws}"

[suite]
{suite}

[measure]
instructions = true
instruction_seconds = 2
placement = "{placement}"
profile = {profile}
profile_seconds = 5

{targets}
"""
SYSBENCH_SUITE = """name = "sysbench"
steps = {steps}
rows = 20000
clients = [1]
read_seconds = {seconds}
write_seconds = {seconds}
warmup_seconds = 2
maintenance_seconds = 5"""
IBENCH_SUITE = """name = "ibench"
steps = ["l.i0", "l.x", "l.i1", "l.i2"]
load_rows = 100000
write_rows = 20000
rw_seconds = {seconds}
clients = [1]
maintenance_seconds = 5"""


def _dbsweep(*args: str, env: dict[str, str]) -> None:
    subprocess.run([str(ROOT / ".venv/bin/dbsweep"), *args], check=True, env=env)


def patched_source(ws: Path) -> Path:
    """Postgres 15.18 with a spin at every site (made once, kept in the workspace)."""
    dest = ws / "src-15.18-sites"
    if (dest / "configure").is_file():
        return dest
    tree = resolve("15.18", ws / "sources", print, naming=NAMING)
    tmp = ws / "src-15.18-sites.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(tree.path, tmp, symlinks=True)
    for name, site in SITES.items():
        c = tmp / site.file
        text = c.read_text()
        start = text.index(site.start)
        at = text.index(site.anchor, start) + len(site.anchor)
        c.write_text(text[:at] + spin_block(name) + text[at:])
    tmp.rename(dest)
    return dest


def config_text(spins: dict[str, int]) -> str:
    base = (ROOT / "configs" / "postgres" / "cx10a_c2r24.conf").read_text()
    return base + "\n" + "".join(f"{GUC.format(site=s)} = {spins.get(s, 0)}\n" for s in SITES)


def configs_dir(ws: Path, targets: dict[str, dict[str, int]]) -> Path:
    d = ws / "configs" / "postgres"
    d.mkdir(parents=True, exist_ok=True)
    for name, spins in targets.items():
        (d / f"spin_{name}.conf").write_text(f"# sensitivity: cx10a plus injected costs\n{config_text(spins)}")
    return ws / "configs"


def sized_spins(install: postgres.Install, ws: Path) -> dict[str, dict[int, int]]:
    """site -> size (%) -> spin iterations, from two counts of the site's reference step (spin 0 and 1000)."""
    suite = Sysbench(SysbenchSettings(rows=20000))
    out: dict[str, dict[int, int]] = {}
    for name, site in SITES.items():
        counts = []
        amount = None
        for spin in (0, 1000):
            c = instructions.instructions_per_op(
                engine_named("postgres"),
                install,
                config_text({name: spin}),
                ws / f"size-{name}-{spin}",
                step=site.ref,
                load=[suite.command("load", 1)],
                plan=suite.instruction_plan(site.ref, 2, amount),
                tables=suite.tables(),
            )
            amount = c.amount
            counts.append(c.per_event)
        per_iter = (counts[1] - counts[0]) / 1000
        out[name] = {pct: max(1, round(pct / 100 * counts[0] / per_iter)) for pct in SIZES}
        print(
            f"{name}: {counts[0]:,.0f} instructions per event of {site.ref}, {per_iter:.2f} per spin iteration "
            f"per event; spins {out[name]}",
            flush=True,
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=2, help="repetitions of the timed steps (QPS, cpu/o)")
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--placement", choices=["none", "same", "split"], default="none")
    ap.add_argument("--suites", nargs="*", default=["sysbench", "ibench"], choices=["sysbench", "ibench"])
    # Kept across runs (the build and the loaded copies for valgrind) and reachable by the server user.
    ap.add_argument("--workspace", type=Path, default=Path("/var/tmp/dbsweep-sensitivity"))  # noqa: S108
    ap.add_argument("--build-only", action="store_true", help="prepare the source and build it, then stop")
    ap.add_argument("--fresh", action="store_true", help="measure again: a new run of each study, not a resumed one")
    ap.add_argument(
        "--profile", action="store_true", help="also sample each target and step with perf (flame graphs in the HTML)"
    )
    args = ap.parse_args()
    ws: Path = args.workspace
    ws.mkdir(parents=True, exist_ok=True)
    ws.chmod(0o755)
    src = patched_source(ws)
    # The study's configs live in the workspace; this process reads them too (load_study).
    os.environ["DBSWEEP_CONFIGS"] = str(configs_dir(ws, {"base": {}}))
    env = dict(os.environ)
    # Build first (never while measuring), with a throwaway study naming only the source.
    probe = Path(tempfile.mkdtemp()) / "probe.toml"
    one = f'[[targets]]\nname = "base"\nsource = "dir:{src}"\nconfig = "spin_base"\n'
    suite = SYSBENCH_SUITE.format(steps=json.dumps(SYSBENCH_STEPS), seconds=1)
    probe.write_text(
        STUDY.format(name="probe", rounds=1, ws=ws, suite=suite, placement="none", profile="false", targets=one)
    )
    _dbsweep("build", str(probe), env=env)
    if args.build_only:
        return
    install = _install_of(load_study(probe), env)
    spins = sized_spins(install, ws)
    targets: dict[str, dict[str, int]] = {"base": {}, "aa": {}}
    for name, sizes in spins.items():
        for pct, spin in sizes.items():
            targets[f"{name}{pct}"] = {name: spin}
    os.environ["DBSWEEP_CONFIGS"] = env["DBSWEEP_CONFIGS"] = str(configs_dir(ws, targets))
    text = "".join(
        f'[[targets]]\nname = "{name}"\nsource = "dir:{src}"\nconfig = "spin_{name}"\n\n' for name in targets
    )
    for which in args.suites:
        suite = (
            SYSBENCH_SUITE.format(steps=json.dumps(SYSBENCH_STEPS), seconds=args.seconds)
            if which == "sysbench"
            else IBENCH_SUITE.format(seconds=args.seconds)
        )
        study_file = ws / f"sensitivity-{which}.toml"
        study_file.write_text(
            STUDY.format(
                name=f"sensitivity-{which}",
                rounds=args.rounds,
                ws=ws,
                suite=suite,
                placement=args.placement,
                profile=str(args.profile).lower(),
                targets=text,
            )
        )
        t0 = time.monotonic()
        _dbsweep("run", str(study_file), *(["--fresh"] if args.fresh else []), env=env)
        minutes = (time.monotonic() - t0) / 60
        print(f"\n{which}: the run took {minutes:.1f} min, the instruction pass included", flush=True)
        report(load_study(study_file), which, list(targets), minutes)


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


def _site_of(target: str) -> str | None:
    return next((name for name in SITES if target.startswith(name)), None)


def report(study: object, suite: str, targets: list[str], cells_minutes: float) -> None:
    """The table per target and step, then the confusion table per verdict source."""
    from dbsweep.measure import functions
    from dbsweep.study import Study
    from dbsweep.verdicts.instructions import calibrated_aa, run_verdicts

    assert isinstance(study, Study)
    store = Store(store_path(study))
    latest = store.latest_run(study.title)
    assert latest is not None
    rid = latest[0]
    rows = store.results(rid)
    per_op = store.per_op(rid)
    qps = by_repetition(rows)
    cpu = by_repetition(rows, lambda r: per_op.get(r.cell_id, {}).get("cpu/o"))
    counts = store.instruction_counts(rid)
    # Instructions are judged twice: with the default floor (0.2 %, or the pairs' spread), and with floors from
    # the A-A twin (twice its difference per step, as `dbsweep calibrate` sets them); the twin itself only
    # with the default, which shows its raw difference.
    plain = run_verdicts(counts, "base")
    floors = calibrated_aa(counts, "base", "aa")
    calibrated = run_verdicts(counts, "base", floors)
    steps = sorted({step for _t, step in counts}, key=lambda s: (s != "load", s))
    sources = ("instructions", "instructions, A-A floors", "cpu/o", "QPS")
    tally: dict[str, Counter[str]] = {src: Counter() for src in sources}
    decide_s: list[float] = []
    print(
        f"\n{suite}: A-A floors per step (twice |aa/base - 1|): "
        + ", ".join(f"{k} {v * 2:.3%}" for k, v in floors.items())
    )
    print(f"\n{suite}: per target and step (touched: the site's code runs in the step)")
    head = f"{'target':8}{'step':28}{'touched':>8}{'instr':>9}{'verdict':>9}{'floor':>9}{'A-A fl.':>9}"
    print(head + f"{'cpu/o':>9}{'QPS':>9}  top function")
    for t in targets[1:]:
        site = _site_of(t)
        for step in steps:
            touched = site is not None and step in TOUCHES[suite][site]
            j, jc = plain.get((t, step)), calibrated.get((t, step))
            v_i = j.verdict if j and j.verdict else "-"
            v_ic = jc.verdict if jc and jc.verdict else "-"
            b_q, t_q = qps.get(("base", step, 1), {}), qps.get((t, step, 1), {})
            b_c, t_c = cpu.get(("base", step, 1), {}), cpu.get((t, step, 1), {})
            v_q = judge(b_q, t_q, study).verdict if b_q and t_q else "-"
            v_c = judge(b_c, t_c, study, higher_is_better=False).verdict if b_c and t_c else "-"
            top = ""
            base_c, t_count = counts.get(("base", step), {}), counts.get((t, step), {})
            if base_c.get("functions") and t_count.get("functions"):
                changes = functions.diff(
                    functions.from_rows(base_c["functions"]), functions.from_rows(t_count["functions"]), top=1
                )
                top = changes[0].function if changes else ""
            decide_s.append(float(t_count.get("wall_s") or 0))
            for src, v in (("instructions", v_i), ("instructions, A-A floors", v_ic), ("cpu/o", v_c), ("QPS", v_q)):
                if t == "aa" and src == "instructions, A-A floors":
                    continue  # the twin is this source's calibration, not a comparison
                if touched:
                    tally[src]["found" if v == "slower" else "missed"] += 1
                elif v in ("faster", "slower"):
                    tally[src]["false alarm"] += 1
                else:
                    tally[src]["quiet"] += 1
            if touched and v_i == "slower" and site is not None:
                for src in ("instructions", "instructions, A-A floors"):
                    tally[src]["top right" if SITES[site].named(top) else "top wrong"] += 1
            ratio = f"{j.ratio - 1:+.2%}" if j and j.ratio else "-"
            floor = f"{j.floor:.2%}" + ("fg" if j.basis == "foreground" else "") if j and j.verdict else "-"
            cfloor = f"{jc.floor:.2%}" if jc and jc.verdict and t != "aa" else "-"
            print(
                f"{t:8}{step:28}{'yes' if touched else 'no':>8}{ratio:>9}{v_i:>9}{floor:>9}{cfloor:>9}{v_c:>9}{v_q:>9}"
                f"  {top}"
            )
    rounds = max((r.repetition for r in rows), default=0)
    print(f"\n{suite}: confusion table per verdict source ({len(targets) - 1} targets against base)")
    print(f"{'source':26}{'found':>7}{'missed':>8}{'false alarms':>14}{'quiet':>7}  to decide")
    for src, c in tally.items():
        extra = ""
        if src.startswith("instructions"):
            extra = f"  {sum(decide_s) / max(1, len(decide_s)):.0f} s per target and step (valgrind)"
            extra += f"; top function right {c['top right']}, wrong {c['top wrong']}"
        else:
            extra = f"  {rounds} rounds of the timed steps ({cells_minutes:.0f} min with the loads)"
        print(f"{src:26}{c['found']:>7}{c['missed']:>8}{c['false alarm']:>14}{c['quiet']:>7}{extra}")
    store.close()


if __name__ == "__main__":
    if os.geteuid() != 0:
        sys.exit("run as root (servers run as the dbsweep user, as in a study)")
    main()
