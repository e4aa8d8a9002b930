"""The dbsweep command line."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from dbsweep import __version__, procs
from dbsweep.errors import DbsweepError, StudyError
from dbsweep.store import Store
from dbsweep.study import Study, load_study

if TYPE_CHECKING:
    from dbsweep.runner import Outcome, Runner

app = typer.Typer(
    name="dbsweep",
    help="Find out whether a database engine got faster or slower across versions, builds and configs, and why.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console()
err = Console(stderr=True)

StudyArg = Annotated[Path, typer.Argument(help="The study file (TOML).", show_default=False)]
WorkspaceOpt = Annotated[
    Path | None, typer.Option("--workspace", "-w", help="Override the study's workspace directory.")
]


def _study(path: Path, workspace: Path | None) -> Study:
    study = load_study(path)
    if workspace is not None:
        study = study.model_copy(update={"workspace": str(workspace)})
    return study


def _open_store(study: Study, must_exist: bool) -> Store:
    from dbsweep.runner import store_path

    p = store_path(study)
    if must_exist and not p.is_file():
        raise DbsweepError(f"no results yet for {study.title}: {p} does not exist; run `dbsweep run {study.path}`.")
    return Store(p)


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


@app.command()
def validate(study: StudyArg) -> None:
    """Check a study file and print what it would run."""
    from dbsweep.runner import plan

    s = load_study(study)
    cells = plan(s)
    if s.suite.name == "ibench":
        from dbsweep import ibench

        z = ibench.sizes(s.suite)
        what = (
            f"Insert Benchmark, {len(s.steps())} steps, {z.clients} client(s), {z.load_rows:,} rows per client "
            f"loaded, {z.write_rows:,} through the queue, {z.rw_seconds} s per read-write step"
        )
    else:
        what = f"{len(s.steps())} steps + load, clients {s.suite.clients}"
    console.print(
        f"[green]ok[/green] {study}: engine {s.engine}, {len(s.targets)} targets "
        f"(base {s.base}), {what}, {s.repeats} repetition(s): {len(cells)} cells"
    )


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
) -> None:
    """Run the cells of a study that have no result yet, then print the report."""
    from dbsweep.report import data as report_data
    from dbsweep.report import terminal
    from dbsweep.runner import Runner, open_run

    s = _study(study, workspace)
    store = _open_store(s, must_exist=False)
    try:
        run_id = open_run(s, store, fresh)
        try:
            with procs.cleanup_on_exit():
                runner = Runner(s, store, console, rerun_failed=rerun_failed, keep_data=keep_data)
                outcome = runner.run(run_id)
                if until_decided:
                    _until_decided(s, store, runner, outcome)
        except KeyboardInterrupt:
            err.print("interrupted: servers stopped; finished cells are kept, run again to continue.")
            raise typer.Exit(130) from None
        if outcome.done == 0 and outcome.failed == 0:
            console.print(f"Nothing to run: every cell of run {run_id} has a result.")
        else:
            console.print(f"Run {run_id}: {outcome.done} cells done, {outcome.failed} failed.")
        if outcome.skipped_failed:
            console.print(
                f"[yellow]{outcome.skipped_failed} cells failed earlier and were not retried; "
                "use --rerun-failed to retry them.[/yellow]"
            )
        terminal.render(report_data.gather(s, store, run_id), console)
        if outcome.failed:
            raise typer.Exit(1)
    finally:
        store.close()


def _until_decided(s: Study, store: Store, runner: Runner, outcome: Outcome) -> None:
    from dbsweep.verdicts import unsure_targets

    while True:
        rows = store.results(outcome.run_id)
        unsure = unsure_targets(s, rows)
        reps = max([s.repeats, *(int(r["repetition"]) for r in rows)])
        if not unsure:
            console.print(f"Every verdict is decided after {reps} repetitions.")
            return
        if reps >= s.measure.max_repeats:
            console.print(
                f"[yellow]Still unsure after {reps} repetitions (measure.max_repeats): "
                f"{', '.join(sorted(unsure))}.[/yellow]"
            )
            return
        more = min(reps + 2, s.measure.max_repeats)
        console.print(f"Unsure: {', '.join(sorted(unsure))}; adding repetitions {reps + 1}..{more}.")
        extra = runner.run(outcome.run_id, repeats=more, targets=unsure | {s.base})
        outcome.done += extra.done
        outcome.failed += extra.failed
        outcome.failures += extra.failures
        if extra.done == 0:
            return  # nothing could run (every new cell failed before): stop rather than loop


@app.command()
def status(study: StudyArg, workspace: WorkspaceOpt = None) -> None:
    """Show which cells are done, failed or pending."""
    from dbsweep.runner import plan

    s = _study(study, workspace)
    store = _open_store(s, must_exist=False)
    try:
        latest = store.latest_run(s.title)
        stored = store.statuses(latest[0]) if latest else {}
        table = Table(title=f"{s.title}: run {latest[0] if latest else '(none yet)'}", title_justify="left")
        for col in ("target", "step", "clients", "rep", "status", "error"):
            table.add_column(col)
        counts = {"done": 0, "failed": 0, "pending": 0}
        for key in plan(s):
            st, error = stored.get(key, ("pending", None))
            counts[st] += 1
            style = {"done": "green", "failed": "red", "pending": "yellow"}[st]
            table.add_row(
                key.target,
                key.step,
                str(key.clients),
                str(key.repetition),
                f"[{style}]{st}[/]",
                (error or "").splitlines()[0][:80] if error else "",
            )
        console.print(table)
        console.print(f"done {counts['done']}, failed {counts['failed']}, pending {counts['pending']}")
    finally:
        store.close()


@app.command()
def report(study: StudyArg, workspace: WorkspaceOpt = None) -> None:
    """Print QPS per target and step and QPS relative to the base."""
    from dbsweep.report import data as report_data
    from dbsweep.report import terminal

    s = _study(study, workspace)
    store = _open_store(s, must_exist=True)
    try:
        latest = store.latest_run(s.title)
        if latest is None:
            raise DbsweepError(f"no runs of {s.title} in {store.path}; run `dbsweep run {study}` first.")
        terminal.render(report_data.gather(s, store, latest[0]), console)
    finally:
        store.close()


@app.command()
def sources(
    engine: Annotated[str, typer.Argument(help="The engine: postgres.")] = "postgres",
    workspace: Annotated[Path, typer.Option("--workspace", "-w", help="Where fetched sources live.")] = Path(
        ".dbsweep"
    ),
) -> None:
    """List the Postgres versions dbsweep can fetch from Debian's source packages."""
    from dbsweep.sources import debian

    if engine != "postgres":
        raise DbsweepError(f"unknown engine {engine!r}; have: postgres")
    with console.status("reading Debian's source package lists"):
        found = debian.available(workspace.resolve() / "sources")
    table = Table(
        title='Postgres from Debian\'s source packages (source = "VERSION" or "debian:VERSION")', title_justify="left"
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
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from dbsweep import variants as variant_mod
    from dbsweep.installs import build_from_source, custom_variants
    from dbsweep.study import source_kind

    jobs: list[tuple[str, variant_mod.Variant, str]] = []
    if source is None:
        s = _study(Path(what), workspace)
        ws = s.workspace_dir
        custom = custom_variants(s)
        seen = set()
        for t in s.targets:
            if source_kind(t.source) == "system" or (t.source, t.variant) in seen:
                continue
            seen.add((t.source, t.variant))
            jobs.append((t.source, variant_mod.resolve(t.variant, custom), f"{t.source}/{t.variant}"))
    else:
        if what != "postgres":
            raise DbsweepError(f"unknown engine {what!r}; have: postgres (or give a study file alone)")
        ws = (workspace or Path(".dbsweep")).resolve()
        for name in variant or ["def"]:
            jobs.append((source, variant_mod.builtin(name), f"{source}/{name}"))
    failed = 0
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), TimeElapsedColumn(), console=console) as prog:
        for src, var, label in jobs:
            try:
                b = build_from_source(src, var, ws, prog, label)
                prog.console.print(f"[green]built[/green] {label}: {b.dir} ({b.build_seconds:.0f} s)")
            except DbsweepError as e:
                failed += 1
                prog.console.print(f"[red]failed[/red] {label}: {e}")
    _print_builds(ws)
    if failed:
        raise typer.Exit(1)


def _print_builds(workspace: Path) -> None:
    from dbsweep import build as build_mod

    found = build_mod.list_builds(workspace / "builds")
    table = Table(title=f"builds in {workspace / 'builds'}", title_justify="left")
    for col in ("version", "variant", "compiler", "variant flags", "size", "build time", "made", "key"):
        table.add_column(col, overflow="fold")
    for b in found:
        # The variant's own flags: pg_config's CFLAGS repeat a long list of warnings for every build.
        recipe = b.metadata.get("recipe", {})
        flags = " ".join([*recipe.get("cflags", []), *(["(PGO)"] if recipe.get("pgo") else [])]) or "(default)"
        table.add_row(
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
    _print_builds((workspace or Path(".dbsweep")).resolve())


def main() -> None:
    try:
        app()
    except StudyError as e:
        for p in e.problems:
            err.print(f"[red]error:[/red] {p}", highlight=False, soft_wrap=True)
        sys.exit(2)
    except DbsweepError as e:
        err.print(f"[red]error:[/red] {e}", highlight=False, soft_wrap=True)
        sys.exit(1)
