"""The dbsweep command line."""

from __future__ import annotations

import errno
import functools
import logging
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table
from rich.text import Text

from dbsweep import __version__, procs, say
from dbsweep.errors import DbsweepError, StudyError
from dbsweep.results.store import Store, is_blank
from dbsweep.study import Study, load_study
from dbsweep.workspace import writing

if TYPE_CHECKING:
    from dbsweep.report.data import ReportData
    from dbsweep.results.counts import Count
    from dbsweep.study import Target
    from dbsweep.verdicts.calibrate import StepNoise

app = typer.Typer(
    name="dbsweep",
    help="Find out whether a database engine got faster or slower across versions, builds and configs, and why.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


console = say.console()
err = say.console(stderr=True)

StudyArg = Annotated[Path, typer.Argument(help="The study file (TOML).", show_default=False)]
WorkspaceOpt = Annotated[
    Path | None, typer.Option("--workspace", "-w", help="Override the study's workspace directory.")
]


def _study(path: Path, workspace: Path | None) -> Study:
    study = load_study(path)
    if workspace is not None:
        study = study.model_copy(update={"workspace": str(workspace)})
    return study


def _targets_named(study: Study, names: list[str]) -> set[str]:
    """The study's targets that --target names; an unknown name is an error that lists the known ones."""
    known = [t.label for t in study.targets]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise DbsweepError(f"--target: no target {unknown[0]!r} in {study.path}; have: {', '.join(known)}")
    return set(names)


def _open_store(study: Study, must_exist: bool, read_only: bool = False) -> Store:
    """The study's results store; a reader opens it read-only and never creates it."""
    from dbsweep.runner import store_path

    p = store_path(study)
    if must_exist and (not p.is_file() or is_blank(p)):
        what = "is empty" if p.is_file() else "does not exist"
        raise DbsweepError(f"no results yet for {study.title}: {p} {what}; run `dbsweep run {study.path}`.")
    if p.is_dir():
        raise DbsweepError(f"the results store {p} is a directory; move it aside.")
    return Store(p, read_only=read_only)


def _version(value: bool) -> None:
    if value:
        console.print(f"dbsweep {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """dbsweep: build, run, measure and compare database engines."""


def _preflight(s: Study, *, counts_only: bool = False) -> str:
    """Everything `run` would reject, before any work: problems exit with status 2 (bad input); warnings
    go to stderr. Returns the estimate in words (of one part, for a study of several).

    A study through Slurm is checked part by part (each server class sizes its clients, configs and tables), for
    what holds on any node; what only a node can tell is its job's to find."""
    from dbsweep import preflight

    if s.hosts.scheduler == "local":
        checks = [preflight.check(s, counts_only=counts_only)]
    else:
        checks = [preflight.check(part, counts_only=counts_only, here=False) for part in s.parts()]
    problems = list(dict.fromkeys(p for c in checks for p in c.problems))
    if problems:
        raise StudyError(problems)
    for w in dict.fromkeys(w for c in checks for w in c.warnings):
        err.print(say.line(say.styled("warning:", "yellow"), f" {w}"), soft_wrap=True)
    return preflight.describe(checks[0].estimate)


@app.command()
def validate(
    study: StudyArg,
    workspace: WorkspaceOpt = None,
) -> None:
    """Check a study file and what it names (sizes, connections, sources, config settings) without running
    anything; print what it would run and how long that would take."""
    from dbsweep import plan

    s = _study(study, workspace)
    estimate = _preflight(s)
    cells = plan.cells(s)
    what = s.bench.describe()
    console.print(
        say.line(
            say.styled("ok", "green"),
            f" {study}: engine {s.engine}, {len(s.targets)} targets "
            f"(base {s.base}), {what}, {s.repeats} repetition(s): {len(cells)} cells",
        )
    )
    parts = s.parts()
    if len(parts) > 1:
        # Each part (a server class, a setup) is the study again, sized by its class: its cells and time too.
        where = "one after another here" if s.hosts.scheduler == "local" else "as Slurm jobs, a round each"
        sizes = ", ".join(f"{p.title} {len(plan.cells(p))} cells" for p in parts)
        console.print(f"{len(parts)} parts, {where}: {sizes}; the estimate below is for one part")
    console.print(estimate)


@app.command()
def run(
    study: StudyArg,
    workspace: WorkspaceOpt = None,
    rerun_failed: Annotated[bool, typer.Option("--rerun-failed", help="Retry cells that failed before.")] = False,
    fresh: Annotated[bool, typer.Option("--fresh", help="Start a new run id instead of continuing.")] = False,
    keep_data: Annotated[
        bool, typer.Option("--keep-data", help="Keep data directories after their cells are done.")
    ] = False,
    until_decided: Annotated[
        bool,
        typer.Option(
            "--until-decided",
            help="Then add interleaved repetitions (two rounds at a time, base and the undecided targets) while "
            "any cell's verdict is unsure, up to measure.max_repeats.",
        ),
    ] = False,
    target: Annotated[
        list[str] | None,
        typer.Option(
            "--target",
            "-t",
            help="Run only this target's cells and counts (repeatable); the others wait for a later run.",
        ),
    ] = None,
    counts_only: Annotated[
        bool,
        typer.Option(
            "--counts-only",
            help="Take only the instruction counts still to take (they count work, not time: a busy machine, a "
            "build say, does not disturb them); the timed cells and profiles wait for a run on a quiet machine.",
        ),
    ] = False,
) -> None:
    """Run the cells of a study that have no result yet, then print the report."""
    from dbsweep.report import data as report_data
    from dbsweep.report import terminal
    from dbsweep.runner import Runner, open_run

    s = _study(study, workspace)
    if s.hosts.scheduler == "slurm":
        if target or counts_only or until_decided or keep_data:
            raise DbsweepError(
                "--target, --counts-only, --until-decided and --keep-data are for a study run here; this study runs "
                "through Slurm (hosts.scheduler), a job per round and class."
            )
        err.print(_preflight(s), soft_wrap=True)
        _run_batch(s, fresh=fresh, rerun_failed=rerun_failed)
        return
    if counts_only and not s.measure.instructions:
        raise DbsweepError(f"{study}: --counts-only: the study counts no instructions (measure.instructions).")
    if counts_only and until_decided:
        raise DbsweepError("--counts-only and --until-decided exclude each other: the latter runs timed cells.")
    only = _targets_named(s, target) if target else None
    # Checked and estimated as the run will do it: the targets it runs, not the others.
    checked = s if only is None else s.model_copy(update={"targets": [t for t in s.targets if t.label in only]})
    err.print(_preflight(checked, counts_only=counts_only), soft_wrap=True)
    failed = False
    reported: list[ReportData] = []
    with writing(s.workspace_dir):
        store = _open_store(s, must_exist=False)
        try:
            # A study with setups runs as one study per setup, one after another, each reported on its own.
            for part in s.parts():
                if part.part_setup:
                    console.print(say.styled(f"Setup {part.part_setup} ({part.title})", "bold"))
                run_id = open_run(part, store, fresh)
                try:
                    with procs.cleanup_on_exit():
                        runner = Runner(
                            part,
                            store,
                            err,
                            rerun_failed=rerun_failed,
                            keep_data=keep_data,
                            only=only,
                            counts_only=counts_only,
                        )
                        outcome = runner.run(run_id)
                        if until_decided:
                            from dbsweep.verdicts.decide import until_decided as decide

                            decide(part, store, runner, outcome, console.print)
                except KeyboardInterrupt:
                    err.print("interrupted: servers stopped; finished cells are kept, run again to continue.")
                    raise typer.Exit(130) from None
                if counts_only:
                    console.print(
                        f"Run {run_id}: instruction counts taken; the timed cells wait for a run without --counts-only."
                    )
                elif outcome.done == 0 and outcome.failed == 0:
                    console.print(f"Nothing to run: every cell of run {run_id} has a result.")
                else:
                    console.print(f"Run {run_id}: {outcome.done} cells done, {outcome.failed} failed.")
                if outcome.skipped_failed:
                    err.print(
                        say.styled(
                            f"{outcome.skipped_failed} cells failed earlier and were not retried; "
                            "use --rerun-failed to retry them.",
                            "yellow",
                        )
                    )
                reported.append(report_data.gather(part, store, run_id))
                terminal.render(reported[-1], console)
                failed = failed or bool(outcome.failed or outcome.skipped_failed)
            _side_by_side(reported)
        finally:
            store.close()
    # Failed cells, of this run or left failed from an earlier one, make the exit status 1.
    if failed:
        raise typer.Exit(1)


def _run_batch(s: Study, *, fresh: bool, rerun_failed: bool) -> None:
    """A study through Slurm: its rounds submitted per server class, merged as they finish, then each class's
    report."""
    from dbsweep.hosts import batch
    from dbsweep.report import data as report_data
    from dbsweep.report import terminal
    from dbsweep.runner import open_run

    with writing(s.workspace_dir):
        store = _open_store(s, must_exist=False)
        try:
            runs = {part.title: open_run(part, store, fresh) for part in s.parts()}
            try:
                outcome = batch.Submission(s, store, err.print, rerun_failed=rerun_failed).run(runs)
            except KeyboardInterrupt:
                err.print("interrupted: the study's jobs are cancelled; merged rounds are kept, run again to continue.")
                raise typer.Exit(130) from None
            if outcome.merged == 0 and outcome.failed == 0:
                console.print("Nothing to submit: every round of every class has its results.")
            else:
                console.print(
                    f"{outcome.merged} jobs merged ({outcome.cells} cells), {outcome.failed} ended without their round."
                )
            reported = [report_data.gather(part, store, runs[part.title]) for part in s.parts()]
            for data in reported:
                terminal.render(data, console)
            _side_by_side(reported)
            if outcome.failed:
                raise typer.Exit(1)
        finally:
            store.close()


@app.command(hidden=True)
def job(
    spec: Annotated[Path, typer.Argument(help="The job's job.json, written when it was submitted.")],
) -> None:
    """Run one round of one server class of a study, as a batch job on its node (dbsweep run submits these)."""
    from dbsweep.hosts import batch

    try:
        result = batch.run_job(spec, err)
    except KeyboardInterrupt:
        err.print("interrupted: servers stopped; the round stays pending.")
        raise typer.Exit(130) from None
    done, failed = result["done"], result["failed"]
    console.print(f"round {result['round']} of {result['class']}: {done} cells done, {failed} failed")


@app.command()
def calibrate(
    study: StudyArg,
    workspace: WorkspaceOpt = None,
    target: Annotated[
        str | None, typer.Option("--target", "-t", help="The target to copy (default: the base).")
    ] = None,
    steps: Annotated[str | None, typer.Option("--steps", help="Comma-separated steps (default: the study's).")] = None,
    repeats: Annotated[int, typer.Option("--repeats", "-n", min=2, help="Rounds of A B / B A.")] = 6,
    placement: Annotated[
        str | None, typer.Option("--placement", help="Override measure.placement: none, same or split.")
    ] = None,
    fresh: Annotated[bool, typer.Option("--fresh", help="Start a new calibration run.")] = False,
    same_build: Annotated[
        bool,
        typer.Option(
            "--same-build",
            help="Run copy (B) on (A)'s build. By default a target built from source gets (B) from a second "
            "build of the same source in another directory, so the A-A spread includes what separates two builds.",
        ),
    ] = False,
    counts_only: Annotated[
        bool,
        typer.Option(
            "--counts-only",
            help="Take only the two copies' instruction counts (a busy machine does not disturb them); the timed "
            "cells wait for a calibration without it.",
        ),
    ] = False,
) -> None:
    """Run one target against itself (two copies, interleaved) and report this machine's noise per step:
    CV of QPS and cpu/o, the A-A verdicts and their false-positive rate, the smallest detectable effect, and
    with instruction counts the A-A difference of instructions per event (its floor is used by every report)."""
    from dbsweep.placement import PLACEMENTS
    from dbsweep.runner import Runner, open_run
    from dbsweep.verdicts import calibrate as cal

    s = _study(study, workspace)
    if placement is not None and placement not in PLACEMENTS:
        raise DbsweepError(f"--placement: {placement!r} is not one of {', '.join(PLACEMENTS)}")
    try:
        chosen = s.target(target or s.base)
    except KeyError:
        raise DbsweepError(f"no target {target!r} in {study}; have: {', '.join(t.label for t in s.targets)}") from None
    step_list = _steps_named(s, steps) if steps else None
    if counts_only and not s.measure.instructions:
        raise DbsweepError(f"{study}: --counts-only: the study counts no instructions (measure.instructions).")
    c = cal.copies(s, chosen, step_list, repeats, placement, separate_build=not same_build)
    err.print(_preflight(c, counts_only=counts_only), soft_wrap=True)
    with writing(c.workspace_dir):
        store = _open_store(c, must_exist=False)
        try:
            run_id = open_run(c, store, fresh)
            try:
                with procs.cleanup_on_exit():
                    outcome = Runner(c, store, err, counts_only=counts_only).run(run_id)
            except KeyboardInterrupt:
                err.print("interrupted: servers stopped; finished cells are kept, run again to continue.")
                raise typer.Exit(130) from None
            if not counts_only:
                console.print(f"Calibration run {run_id}: {outcome.done} cells done, {outcome.failed} failed.")
            noise = cal.analyse(c, store, run_id)
            counted = store.counts(run_id)
        finally:
            store.close()
    if noise:
        _print_noise(c, chosen, noise)
    _print_count_aa(c, counted)


def _print_noise(c: Study, chosen: Target, noise: list[StepNoise]) -> None:
    """The calibration's timed cells: the CV of QPS and cpu/o per step, the A-A verdicts, what they can detect."""
    from dbsweep.verdicts import calibrate as cal

    table = Table(
        title=f"A-A calibration of {chosen.label} ({c.repeats} rounds, placement {c.measure.placement}, "
        f"minimum effect {c.measure.min_effect:.1%})",
        title_justify="left",
    )
    for col in ("step", "clients", "n", "QPS", "CV QPS", "CV cpu/o", "verdict QPS", "verdict cpu/o", "MDE QPS"):
        table.add_column(col, justify="left" if col.startswith(("step", "verdict")) else "right")
    table.add_column("MDE cpu/o", justify="right")

    def pct(v: float | None) -> str:
        return "-" if v is None else f"{v:.1%}"

    for n in noise:
        table.add_row(
            n.step,
            str(n.clients),
            str(n.n),
            f"{n.qps:,.0f}",
            pct(n.cv_qps),
            pct(n.cv_cpu),
            n.verdict_qps,
            n.verdict_cpu,
            pct(n.mde_qps),
            pct(n.mde_cpu),
        )
    console.print(table)
    rate, count = cal.false_positive_rate(noise)
    if rate is not None:
        colour = "green" if rate <= 0.05 else "red"
        console.print(
            say.line(
                "A-A false-positive rate: ",
                say.styled(f"{rate:.1%}", colour),
                f" of {count} verdicts (QPS and cpu/o, after 2, 3, ... rounds) came out faster or slower; the rest "
                f"same or unsure. MDE = smallest change the verdict detects with {c.repeats} rounds (80 % power).",
            )
        )


def _print_count_aa(c: Study, counted: dict[tuple[str, str], Count]) -> None:
    """The calibration's A-A difference of instructions per event per step, and the floor it sets."""
    from dbsweep.verdicts import instructions

    a, b = (t.label for t in c.targets)
    differences = instructions.aa_differences(counted, a, b)
    if not differences:
        return
    builds = "two builds of one source" if c.targets[1].build_copy != c.targets[0].build_copy else "one build"
    table = Table(title=f"Instructions per event, A against B ({builds})", title_justify="left")
    for col in ("step", "figure", "A", "B", "A-A", "floor"):
        table.add_column(col, justify="left" if col in ("step", "figure") else "right")
    for d in differences:
        table.add_row(d.step, d.basis, f"{d.a:,.0f}", f"{d.b:,.0f}", f"{d.difference:.3%}", f"{d.floor:.2%}")
    console.print(table)
    console.print(
        f"The study's reports judge instructions on these steps with a floor of {instructions.CALIBRATED_FACTOR:g} "
        "times this A-A difference where that is above the default floor (the `floor` column)."
    )


@app.command()
def status(study: StudyArg, workspace: WorkspaceOpt = None) -> None:
    """Show which cells are done, failed or pending (and, for a study run through Slurm, its jobs)."""
    from dbsweep.runner import store_path

    s = _study(study, workspace)
    # Nothing is created or written: without a store every cell is pending.
    p = store_path(s)
    store = _open_store(s, must_exist=False, read_only=True) if p.exists() and not is_blank(p) else None
    try:
        for part in s.parts():
            _status_table(part, store)
        if s.hosts.scheduler == "slurm":
            _jobs_table(s, store)
    finally:
        if store is not None:
            store.close()


def _jobs_table(s: Study, store: Store | None) -> None:
    """The study's batch jobs, with where Slurm has those still queued."""
    from dbsweep.hosts import slurm
    from dbsweep.results import jobs

    records = jobs.of_study(store, s.title) if store else []
    if not records:
        console.print("No job submitted yet.")
        return
    live: dict[str, tuple[str, str]] = {}
    try:
        live = slurm.queued(j.job_id for j in records if j.state == "submitted")
    except DbsweepError as e:
        err.print(say.styled(f"Slurm's queue not read: {e}", "yellow"))
    table = Table(title=f"{s.title}: jobs", title_justify="left")
    for col in ("class", "round", "job", "state", "since", "note"):
        table.add_column(col)
    counts: dict[str, int] = {}
    for j in records:
        state = j.state
        if state == "submitted":
            q = live.get(j.job_id)
            state = q[0].lower() if q else "finished, not merged"
        counts[state] = counts.get(state, 0) + 1
        note = (j.note or "").splitlines()[0][:60] if j.note else ""
        what = str(j.repetition) if j.repetition else "counts"  # round 0: the class's instruction counts
        table.add_row(j.cls, what, j.job_id, state, (j.ended_at or j.submitted_at)[:19], note)
    console.print(table)
    console.print(", ".join(f"{k} {v}" for k, v in counts.items()))


def _status_table(s: Study, store: Store | None) -> None:
    from dbsweep import plan

    latest = store.latest_run(s.title) if store else None
    stored = store.statuses(latest[0]) if store and latest else {}
    table = Table(title=f"{s.title}: run {latest[0] if latest else '(none yet)'}", title_justify="left")
    for col in ("target", "step", "clients", "rep", "status", "error"):
        table.add_column(col)
    counts = {"done": 0, "failed": 0, "pending": 0}
    for key in plan.cells(s):
        st, error = stored.get(key, ("pending", None))
        counts[st] += 1
        style = {"done": "green", "failed": "red", "pending": "yellow"}[st]
        table.add_row(
            key.target,
            key.step,
            str(key.clients),
            str(key.repetition),
            say.styled(st, style),
            (error or "").splitlines()[0][:80] if error else "",
        )
    console.print(table)
    console.print(f"done {counts['done']}, failed {counts['failed']}, pending {counts['pending']}")


FormatOpt = Annotated[
    str,
    typer.Option(
        "--format", "-f", help="terminal, html, markdown, csv or json.", case_sensitive=False, show_default=True
    ),
]
OutOpt = Annotated[
    Path | None,
    typer.Option("--out", "-o", help="Write to this file (html without --out: STUDY-run-N.html here)."),
]


def _latest_run(s: Study, store: Store, path: Path) -> int:
    latest = store.latest_run(s.title)
    if latest is None:
        raise DbsweepError(f"no runs of {s.title} in {store.path}; run `dbsweep run {path}` first.")
    return latest[0]


def _written(path: Path | None) -> None:
    if path is not None:
        err.print(f"wrote {path}")


ClassOpt = Annotated[
    str | None,
    typer.Option(
        "--class", help="For a study run through Slurm: the server class to read (default: each, for report)."
    ),
]
SetupOpt = Annotated[
    str | None,
    typer.Option(
        "--setup", help="For a study with setups: the one to read, cached or io-bound (default: each, for report)."
    ),
]


@app.command()
def report(
    study: StudyArg,
    workspace: WorkspaceOpt = None,
    format: FormatOpt = "terminal",
    out: OutOpt = None,
    run_id: Annotated[int | None, typer.Option("--run", help="The run to report (default: the latest).")] = None,
    groups: Annotated[
        str | None,
        typer.Option(
            "--groups",
            help="Group the rows another way the suite offers (its `groups` setting), e.g. 'five': seed 002's "
            "point-1, point-2, range-1, range-2 and writes.",
        ),
    ] = None,
    server_class: ClassOpt = None,
    setup: SetupOpt = None,
) -> None:
    """Report a study's results: QPS and rQPS with verdicts, group summaries, cost per operation, provenance."""
    from dbsweep.report import data as report_data
    from dbsweep.report.output import emit, parse_format

    fmt = parse_format(format)
    s = _study(study, workspace)
    if groups is not None:
        s = s.regrouped(groups)
    subs = _parts_of(s, server_class, setup)
    if len(subs) > 1 and (fmt != "terminal" or out is not None):
        names = ", ".join(p.title for p in subs)
        raise DbsweepError(f"{study} has parts ({names}): name the one to report with --class and --setup.")
    store = _open_store(s, must_exist=True, read_only=True)
    try:
        reported = []
        for sub in subs:
            rid = run_id if run_id is not None else _latest_run(sub, store, study)
            if not store.target_ids(rid):
                raise DbsweepError(f"no run {rid} of {sub.title} in {store.path}")
            reported.append(report_data.gather(sub, store, rid, series=fmt == "html"))
            _written(emit(reported[-1], fmt, out, console))
        _side_by_side(reported)
    finally:
        store.close()


def _side_by_side(reported: list[ReportData]) -> None:
    """After the reports of a study's parts (server classes, setups), their rQPS and instruction verdicts side by
    side."""
    from dbsweep.report import sides
    from dbsweep.report.terminal import render_extra

    for both in sides.tables(reported):
        render_extra(both, console)


def _one_part(s: Study, name: str | None, setup: str | None) -> Study:
    """The one part of a study (server class, setup) a verb that reads a single run works on: the study itself
    when it has no parts, else the part --class and --setup name."""
    subs = _parts_of(s, name, setup)
    if len(subs) > 1:
        names = ", ".join(p.title for p in subs)
        raise DbsweepError(f"{s.path} has parts ({names}): name one with --class and --setup.")
    return subs[0]


def _parts_of(s: Study, name: str | None, setup: str | None) -> list[Study]:
    """The parts of a study to report: each (server class, setup) it runs as, or those `name` and `setup` pick."""
    if name is not None and not s.hosts.classes:
        raise DbsweepError(f"--class: {s.path} runs here, not on server classes (hosts.scheduler).")
    if name is not None and name not in {c.name for c in s.hosts.classes}:
        have = ", ".join(c.name for c in s.hosts.classes)
        raise DbsweepError(f"--class: {s.path} has no server class {name!r}; it has: {have}.")
    if setup is not None and setup not in s.hosts.setups:
        have = ", ".join(s.hosts.setups) or "none"
        raise DbsweepError(f"--setup: {s.path} has no setup {setup!r}; it has: {have}.")
    return [p for p in s.parts() if (name is None or p.part_class == name) and (setup is None or p.part_setup == setup)]


def _step_named(study: Study, name: str, option: str) -> str:
    """The study's step that `name` names, in the study's spelling (`point-query`) or in full
    (`point-query_range=100`); an unknown name is an error that lists the study's steps."""
    # A setup step (sysbench's load) is a cell and a count of its own, but no step a study lists.
    full = name if name in study.bench.setup_steps() else study.bench.canonical(name)
    if full is None:
        written = study.bench.settings.steps
        named = list(written) if isinstance(written, list | tuple) else study.bench.steps()  # a set: its steps
        known = ", ".join(dict.fromkeys([*study.bench.setup_steps(), *named]))
        raise DbsweepError(f"{option}: {name!r} is not a {study.suite.name} step; the study's steps: {known}")
    return full


def _steps_named(study: Study, steps: str) -> list[str]:
    """The study's steps that a comma-separated --steps names, in full."""
    return [_step_named(study, name, "--steps") for name in (x.strip() for x in steps.split(",")) if name]


@app.command()
def why(
    study: StudyArg,
    target: Annotated[str, typer.Option("--target", help="The target to explain (against the base).")],
    step: Annotated[
        str, typer.Option("--step", help="The step whose instruction count to explain, as the study names it.")
    ],
    workspace: WorkspaceOpt = None,
    top: Annotated[int, typer.Option("--top", min=1, help="How many functions to list.")] = 25,
    run_id: Annotated[int | None, typer.Option("--run", help="The run to explain (default: the latest).")] = None,
    server_class: ClassOpt = None,
    setup: SetupOpt = None,
    against: Annotated[
        str | None,
        typer.Option(
            "--against",
            help="Another target to explain it against instead of the base (pgo_lto_bolt against pgo_lto_bolt_base).",
        ),
    ] = None,
) -> None:
    """Why a target's instructions per event differ from the base's: the functions that changed most."""
    from dbsweep.report import fmt as report_fmt
    from dbsweep.report import instr
    from dbsweep.results.counts import event_words
    from dbsweep.verdicts import instructions

    s = _one_part(_study(study, workspace), server_class, setup)
    labels = [t.label for t in s.targets]
    for option, name in (("--target", target), ("--against", against)):
        if name is not None and name not in labels:
            raise DbsweepError(f"{option}: {study} has no target {name!r}; its targets: {', '.join(labels)}")
    base_label = against or s.base
    if target == base_label:
        others = ", ".join(t for t in labels if t != base_label) or "none"
        what = "the target --against names" if against else "the base, which why compares the others with"
        raise DbsweepError(f"--target: {target} is {what}; the others: {others}")
    full = _step_named(s, step, "--step")
    store = _open_store(s, must_exist=True, read_only=True)
    try:
        rid = run_id if run_id is not None else _latest_run(s, store, study)
        if not store.target_ids(rid):
            raise DbsweepError(f"no run {rid} of {s.title} in {store.path}")
        counts = store.counts(rid)
        floors = instructions.calibrated_floors(s, store)
    finally:
        store.close()
    base, other = counts.get((base_label, full)), counts.get((target, full))
    if base is None or other is None:
        missing, who = (target, target) if base is not None else (against or "the base", base_label)
        counted = sorted({st for (t, st) in counts if t == who})
        raise DbsweepError(
            f"run {rid} has no instruction count of {full} for {missing}; "
            + (f"counted steps: {', '.join(counted)}" if counted else "it counted none (measure.instructions)")
        )
    for side, name in ((base, base_label), (other, target)):
        if side.error:
            raise DbsweepError(f"the count of {full} for {name} failed: {side.error}")
    # The verdict's own figure: the report judges and shows this very number (run_verdicts: one basis per step).
    j = instructions.run_verdicts(counts, base_label, floors)[(target, full)]
    tag = "the processes that served the client" if j.basis == "foreground" else "every process"
    console.print(
        f"{full} (an event: {event_words(other)}): {target} runs {report_fmt.instructions(j.target_figure)} "
        f"instructions per event, {base_label} {report_fmt.instructions(j.base_figure)} "
        f"({report_fmt.instr_verdict(j)}; {tag}, floor {report_fmt.floor(j)}); the functions that changed most "
        "(own instructions per event, change, change %, function, file:line):"
    )
    changes = instr.why(base, other, top=top)
    if not changes:
        console.print("no per-function counts were kept for this step (count it again with this version).")
    for c in changes:
        console.print(f"  {report_fmt.function_change(c)}")


BISECT_HELP = (
    "Find the first commit between --good and --bad where the study's steps changed, and why.\n\n"
    "How it decides: first good and bad are measured against each other, and only the steps whose verdict "
    "differs are followed (none: it says so and stops). Then each probe, a commit built from the target's git:"
    " source with its variant and config, is measured once by instructions per event (exact: a count does not "
    "depend on the machine's noise), or by QPS in interleaved rounds of good, the probe and bad, two more "
    "rounds while unsure up to measure.max_repeats. A probe is good when every step is the same as at good and"
    " differs from bad as good does; bad when the reverse holds. Anything else is unsure, and an unsure probe "
    "is never taken as good or bad: the search stops and reports the range it narrowed to, and why. A commit "
    "that does not build is skipped and its neighbours are probed instead. The culprit is measured again "
    "against its parent as a fresh pair before it is reported, with the functions whose instructions changed "
    "most.\n\n"
    "Every probe is stored in the workspace: run the same command again to resume or to report, with no build "
    "and no probe repeated. Exits 0 when it names a culprit, 3 when it stops without one."
)


@app.command(help=BISECT_HELP)
def bisect(
    study: StudyArg,
    good: Annotated[
        str | None,
        typer.Option("--good", help="A ref where the steps were as they should be, or a target of the study."),
    ] = None,
    bad: Annotated[
        str | None, typer.Option("--bad", help="A later ref where they had changed, or a target of the study.")
    ] = None,
    at: Annotated[
        str | None,
        typer.Option(
            "--at",
            help="A step of a series study already run: bisect its first change point, between the targets on its "
            "two sides (their git: refs), on that step.",
        ),
    ] = None,
    workspace: WorkspaceOpt = None,
    target: Annotated[
        str | None,
        typer.Option(
            "--target", "-t", help="The target whose git: source, variant and config to bisect (default: the base)."
        ),
    ] = None,
    steps: Annotated[
        str | None, typer.Option("--steps", help="Comma-separated steps that changed (default: the study's).")
    ] = None,
    by: Annotated[
        str,
        typer.Option(
            "--by",
            help="instructions (one count per commit: exact, and several probes at once) or qps (interleaved timed "
            "rounds, for steps the suite does not count).",
            case_sensitive=False,
        ),
    ] = "instructions",
    width: Annotated[
        int | None,
        typer.Option(
            "--width",
            min=1,
            help="Probes counted at once, each on a CPU of its own (default: measure.instruction_jobs, else every "
            "CPU). QPS probes run one at a time.",
        ),
    ] = None,
    format: FormatOpt = "terminal",
    out: OutOpt = None,
) -> None:
    """Find the first commit between --good and --bad where the study's steps changed, and why."""
    from dbsweep.report import bisection as bisect_report
    from dbsweep.report.output import Format, parse_format
    from dbsweep.verdicts import probes

    fmt = parse_format(format)
    if fmt == Format.csv:
        raise DbsweepError("--format: a bisection has no csv form; use terminal, markdown, html or json.")
    if by.lower() not in ("instructions", "qps"):
        raise DbsweepError(f"--by: {by!r} is neither instructions nor qps.")
    decide_by: probes.By = "instructions" if by.lower() == "instructions" else "QPS"
    s = _study(study, workspace)
    try:
        chosen = s.target(target or s.base)
    except KeyError:
        raise DbsweepError(
            f"--target: no target {target!r} in {study}; have: {', '.join(t.label for t in s.targets)}"
        ) from None
    step_list = _steps_named(s, steps) if steps else s.steps()
    if at is not None:
        step = _step_named(s, at, "--at")
        store = _open_store(s, must_exist=True, read_only=True)
        try:
            sides = probes.change_point(s, store, _latest_run(s, store, study), step, decide_by)
        finally:
            store.close()
        good, bad = good or sides[0], bad or sides[1]
        step_list = step_list if steps else [step]
        err.print(f"bisecting the change point of {step} between {good} and {bad}")
    if good is None or bad is None:
        raise DbsweepError("bisect needs --good and --bad (refs, or targets of the study), or --at STEP of a series.")
    if missing := [st for st in step_list if st not in s.steps()]:
        raise DbsweepError(f"--steps: {study} does not run {', '.join(missing)}; its steps: {', '.join(s.steps())}.")
    if decide_by == "instructions":
        if not s.measure.instructions:
            raise DbsweepError(f"{study}: --by instructions needs measure.instructions = true; or use --by qps.")
        counted = s.bench.instruction_steps()
        uncounted = [st for st in step_list if st not in counted]
        if uncounted:
            raise DbsweepError(
                f"--steps: the {s.suite.name} suite counts no instructions for {', '.join(uncounted)}; "
                "bisect those with --by qps."
            )
    url = probes.source_url(chosen)
    good, bad = probes.ref_of(s, good, url), probes.ref_of(s, bad, url)
    jobs = width or s.measure.instruction_jobs or len(os.sched_getaffinity(0))
    request = probes.Request(s, chosen, good, bad, step_list, decide_by, jobs)
    prober = probes.Prober(request, err, lambda m: err.print(say.styled(m, "dim")))
    err.print(_preflight(prober.study(), counts_only=decide_by == "instructions"), soft_wrap=True)
    with writing(s.workspace_dir):
        store = _open_store(s, must_exist=False)
        try:
            try:
                result = prober.run(store)
            except KeyboardInterrupt:
                err.print("interrupted: servers stopped; finished probes are kept, run again to continue.")
                raise typer.Exit(130) from None
        finally:
            store.close()
    _written(bisect_report.emit(result, fmt, out, console))
    if result.state not in ("found",):
        raise typer.Exit(3)


@app.command()
def compare(
    study_a: Annotated[Path, typer.Argument(help="The study whose base is the base.", show_default=False)],
    study_b: Annotated[
        Path | None, typer.Argument(help="A second study: its targets are compared with A's base.", show_default=False)
    ] = None,
    targets: Annotated[
        tuple[str, str] | None,
        typer.Option("--targets", help="Two targets of STUDY_A instead: BASE OTHER.", show_default=False),
    ] = None,
    workspace: WorkspaceOpt = None,
    format: FormatOpt = "terminal",
    out: OutOpt = None,
    server_class: ClassOpt = None,
    setup: SetupOpt = None,
) -> None:
    """Compare the latest runs of two studies, or two targets of one study (--targets BASE OTHER); of studies with
    parts (server classes, setups), the part --class and --setup name in each."""
    from dbsweep.report import data as report_data
    from dbsweep.report.output import emit, parse_format

    fmt = parse_format(format)
    if (study_b is None) == (targets is None):
        raise DbsweepError("give a second study, or --targets BASE OTHER for two targets of one study")
    if targets is not None and targets[0] == targets[1]:
        raise DbsweepError(f"--targets: {targets[0]!r} twice; give two different targets, the base first")
    a = _one_part(_study(study_a, workspace), server_class, setup)
    store_a = _open_store(a, must_exist=True, read_only=True)
    try:
        run_a = _latest_run(a, store_a, study_a)
        if targets is not None:
            try:
                data = report_data.compare_targets(a, store_a, run_a, targets[0], targets[1], series=fmt == "html")
            except KeyError as e:
                have = ", ".join(t.label for t in a.targets)
                raise DbsweepError(f"--targets: no target {e.args[0]!r} in {study_a}; have: {have}") from None
        else:
            assert study_b is not None
            b = _one_part(_study(study_b, workspace), server_class, setup)
            store_b = _open_store(b, must_exist=True, read_only=True)
            try:
                run_b = _latest_run(b, store_b, study_b)
                data = report_data.compare_runs(a, store_a, run_a, b, store_b, run_b, series=fmt == "html")
            except ValueError as e:
                raise DbsweepError(str(e)) from None
            finally:
                store_b.close()
        _written(emit(data, fmt, out, console))
    finally:
        store_a.close()


@app.command()
def sources(
    engine: Annotated[str | None, typer.Argument(help="The engine (default: the first one dbsweep has).")] = None,
    workspace: Annotated[Path, typer.Option("--workspace", "-w", help="Where fetched sources live.")] = Path(
        ".dbsweep"
    ),
) -> None:
    """List the versions of an engine dbsweep can fetch from Debian's source packages."""
    from dbsweep.engines.registry import names
    from dbsweep.installs import naming_of
    from dbsweep.sources import debian

    naming = naming_of(engine or names()[0])
    root = workspace.resolve() / "sources"
    with console.status("reading Debian's source package lists"):
        listed = debian.available(root, naming=naming)
    pooled = [
        d
        for d in debian.fetched_from_pool(root, naming=naming)
        if d.debian_version not in {x.debian_version for x in listed}
    ]
    found = sorted([*listed, *pooled], key=functools.cmp_to_key(debian.source_order))
    if not found:
        raise DbsweepError(
            f"no version of {naming.title} was found in Debian's source package lists under {root}: the lists may "
            "not have been fetched (see the messages above); run again once the package archive can be reached."
        )
    table = Table(
        title=f'{naming.title} from Debian\'s source packages (source = "VERSION" or "debian:VERSION")',
        title_justify="left",
        caption="A version no list carries is looked for in the archive's pool, and used only when its uploader "
        "signed it.",
        caption_justify="left",
    )
    for col in ("version", "Debian package", "Debian version", "suite"):
        table.add_column(col)
    for d in found:
        table.add_row(d.upstream_version, d.package, d.debian_version, d.suite)
    console.print(table)


@app.command("build")
def build_cmd(
    what: Annotated[str, typer.Argument(help="A study file, or an engine name followed by a source.")],
    source: Annotated[str | None, typer.Argument(help="With an engine: the source, e.g. 15.18.")] = None,
    variant: Annotated[list[str] | None, typer.Option("--variant", "-v", help="Build variant (repeatable).")] = None,
    workspace: WorkspaceOpt = None,
) -> None:
    """Build what a study needs (or one source at some variants); cached builds are reused."""
    from rich.progress import BarColumn, Progress, TimeElapsedColumn

    from dbsweep.build import variants as variant_mod
    from dbsweep.engines.registry import names
    from dbsweep.installs import build_from_source, custom_variants
    from dbsweep.study import source_kind

    jobs: list[tuple[str, str, variant_mod.Variant, str]] = []  # (engine, source, variant, label)
    if source is None:
        s = _study(Path(what), workspace)
        ws = s.workspace_dir
        custom = custom_variants(s)
        seen = set()
        for t in s.targets:
            if source_kind(t.source) == "system" or (t.source, t.variant, t.compiler) in seen:
                continue
            seen.add((t.source, t.variant, t.compiler))
            v = variant_mod.resolve_for(t.variant, t.compiler, custom)
            jobs.append((s.engine, t.source, v, f"{t.source}/{v.name}"))
    else:
        if what not in names():
            raise DbsweepError(f"unknown engine {what!r}; have: {', '.join(names())} (or give a study file alone)")
        ws = (workspace or Path(".dbsweep")).resolve()
        for name in variant or ["def"]:
            jobs.append((what, source, variant_mod.resolve(name), f"{source}/{name}"))
    failed = 0
    with (
        writing(ws),
        Progress(say.column("{task.description}", "bold"), BarColumn(), TimeElapsedColumn(), console=err) as prog,
    ):
        for engine, src, var, label in jobs:
            try:
                b = build_from_source(engine, src, var, ws, prog, label)
                prog.console.print(
                    say.line(say.styled("built", "green"), f" {label}: {b.dir} ({b.build_seconds:.0f} s)")
                )
            except DbsweepError as e:
                failed += 1
                prog.console.print(say.line(say.styled("failed", "red"), f" {label}: {e}"))
    _print_builds(ws)
    if failed:
        raise typer.Exit(1)


def _pgo_words(meta: dict[str, object]) -> str:
    """A PGO build's profile: its own training's, or one kept from a build of another variant (pgo_lto: pgo's)."""
    pgo = meta.get("pgo")
    if not isinstance(pgo, dict) or "trained_for" not in pgo:
        return "(PGO)"
    whose = "its" if pgo["trained_for"] == meta.get("variant") else f"{pgo['trained_for']}'s"
    if pgo.get("profile_reused"):
        return f"(PGO, {whose} kept profile)"
    return "(PGO)" if whose == "its" else f"(PGO, {whose} profile)"


def _print_builds(workspace: Path) -> None:
    from dbsweep.build import cache
    from dbsweep.engines.registry import names
    from dbsweep.installs import recipe_of

    root = workspace / "builds"
    found = sorted((b for e in names() for b in cache.list_builds(root, recipe_of(e))), key=lambda b: b.created)
    engines = len(names()) > 1  # then each row says whose build it is
    table = Table(title=f"builds in {root}", title_justify="left")
    columns = ("version", "variant", "compiler", "variant flags", "size", "build time", "made", "key")
    for col in (*(["engine"] if engines else []), *columns):
        table.add_column(col, overflow="fold")
    for b in found:
        # The variant's own flags: the build system's CFLAGS repeat a long list of warnings for every build.
        recipe = b.metadata.get("recipe", {})
        flags = " ".join([*recipe.get("cflags", []), *([_pgo_words(b.metadata)] if recipe.get("pgo") else [])])
        flags = flags or "(default)"
        table.add_row(
            *([b.engine] if engines else []),
            b.version,
            b.variant,
            b.compiler_version.split(" (")[0],
            flags,
            f"{b.install_bytes / 2**20:.0f} MiB",
            f"{b.build_seconds:.0f} s",
            b.created[:16],
            b.key[:12],
        )
    console.print(table)


@app.command()
def builds(workspace: WorkspaceOpt = None) -> None:
    """List the builds in the workspace with flags, size and build time."""
    if workspace is not None and not workspace.is_dir():
        what = "is a file, not a workspace directory" if workspace.exists() else "does not exist"
        raise DbsweepError(f"--workspace: {workspace} {what}.")
    _print_builds((workspace or Path(".dbsweep")).resolve())


class _ToConsole(logging.Handler):
    """dbsweep's log records (what cleanup does and waits for) as dim lines on stderr, above any bars."""

    def emit(self, record: logging.LogRecord) -> None:
        colour = "yellow" if record.levelno >= logging.WARNING else "dim"
        err.print(say.styled(record.getMessage(), colour), soft_wrap=True)


def _os_error(e: OSError) -> str:
    """An OS error as a sentence with the path and what to do."""
    where = f" {e.filename}" if e.filename else ""
    if e.errno == errno.ENOSPC:
        return f"no space left on the disk of{where}; free some space and run again (finished cells are kept)."
    if e.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return f"cannot write{where}: {e.strerror}; choose a place you can write (e.g. --workspace)."
    if e.errno == errno.EISDIR:
        return f"{(e.filename or 'the path')} is a directory; give a file name."
    if e.errno == errno.ENOTDIR:
        return f"a part of{where} is a file, not a directory."
    return f"{e.strerror or e}{':' if where else ''}{where}"


def _error(message: object) -> Text:
    return say.line(say.styled("error:", "red"), f" {message}")


def main() -> None:
    from dbsweep.results.store import DATABASE_ERRORS, explain

    # Ctrl-C is KeyboardInterrupt whatever dbsweep inherited: started in the background of a script, Python leaves
    # SIGINT ignored, and `kill -INT` would not stop a run.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    logger = logging.getLogger("dbsweep")
    logger.addHandler(_ToConsole())
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        app()
    except StudyError as e:
        for p in e.problems:
            err.print(_error(p), soft_wrap=True)
        sys.exit(2)
    except DbsweepError as e:
        err.print(_error(e), soft_wrap=True)
        sys.exit(1)
    except DATABASE_ERRORS as e:
        err.print(_error(explain(e)), soft_wrap=True)
        sys.exit(1)
    except OSError as e:
        err.print(_error(_os_error(e)), soft_wrap=True)
        sys.exit(1)
    except KeyboardInterrupt:
        err.print("interrupted.")
        sys.exit(130)
