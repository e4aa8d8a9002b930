"""Seed 004's tables: when a study's targets build one source with one config by several compilers, each at the
same set of variants, the report adds a matrix per figure: a row per step and compiler (its full version), the
reference variant's QPS (or instructions per event), and each other variant's change against the same
compiler's reference build, with its verdict. The seed's question is what a flag does for a given compiler,
which the main table (everything against one base) does not show; its verdicts pair the two targets' rounds as
the main table's do, with the same noise."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from dbsweep.report import fmt
from dbsweep.report.data import ReportData, Row, compare, qps_noise
from dbsweep.report.instr import InstrRow
from dbsweep.report.tables import ExtraTable, Value
from dbsweep.verdicts import calibrate
from dbsweep.verdicts.instructions import calibrated_floors, judge

if TYPE_CHECKING:
    from dbsweep.results.store import Store

SECTION = "Compilers and flags"
T = TypeVar("T")
_VERSION = re.compile(r"(\d+(?:\.\d+)+)")


@dataclass(frozen=True)
class Axes:
    compilers: list[str]  # as the study names them ("" for a variant's own compiler), in study order
    variants: list[str]  # in study order, the reference first
    target: dict[tuple[str, str], str]  # (compiler, variant) -> target label


def axes(data: ReportData) -> Axes | None:
    """The compiler x variant grid of the report's targets (an A-A copy of a build left out), or None unless they
    share one source and one config, name at least two compilers and two variants, and every compiler has the
    reference variant (a missing other one shows as '-')."""
    targets = [t for t in data.study.targets if t.label in data.targets and not t.build_copy]
    if len({(t.source, t.config) for t in targets}) != 1:
        return None
    grid: dict[tuple[str, str], str] = {}
    for t in targets:
        key = (t.compiler or "", t.variant)
        if key in grid:
            return None
        grid[key] = t.label
    compilers = list(dict.fromkeys(c for c, _v in grid))
    variants = list(dict.fromkeys(v for _c, v in grid))
    base = next((t for t in targets if t.label == data.base), targets[0])
    reference = base.variant
    variants = [reference, *(v for v in variants if v != reference)]
    if len(compilers) < 2 or len(variants) < 2 or any((c, reference) not in grid for c in compilers):
        return None
    return Axes(compilers, variants, grid)


def compiler_name(version_line: str, named: str) -> str:
    """A compiler's row label from its `--version` line: `gcc 12.2.0`, `clang 14.0.6`; else what the study named."""
    family = "clang" if "clang" in version_line else "gcc" if re.search(r"\b(gcc|g\+\+|cc)\b", version_line) else ""
    after = version_line.split("version", 1)[1] if "version" in version_line else version_line
    found = _VERSION.findall(after)
    if family and found:
        return f"{family} {found[0] if 'version' in version_line else found[-1]}"
    return named or "the variant's own"


def _row_label(data: ReportData, grid: Axes, compiler: str, builds: Mapping[str, list[dict[str, Any]]]) -> str:
    """The compiler's name and version, from the reference build's record: its results' provenance, else what its
    counts recorded (a run of counts alone)."""
    target = grid.target[(compiler, grid.variants[0])]
    prov = data.provenance.get(target)
    line = prov.engine("compiler_version") if prov else ""
    if not line and builds.get(target):
        line = str(builds[target][-1].get("compiler_version") or "")
    return compiler_name(line, compiler)


def _change(ratio: float | None, verdict: str | None, tip: str) -> Value:
    if ratio is None:
        return Value(fmt.DASH)
    return Value(f"{fmt.signed_pct(ratio)} {verdict or ''}".rstrip(), fmt.verdict_colour(verdict), ratio, tip=tip)


def _lines(
    data: ReportData,
    grid: Axes,
    builds: Mapping[str, list[dict[str, Any]]],
    items: Sequence[T],
    labels: Callable[[T], list[str]],
    reference: Callable[[T, str], Value],
    change: Callable[[T, str, str], Value],
) -> tuple[list[list[Value]], frozenset[int]]:
    """A line per item (a step) and compiler: the item's labels on its first line, the compiler, the reference
    build's figure, then each other variant's change against it ('-' where the compiler has no such build); and
    the index of each item's last line, for the terminal's rules."""
    names = {comp: _row_label(data, grid, comp, builds) for comp in grid.compilers}
    lines: list[list[Value]] = []
    rules: set[int] = set()
    for item in items:
        for i, comp in enumerate(grid.compilers):
            ref = grid.target[(comp, grid.variants[0])]
            line = [Value(x if i == 0 else "") for x in labels(item)]
            line += [Value(names[comp]), reference(item, ref)]
            for v in grid.variants[1:]:
                t = grid.target.get((comp, v))
                line.append(Value(fmt.DASH) if t is None else change(item, ref, t))
            lines.append(line)
        rules.add(len(lines) - 1)
    return lines, frozenset(rules)


def _qps_table(
    data: ReportData, grid: Axes, builds: Mapping[str, list[dict[str, Any]]], measured: calibrate.Measured | None
) -> ExtraTable | None:
    m = data.study.measure

    def change(row: Row, ref: str, t: str) -> Value:
        b, c = row.cells[ref], row.cells[t]
        if not c.reps:
            return Value(fmt.DASH)
        noise = qps_noise(row.step, row.clients, b, c, measured)
        j = compare(b, c, lambda r: r.qps, paired=True, confidence=m.confidence, min_effect=m.min_effect, noise=noise)
        return _change(j.ratio, j.verdict, f"{fmt.num(c.median)} ({fmt.ci(j)})")

    ran = [row for row in data.rows if any(row.cells[t].reps for t in grid.target.values())]  # not run: left out
    if not ran:
        return None
    lines, rules = _lines(
        data,
        grid,
        builds,
        ran,
        lambda row: [row.name, str(row.clients)],
        lambda row, ref: Value(fmt.num(row.cells[ref].median), sort=row.cells[ref].median),
        change,
    )
    ref = grid.variants[0]
    return ExtraTable(
        "compiler-matrix-qps",
        f"{data.title}: QPS by compiler and variant, each against the same compiler's {ref}",
        ["step", "clients", "compiler", f"{ref} QPS", *grid.variants[1:]],
        lines,
        f"A variant's change is its median QPS against the same compiler's {ref} build, with the verdict of their "
        "paired rounds (as in the main table); '-' where a build has no result. The main table puts every build "
        "against the study's base.",
        labels=3,
        section=SECTION,
        rules=rules,
    )


def _instr_table(
    data: ReportData, grid: Axes, builds: Mapping[str, list[dict[str, Any]]], aa: Callable[[str], float | None]
) -> ExtraTable | None:
    if not data.instr_rows:
        return None

    def change(ir: InstrRow, ref: str, t: str) -> Value:
        j = judge(ir.counts.get(ref), ir.counts.get(t), aa(ir.step), ir.basis)
        if j.verdict is None:
            return Value(fmt.DASH, tip=j.error or "")
        return _change(j.ratio, j.verdict, f"{fmt.instructions(j.target_figure)} (floor {fmt.floor(j)})")

    lines, rules = _lines(
        data,
        grid,
        builds,
        data.instr_rows,
        lambda ir: [ir.step],
        lambda ir, ref: Value(fmt.instructions(ir.figure(ref)), sort=ir.figure(ref)),
        change,
    )
    ref = grid.variants[0]
    return ExtraTable(
        "compiler-matrix-instr",
        f"{data.title}: instructions per event by compiler and variant, each against the same compiler's {ref}",
        ["step", "compiler", f"{ref} instr/event", *grid.variants[1:]],
        lines,
        f"Each step's figure as in the instruction table, a variant against the same compiler's {ref} build with "
        "the same floor; '-' where a build has no count (valgrind cannot run it, or its count failed).",
        labels=2,
        section=SECTION,
        rules=rules,
    )


def tables(data: ReportData, store: Store, measured: calibrate.Measured | None) -> list[ExtraTable]:
    """Seed 004's two matrices (QPS, instructions per event) when the targets form a compiler x variant grid; the
    store is read (the build records, for the compilers' versions; the calibrated floors) only then."""
    grid = axes(data)
    if grid is None:
        return []
    builds = store.builds_measured(data.run_id)
    aa = calibrated_floors(data.study, store)
    made = (_qps_table(data, grid, builds, measured), _instr_table(data, grid, builds, aa.get))
    return [t for t in made if t is not None]
