"""Text is text: words from engines, files, paths and users are printed as they are, brackets and all, on every
path a message takes (the console, styled words, a cell's line in a log, a progress bar, the terminal report, an
error), and no module makes a console or writes markup of its own."""

from __future__ import annotations

import ast
import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.progress import Progress

from dbsweep import say
from dbsweep.progress import CellLog, bars
from dbsweep.report import data, terminal
from dbsweep.results.store import Store

from ..conftest import ROOT
from .conftest import cli
from .handmade import hand_made

# Each of these once crashed a run or vanished from a message: a closing tag that matches nothing, an opening
# one that would colour the rest, a link, an emoji code.
NASTY = "[/x] [bold]b[/bold] [link=file:///etc] [red] :smile: [/]"
SRC = ROOT / "src" / "dbsweep"


def test_a_console_prints_brackets_and_styled_words_as_they_are() -> None:
    buf = io.StringIO()
    c = say.console(file=buf, width=400, color_system=None)
    c.print(NASTY)
    c.print(say.line(say.styled("error:", "red"), f" {NASTY}"))
    c.print(say.styled(NASTY, "dim"))
    assert buf.getvalue().splitlines() == [NASTY, f"error: {NASTY}", NASTY]


def test_a_finished_cell_in_a_log_keeps_its_brackets() -> None:
    buf = io.StringIO()
    log = CellLog(say.console(file=buf, width=400, color_system=None), [1.0])
    log.finished(f"a {NASTY} c1 r1", 1.0, f"failed: {NASTY}", ok=False)
    assert buf.getvalue().strip() == f"[1/1] a {NASTY} c1 r1: failed: {NASTY} · last cell"


def test_a_progress_bar_shows_its_description_as_it_is() -> None:
    buf = io.StringIO()
    c = say.console(file=buf, width=400, color_system=None, force_terminal=True)
    with bars(c) as progress:
        assert isinstance(progress, Progress)
        progress.add_task(f"instructions: {NASTY}", total=2, unit="[steps]")
    assert f"instructions: {NASTY}" in buf.getvalue() and "[steps]" in buf.getvalue()


@pytest.fixture
def hand(tmp_path: Path) -> Iterator[tuple[data.ReportData, Store]]:
    with hand_made(tmp_path) as made:
        yield made


def test_the_terminal_report_prints_notes_and_names_as_they_are(hand: tuple[data.ReportData, Store]) -> None:
    d, _ = hand
    d.notes.append(NASTY)
    d.title = f"hand {NASTY}"
    buf = io.StringIO()
    terminal.render(d, say.console(file=buf, width=400, color_system=None))
    out = buf.getvalue()
    assert f"note: {NASTY}" in out
    assert f"hand {NASTY}" in out


def test_an_error_that_quotes_brackets_is_printed_whole(tmp_path: Path) -> None:
    study = tmp_path / "[red]study[/x].toml"
    r = cli("validate", study)
    assert r.returncode != 0
    assert "[red]study[/x].toml" in r.stderr, r.stderr


def test_a_broken_study_whose_values_hold_brackets_is_named_whole(tmp_path: Path) -> None:
    study = tmp_path / "s.toml"
    study.write_text(
        f'name = "s"\nengine = "postgres"\nbase = "{NASTY}"\n[suite]\nsteps = ["point-query"]\n'
        '[[targets]]\nname = "a"\nsource = "system"\nconfig = "cx10a_c2r24"\n'
    )
    r = cli("validate", study)
    assert r.returncode == 2
    assert NASTY in r.stderr, r.stderr


def _modules() -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(SRC.rglob("*.py")):
        yield path, ast.parse(path.read_text(), filename=str(path))


def test_no_module_but_say_makes_a_console_or_a_text_column() -> None:
    makers = {"Console", "TextColumn"}
    found = []
    for path, tree in _modules():
        if path.name == "say.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
                if name in makers:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}(...)")
    assert not found, "make consoles and text columns with dbsweep.say, which reads no markup:\n" + "\n".join(found)


# A rich style tag as code would write it: [red], [/red], [/], [bold green], [grey62].
_TAG = ("[/]", "[/", "[red]", "[green]", "[yellow]", "[dim]", "[bold]", "[grey62]", "[bold ")


def test_no_module_writes_markup() -> None:
    found = []
    for path, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and any(t in node.value for t in _TAG):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value[:60]!r}")
    assert not found, "markup is not read by dbsweep's consoles; style with say.styled:\n" + "\n".join(found)
