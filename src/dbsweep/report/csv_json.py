"""CSV and JSON: one flat row per target x step x clients with every number the other reports show.

Column names are stable snake_case (documented in README.md, "Reports"); a per-operation metric `m/o`
becomes `m_per_op` and its ratio to the base `m_per_op_ratio`. The method's metrics always have
columns, empty when a run has none; other stored metrics are appended after the fixed columns.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from typing import Any, TextIO

from dbsweep import __version__
from dbsweep.measure.functions import FunctionChange
from dbsweep.report import answer, flames, trend
from dbsweep.report.data import (
    INSTR_METRIC,
    PER_OP_ORDER,
    VERDICT_METRIC,
    Comparison,
    Entry,
    ReportData,
    Row,
    cell_max_us,
    config_change,
)
from dbsweep.suites.registry import operations, summary_columns
from dbsweep.verdicts import stats

# Suites' own figures, medians over the repetitions, and the worst response time of each operation kind: the
# columns of every suite, so a file has the same columns whatever its suite (empty where it has none).
SUMMARY_COLUMNS = summary_columns()
OPERATIONS = operations()
# The costs with columns of their own; the instruction count has its `instr_*` columns instead.
COST_ORDER = tuple(m for m in PER_OP_ORDER if m != INSTR_METRIC)


def column_name(metric: str) -> str:
    """`cpu/o` -> `cpu_per_op`, `rKB/o` -> `rkb_per_op`: a metric's name as a column name."""
    m = metric.lower().replace("/o", "_per_op").replace("/s", "_per_s").replace("/", "_per_")
    return re.sub(r"[^a-z0-9]+", "_", m).strip("_")


HEAD = [
    "study",
    "run_id",
    "base",
    "target",
    "is_base",
    "step",
    "group",
    "clients",
    "ops_name",
    "n_reps",
    "n_failed",
    "qps_median",
    "qps_min",
    "qps_max",
    "qps_cv",
    "tps_median",
    "rqps",
    "rqps_ci_low",
    "rqps_ci_high",
    "rqps_ci_method",
    "verdict",
    "lat_p50_us",
    "lat_p95_us",
    "lat_p99_us",
    "lat_max_us",
    "lat_mean_us",
]
SUITE_COLUMNS = [*SUMMARY_COLUMNS, "sla_ok", *[f"max_{op}_us" for op in OPERATIONS]]
# How noisy the machine was (report/noise.py): the step's A-A spread beside its verdict, the most steal any
# repetition saw, and the run's canary (the same on every row: its rates per round, in timing order).
NOISE_COLUMNS = ["aa_spread", "aa_spread_source", "aa_spread_n", "steal_pct_max", "canary_cv", "canary_rates"]
# How the QPS verdict was reached (the interval, or from one repetition against the noise, which is said).
RULE_COLUMNS = ["verdict_rule", "noise_cv", "noise_source", "noise_multiple"]
# The instruction count of the step (its 1-client row) and its verdict against the base (report/instr.py):
# `instr_per_event` is the figure the verdict judges (on `instr_basis`), `instr_other_per_event` the other one,
# `instr_event` what an event of the step is, `why_top` the function whose cost changed most.
INSTR_COLUMNS = [
    "instr_per_event",
    "instr_event",
    "instr_other_per_event",
    "instr_ratio",
    "instr_verdict",
    "instr_floor",
    "instr_floor_source",
    "instr_basis",
    "instr_fg_ratio",
    "instr_fg_verdict",
    "instr_foreground_share",
    "instr_error",
    "why_top",
]


def _metric_columns(metric: str) -> list[str]:
    name = column_name(metric)
    cols = [name, f"{name}_ratio"]
    if metric == VERDICT_METRIC:
        cols += [f"{name}_ci_low", f"{name}_ci_high", f"{name}_verdict"]
    return cols


def columns(data: ReportData) -> list[str]:
    """Every column, in order: the fixed ones, then any metric beyond the method's."""
    fixed = [c for m in COST_ORDER for c in _metric_columns(m)]
    extra = [c for m in data.per_op_metrics if m not in PER_OP_ORDER for c in _metric_columns(m)]
    at = HEAD.index("verdict") + 1  # how a verdict was reached, beside it
    return [*HEAD[:at], *RULE_COLUMNS, *HEAD[at:], *fixed, *SUITE_COLUMNS, *extra, *NOISE_COLUMNS, *INSTR_COLUMNS]


def _clean(v: float | None) -> float | None:
    return v if v is None or math.isfinite(v) else None


def _comparison(prefix: str, c: Comparison | None) -> dict[str, Any]:
    return {
        f"{prefix}_ci_low": c.low if c else None,
        f"{prefix}_ci_high": c.high if c else None,
        f"{prefix}_verdict" if prefix != "rqps" else "verdict": c.verdict if c else None,
    }


def record(data: ReportData, row: Row, target: str) -> dict[str, Any]:
    c: Entry = row.cells[target]
    is_base = target == data.base
    cmp = None if is_base else row.cmp[target]
    out: dict[str, Any] = {
        "study": data.title,
        "run_id": data.run_id,
        "base": data.base,
        "target": target,
        "is_base": is_base,
        "step": row.step,
        "group": row.group,
        "clients": row.clients,
        "ops_name": row.ops_name,
        "n_reps": len(c.reps),
        "n_failed": c.failed,
        "qps_median": c.median,
        "qps_min": min(c.values) if c.values else None,
        "qps_max": max(c.values) if c.values else None,
        "qps_cv": c.cv,
        "tps_median": c.tps_median,
        "rqps": row.rel[target],
        "rqps_ci_method": cmp.method if cmp and cmp.low is not None else None,
        **_comparison("rqps", cmp),
        **{f"lat_{k}_us": c.latency_median(k) for k in ("p50", "p95", "p99", "max", "mean")},
    }
    out.update(_rule(cmp))
    for m in [*COST_ORDER, *[m for m in data.per_op_metrics if m not in PER_OP_ORDER]]:
        name = column_name(m)
        out[name] = c.per_op_median(m)
        if is_base:
            out[f"{name}_ratio"] = 1.0 if out[name] else None
        else:
            out[f"{name}_ratio"] = row.cost_ratio[target].get(m)
        if m == VERDICT_METRIC:
            out.update(_comparison(name, None if is_base else row.cost_cmp[target]))
    for key in SUMMARY_COLUMNS:
        out[key] = c.summary_median(key)
    out["sla_ok"] = c.sla_ok
    for op in OPERATIONS:
        out[f"max_{op}_us"] = cell_max_us(c, op)
    out.update(_noise(data, row, c))
    out.update(_instr(data, row, target))
    return {k: _clean(v) if isinstance(v, float) else v for k, v in out.items()}


def _rule(c: Comparison | None) -> dict[str, Any]:
    noise = c.noise if c is not None and c.verdict else None
    return {
        "verdict_rule": c.rule if c is not None and c.verdict else None,
        "noise_cv": noise.bound if noise else None,
        "noise_source": noise.source if noise else None,
        "noise_multiple": c.multiple if c is not None and noise else None,
    }


def _noise(data: ReportData, row: Row, c: Entry) -> dict[str, Any]:
    s = row.spread
    return {
        "aa_spread": s.cv if s else None,
        "aa_spread_source": s.source if s else None,
        "aa_spread_n": s.n if s else None,
        "steal_pct_max": c.steal_pct,
        "canary_cv": data.canaries.cv,
        "canary_rates": ";".join(repr(r) for r in data.canaries.rates) or None,
    }


def _instr(data: ReportData, row: Row, target: str) -> dict[str, Any]:
    ir = next((r for r in data.instr_rows if r.step == row.step), None)
    counted = ir is not None and (target == data.base or target in row.instr)
    count = ir.counts.get(target) if ir is not None and counted else None
    j = row.instr.get(target)
    top = ir.headline(target) if ir is not None and counted else None
    return {
        "instr_per_event": ir.figure(target) if ir is not None and counted else None,
        "instr_event": ir.event if ir is not None and counted else None,
        "instr_other_per_event": ir.other(target)[1] if ir is not None and counted else None,
        "instr_ratio": j.ratio if j else None,
        "instr_verdict": j.verdict if j else None,
        "instr_floor": j.floor if j and j.verdict else None,
        "instr_floor_source": j.floor_source if j and j.verdict else None,
        "instr_basis": j.basis if j and j.verdict else None,
        "instr_fg_ratio": j.foreground.ratio if j and j.foreground else None,
        "instr_fg_verdict": j.foreground.verdict if j and j.foreground else None,
        "instr_foreground_share": count.foreground_share if count else None,
        "instr_error": count.error if count else None,
        "why_top": top.function if top else None,
    }


def instructions(data: ReportData) -> list[dict[str, Any]]:
    """Every step's counts, verdicts and per-function diffs against the base (all the functions kept)."""
    out = []
    for ir in data.instr_rows:
        for t in data.ordered:
            c = ir.counts.get(t)
            j = ir.judged.get(t)
            out.append(
                {
                    "step": ir.step,
                    "target": t,
                    "event": ir.event,
                    # The figure the verdict judges (on `basis`: the step's, the same for every target), then both.
                    "instr_per_event": ir.figure(t),
                    "basis": ir.basis,
                    "per_event": c.per_event if c else None,
                    "foreground_per_event": c.foreground_per_event if c else None,
                    "per_query": c.per_query if c else None,
                    "spread": c.spread if c else None,
                    "unit": c.unit if c else None,
                    "amount": c.amount if c else None,
                    "by_role": dict(c.by_role) if c else None,
                    "foreground_share": c.foreground_share if c else None,
                    "error": c.error if c else None,
                    "ratio": j.ratio if j else None,
                    "verdict": j.verdict if j else None,
                    "floor": j.floor if j else None,
                    "floor_source": j.floor_source if j else None,
                    "fg_ratio": j.foreground.ratio if j and j.foreground else None,
                    "fg_verdict": j.foreground.verdict if j and j.foreground else None,
                    "user_share": ir.user_share.get(t),
                    "qps_bound": ir.throughput_bound(t),
                    "why": [
                        {
                            "function": f.function,
                            "file": f.file,
                            "line": f.line,
                            "base_self": f.base_self,
                            "target_self": f.target_self,
                            "base_inclusive": f.base_inclusive,
                            "target_inclusive": f.target_inclusive,
                            "delta_self": f.delta_self,
                            "rel_self": f.rel_self,
                            "share_of_change": f.share_of_change,
                            "unlisted": _unlisted(f),
                        }
                        for f in ir.why.get(t, [])
                    ],
                }
            )
    return out


def canaries(data: ReportData) -> list[dict[str, Any]]:
    """The canary of every round, in the order they were timed."""
    return [
        {
            "repetition": c.repetition,
            "measured_at": c.measured_at,
            "iterations": c.iterations,
            "seconds": c.seconds,
            "cpu_seconds": c.cpu_seconds,
            "rate": c.rate,
        }
        for c in data.canaries.timed
    ]


def records(data: ReportData) -> list[dict[str, Any]]:
    """One dict per target x step x clients, keys in `columns(data)` order."""
    cols = columns(data)
    return [{k: rec.get(k) for k in cols} for row in data.rows for t in data.ordered for rec in [record(data, row, t)]]


def write_csv(data: ReportData, out: TextIO) -> None:
    # Floats are written with repr, so reading the file back gives the very same numbers.
    w = csv.DictWriter(out, fieldnames=columns(data), lineterminator="\n")
    w.writeheader()
    for rec in records(data):
        w.writerow({k: ("" if v is None else v) for k, v in rec.items()})


def to_csv(data: ReportData) -> str:
    buf = io.StringIO()
    write_csv(data, buf)
    return buf.getvalue()


def _instr_summary(s: stats.GroupSummary | None) -> dict[str, Any]:
    """instructions/o relative to the base over a group's steps (instr_n ... instr_median), where counted."""
    if s is None:
        return {}
    return {"instr_n": s.n, "instr_min": s.min, "instr_max": s.max, "instr_mean": s.mean, "instr_median": s.median}


def groups(data: ReportData) -> list[dict[str, Any]]:
    return [
        {
            "group": g.group,
            "group_title": g.title,
            "clients": g.clients,
            "target": g.target,
            "n": g.summary.n,
            "min": g.summary.min,
            "max": g.summary.max,
            "mean": g.summary.mean,
            "median": g.summary.median,
            "stddev": g.summary.stddev,
            "geomean": _clean(g.geomean),
            **{str(v): n for v, n in g.verdicts.items()},
            **{f"instr_{v}": n for v, n in g.instr_verdicts.items()},
            **_instr_summary(g.instr_summary),
        }
        for g in data.groups
    ]


def provenance(data: ReportData) -> dict[str, Any]:
    base = data.provenance.get(data.base)
    return {
        t: {
            "facts": dict(p.facts()),
            "config": p.config_name,
            "config_diff": p.config_diff,
            "config_change_from_base": config_change(base, p),
            "build": p.build,
            "record": p.data,
        }
        for t, p in data.provenance.items()
    }


def _function(f: FunctionChange | None) -> dict[str, Any] | None:
    if f is None:
        return None
    return {
        "function": f.function,
        "file": f.file,
        "line": f.line,
        "delta_self": f.delta_self,
        "rel_self": f.rel_self,
        "unlisted": _unlisted(f),
    }


def _unlisted(f: FunctionChange) -> dict[str, Any] | None:
    """Below one side's stored profile: that side's cost is at most `at_most`, not 0."""
    return {"side": f.unlisted[0], "at_most": f.unlisted[1]} if f.unlisted else None


def _comparison_obj(c: Comparison) -> dict[str, Any]:
    return {"ratio": c.ratio, "verdict": c.verdict, **_rule(c), "ci_low": c.low, "ci_high": c.high}


def answer_obj(data: ReportData) -> dict[str, Any] | None:
    """The answer the other formats start with (report/answer.py), as data."""
    if data.answer is None:
        return None
    many = len(data.client_counts) > 1
    return {
        "base": data.answer.base,
        "targets": [
            {
                "target": a.target,
                "tallies": {t.figure: {**t.verdicts, "no_verdict": t.without} for t in a.tallies},
                "largest": [
                    {
                        "step": c.step,
                        "text": answer.change_words(c, many),
                        "instructions": {
                            "ratio": c.instr.ratio,
                            "verdict": c.instr.verdict,
                            "basis": c.instr.basis,
                            "base_per_event": c.instr.base_figure,
                            "target_per_event": c.instr.target_figure,
                        }
                        if c.instr
                        else None,
                        "qps": {"clients": c.qps[0], **_comparison_obj(c.qps[1])} if c.qps else None,
                        "cpu_per_op": {"clients": c.cpu[0], **_comparison_obj(c.cpu[1])} if c.cpu else None,
                        "why": _function(c.why),
                    }
                    for c in a.changes
                ],
                "undecided": [
                    {"step": u.step, "clients": u.clients, **_comparison_obj(u.qps), "decide": u.decide}
                    for u in a.undecided
                ],
                "same": a.same,
            }
            for a in data.answer.targets
        ],
        "lines": [text for _depth, text in answer.lines(data.answer, many)],
    }


def to_json_obj(data: ReportData) -> dict[str, Any]:
    return {
        "answer": answer_obj(data),
        "series": trend.to_json(data.trend),  # a series study's trend and change points (empty otherwise)
        "study": data.title,
        "run_id": data.run_id,
        "runs": data.runs,
        "suite": data.suite,
        "base": data.base,
        "targets": data.targets,
        "confidence": data.confidence,
        "min_effect": data.min_effect,
        "dbsweep_version": __version__,
        "notes": data.notes,
        "columns": columns(data),
        "rows": records(data),
        "groups": groups(data),
        "provenance": provenance(data),
        "canaries": canaries(data),
        "instructions": instructions(data),
        "profiles": flames.to_json(data),
        "canary_cv": data.canaries.cv,
        "suite_tables": suite_tables(data),
    }


def suite_tables(data: ReportData) -> list[dict[str, Any]]:
    """The suite's own tables as the full report shows them (a terminal-only table is a narrower copy of one of
    them)."""
    return [
        {
            "key": t.key,
            "title": t.title,
            "note": t.note,
            "header": t.header,
            "rows": [
                {h: v.text if v.sort is None else v.sort for h, v in zip(t.header, r, strict=False)} for r in t.rows
            ],
        }
        for t in data.extra_tables
        if t.shown_in("markdown")
    ]


def to_json(data: ReportData) -> str:
    # allow_nan=False: a NaN would make the file unreadable to strict JSON parsers; they are None here.
    return json.dumps(to_json_obj(data), indent=1, allow_nan=False, default=str) + "\n"
