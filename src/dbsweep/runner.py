"""Runs a study: plans its cells, brings each target's server up, runs the steps, stores every cell.

Cells are grouped by (repetition, target): one data directory, one load, then the
suite's steps in order. Within a repetition the targets alternate direction from
one repetition to the next (A B, then B A), so slow drift of the machine lands on
every target alike.
"""

from __future__ import annotations

import functools
import itertools
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from rich.console import Console
from rich.progress import Progress, TaskID

from dbsweep import __version__, configs, ibench, integrity, loadclient, placement
from dbsweep.engines import postgres
from dbsweep.errors import DbsweepError, ServerError, StepError
from dbsweep.hostinfo import host_facts
from dbsweep.installs import get_install
from dbsweep.measure import Sampler, instructions
from dbsweep.progress import CellLog, bars
from dbsweep.stepwatch import StepRun, StepWatch
from dbsweep.store import CellKey, CellResult, Store, now
from dbsweep.study import Study, Target
from dbsweep.suites import IBENCH_SETUP, LOAD_STEP, SCAN_WARM_SECONDS, STEPS


def plan(study: Study, repeats: int | None = None, targets: set[str] | None = None) -> list[CellKey]:
    """Every cell of the study, in the order they run: `repeats` rounds (the study's unless given), the
    targets in alternating order (A B, B A, ...), optionally only some targets."""
    cells: list[CellKey] = []
    for rep in range(1, (repeats or study.repeats) + 1):
        order = study.targets if rep % 2 == 1 else list(reversed(study.targets))
        for t in order:
            if targets is not None and t.label not in targets:
                continue
            if study.suite.name == "sysbench":
                cells.append(CellKey(t.label, LOAD_STEP, 1, rep))
            for step in study.steps():
                for clients in clients_of(study, step):
                    cells.append(CellKey(t.label, step, clients, rep))
    return cells


def clients_of(study: Study, step: str) -> list[int]:
    """The client counts a step runs at: the study's, or one client per table for a warm-up."""
    if study.suite.name == "ibench":
        return [ibench.clients(study.suite)]
    return [study.suite.tables] if STEPS[step].clients_are_tables else list(study.suite.clients)


def maintenance_points(study: Study) -> set[str]:
    """The steps the postwrite maintenance runs before: those right after a maintenance step.

    The method runs it after the load (through point-query.warm, which follows the load) and
    after read-write_range=100. Attached to the next step, it survives a resume.
    """
    steps = study.steps()
    points = {b for a, b in itertools.pairwise(steps) if STEPS[a].maintenance_after}
    if study.suite.name == "sysbench" and steps and not STEPS[steps[0]].maintenance_after:
        points.add(steps[0])  # straight after the load
    return points


def setup_steps(study: Study) -> tuple[str, ...]:
    """The steps that build the tables' state, replayed (not recorded) when a resume needs a fresh
    data directory: the load for sysbench; l.i0 to l.i2 for the Insert Benchmark."""
    return IBENCH_SETUP if study.suite.name == "ibench" else (LOAD_STEP,)


def step_seconds(study: Study, step: str) -> int:
    s, kind = study.suite, STEPS[step].duration
    if kind == "scan-warm":
        return SCAN_WARM_SECONDS
    return s.read_seconds if kind == "read" else s.write_seconds


def expectation(study: Study, step: str) -> integrity.Expectation:
    """What a whole measurement of `step` looks like (integrity.check holds every cell to it)."""
    s = study.suite
    if s.name == "ibench":
        return ibench.expectation(s, step)
    if step == LOAD_STEP:
        # The load ends with CREATE INDEX: seconds without a finished insert are normal then.
        return integrity.Expectation(steady=False, work=("rows", s.rows * s.tables))
    return integrity.Expectation(seconds=float(step_seconds(study, step)))


def target_spec(study: Study, target: Target) -> dict[str, Any]:
    return {
        "source": target.source,
        "variant": target.variant,
        "config": target.config,
        "config_sha256": configs.load(study.engine, target.config).sha256,
        "optional_settings": sorted(study.optional_settings),
    }


def store_path(study: Study) -> Path:
    return study.workspace_dir / "results.db"


def open_run(study: Study, store: Store, fresh: bool) -> int:
    """The run id to continue (the study's latest) or a new one."""
    study_id = store.study_id(study.title, str(study.path))
    latest = store.latest_run(study.title)
    key = study.measurement_key()
    if latest is None or fresh:
        run_id = store.new_run(study_id, key, study.path.read_text())
    else:
        run_id, old_key = latest
        if old_key != key:
            raise DbsweepError(
                f"the study's suite settings changed since run {run_id} started, so its results would mix; "
                "run with --fresh to start a new run."
            )
    for t in study.targets:
        try:
            store.ensure_target(run_id, t.label, study.engine, target_spec(study, t))
        except ValueError:
            raise DbsweepError(
                f"target {t.label!r} (or its config file) changed since run {run_id} started; "
                "run with --fresh to start a new run."
            ) from None
    return run_id


def _say(progress: Progress, who: str, message: str) -> None:
    progress.console.print(f"[dim]{who}: {message}[/dim]")


def _state_file(server: postgres.Server) -> Path:
    """The setup steps whose work the data directory holds, one per line, in order."""
    return server.home / "state"


def _mark_state(server: postgres.Server, step: str) -> None:
    with _state_file(server).open("a") as f:
        f.write(step + "\n")
        f.flush()


@dataclass
class Prepared:
    """A target ready to run: its install and the config diff as that version takes it."""

    install: postgres.Install
    config_text: str
    skipped: list[str]


@dataclass
class Outcome:
    run_id: int
    done: int = 0
    failed: int = 0
    skipped_failed: int = 0
    failures: list[str] = field(default_factory=list)


def _normalise(summary: dict[str, Any]) -> dict[str, Any]:
    """The fields every step result has, whatever the step: operations, seconds, rate."""
    s = dict(summary)
    if s.get("workload") == "prepare":
        s.update(ops_name="rows", operations=s["rows"], events=s["rows"], rate=s["rows_per_sec"], tps=s["rows_per_sec"])
    elif s.get("workload") == "scan":
        # The method reports scan as thousands of rows scanned per second, not queries per second.
        s.update(ops_name="Krows", operations=s["queries"], events=s["events"], rate=s["scan_krows_per_sec"])
    else:
        s.update(ops_name="queries", operations=s["queries"], events=s["events"], rate=s["qps"])
    return s


def _advancer(progress: Progress, task: TaskID, by_rows: bool) -> Callable[[dict[str, Any]], None]:
    """Moves a step's bar on each per-second line: by rows for the load, by one second otherwise."""

    def advance(line: dict[str, Any]) -> None:
        progress.advance(task, line["ops"] if by_rows else 1)

    return advance


class Runner:
    def __init__(
        self, study: Study, store: Store, console: Console, *, rerun_failed: bool = False, keep_data: bool = False
    ) -> None:
        self.study = study
        self.store = store
        self.console = console
        self.rerun_failed = rerun_failed
        self.keep_data = keep_data
        self.user = postgres.server_user()
        self.host = host_facts(study.workspace_dir)
        self.load_version = loadclient.version()
        self.repeats: int | None = None  # set per call of run(): extra rounds of --until-decided
        self.cell_log = CellLog(console, [])
        self.only: set[str] | None = None
        try:
            self.cpus = placement.plan(study.measure.placement)
        except ValueError as e:
            raise DbsweepError(f"{study.path}: measure.placement: {e}") from None

    def home(self, target: Target, rep: int) -> Path:
        return self.study.workspace_dir / "data" / self.study.title / target.slug / f"r{rep}"

    def run(self, run_id: int, repeats: int | None = None, targets: set[str] | None = None) -> Outcome:
        out = Outcome(run_id)
        self.repeats, self.only = repeats, targets
        status = self.store.statuses(run_id)
        todo: list[CellKey] = []
        for key in plan(self.study, repeats, targets):
            st = status.get(key)
            if st is None or (st[0] == "failed" and self.rerun_failed):
                todo.append(key)
            elif st[0] == "failed":
                out.skipped_failed += 1
        counts = self._instructions_todo(run_id) if targets is None else {}
        if not todo and not counts:
            return out
        groups: dict[tuple[int, str], list[CellKey]] = {}
        for key in todo:
            groups.setdefault((key.repetition, key.target), []).append(key)
        target_ids = self.store.target_ids(run_id)
        with self._progress() as progress:
            # Every build happens before any step runs: never benchmark while building.
            labels = {k.target for k in todo} | set(counts)
            prepared = {label: self._prepare(self.study.target(label), progress) for label in sorted(labels)}
        self.cell_log = CellLog(self.console, [self._cell_seconds(k) for k in todo])
        with self._progress() as progress:
            overall = progress.add_task("cells", total=len(todo), unit="cells")
            for (rep, label), keys in groups.items():
                target = self.study.target(label)
                ready = prepared[label]
                if isinstance(ready, str):
                    self._fail_all(keys, target_ids[label], ready, out, progress, overall)
                    continue
                self._run_group(target, ready, rep, keys, target_ids[label], out, progress, overall)
        if counts:
            self._count_instructions(run_id, counts, prepared, target_ids)
        return out

    def _instructions_todo(self, run_id: int) -> dict[str, list[str]]:
        """target -> the steps whose instructions per operation are still to count (measure.instructions)."""
        if not self.study.measure.instructions or self.study.suite.name != "sysbench":
            return {}
        have = self.store.instruction_counts(run_id)
        steps = [st for st in self.study.steps() if STEPS[st].duration == "read" and STEPS[st].group != "warm"]
        todo = {t.label: [st for st in steps if (t.label, st) not in have] for t in self.study.targets}
        return {t: sts for t, sts in todo.items() if sts}

    def _count_instructions(
        self, run_id: int, todo: dict[str, list[str]], prepared: dict[str, Prepared | str], target_ids: dict[str, int]
    ) -> None:
        """The valgrind pass: one client per step, on a freshly loaded copy of the tables, after every
        timed cell (valgrind's CPU load must not overlap a measured step). Each (workload, range) is
        counted once per target; the .pre and plain forms of a step share it."""
        s, m = self.study.suite, self.study.measure
        total = sum(len(v) for v in todo.values())
        with self._progress() as progress:
            task = progress.add_task("instructions per operation (valgrind)", total=total, unit="steps")
            for label, steps in todo.items():
                ready = prepared[label]
                target = self.study.target(label)
                done: dict[tuple[str, int], tuple[dict[str, Any], str | None]] = {}
                for step in steps:
                    spec = STEPS[step]
                    key = (spec.workload, spec.range)
                    if key not in done:
                        progress.update(task, description=f"instructions: {label} {step}")
                        done[key] = self._count_one(ready, target, spec.workload, spec.range, s, m.instruction_seconds)
                    data, error = done[key]
                    self.store.write_instructions(run_id, target_ids[label], step, data, error)
                    if error:
                        progress.console.print(f"[yellow]{label} {step}: instructions not counted: {error}[/yellow]")
                    progress.advance(task)
                if not self.keep_data:
                    shutil.rmtree(self.study.workspace_dir / "data" / self.study.title / target.slug / "valgrind", True)

    def _count_one(
        self, ready: Prepared | str, target: Target, workload: str, rng: int, s: Any, seconds: int
    ) -> tuple[dict[str, Any], str | None]:
        if isinstance(ready, str):
            return {}, ready
        home = self.study.workspace_dir / "data" / self.study.title / target.slug / "valgrind"
        try:
            count = instructions.instructions_per_op(
                ready.install,
                ready.config_text,
                home,
                workload=workload,
                tables=s.tables,
                rows=s.rows,
                range_=rng,
                short_seconds=seconds,
                long_seconds=3 * seconds,
                prepared=s.prepared,
            )
        except DbsweepError as e:
            return {}, str(e)
        return count.to_dict(), None

    def _progress(self) -> Progress:
        return bars(self.console)

    def _prepare(self, target: Target, progress: Progress) -> Prepared | str:
        """The target's install and its config fitted to the version, or why it cannot run."""
        try:
            install = get_install(self.study, target, progress)
            diff = configs.load(self.study.engine, target.config)
            text, skipped = configs.fit_to_version(
                diff, install.settings(), install.short_version, {s.lower() for s in self.study.optional_settings}
            )
        except DbsweepError as e:
            progress.console.print(f"[red]{target.label}: {e}[/red]")
            return str(e)
        if skipped:
            progress.console.print(
                f"[yellow]{target.label}: skipped settings Postgres {install.short_version} "
                f"lacks (optional_settings): {', '.join(skipped)}[/yellow]"
            )
        return Prepared(install, text, skipped)

    def _record(self, target_id: int, result: CellResult, out: Outcome) -> None:
        self.store.write_cell(out.run_id, target_id, result)
        if result.status == "done":
            out.done += 1
            s = result.summary or {}
            outcome = f"done, {float(s.get('rate') or 0):,.0f} {s.get('ops_name', 'queries')}/s"
        else:
            out.failed += 1
            out.failures.append(f"{result.key}: {result.error}")
            outcome = "failed: " + (result.error or "").splitlines()[0][:160]
        self.cell_log.finished(str(result.key), self._cell_seconds(result.key), outcome, result.status == "done")

    def _cell_seconds(self, key: CellKey) -> float:
        """Roughly how long a cell takes, to weigh the time left: its measured seconds and warm-up, or
        its rows at about 100k a second."""
        s = self.study.suite
        if s.name == "ibench":
            z = ibench.sizes(s)
            spec = STEPS[key.step]
            return float(z.rw_seconds) if spec.rate else ibench.step_rows(key.step, z) * z.clients / 1e5 + 1
        if key.step == LOAD_STEP:
            return s.rows * s.tables / 1e5 + 2
        return float(step_seconds(self.study, key.step) + s.warmup_seconds + 1)

    def _fail_all(
        self, keys: list[CellKey], target_id: int, error: str, out: Outcome, progress: Progress, overall: TaskID
    ) -> None:
        t = now()
        for key in keys:
            self._record(target_id, CellResult(key, "failed", t, t, error=error), out)
            progress.advance(overall)

    def _run_group(
        self,
        target: Target,
        ready: Prepared,
        rep: int,
        keys: list[CellKey],
        target_id: int,
        out: Outcome,
        progress: Progress,
        overall: TaskID,
    ) -> None:
        install, skipped = ready.install, ready.skipped
        server = postgres.Server(
            install=install,
            home=self.home(target, rep),
            config_name=target.config,
            config_text=ready.config_text,
            user=self.user,
        )
        replay = self._replay_needed(server, target, rep, keys)
        reloaded = bool(replay)
        try:
            if replay is not None:
                progress.console.print(f"[dim]{target.label} r{rep}: initdb and start[/dim]")
                server.init()
                _state_file(server).write_text("")
            else:
                held = ", ".join(_state_file(server).read_text().split()) or "nothing yet"
                progress.console.print(
                    f"[dim]{target.label} r{rep}: resuming on the kept data directory {server.home} "
                    f"(it holds: {held})[/dim]"
                )
            server.start()
            if self.cpus.server is not None and server.proc is not None:
                placement.pin_tree(server.proc.pid, self.cpus.server)
        except ServerError as e:
            server.stop()
            # Said before it is stored: a store that cannot be written (a full disk) must not hide why.
            progress.console.print(f"[red]{target.label}: {e}[/red]")
            self._fail_all(keys, target_id, str(e), out, progress, overall)
            return
        try:
            try:
                prov = self._provenance(server, install, target, reloaded)
                prov["config"]["skipped_settings"] = skipped
                build = {"engine": self.study.engine, "variant": target.variant, **install.provenance}
                conn = loadclient.connection_to(server, via_socket=self.study.suite.connect == "socket")
                for key in replay or []:
                    progress.console.print(f"[dim]{target.label} r{rep}: {key.step} again, to rebuild the tables[/dim]")
                    mark = server.watermark()
                    try:
                        self._step(server, conn, key, lambda m: None)
                    except StepError as e:
                        raise StepError(server.disturbance_since(mark) or str(e)) from e
                    _mark_state(server, key.step)
            except (psycopg.Error, StepError) as e:
                error = f"the server could not be readied for its steps: {e}"
                progress.console.print(f"[red]{target.label} r{rep}: {error}[/red]")
                self._fail_all(keys, target_id, error, out, progress, overall)
                return
            maintain_before = maintenance_points(self.study)
            for key in keys:
                before: dict[str, float] | None = None
                # The load advances by rows, a timed step by seconds.
                by_rows = key.step == LOAD_STEP or ibench.progress_by_rows(self.study.suite, key.step)
                task = progress.add_task(
                    f"{target.label} r{rep} {key.step} c{key.clients}",
                    total=self._expected_seconds(key),
                    unit="rows" if by_rows else "s",
                )
                started = now()
                mark = server.watermark()
                step: StepRun | None = None
                failure: str | None = None
                try:
                    if key.step in maintain_before and key.clients == clients_of(self.study, key.step)[0]:
                        before = self._maintain(server, functools.partial(_say, progress, str(key)))
                    step = self._step(server, conn, key, _advancer(progress, task, by_rows=by_rows))
                except StepError as e:
                    failure = str(e)
                # The server's own account comes first: it is the cause of whatever the client saw.
                disturbed = server.disturbance_since(mark)
                if disturbed is not None:
                    failure = disturbed if failure is None else f"{disturbed}; the step saw: {failure}"
                if failure is None and step is not None:
                    if before is not None:
                        step.summary["maintenance_before"] = before
                    result = CellResult(
                        key,
                        "done",
                        started,
                        now(),
                        summary=step.summary,
                        seconds_lines=step.lines,
                        build=build,
                        provenance=prov,
                        measures=step.measures,
                        per_op=step.per_op,
                        host_samples=step.host_samples,
                        server_stats=step.server_stats,
                        histograms=step.histograms,
                    )
                    if key.step in setup_steps(self.study):
                        _mark_state(server, key.step)
                else:
                    result = CellResult(key, "failed", started, now(), error=failure, build=build, provenance=prov)
                progress.remove_task(task)
                if result.status == "failed":
                    progress.console.print(f"[red]{key}: {result.error}[/red]")
                self._record(target_id, result, out)
                progress.advance(overall)
                if result.status == "failed":
                    is_setup = key.step in setup_steps(self.study)
                    if disturbed is not None or is_setup:
                        rest = keys[keys.index(key) + 1 :]
                        why = f"the server failed during {key}" if disturbed is not None else f"{key} failed"
                        self._fail_all(rest, target_id, f"not run: {why}", out, progress, overall)
                        break
        finally:
            server.stop()
        all_done = all(
            self.store.statuses(out.run_id).get(k, ("",))[0] == "done"
            for k in plan(self.study, self.repeats, self.only)
            if k.target == target.label and k.repetition == rep
        )
        if all_done and not self.keep_data:
            shutil.rmtree(server.home, ignore_errors=True)

    def _replay_needed(
        self, server: postgres.Server, target: Target, rep: int, keys: list[CellKey]
    ) -> list[CellKey] | None:
        """None when the data directory already holds the state the first cell to run expects; else
        the finished setup cells to run again (unrecorded) on a fresh one. A setup step that is itself
        to run always starts from a fresh data directory: a resume never builds on half a load."""
        group = [
            k for k in plan(self.study, self.repeats, self.only) if k.target == target.label and k.repetition == rep
        ]
        first = group.index(keys[0])
        setup = setup_steps(self.study)
        before = [k for k in group[:first] if k.step in setup]
        state = _state_file(server)
        have = state.read_text().split() if server.initialized() and state.is_file() else None
        if keys[0].step not in setup and have == [k.step for k in before]:
            return None
        return before

    def _maintain(self, server: postgres.Server, say: Callable[[str], None]) -> dict[str, float]:
        """The postwrite maintenance before a step; its failure fails that step, not the run."""
        try:
            return server.postwrite(self._tables(), self._maintenance_budget(), say)
        except psycopg.Error as e:
            raise StepError(f"the maintenance before this step failed: {e}") from e

    def _maintenance_budget(self) -> float:
        s = self.study.suite
        if s.name == "ibench":
            return ibench.maintenance_budget(s)
        if s.maintenance_seconds is not None:
            return float(s.maintenance_seconds)
        return min(1200.0, 60 + s.rows * s.tables / 1e6)

    def _tables(self) -> list[str]:
        s = self.study.suite
        return ibench.tables(s) if s.name == "ibench" else [f"sbtest{i}" for i in range(1, s.tables + 1)]

    def _expected_seconds(self, key: CellKey) -> float | None:
        if self.study.suite.name == "ibench":
            return ibench.expected_progress(self.study.suite, key.step)
        if key.step == LOAD_STEP:
            return float(self.study.suite.tables * self.study.suite.rows)
        return float(step_seconds(self.study, key.step) + self.study.suite.warmup_seconds)

    def _step(
        self, server: postgres.Server, conn: loadclient.Connection, key: CellKey, tick: Callable[[dict[str, Any]], None]
    ) -> StepRun:
        s = self.study.suite
        sizes = ["--tables", str(s.tables), "--rows", str(s.rows), "--seed", str(s.seed)]
        if s.name == "ibench":
            cmd = ibench.command(s, key.step)
        elif key.step == LOAD_STEP:
            cmd = ["prepare", *sizes] + ([] if s.primary_key else ["--no-pk"])
        else:
            spec = STEPS[key.step]
            cmd = [
                "run",
                spec.workload,
                *sizes,
                "--range",
                str(spec.range),
                "--zipf-exp",
                str(s.zipf_exp),
                "--clients",
                str(key.clients),
                "--seconds",
                str(step_seconds(self.study, key.step)),
                "--warmup",
                str(s.warmup_seconds),
            ] + ([] if s.prepared else ["--no-prepared"])
        log = server.home / "client" / f"{key.step}.c{key.clients}.log"
        assert server.proc is not None, "a step runs against a started server"
        watch = StepWatch(Sampler(server.proc.pid, server.datadir), tick)
        with watch.sampler:
            output = loadclient.run(
                cmd,
                conn,
                log,
                on_second=watch.on_line,
                cpus=self.cpus.client,
                on_start=watch.on_start,
                on_summary=watch.on_summary,
            )
        summary = ibench.normalise(output.summary) if s.name == "ibench" else _normalise(output.summary)
        summary["command"] = ["dbsweep-load", *cmd]
        problem = integrity.check(expectation(self.study, key.step), summary, output.seconds)
        if problem is not None:
            raise StepError(problem)
        run = StepRun(summary, output.seconds)
        watch.finish(run, server)
        return run

    def _provenance(
        self, server: postgres.Server, install: postgres.Install, target: Target, reloaded: bool
    ) -> dict[str, Any]:
        return {
            "dbsweep_version": __version__,
            "load_client": self.load_version,
            "host": self.host,
            "engine": {"name": self.study.engine, "server_version": server.server_version(), **install.provenance},
            "target": {"name": target.label, "source": target.source, "variant": target.variant},
            "config": {"name": target.config, "diff": server.config_text, "effective_settings": server.settings()},
            "suite": self.study.suite.model_dump(),
            "server_user": self.user,
            "cpu_placement": self.cpus.describe(),
            "reloaded_for_resume": reloaded,
        }
