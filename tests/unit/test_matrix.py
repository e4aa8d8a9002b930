"""Seed 004's compiler x flags tables (`report.matrix`): from a hand-made store, each variant judged against the
same compiler's reference build, not against the study's base; no table when the targets are not such a grid."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from dbsweep import say
from dbsweep.report import data, markdown, matrix, terminal
from dbsweep.results.model import CellKey, CellResult
from dbsweep.results.store import now
from dbsweep.study import load_study
from tests.unit.handmade import new_store, summary

GRID = """\
name = "grid"
engine = "postgres"
base = "def+gcc-12"
repeats = 3
workspace = "{ws}"

[suite]
steps = ["point-query"]
rows = 1000

[[targets]]
name = "def+gcc-12"
source = "15.18"
compiler = "gcc-12"
config = "cx10a_c2r24"

[[targets]]
name = "o3+gcc-12"
source = "15.18"
variant = "o3"
compiler = "gcc-12"
config = "cx10a_c2r24"

[[targets]]
name = "def+clang-16"
source = "15.18"
compiler = "clang-16"
config = "cx10a_c2r24"

[[targets]]
name = "o3+clang-16"
source = "15.18"
variant = "o3"
compiler = "clang-16"
config = "cx10a_c2r24"
"""

# QPS per target: against its own compiler's def, gcc's o3 is 10 % faster and clang's 10 % slower, although
# clang's o3 is as fast as the study's base (gcc's def) itself.
QPS = {"def+gcc-12": 1000.0, "o3+gcc-12": 1100.0, "def+clang-16": 1111.1, "o3+clang-16": 1000.0}
VERSIONS = {"gcc-12": "gcc (Debian 12.2.0-14) 12.2.0", "clang-16": "Debian clang version 16.0.6 (15~deb12u1)"}
# Instructions per event: gcc's o3 1 % fewer than its def, clang's o3 the same as its def.
INSTR = {"def+gcc-12": 100_000.0, "o3+gcc-12": 99_000.0, "def+clang-16": 90_000.0, "o3+clang-16": 90_010.0}
STEP = "point-query_range=100"


def _provenance(name: str) -> dict[str, object]:
    compiler = name.split("+")[1]
    return {
        "engine": {"server_version": "15.18", "compiler_version": VERSIONS[compiler], "cc": compiler},
        "target": {"name": name, "source": "15.18", "variant": name.split("+")[0]},
        "config": {"name": "cx10a_c2r24", "diff": ""},
    }


def _count(target: str) -> dict[str, object]:
    build = {"compiler_version": VERSIONS[target.split("+")[1]]}
    return {"per_event": INSTR[target], "per_query": INSTR[target], "spread": 0.0, "error": None, "build": build}


def _grid(tmp_path: Path, toml: str = GRID, timed: bool = True) -> data.ReportData:
    text = toml.format(ws=tmp_path / "ws")
    path = tmp_path / "grid.toml"
    path.write_text(text)
    study = load_study(path)
    store = new_store(path, text)
    ids = {
        t.label: store.ensure_target(
            1, t.label, "postgres", {"source": t.source, "variant": t.variant, "config": t.config}
        )
        for t in study.targets
    }
    for rep, wobble in ((1, 1.0), (2, 1.004), (3, 0.997)) if timed else ():
        for t in ids:
            store.write_cell(
                1,
                ids[t],
                CellResult(
                    CellKey(t, STEP, 1, rep),
                    "done",
                    now(),
                    now(),
                    summary=summary(QPS[t] * wobble),
                    provenance=_provenance(t),
                ),
            )
    for t in ids:
        store.write_instructions(1, ids[t], STEP, _count(t))
    got = data.gather(study, store, 1)
    store.close()
    return got


def test_each_variant_is_judged_against_its_own_compilers_reference(tmp_path: Path) -> None:
    d = _grid(tmp_path)
    qps, instr = (t for t in d.extra_tables if t.section == matrix.SECTION)
    assert qps.header == ["step", "clients", "compiler", "def QPS", "o3"]
    rows = [[v.text for v in line] for line in qps.rows]
    assert [r[2] for r in rows] == ["gcc 12.2.0", "clang 16.0.6"]
    assert rows[0][3] == "1,000" and rows[1][3] == "1,111"
    assert rows[0][4] == "+10.00% faster"
    # Against the study's base clang's o3 is the same; against clang's own def it is 10 % slower.
    assert rows[1][4] == "-10.00% slower"
    assert [[v.text for v in line] for line in instr.rows] == [
        [STEP, "gcc 12.2.0", "100,000", "-1.00% faster"],
        ["", "clang 16.0.6", "90,000", "+0.01% same"],
    ]
    md = markdown.render(d)
    assert "QPS by compiler and variant, each against the same compiler's def" in md
    assert re.search(r"clang 16\.0\.6\s+1,111\s+-10\.00% slower", md)
    buf = io.StringIO()
    terminal.render(d, say.console(file=buf, width=200))
    assert "instructions per event by compiler and variant" in buf.getvalue()


def test_a_run_of_counts_alone_names_the_compilers_from_its_counts(tmp_path: Path) -> None:
    """No timed cell, so no provenance: the compilers' versions come from the build records of the counts."""
    d = _grid(tmp_path, timed=False)
    tables = [t for t in d.extra_tables if t.section == matrix.SECTION]
    assert [t.key for t in tables] == ["compiler-matrix-instr"]  # nothing timed yet: no QPS table
    assert [line[1].text for line in tables[0].rows] == ["gcc 12.2.0", "clang 16.0.6"]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # One compiler: the variants' own table is the main one.
        ('variant = "o3"\ncompiler = "clang-16"', 'variant = "o3"\ncompiler = "gcc-12"'),
        # Two sources: the grid would mix versions with compilers.
        ('name = "o3+clang-16"\nsource = "15.18"', 'name = "o3+clang-16"\nsource = "15.17"'),
        # A compiler without the reference variant: nothing to set its other builds against.
        ('name = "def+clang-16"\nsource = "15.18"', 'name = "def+clang-16"\nsource = "15.18"\nvariant = "os"'),
    ],
)
def test_no_matrix_unless_the_targets_form_a_grid(tmp_path: Path, old: str, new: str) -> None:
    toml = GRID.replace(old, new)
    assert toml != GRID
    text = toml.format(ws=tmp_path / "ws")
    path = tmp_path / "grid.toml"
    path.write_text(text)
    store = new_store(path, text)
    d = data.gather(load_study(path), store, 1)
    store.close()
    assert matrix.axes(d) is None
    assert not [t for t in d.extra_tables if t.section == matrix.SECTION]


@pytest.mark.parametrize(
    ("line", "named", "want"),
    [
        ("gcc (Debian 12.2.0-14) 12.2.0", "gcc-12", "gcc 12.2.0"),
        ("gcc-11 (Debian 11.3.0-12) 11.3.0", "gcc-11", "gcc 11.3.0"),
        ("Debian clang version 14.0.6", "clang", "clang 14.0.6"),
        ("Debian clang version 19.1.7 (3~deb12u1)", "clang-19", "clang 19.1.7"),
        ("", "clang-16", "clang-16"),
        ("", "", "the variant's own"),
    ],
)
def test_compiler_names(line: str, named: str, want: str) -> None:
    assert matrix.compiler_name(line, named) == want
