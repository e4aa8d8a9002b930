"""The architecture's two boundaries hold: outside `engines/` no module imports a database driver or names an
engine, and outside `engines/` and `suites/` no module names a suite (or its steps). Comments and docstrings
may speak of them; code may not: identifiers and string literals are checked, token by token."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "dbsweep"
DRIVERS = {"psycopg", "psycopg2", "asyncpg", "pymysql", "MySQLdb", "mariadb", "rocksdb", "apsw"}
# The results store is dbsweep's own SQLite file, not an engine under test.
SQLITE_ALLOWED = {"results/store.py"}
# A suite of an engine's own tool may name that tool (and its engine): db_bench is the dbbench suite's program.
TOOL_SUITES = {"suites/dbbench/": re.compile(r"db_bench|rocksdb", re.I)}
# Words a generic module may hold for a stated reason: the store reads the table a suite's name was once on.
EXCUSED = {("results/store.py", '"ibench_samples"')}
ENGINE_WORDS = re.compile(r"postgres|postgresql|pg_|psql|mariadb|mysql|myrocks|innodb|rocksdb|db_bench|sqlite", re.I)
SUITE_WORDS = re.compile(r"sysbench|ibench|insert benchmark|sbtest|pgbench|tpc-?h|\bl\.i[012]\b|\bl\.x\b", re.I)


def modules(*outside: str) -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if not any(p.relative_to(SRC).parts[0] == o for o in outside))


def code_words(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every identifier and string literal that is not a docstring."""
    source = path.read_text()
    docstrings = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(body[0].lineno)
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.NAME or (tok.type == tokenize.STRING and tok.start[0] not in docstrings):
            out.append((tok.start[0], tok.string))
    return out


def imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module.split(".")[0])
    return out


def test_no_driver_outside_engines() -> None:
    found = []
    for p in modules("engines"):
        rel = str(p.relative_to(SRC))
        bad = imports(p) & DRIVERS
        if "sqlite3" in imports(p) and rel not in SQLITE_ALLOWED:
            bad.add("sqlite3")
        if bad:
            found.append(f"{rel}: imports {', '.join(sorted(bad))}")
    assert not found, found


@pytest.mark.parametrize(
    ("what", "pattern", "outside"),
    [("an engine", ENGINE_WORDS, ("engines",)), ("a suite", SUITE_WORDS, ("engines", "suites"))],
)
def test_generic_modules_name_no_engine_or_suite(what: str, pattern: re.Pattern[str], outside: tuple[str, ...]) -> None:
    found = []
    for p in modules(*outside):
        rel = str(p.relative_to(SRC))
        for line, text in code_words(p):
            checked = re.sub(r"sqlite", "", text, flags=re.I) if rel in SQLITE_ALLOWED else text
            for prefix, own in TOOL_SUITES.items():
                if rel.startswith(prefix):
                    checked = own.sub("", checked)
            if pattern.search(checked) and (rel, text) not in EXCUSED:
                found.append(f"{rel}:{line}: {text[:60]}")
    assert not found, f"generic modules that name {what}:\n" + "\n".join(found)


def test_the_checks_see_what_they_look_for(tmp_path: Path) -> None:
    # The scanner is itself tested: a named engine in code is seen, one in a docstring or comment is not.
    p = tmp_path / "m.py"
    p.write_text('"""Postgres is fine here."""\n# and sysbench here\nx = "postgres"\nimport psycopg\n')
    words = [w for _, w in code_words(p)]
    assert '"postgres"' in words and not any("Postgres is fine" in w for w in words)
    assert "psycopg" in imports(p)
