"""The parts of a study side by side (its server classes and setups): for each target against the base, each
step's rQPS and verdict per part, as the seeds set a small server's table beside a large one's. Each ratio is
within its part (base and target measured on one class, in one setup); only the ratios sit side by side."""

from __future__ import annotations

from dbsweep.report import fmt
from dbsweep.report.data import ReportData
from dbsweep.report.tables import ExtraTable, Value


def _colour(r: float | None) -> str:
    if r is None:
        return ""
    return "red" if r <= 0.95 else "green" if r >= 1.05 else ""


def tables(parts: list[ReportData]) -> list[ExtraTable]:
    """The parts side by side: rQPS, then instructions per event where the parts were counted."""
    return [t for t in (table(parts), instr_table(parts)) if t is not None]


def _short_names(parts: list[ReportData]) -> list[str]:
    names = [d.study.title for d in parts]
    common = _common(names)
    return [n[len(common) + 1 :] if common and n.startswith(common + ".") else n for n in names]


def instr_table(parts: list[ReportData]) -> ExtraTable | None:
    """Every part's instruction verdict per (target, step): the change in instructions per event against the
    part's own base, each count taken on its own class's nodes; None for fewer than two counted parts."""
    if len(parts) < 2 or sum(1 for d in parts if d.instr_rows) < 2:
        return None
    short = _short_names(parts)
    rows: list[list[Value]] = []
    rules: set[int] = set()
    steps: list[str] = []
    for d in parts:
        steps += [r.step for r in d.instr_rows if r.step not in steps]
    for target in [t for t in parts[0].others if all(t in d.targets for d in parts)]:
        for step in steps:
            line = [Value(target), Value(step)]
            for d in parts:
                row = next((r for r in d.instr_rows if r.step == step), None)
                j = row.judged.get(target) if row is not None else None
                ratio = j.ratio if j is not None and j.verdict is not None else None
                # Fewer instructions is faster: the colour of a ratio below 1 is green here.
                colour = "" if ratio is None else _colour(2 - ratio)
                line.append(Value(fmt.instr_verdict(j), colour, sort=ratio))
            rows.append(line)
        rules.add(len(rows) - 1)
    return ExtraTable(
        key="sides_instr",
        title=f"Instructions per event by part ({', '.join(short)}): each against its own base",
        header=["target", "step", *short],
        rows=rows,
        labels=2,
        note="Each change is the target's count over the base's within one server class and setup; the verdict "
        "holds it against the count's floor.",
        rules=frozenset(rules),
    )


def table(parts: list[ReportData]) -> ExtraTable | None:
    """One table of every part's rQPS per (target, step, clients); None for fewer than two parts."""
    if len(parts) < 2:
        return None
    short = _short_names(parts)
    header = ["target", "step", "clients", *short]
    rows: list[list[Value]] = []
    rules: set[int] = set()
    targets = [t for t in parts[0].others if all(t in d.targets for d in parts)]
    for target in targets:
        keys: list[tuple[str, int]] = []
        for d in parts:
            keys += [(r.step, r.clients) for r in d.rows if (r.step, r.clients) not in keys]
        for step, clients in keys:
            line = [Value(target), Value(step), Value(str(clients))]
            for d in parts:
                row = next((r for r in d.rows if r.step == step and r.clients == clients), None)
                cmp = row.cmp.get(target) if row is not None else None
                ratio = row.rel.get(target) if row is not None else None
                text = fmt.ratio(ratio) if ratio is not None else "-"
                if cmp is not None and cmp.verdict is not None:
                    text += f" {cmp.verdict}"
                line.append(Value(text, _colour(ratio), sort=ratio))
            rows.append(line)
        rules.add(len(rows) - 1)
    if not rows:
        return None
    return ExtraTable(
        key="sides",
        title=f"rQPS by part ({', '.join(short)}): each against its own base",
        header=header,
        rows=rows,
        labels=3,
        note="Each ratio is the target's QPS over the base's within one server class and setup; the parts are not "
        "divided by each other.",
        rules=frozenset(rules),
    )


def _common(names: list[str]) -> str:
    """The longest dotted prefix the names share ("t" of "t.small" and "t.large")."""
    split = [n.split(".") for n in names]
    out: list[str] = []
    for parts in zip(*split, strict=False):
        if len(set(parts)) != 1:
            break
        out.append(parts[0])
    return ".".join(out)
