"""A bisection's answer (`verdicts.probes.Bisection`) in every report format: the culprit or the range left and
why, the verdicts of the culprit against its parent, the functions that explain it, and the log of probes."""

from __future__ import annotations

import html
import io
import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from dbsweep import say
from dbsweep.report import fmt, output
from dbsweep.report.output import Format
from dbsweep.say import styled
from dbsweep.verdicts.bisect import Side
from dbsweep.verdicts.probes import Bisection, label


def headline(b: Bisection) -> str:
    """The answer in a sentence."""
    if b.culprit is not None and b.confirmed:
        return f"The first bad commit is {label(b.culprit.sha)} ({b.culprit.subject})."
    return f"No culprit named: {b.explanation}."


def side(v: Side) -> str:
    """`slower +68.50% (floor 0.20%)` for a count, `slower -12.1% (interval 0.85-0.91)` for QPS."""
    behind = (
        f" (interval {v.low:.3f}-{v.high:.3f})"
        if v.low is not None and v.high is not None
        else f" (floor {fmt.pct(v.floor, 2)})"
        if v.floor is not None
        else ""
    )
    return f"{v.verdict} {fmt.signed_pct(v.ratio)}{behind}"


def _side_dict(v: Side) -> dict[str, Any]:
    return {"verdict": v.verdict, "ratio": v.ratio, "low": v.low, "high": v.high, "floor": v.floor}


def _change(b: Bisection) -> list[str]:
    return [f"{s}: {side(v)}" for s, v in b.change_sides.items()]


def _verified(b: Bisection) -> str:
    return ", ".join(f"{s} {side(v)}" for s, v in b.verified.items())


def _log_rows(b: Bisection) -> list[list[str]]:
    rows = []
    for p in b.probes:
        steps = "; ".join(
            f"{j.step}: {j.good.verdict} {fmt.signed_pct(j.good.ratio)} vs good, "
            f"bad {j.bad.verdict} {fmt.signed_pct(j.bad.ratio)} vs it"
            for j in p.judged
        )
        rounds = f" ({p.repeats} rounds)" if p.repeats else ""
        rows.append(
            [
                str(p.round),
                label(p.commit.sha),
                f"{p.index}/{len(b.commits) - 1}",
                p.outcome + rounds,
                steps or p.why,
                p.commit.subject,
            ]
        )
    return rows


LOG_HEADS = ["round", "commit", "at", "outcome", "steps", "subject"]


def to_dict(b: Bisection) -> dict[str, Any]:
    r = b.request
    return {
        "bisection": b.title,
        "answer": headline(b),
        "state": b.state,
        "explanation": b.explanation,
        "engine": r.study.engine,
        "target": {"source": b.url, "variant": r.target.variant, "config": r.target.config},
        "good": b.commits[0].sha,
        "bad": b.commits[-1].sha,
        "commits": len(b.commits) - 1,
        "decided_by": r.by,
        "steps": list(r.steps),
        "change": {s: _side_dict(v) for s, v in b.change_sides.items()},
        "dropped_steps": b.dropped,
        "culprit": None
        if b.culprit is None
        else {
            "sha": b.culprit.sha,
            "subject": b.culprit.subject,
            "date": b.culprit.date,
            "files": b.files,
            "parent": b.parent.sha if b.parent else None,
            "confirmed": b.confirmed,
            "verified": {s: _side_dict(v) for s, v in b.verified.items()},
            "why": {
                s: [
                    {
                        "function": c.function,
                        "place": fmt.function_place(c),
                        "parent_per_op": c.base_self,
                        "culprit_per_op": c.target_self,
                        "delta_per_op": c.delta_self,
                    }
                    for c in changes
                ]
                for s, changes in b.why.items()
            },
        },
        "left": [{"sha": c.sha, "subject": c.subject} for c in b.left],
        "probes": [
            {
                "round": p.round,
                "sha": p.commit.sha,
                "subject": p.commit.subject,
                "index": p.index,
                "outcome": p.outcome,
                "why": p.why,
                "qps_rounds": p.repeats,
                "steps": {
                    j.step: {"against_good": _side_dict(j.good), "bad_against_it": _side_dict(j.bad)} for j in p.judged
                },
            }
            for p in b.probes
        ],
        "builds": b.builds,
        "seconds": round(b.seconds, 1),
    }


def markdown(b: Bisection) -> str:
    out = [f"# {b.title}", "", f"**{headline(b)}**", ""]
    out += [
        f"- good {label(b.commits[0].sha)}, bad {label(b.commits[-1].sha)}: {len(b.commits) - 1} commits, "
        f"decided by {b.request.by}"
    ]
    out += [f"- change from good to bad: {', '.join(_change(b)) or 'none'}"]
    if b.dropped:
        out += [f"- steps that did not differ, not followed: {', '.join(b.dropped)}"]
    out += [f"- {len(b.probes)} probes, {b.builds} builds made, {b.seconds / 60:.1f} min", ""]
    if b.culprit is not None:
        c = b.culprit
        out += [f"## Culprit {label(c.sha)}", "", f"- {c.subject}", f"- {c.date}", f"- sha {c.sha}"]
        out += [f"- files: {', '.join(b.files)}"]
        out += [
            f"- parent {label(b.parent.sha) if b.parent else '-'} against it, fresh pair: "
            + _verified(b)
            + (" (confirmed)" if b.confirmed else " (not confirmed)"),
            "",
        ]
        for step, changes in b.why.items():
            out += [f"Why {step} (instructions per event, parent -> culprit):", "", "```"]
            out += [fmt.function_change(ch) for ch in changes] + ["```", ""]
    elif b.left:
        out += ["## Commits left", ""] + [f"- {label(c.sha)} {c.subject}" for c in b.left] + [""]
    out += ["## Log", "", "| " + " | ".join(LOG_HEADS) + " |", "|" + "---|" * len(LOG_HEADS)]
    out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in _log_rows(b)]
    return "\n".join(out) + "\n"


def page(b: Bisection) -> str:
    """A plain HTML page: the same content as the markdown, as tables."""
    e = html.escape
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{e(b.title)}</title>",
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}pre{background:#f6f6f6;padding:6px}</style>",
        "</head><body>",
        f"<h1>{e(b.title)}</h1><p><b>{e(headline(b))}</b></p><ul>",
        f"<li>good {e(label(b.commits[0].sha))}, bad {e(label(b.commits[-1].sha))}: {len(b.commits) - 1} commits, "
        f"decided by {e(b.request.by)}</li>",
        f"<li>change from good to bad: {e(', '.join(_change(b)) or 'none')}</li>",
        f"<li>{len(b.probes)} probes, {b.builds} builds made, {b.seconds / 60:.1f} min</li></ul>",
    ]
    if b.culprit is not None:
        c = b.culprit
        parts += [
            f"<h2>Culprit {e(label(c.sha))}</h2><ul><li>{e(c.subject)}</li><li>{e(c.date)}</li>",
            f"<li>sha {e(c.sha)}</li><li>files: {e(', '.join(b.files))}</li>",
            "<li>against its parent, fresh pair: "
            + e(_verified(b))
            + (" (confirmed)" if b.confirmed else " (not confirmed)")
            + "</li></ul>",
        ]
        for step, changes in b.why.items():
            lines = "\n".join(fmt.function_change(ch) for ch in changes)
            parts += [f"<p>Why {e(step)} (instructions per event, parent &rarr; culprit):</p><pre>{e(lines)}</pre>"]
    elif b.left:
        parts += ["<h2>Commits left</h2><ul>"] + [f"<li>{e(label(c.sha))} {e(c.subject)}</li>" for c in b.left]
        parts += ["</ul>"]
    parts += ["<h2>Log</h2><table><tr>" + "".join(f"<th>{h}</th>" for h in LOG_HEADS) + "</tr>"]
    parts += ["<tr>" + "".join(f"<td>{e(cell)}</td>" for cell in row) + "</tr>" for row in _log_rows(b)]
    parts += ["</table></body></html>"]
    return "\n".join(parts) + "\n"


def render(b: Bisection, console: Console) -> None:
    good = b.culprit is not None and b.confirmed
    console.print(styled(headline(b), "bold green" if good else "bold yellow"))
    console.print(f"change from good to bad: {', '.join(_change(b)) or 'none'}")
    if b.culprit is not None:
        c = b.culprit
        console.print(f"culprit {c.sha}\n  {c.subject}\n  {c.date}\n  files: {', '.join(b.files)}")
        console.print(
            "  against its parent, fresh pair: "
            + _verified(b)
            + (" (confirmed)" if b.confirmed else " (not confirmed)")
        )
        for step, changes in b.why.items():
            console.print(f"  why {step}:")
            for ch in changes:
                console.print(f"    {fmt.function_change(ch)}", highlight=False)
    elif b.left:
        console.print("commits left: " + ", ".join(f"{label(c.sha)} {c.subject}" for c in b.left))
    if b.probes:
        table = Table(title="bisection log", title_justify="left")
        for h in LOG_HEADS:
            table.add_column(h, overflow="fold")
        for row in _log_rows(b):
            table.add_row(*row)
        console.print(table)
    console.print(f"{len(b.probes)} probes, {b.builds} builds made, {b.seconds / 60:.1f} min")


def text(b: Bisection, f: Format) -> str:
    """The answer in format `f` as text (the terminal's without colours)."""
    if f == Format.terminal:
        buf = io.StringIO()
        render(b, say.console(file=buf, width=160, color_system=None, soft_wrap=False))
        return buf.getvalue()
    if f == Format.markdown:
        return markdown(b)
    return page(b) if f == Format.html else json.dumps(to_dict(b), indent=2) + "\n"


def emit(b: Bisection, f: Format, out: Path | None, console: Console) -> Path | None:
    """Prints the answer, or writes it to `out` (an HTML page goes to a file even without one)."""
    if out is None and f == Format.terminal:
        render(b, console)
        return None
    if f == Format.html and out is None:
        out = Path(f"{b.title}.html")
    output.check_out(out, f)
    return output.deliver(text(b, f), out)
