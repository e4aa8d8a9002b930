"""The numbers every report format shows, gathered once from the store.

`gather` reads one run of one study; `compare_runs` and `compare_targets` build the same model for
ad-hoc comparisons. The renderers (terminal, markdown, csv_json, html) only format what is here: every
ratio, interval, verdict and group summary is computed in this module, with `dbsweep.stats`.
"""

from __future__ import annotations

import difflib
import importlib
import math
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from dbsweep import plan, unsafe, verdicts
from dbsweep.engines.registry import engine_named
from dbsweep.report import answer as answers
from dbsweep.report import flames, instr, noise
from dbsweep.report.tables import ExtraTable
from dbsweep.results.store import Store
from dbsweep.study import Study
from dbsweep.suites.base import Suite
from dbsweep.verdicts import calibrate, judging, stats
from dbsweep.verdicts.instructions import InstrVerdict
from dbsweep.verdicts.series import Series
from dbsweep.verdicts.series import analyse as over_series

# The instruction count beside the costs per operation: the figure its verdict judges, per event of the step
# (`instr.attach` puts it on each repetition of the step's counted row), so the table and the verdict agree.
INSTR_METRIC = "instr/event"
# Per-operation metrics in the order the method's tables show them; any other stored metric follows.
PER_OP_ORDER = ("cpu/o", "cs/o", "r/o", "rKB/o", "wKB/o", "client_cpu/o", INSTR_METRIC)
# `o/s` is the step's own operations per second again: not a cost per operation. `instructions/o` is what older
# stores copied of a count (per query, every process): not the figure judged, so not shown.
NOT_COSTS = frozenset({"o/s", "instructions/o"})
# The per-operation metric that gets a verdict (lower is better).
VERDICT_METRIC = "cpu/o"


class Sample(NamedTuple):
    """One second of a timed step (table `samples`)."""

    t: int
    phase: str
    ops: int
    max_us: int


class RateSample(NamedTuple):
    """One second of a step that runs several operations at once (the Insert Benchmark's inserts, deletes
    and queries): their rates and worst times."""

    t: int
    ips: float
    dps: float
    qps: float
    max_insert_us: int | None
    max_delete_us: int | None
    max_query_us: int | None


@dataclass
class Rep:
    """One done repetition: a stored cell of target x step x clients x repetition."""

    repetition: int
    cell_id: int
    qps: float
    tps: float
    summary: dict[str, Any] = field(default_factory=dict)
    per_op: dict[str, float | None] = field(default_factory=dict)
    # Loaded only when asked for (the HTML report): they can be large.
    samples: list[Sample] = field(default_factory=list)
    rates: list[RateSample] = field(default_factory=list)
    histograms: dict[str, str] = field(default_factory=dict)
    # The host's steal share (%) over the step's measured window; None when the samplers did not say.
    steal_pct: float | None = None
    # The CV of the step's measured seconds (`Store.second_spreads`): the noise of a single repetition.
    second_cv: float | None = None

    def latency(self, key: str) -> float | None:
        """A latency statistic of the step's main operation (p50, p95, p99, max, mean), µs."""
        v = (self.summary.get("latency_us") or {}).get(key)
        return float(v) if isinstance(v, int | float) else None


@dataclass
class Entry:
    """One entry of the report's tables: a target at one step and client count, with its done repetitions
    (in repetition order; each one a stored cell, `Rep`) and how many of its cells failed."""

    reps: list[Rep] = field(default_factory=list)
    failed: int = 0

    @property
    def values(self) -> list[float]:
        return [r.qps for r in self.reps]

    @property
    def summaries(self) -> list[dict[str, Any]]:
        return [r.summary for r in self.reps]

    @property
    def median(self) -> float | None:
        return stats.median(self.values) if self.reps else None

    @property
    def tps_median(self) -> float | None:
        return stats.median([r.tps for r in self.reps]) if self.reps else None

    @property
    def cv(self) -> float | None:
        return stats.spread(self.values)

    def per_op_values(self, metric: str) -> list[float]:
        return [float(v) for r in self.reps if (v := r.per_op.get(metric)) is not None]

    def per_op_median(self, metric: str) -> float | None:
        vals = self.per_op_values(metric)
        return stats.median(vals) if vals else None

    def latency_median(self, key: str) -> float | None:
        vals = [v for r in self.reps if (v := r.latency(key)) is not None]
        return stats.median(vals) if vals else None

    def summary_median(self, key: str) -> float | None:
        vals = [
            float(v) for s in self.summaries if isinstance(v := s.get(key), int | float) and not isinstance(v, bool)
        ]
        return stats.median(vals) if vals else None

    @property
    def steal_pct(self) -> float | None:
        """The most steal (%) any repetition saw."""
        vals = [r.steal_pct for r in self.reps if r.steal_pct is not None]
        return max(vals) if vals else None

    @property
    def sla_ok(self) -> bool | None:
        """Whether every repetition met its service level, where the suite's step has one."""
        known = [s["sla_ok"] for s in self.summaries if isinstance(s.get("sla_ok"), bool)]
        return all(known) if known else None


@dataclass(frozen=True)
class Comparison:
    """A target against the base on one metric: the ratio of medians, its interval and verdict."""

    ratio: float | None
    low: float | None = None
    high: float | None = None
    verdict: stats.Verdict | None = None
    method: str = "none"
    # How the verdict was reached (`judging.Judged`): the interval, or the one-repetition rule with its noise and
    # how many times that noise the change was.
    rule: judging.Rule = "interval"
    noise: judging.Noise | None = None
    multiple: float | None = None


NO_COMPARISON = Comparison(None)


@dataclass
class Row:
    step: str
    clients: int
    group: str
    ops_name: str
    cells: dict[str, Entry]
    # Whether the step counts in the group summaries (the suite says; warm-ups and setup do not).
    in_summaries: bool
    # rQPS per target (the base's is 1.0 when it has a value); kept apart from `cmp` for old callers.
    rel: dict[str, float | None]
    # Every target but the base: rQPS with its interval and verdict.
    cmp: dict[str, Comparison] = field(default_factory=dict)
    # Every target but the base: metric -> ratio to the base of the per-operation medians.
    cost_ratio: dict[str, dict[str, float | None]] = field(default_factory=dict)
    # Every target but the base: the verdict on cpu/o (lower is better).
    cost_cmp: dict[str, Comparison] = field(default_factory=dict)
    # The A-A spread of the step's QPS shown beside its verdicts, and where it came from (`noise`).
    spread: noise.Spread | None = None
    # Every target but the base: the verdict on instructions per operation (`instr`; the step's 1-client row).
    instr: dict[str, InstrVerdict] = field(default_factory=dict)
    # The step as the method's reports print it at this client count (the suite's `step_label`), e.g.
    # readwhilewriting.t1; empty: the step's own name.
    label: str = ""

    @property
    def name(self) -> str:
        return self.label or self.step


@dataclass(frozen=True)
class GroupStats:
    """The seeds' summary of one group's rQPS for one target at one client count."""

    group: str
    clients: int
    target: str
    summary: stats.GroupSummary
    geomean: float
    verdicts: dict[stats.Verdict, int]
    title: str
    # The same steps' verdicts on instructions per operation, where they were counted, and their ratios to the
    # base's count (target / base: below 1 is less work), which `instr_summary` summarises as rQPS is.
    instr_verdicts: dict[stats.Verdict, int] = field(default_factory=dict)
    instr_ratios: list[float] = field(default_factory=list)

    @property
    def instr_summary(self) -> stats.GroupSummary | None:
        return stats.summarise(self.instr_ratios) if self.instr_ratios else None


@dataclass
class Provenance:
    """What produced a target's results: the latest done cell's provenance and build records."""

    target: str
    data: dict[str, Any]
    build: dict[str, Any]
    records: int  # distinct provenance records among the target's cells (resumes, placements differ)

    def engine(self, key: str) -> str:
        v = (self.data.get("engine") or {}).get(key)
        if v in (None, ""):
            v = self.build.get(key)
        return "" if v in (None, "") else str(v)

    @property
    def config_name(self) -> str:
        return str((self.data.get("config") or {}).get("name", ""))

    @property
    def config_diff(self) -> str:
        return str((self.data.get("config") or {}).get("diff", ""))

    @property
    def unsafe_allowed(self) -> dict[str, str]:
        """The unsafe settings the study allowed the config, each with why it is unsafe."""
        allowed = (self.data.get("config") or {}).get(unsafe.PROVENANCE_KEY)
        return {str(k): str(v) for k, v in allowed.items()} if isinstance(allowed, dict) else {}

    def facts(self) -> list[tuple[str, str]]:
        """Label and value of every known fact, in reading order; unknown ones are left out."""
        host = self.data.get("host") or {}
        target = self.data.get("target") or {}
        fs = host.get("workspace_fs") or {}
        mem = host.get("memory_bytes")
        cores = ", ".join(
            f"{host[k]} {w}" for k, w in (("cpus_physical", "physical"), ("cpus_logical", "logical")) if host.get(k)
        )
        placement = self.data.get("cpu_placement")
        skipped = (self.data.get("config") or {}).get("skipped_settings")
        out = [
            ("version", self.engine("server_version") or self.engine("version")),
            ("source", str(target.get("source") or self.engine("source"))),
            ("source identity", self.engine("source_identity")),
            ("variant", str(target.get("variant") or self.build.get("variant") or "")),
            ("compiler", self.engine("compiler_version") or self.engine("cc")),
            ("CFLAGS", self.engine("cflags")),
            ("LDFLAGS", self.engine("ldflags")),
            ("configure", self.engine("configure_command") or self.engine("configure")),
            ("build key", self.engine("build_key")),
            ("config", self.config_name),
            ("settings skipped", ", ".join(map(str, skipped)) if skipped else ""),
            ("unsafe settings allowed", unsafe.describe(self.unsafe_allowed)),
            ("host", str(host.get("hostname", ""))),
            ("CPU", str(host.get("cpu_model", ""))),
            ("cores", cores),
            ("memory", f"{mem / 2**30:.1f} GiB" if isinstance(mem, int | float) else ""),
            ("kernel", str(host.get("kernel", ""))),
            ("OS", str(host.get("os", ""))),
            ("filesystem", " ".join(str(fs[k]) for k in ("fstype", "device", "mountpoint") if fs.get(k))),
            ("CPU placement", _placement(placement)),
            ("dbsweep", str(self.data.get("dbsweep_version", ""))),
            ("load client", str(self.data.get("load_client") or "")),
        ]
        out += noise.tuning_facts(host)
        if self.records > 1:
            out.append(("records", f"{self.records} distinct provenance records; this is the latest"))
        return [(k, v) for k, v in out if v]


def _placement(p: Any) -> str:
    if not p:
        return ""
    if not isinstance(p, dict):
        return str(p)

    def cpus(v: Any) -> str:
        return ",".join(map(str, v)) if isinstance(v, list) else "any"

    return (
        f"{p.get('placement', '?')} (server CPUs {cpus(p.get('server_cpus'))}, client CPUs "
        f"{cpus(p.get('client_cpus'))}, host CPUs {cpus(p.get('host_cpus'))})"
    )


def unsafe_notes(provenance: dict[str, Provenance]) -> list[str]:
    """A note for each target that ran with unsafe settings the study allowed, naming them and why."""
    return [
        f"{t}: unsafe settings allowed by the study: {unsafe.describe(p.unsafe_allowed)}."
        for t, p in provenance.items()
        if p.unsafe_allowed
    ]


def config_change(base: Provenance | None, other: Provenance | None) -> str:
    """The target's config diff against the base's, as a unified diff ("" when they are the same)."""
    if base is None or other is None or base.config_diff == other.config_diff:
        return ""
    lines = difflib.unified_diff(
        base.config_diff.splitlines(),
        other.config_diff.splitlines(),
        fromfile=f"{base.target} ({base.config_name})",
        tofile=f"{other.target} ({other.config_name})",
        lineterm="",
        n=0,
    )
    return "\n".join(lines)


@dataclass
class ReportData:
    study: Study
    run_id: int
    targets: list[str]
    base: str
    rows: list[Row]
    title: str = ""
    suite: str = ""
    # The suite's report groups in order (key -> title), its tables of its own, whether the terminal shows
    # the common QPS table, and what each step's rate counts.
    group_titles: dict[str, str] = field(default_factory=dict)
    extra_tables: list[ExtraTable] = field(default_factory=list)
    main_table: bool = True
    rate_note: str = ""
    min_effect: float = 0.02
    confidence: float = 0.95
    per_op_metrics: list[str] = field(default_factory=list)
    groups: list[GroupStats] = field(default_factory=list)
    provenance: dict[str, Provenance] = field(default_factory=dict)
    # Things a reader must know (e.g. a comparison of runs with different settings).
    notes: list[str] = field(default_factory=list)
    # What was compared, for headings: "run 3" or "run 3 of x and run 1 of y".
    runs: str = ""
    has_series: bool = False
    # The canary timed before each round of the run (none when the report spans two runs).
    canaries: noise.Canaries = field(default_factory=noise.Canaries)
    # Instructions per operation per step, with verdicts and the functions that changed (`instr`).
    instr_rows: list[instr.InstrRow] = field(default_factory=list)
    # Sampled profiles per step and target (`flames`).
    profiles: list[flames.StepProfiles] = field(default_factory=list)
    # Whether the run's instruction counts were read (`instr.attach`; not for a comparison of two runs).
    counts_read: bool = False
    # The answer every format starts with (`answer`), built last from everything above.
    answer: answers.Answer | None = None
    # A series study's trend per step and figure, with its change points (`verdicts.series`).
    trend: list[Series] = field(default_factory=list)

    @property
    def others(self) -> list[str]:
        return [t for t in self.targets if t != self.base]

    @property
    def ordered(self) -> list[str]:
        """The base first, then the other targets: the column order of every table."""
        return [self.base, *self.others]

    @property
    def client_counts(self) -> list[int]:
        return sorted({r.clients for r in self.rows})


# ---- reading the store ------------------------------------------------------------------------


def suite_tables(suite: Suite, data: ReportData) -> list[ExtraTable]:
    """The suite's own tables (`Suite.report_module`), loaded here: the report layer sits above the suites, so the
    suite's report module may import this one and its suite at its top, and the suite imports neither."""
    if suite.report_module is None:
        return []
    module = importlib.import_module(f"{type(suite).__module__}.{suite.report_module}")
    made: list[ExtraTable] = module.tables(data, suite)
    return made


def _load_cells(
    store: Store, run_id: int, label: Callable[[str], str], series: bool
) -> tuple[dict[tuple[str, int, str], Entry], dict[str, str]]:
    cells: dict[tuple[str, int, str], Entry] = {}
    ops_names: dict[str, str] = {}
    summaries = store.summaries(run_id)
    per_op = store.per_op(run_id)
    seconds = store.second_spreads(run_id)
    by_id: dict[int, Rep] = {}
    for r in store.results(run_id):
        rep = Rep(
            repetition=r.repetition,
            cell_id=r.cell_id,
            qps=r.qps,
            tps=r.tps,
            summary=summaries.get(r.cell_id, {}),
            per_op=per_op.get(r.cell_id, {}),
            second_cv=got[1] if (got := seconds.get(r.cell_id)) is not None else None,
        )
        cells.setdefault((r.step, r.clients, label(r.target)), Entry()).reps.append(rep)
        by_id[rep.cell_id] = rep
        ops_names[r.step] = r.ops_name
    for key, (st, _err) in store.statuses(run_id).items():
        if st == "failed":
            cells.setdefault((key.step, key.clients, label(key.target)), Entry()).failed += 1
    for cell in cells.values():
        cell.reps.sort(key=lambda r: r.repetition)
    noise.load_steal(store, run_id, by_id)
    if series:
        _load_series(store, run_id, by_id)
    return cells, ops_names


def _load_series(store: Store, run_id: int, by_id: dict[int, Rep]) -> None:
    for cell_id, t, phase, ops, max_us in store.seconds(run_id):
        if (rep := by_id.get(cell_id)) is not None:
            rep.samples.append(Sample(t, phase, ops, max_us))
    for cell_id, *values in store.rates(run_id):
        if (rep := by_id.get(cell_id)) is not None:
            rep.rates.append(RateSample(*values))
    for cell_id, kind, data in store.histograms(run_id, exclude=("latency",)):
        if (rep := by_id.get(cell_id)) is not None:
            rep.histograms[kind] = data


def _load_provenance(store: Store, run_id: int, label: Callable[[str], str]) -> dict[str, Provenance]:
    out: dict[str, Provenance] = {}
    for name, (data, build, records) in store.provenance(run_id).items():
        t = label(name)
        out[t] = Provenance(t, data, build, records)
    return out


# ---- comparing ---------------------------------------------------------------------------------


def compare(
    base: Entry,
    target: Entry,
    values: Callable[[Rep], float | None],
    *,
    paired: bool,
    confidence: float,
    min_effect: float,
    higher_is_better: bool = True,
    noise: judging.Noise | None = None,
) -> Comparison:
    """The ratio of the target's median to the base's with `stats.ratio_ci` and `stats.verdict` (or, with one
    repetition and `noise`, the one-repetition rule)."""
    # Repetition r of every target ran in round r (A B, then B A): the verdicts pair them up.
    b = {r.repetition: v for r in base.reps if (v := values(r)) is not None}
    t = {r.repetition: v for r in target.reps if (v := values(r)) is not None}
    j = verdicts.judge_values(
        b,
        t,
        confidence=confidence,
        min_effect=min_effect,
        higher_is_better=higher_is_better,
        paired=paired,
        noise=noise,
    )
    if j.ci is None:
        return NO_COMPARISON
    return Comparison(j.ci.ratio, j.ci.low, j.ci.high, j.verdict, j.ci.method, j.rule, j.noise, j.multiple)


def qps_noise(
    step: str, clients: int, base: Entry, target: Entry, measured: calibrate.Measured | None
) -> judging.Noise | None:
    """The noise of one repetition's QPS of a step: the A-A spread a calibration measured, else the per-second
    variation of the two sides' repetitions (`judging`)."""
    if measured is not None:
        detail = f"dbsweep calibrate run {measured.run_id} of {measured.target}"
        if (cal := judging.calibrated_noise(step, clients, measured.cv_qps, detail)) is not None:
            return cal
    return judging.seconds_noise(r.second_cv for r in [*base.reps, *target.reps])


def _geomean(values: Sequence[float]) -> float:
    return statistics.geometric_mean(values) if all(v > 0 for v in values) else math.nan


def group_stats(rows: Iterable[Row], others: Sequence[str], titles: dict[str, str]) -> list[GroupStats]:
    """Summaries of rQPS per group, client count and target, over the steps that count in summaries."""
    by: dict[tuple[str, int, str], list[Row]] = {}
    for row in rows:
        if not row.in_summaries:
            continue
        for t in others:
            by.setdefault((row.group, row.clients, t), []).append(row)
    out: list[GroupStats] = []
    order = list(titles)
    for (group, clients, t), grp in sorted(by.items(), key=lambda kv: (order.index(kv[0][0]), kv[0][1])):
        vals = [r for row in grp if (r := row.rel.get(t)) is not None]
        if not vals:
            continue
        verdicts = Counter(v for row in grp if (v := row.cmp[t].verdict) is not None)
        counts = {v: verdicts[v] for v in stats.VERDICTS}
        out.append(GroupStats(group, clients, t, stats.summarise(vals), _geomean(vals), counts, titles[group]))
    # Targets in column order within each group and client count.
    return sorted(out, key=lambda g: (order.index(g.group), g.clients, list(others).index(g.target)))


def metric_names(rows: Iterable[Row]) -> list[str]:
    """The per-operation metrics present in any repetition: the method's order first, then the rest."""
    found = {
        m for row in rows for c in row.cells.values() for r in c.reps for m, v in r.per_op.items() if v is not None
    }
    found -= NOT_COSTS
    return [m for m in PER_OP_ORDER if m in found] + sorted(found - set(PER_OP_ORDER))


def _assemble(
    study: Study,
    run_id: int,
    targets: list[str],
    base: str,
    keys: list[tuple[str, int]],
    cells: dict[tuple[str, int, str], Entry],
    ops_names: dict[str, str],
    *,
    paired: bool,
    measured: calibrate.Measured | None = None,
) -> ReportData:
    m = study.measure
    suite = study.bench
    rows: list[Row] = []
    for step, clients in keys:
        row_cells = {t: cells.get((step, clients, t), Entry()) for t in targets}
        base_median = row_cells[base].median
        rel = {t: _ratio(c.median, base_median) for t, c in row_cells.items()}
        ops_name = ops_names.get(step, suite.ops_name(step))
        group, summarised, label = suite.group_of(step), suite.in_summaries(step), suite.step_label(step, clients)
        rows.append(Row(step, clients, group, ops_name, row_cells, summarised, rel, label=label))
    data = ReportData(study, run_id, targets, base, rows, title=study.title, suite=study.suite.name)
    data.group_titles, data.main_table, data.rate_note = suite.report_groups(), suite.main_table, suite.report_note()
    data.min_effect, data.confidence = m.min_effect, m.confidence
    data.per_op_metrics = metric_names(rows)
    engine = engine_named(study.engine)
    if engine.kind == "embedded":
        data.notes.append(
            f"{engine.title} runs inside the load client: there is no server process, so cpu/o is the load "
            "client's CPU per operation (the engine's work and the client's own), and instr/event counts the "
            "whole client under valgrind, the client's own instructions included (the same for every target)."
        )
    elif engine.kind == "tool":
        data.notes.append(
            f"{engine.title}'s own benchmark program is engine and client in one process: cpu/o is that process's "
            "CPU per operation, and instr/event counts the whole process under valgrind, one thread, from the "
            "same loaded and compacted database, a fixed number of operations per run."
        )
    for row in rows:
        b = row.cells[base]
        for t in data.others:
            c = row.cells[t]
            noise = qps_noise(row.step, row.clients, b, c, measured)
            row.cmp[t] = compare(
                b, c, lambda r: r.qps, paired=paired, confidence=m.confidence, min_effect=m.min_effect, noise=noise
            )
            row.cost_ratio[t] = {
                metric: _ratio(c.per_op_median(metric), b.per_op_median(metric)) for metric in data.per_op_metrics
            }
            row.cost_cmp[t] = compare(
                b,
                c,
                lambda r: r.per_op.get(VERDICT_METRIC),
                paired=paired,
                confidence=m.confidence,
                min_effect=m.min_effect,
                higher_is_better=False,
            )
    data.groups = group_stats(rows, data.others, data.group_titles)
    if waits := lock_waits(rows, data.ordered):
        shown = "; ".join(waits[:12]) + (f"; and {len(waits) - 12} more" if len(waits) > 12 else "")
        data.notes.append(f"Statements that waited for a lock (median over repetitions): {shown}.")
    return data


def lock_waits(rows: Iterable[Row], targets: Sequence[str]) -> list[str]:
    """Where statements waited for a lock (an embedded engine's single writer): step, clients, target, how many
    waited and for how long, and how many events failed."""
    out = []
    for row in rows:
        for t in targets:
            reps = row.cells[t].reps
            waited = [float(r.summary.get("lock_waits") or 0) for r in reps]
            if not reps or not any(waited):
                continue
            seconds = statistics.median(float(r.summary.get("lock_wait_s") or 0) for r in reps)
            failed = statistics.median(float(r.summary.get("error_count") or 0) for r in reps)
            out.append(
                f"{row.step} c{row.clients} {t}: {statistics.median(waited):,.0f} waited {seconds:.1f} s"
                + (f", {failed:,.0f} events failed" if failed else "")
            )
    return out


def _ratio(value: float | None, base: float | None) -> float | None:
    return stats.relative(value, base) if value is not None and base is not None else None


def gather(study: Study, store: Store, run_id: int, series: bool = False) -> ReportData:
    """The report of one run of a study; `series` also loads per-second samples and histograms."""
    series = series or study.bench.report_series
    cells, ops_names = _load_cells(store, run_id, str, series)
    targets = [t.label for t in study.targets]
    measured = calibrate.study_noise(study, store)
    keys = plan.row_keys(study)
    data = _assemble(study, run_id, targets, study.base, keys, cells, ops_names, paired=True, measured=measured)
    data.provenance = _load_provenance(store, run_id, str)
    data.notes += unsafe_notes(data.provenance)
    data.runs, data.has_series = f"run {run_id}", series
    data.extra_tables = suite_tables(study.bench, data)
    noise.attach(data, study, store)
    instr.attach(data, study, store)
    flames.attach(data, store)
    # Imported here: the matrix formats its cells with `fmt`, which imports this module.
    from dbsweep.report import matrix

    data.extra_tables += matrix.tables(data, store, measured)
    data.answer = answers.build(data)
    if study.series:
        data.trend = over_series(study, store, run_id)
    return data


def compare_targets(
    study: Study, store: Store, run_id: int, base: str, target: str, series: bool = False
) -> ReportData:
    """Two targets of one run, `target` against `base` (paired by round, as in the full report)."""
    series = series or study.bench.report_series
    labels = [t.label for t in study.targets]
    for name in (base, target):
        if name not in labels:
            raise KeyError(name)
    cells, ops_names = _load_cells(store, run_id, str, series)
    measured = calibrate.study_noise(study, store)
    keys = plan.row_keys(study)
    data = _assemble(study, run_id, [base, target], base, keys, cells, ops_names, paired=True, measured=measured)
    prov = _load_provenance(store, run_id, str)
    data.provenance = {t: prov[t] for t in data.targets if t in prov}
    data.notes += unsafe_notes(data.provenance)
    data.title = f"{study.title}: {target} vs {base}"
    data.runs, data.has_series = f"run {run_id}", series
    data.extra_tables = suite_tables(study.bench, data)
    noise.attach(data, study, store)
    instr.attach(data, study, store)
    flames.attach(data, store)
    data.answer = answers.build(data)
    return data


def compare_runs(
    a: Study, store_a: Store, run_a: int, b: Study, store_b: Store, run_b: int, series: bool = False
) -> ReportData:
    """Every target of run B against the base of run A. Rounds of different runs are not paired."""
    series = series or a.bench.report_series
    if a.suite.name != b.suite.name:
        raise ValueError(f"{a.title} runs the {a.suite.name} suite and {b.title} the {b.suite.name} suite")
    same_study = a.title == b.title
    # Labels keep the two sides apart: by study, else by run, else (the same run twice) by side.
    if not same_study:
        prefix_a, prefix_b = a.title, b.title
    elif run_a != run_b:
        prefix_a, prefix_b = f"run{run_a}", f"run{run_b}"
    else:
        prefix_a, prefix_b = "A", "B"

    def la(t: str) -> str:
        return f"{prefix_a}:{t}"

    def lb(t: str) -> str:
        return f"{prefix_b}:{t}"

    cells_a, ops_a = _load_cells(store_a, run_a, la, series)
    cells_b, ops_b = _load_cells(store_b, run_b, lb, series)
    base = la(a.base)
    targets = [base, *[lb(t.label) for t in b.targets]]
    cells = {k: v for k, v in cells_a.items() if k[2] == base} | cells_b
    keys = plan.row_keys(a)
    keys += [k for k in plan.row_keys(b) if k not in keys]
    order = list(a.bench.report_groups())
    keys.sort(key=lambda k: order.index(a.bench.group_of(k[0])))  # stable: each group keeps A's order, then B's
    measured = calibrate.study_noise(a, store_a)
    data = _assemble(a, run_a, targets, base, keys, cells, {**ops_b, **ops_a}, paired=False, measured=measured)
    prov_a = _load_provenance(store_a, run_a, la)
    data.provenance = {base: prov_a[base]} if base in prov_a else {}
    data.provenance.update(_load_provenance(store_b, run_b, lb))
    data.notes += unsafe_notes(data.provenance)
    data.title = f"{a.title} vs {b.title}" if not same_study else f"{a.title}: run {run_b} vs run {run_a}"
    data.runs, data.has_series = f"run {run_a} of {a.title} and run {run_b} of {b.title}", series
    if a.measurement_key() != b.measurement_key():
        data.notes.append(
            f"{a.title} and {b.title} differ in their suite settings (sizes, durations or steps): "
            "the ratios compare different measurements."
        )
    data.notes.append("Runs of different studies are not interleaved, so their repetitions are not paired.")
    data.extra_tables = suite_tables(a.bench, data)
    noise.attach(data, a, store_a, canaries=False)
    data.answer = answers.build(data)
    return data


# ---- per-operation response times (steps that run several operations: their summary's `latency` by kind) ----


def decode_histogram(encoded: str) -> Any:
    from hdrh.histogram import HdrHistogram

    try:
        return HdrHistogram.decode(encoded)
    except Exception:  # a damaged or foreign encoding must not break the report
        return None


def latency_of(rep: Rep, op: str) -> dict[str, Any]:
    lat = rep.summary.get("latency")
    v = lat.get(op) if isinstance(lat, dict) else None
    return v if isinstance(v, dict) else {}


def rep_max_us(rep: Rep, op: str) -> float | None:
    """The worst response time of one repetition for an operation: summary, histogram or per-second max."""
    v = latency_of(rep, op).get("max_us")
    if isinstance(v, int | float):
        return float(v)
    encoded = rep.histograms.get(op)
    if encoded and (h := decode_histogram(encoded)) is not None and h.get_total_count():
        return float(h.get_max_value())
    per_second = [m for s in rep.rates if (m := getattr(s, f"max_{op}_us")) is not None]
    return float(max(per_second)) if per_second else None


def cell_max_us(cell: Entry, op: str) -> float | None:
    """The worst response time over all repetitions."""
    vals = [v for r in cell.reps if (v := rep_max_us(r, op)) is not None]
    return max(vals) if vals else None
