"""The numbers every report format shows, gathered once from the store.

`gather` reads one run of one study; `compare_runs` and `compare_targets` build the same model for
ad-hoc comparisons. The renderers (terminal, markdown, csv_json, html) only format what is here: every
ratio, interval, verdict and group summary is computed in this module, with `dbsweep.stats`.
"""

from __future__ import annotations

import difflib
import json
import math
import statistics
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from dbsweep import stats, verdicts
from dbsweep.store import Store
from dbsweep.study import Study
from dbsweep.suites import GROUPS, LOAD_STEP, STEPS, group_of

# Per-operation metrics in the order the method's tables show them; any other stored metric follows.
PER_OP_ORDER = ("cpu/o", "cs/o", "r/o", "rKB/o", "wKB/o", "client_cpu/o", "instructions/o")
# `o/s` is the step's own operations per second again: not a cost per operation.
NOT_COSTS = frozenset({"o/s"})
# The per-operation metric that gets a verdict (lower is better).
VERDICT_METRIC = "cpu/o"

# The Insert Benchmark's response-time buckets (methodology 4.1): name and inclusive upper bound in µs.
BUCKETS: tuple[tuple[str, float], ...] = (
    ("le_256us", 256),
    ("le_1ms", 1_000),
    ("le_4ms", 4_000),
    ("le_16ms", 16_000),
    ("le_64ms", 64_000),
    ("le_256ms", 256_000),
    ("le_1s", 1_000_000),
    ("le_4s", 4_000_000),
    ("le_16s", 16_000_000),
    ("gt_16s", math.inf),
)
IBENCH_OPS = ("insert", "delete", "query")


class Sample(NamedTuple):
    """One second of a timed step (table `samples`)."""

    t: int
    phase: str
    ops: int
    max_us: int


class IbenchSample(NamedTuple):
    """One second of an Insert Benchmark step (table `ibench_samples`)."""

    t: int
    ips: float
    dps: float
    qps: float
    max_insert_us: int | None
    max_delete_us: int | None
    max_query_us: int | None


@dataclass
class Rep:
    """One done repetition of a cell."""

    repetition: int
    cell_id: int
    qps: float
    tps: float
    summary: dict[str, Any] = field(default_factory=dict)
    per_op: dict[str, float | None] = field(default_factory=dict)
    # Loaded only when asked for (the HTML report): they can be large.
    samples: list[Sample] = field(default_factory=list)
    ibench: list[IbenchSample] = field(default_factory=list)
    histograms: dict[str, str] = field(default_factory=dict)

    def latency(self, key: str) -> float | None:
        """A latency statistic of the step's main operation (p50, p95, p99, max, mean), µs."""
        v = (self.summary.get("latency_us") or {}).get(key)
        return float(v) if isinstance(v, int | float) else None


@dataclass
class Cell:
    """One target at one step: its done repetitions (in repetition order) and its failures."""

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
    def sla_failed(self) -> bool:
        """A read-write step fails its SLA when any repetition missed the background insert rate."""
        return any(s.get("sla_ok") is False for s in self.summaries)

    @property
    def sla_ok(self) -> bool | None:
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


NO_COMPARISON = Comparison(None)


@dataclass
class Row:
    step: str
    clients: int
    group: str
    ops_name: str
    cells: dict[str, Cell]
    # rQPS per target (the base's is 1.0 when it has a value); kept apart from `cmp` for old callers.
    rel: dict[str, float | None]
    # Every target but the base: rQPS with its interval and verdict.
    cmp: dict[str, Comparison] = field(default_factory=dict)
    # Every target but the base: metric -> ratio to the base of the per-operation medians.
    cost_ratio: dict[str, dict[str, float | None]] = field(default_factory=dict)
    # Every target but the base: the verdict on cpu/o (lower is better).
    cost_cmp: dict[str, Comparison] = field(default_factory=dict)

    @property
    def in_summaries(self) -> bool:
        return self.step != LOAD_STEP and STEPS[self.step].in_summaries


@dataclass(frozen=True)
class GroupStats:
    """The seeds' summary of one group's rQPS for one target at one client count."""

    group: str
    clients: int
    target: str
    summary: stats.GroupSummary
    geomean: float
    verdicts: dict[str, int]

    @property
    def title(self) -> str:
        return GROUPS[self.group]


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
    suite: str = "sysbench"
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


def _load_cells(
    store: Store, run_id: int, label: Callable[[str], str], series: bool
) -> tuple[dict[tuple[str, int, str], Cell], dict[str, str]]:
    cells: dict[tuple[str, int, str], Cell] = {}
    ops_names: dict[str, str] = {}
    summaries = store.summaries(run_id)
    per_op = store.per_op(run_id)
    by_id: dict[int, Rep] = {}
    for r in store.results(run_id):
        rep = Rep(
            repetition=int(r["repetition"]),
            cell_id=int(r["cell_id"]),
            qps=float(r["qps"]),
            tps=float(r["tps"]),
            summary=summaries.get(r["cell_id"], {}),
            per_op=per_op.get(r["cell_id"], {}),
        )
        cells.setdefault((r["step"], r["clients"], label(r["target"])), Cell()).reps.append(rep)
        by_id[rep.cell_id] = rep
        ops_names[r["step"]] = r["ops_name"]
    for key, (st, _err) in store.statuses(run_id).items():
        if st == "failed":
            cells.setdefault((key.step, key.clients, label(key.target)), Cell()).failed += 1
    for cell in cells.values():
        cell.reps.sort(key=lambda r: r.repetition)
    if series:
        _load_series(store, run_id, by_id)
    return cells, ops_names


def _load_series(store: Store, run_id: int, by_id: dict[int, Rep]) -> None:
    db = store.db
    for cell_id, t, phase, ops, max_us in db.execute(
        "SELECT s.cell_id, s.t, s.phase, s.ops, s.max_us FROM samples s JOIN cells c ON c.id = s.cell_id "
        "WHERE c.run_id = ? AND c.status = 'done' ORDER BY s.cell_id, s.t",
        (run_id,),
    ):
        if (rep := by_id.get(cell_id)) is not None:
            rep.samples.append(Sample(int(t), str(phase), int(ops), int(max_us)))
    for cell_id, *values in db.execute(
        "SELECT s.cell_id, s.t, s.ips, s.dps, s.qps, s.max_insert_us, s.max_delete_us, s.max_query_us "
        "FROM ibench_samples s JOIN cells c ON c.id = s.cell_id WHERE c.run_id = ? AND c.status = 'done' "
        "ORDER BY s.cell_id, s.t",
        (run_id,),
    ):
        if (rep := by_id.get(cell_id)) is not None:
            rep.ibench.append(IbenchSample(*values))
    for cell_id, kind, data in db.execute(
        "SELECT h.cell_id, h.kind, h.data FROM histograms h JOIN cells c ON c.id = h.cell_id "
        "WHERE c.run_id = ? AND c.status = 'done' AND h.kind IN ('insert', 'delete', 'query')",
        (run_id,),
    ):
        if (rep := by_id.get(cell_id)) is not None:
            rep.histograms[str(kind)] = str(data)


def _build_row(b: Any) -> dict[str, Any]:
    keys = ("source", "source_identity", "variant", "version", "bindir", "cc", "cflags", "configure")
    return dict(zip(keys, b, strict=True)) if b and b[0] is not None else {}


def _load_provenance(store: Store, run_id: int, label: Callable[[str], str]) -> dict[str, Provenance]:
    latest: dict[str, tuple[str | None, dict[str, Any]]] = {}
    seen: dict[str, set[int]] = {}
    for name, prov_id, data, *build in store.db.execute(
        "SELECT t.name, c.provenance_id, p.data, b.source, b.source_identity, b.variant, b.version, b.bindir, "
        "b.cc, b.cflags, b.configure FROM cells c JOIN targets t ON t.id = c.target_id "
        "LEFT JOIN provenance p ON p.id = c.provenance_id LEFT JOIN builds b ON b.id = c.build_id "
        "WHERE c.run_id = ? AND c.status = 'done' ORDER BY c.id",
        (run_id,),
    ):
        t = label(str(name))
        if prov_id is not None:
            seen.setdefault(t, set()).add(int(prov_id))
        latest[t] = (data, _build_row(build))
    out: dict[str, Provenance] = {}
    for t, (data, build) in latest.items():
        try:
            parsed = json.loads(data) if data else {}
        except ValueError:
            parsed = {}
        if parsed or build:
            out[t] = Provenance(t, parsed if isinstance(parsed, dict) else {}, build, len(seen.get(t, ())))
    return out


# ---- comparing ---------------------------------------------------------------------------------


def compare(
    base: Cell,
    target: Cell,
    values: Callable[[Rep], float | None],
    *,
    paired: bool,
    confidence: float,
    min_effect: float,
    higher_is_better: bool = True,
) -> Comparison:
    """The ratio of the target's median to the base's with `stats.ratio_ci` and `stats.verdict`."""
    # Repetition r of every target ran in round r (A B, then B A): the verdicts pair them up.
    b = {r.repetition: v for r in base.reps if (v := values(r)) is not None}
    t = {r.repetition: v for r in target.reps if (v := values(r)) is not None}
    j = verdicts.judge_values(
        b, t, confidence=confidence, min_effect=min_effect, higher_is_better=higher_is_better, paired=paired
    )
    if j.ci is None:
        return NO_COMPARISON
    return Comparison(j.ci.ratio, j.ci.low, j.ci.high, j.verdict, j.ci.method)


def _geomean(values: Sequence[float]) -> float:
    return statistics.geometric_mean(values) if all(v > 0 for v in values) else math.nan


def group_stats(rows: Iterable[Row], others: Sequence[str]) -> list[GroupStats]:
    """Summaries of rQPS per group, client count and target, over the steps that count in summaries."""
    by: dict[tuple[str, int, str], list[Row]] = {}
    for row in rows:
        if not row.in_summaries:
            continue
        for t in others:
            by.setdefault((row.group, row.clients, t), []).append(row)
    out: list[GroupStats] = []
    order = list(GROUPS)
    for (group, clients, t), grp in sorted(by.items(), key=lambda kv: (order.index(kv[0][0]), kv[0][1])):
        vals = [r for row in grp if (r := row.rel.get(t)) is not None]
        if not vals:
            continue
        verdicts = Counter(v for row in grp if (v := row.cmp[t].verdict) is not None)
        out.append(
            GroupStats(
                group, clients, t, stats.summarise(vals), _geomean(vals), {v: verdicts[v] for v in stats.VERDICTS}
            )
        )
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
    cells: dict[tuple[str, int, str], Cell],
    ops_names: dict[str, str],
    *,
    paired: bool,
) -> ReportData:
    m = study.measure
    rows: list[Row] = []
    for step, clients in keys:
        row_cells = {t: cells.get((step, clients, t), Cell()) for t in targets}
        base_median = row_cells[base].median
        rel = {t: _ratio(c.median, base_median) for t, c in row_cells.items()}
        rows.append(Row(step, clients, group_of(step), ops_names.get(step, "queries"), row_cells, rel))
    data = ReportData(study, run_id, targets, base, rows, title=study.title, suite=study.suite.name)
    data.min_effect, data.confidence = m.min_effect, m.confidence
    data.per_op_metrics = metric_names(rows)
    for row in rows:
        b = row.cells[base]
        for t in data.others:
            c = row.cells[t]
            row.cmp[t] = compare(b, c, lambda r: r.qps, paired=paired, confidence=m.confidence, min_effect=m.min_effect)
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
    data.groups = group_stats(rows, data.others)
    return data


def _ratio(value: float | None, base: float | None) -> float | None:
    return stats.relative(value, base) if value is not None and base is not None else None


def _row_keys(study: Study) -> list[tuple[str, int]]:
    from dbsweep.runner import clients_of

    steps = ([LOAD_STEP] if study.suite.name == "sysbench" else []) + study.steps()
    order = list(GROUPS)
    keys: list[tuple[str, int]] = []
    for step in sorted(steps, key=lambda s: (order.index(group_of(s)), steps.index(s))):
        keys.extend((step, c) for c in ([1] if step == LOAD_STEP else clients_of(study, step)))
    return keys


def gather(study: Study, store: Store, run_id: int, series: bool = False) -> ReportData:
    """The report of one run of a study; `series` also loads per-second samples and histograms."""
    cells, ops_names = _load_cells(store, run_id, str, series)
    targets = [t.label for t in study.targets]
    data = _assemble(study, run_id, targets, study.base, _row_keys(study), cells, ops_names, paired=True)
    data.provenance = _load_provenance(store, run_id, str)
    data.runs, data.has_series = f"run {run_id}", series
    return data


def compare_targets(
    study: Study, store: Store, run_id: int, base: str, target: str, series: bool = False
) -> ReportData:
    """Two targets of one run, `target` against `base` (paired by round, as in the full report)."""
    labels = [t.label for t in study.targets]
    for name in (base, target):
        if name not in labels:
            raise KeyError(name)
    cells, ops_names = _load_cells(store, run_id, str, series)
    data = _assemble(study, run_id, [base, target], base, _row_keys(study), cells, ops_names, paired=True)
    prov = _load_provenance(store, run_id, str)
    data.provenance = {t: prov[t] for t in data.targets if t in prov}
    data.title = f"{study.title}: {target} vs {base}"
    data.runs, data.has_series = f"run {run_id}", series
    return data


def compare_runs(
    a: Study, store_a: Store, run_a: int, b: Study, store_b: Store, run_b: int, series: bool = False
) -> ReportData:
    """Every target of run B against the base of run A. Rounds of different runs are not paired."""
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
    keys = _row_keys(a)
    keys += [k for k in _row_keys(b) if k not in keys]
    order = list(GROUPS)
    keys.sort(key=lambda k: order.index(group_of(k[0])))  # stable: each group keeps A's order, then B's
    data = _assemble(a, run_a, targets, base, keys, cells, {**ops_b, **ops_a}, paired=False)
    prov_a = _load_provenance(store_a, run_a, la)
    data.provenance = {base: prov_a[base]} if base in prov_a else {}
    data.provenance.update(_load_provenance(store_b, run_b, lb))
    data.title = f"{a.title} vs {b.title}" if not same_study else f"{a.title}: run {run_b} vs run {run_a}"
    data.runs, data.has_series = f"run {run_a} of {a.title} and run {run_b} of {b.title}", series
    if a.measurement_key() != b.measurement_key():
        data.notes.append(
            f"{a.title} and {b.title} differ in their suite settings (sizes, durations or steps): "
            "the ratios compare different measurements."
        )
    data.notes.append("Runs of different studies are not interleaved, so their repetitions are not paired.")
    return data


# ---- Insert Benchmark extras --------------------------------------------------------------------


def _decode(encoded: str) -> Any:
    from hdrh.histogram import HdrHistogram

    try:
        return HdrHistogram.decode(encoded)
    except Exception:  # a damaged or foreign encoding must not break the report
        return None


def _latency_of(rep: Rep, op: str) -> dict[str, Any]:
    lat = rep.summary.get("latency")
    v = lat.get(op) if isinstance(lat, dict) else None
    return v if isinstance(v, dict) else {}


def _bucket_index(us: float) -> int:
    return next(i for i, (_, bound) in enumerate(BUCKETS) if us <= bound)


def rep_buckets(rep: Rep, op: str) -> list[int] | None:
    """Response-time counts of one repetition in the method's buckets: from the summary when the
    client reported them, else from the stored HDR histogram; None when neither is there."""
    given = _latency_of(rep, op).get("buckets")
    if isinstance(given, dict) and given:
        return [int(given.get(name, 0) or 0) for name, _ in BUCKETS]
    encoded = rep.histograms.get(op) or _latency_of(rep, op).get("hdr")
    h = _decode(encoded) if isinstance(encoded, str) and encoded else None
    if h is None:
        return None
    counts = [0] * len(BUCKETS)
    for item in h.get_recorded_iterator():
        # The lowest value the HDR bucket stands for: a recorded 4000 µs stays within le_4ms.
        counts[_bucket_index(h.get_lowest_equivalent_value(item.value_iterated_to))] += (
            item.count_added_in_this_iter_step
        )
    return counts


def cell_buckets(cell: Cell, op: str) -> list[int] | None:
    """The method's bucket counts summed over the repetitions that have them."""
    per_rep = [b for r in cell.reps if (b := rep_buckets(r, op)) is not None]
    return [sum(col) for col in zip(*per_rep, strict=True)] if per_rep else None


def rep_max_us(rep: Rep, op: str) -> float | None:
    """The worst response time of one repetition for an operation: summary, histogram or per-second max."""
    v = _latency_of(rep, op).get("max_us")
    if isinstance(v, int | float):
        return float(v)
    encoded = rep.histograms.get(op)
    if encoded and (h := _decode(encoded)) is not None and h.get_total_count():
        return float(h.get_max_value())
    per_second = [m for s in rep.ibench if (m := getattr(s, f"max_{op}_us")) is not None]
    return float(max(per_second)) if per_second else None


def cell_max_us(cell: Cell, op: str) -> float | None:
    """The worst response time over all repetitions."""
    vals = [v for r in cell.reps if (v := rep_max_us(r, op)) is not None]
    return max(vals) if vals else None
