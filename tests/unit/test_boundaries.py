"""The architecture's two boundaries hold: outside `engines/` no module imports a database driver or names an
engine, and outside `engines/` and `suites/` no module names a suite (or its steps). Comments and docstrings
may speak of them; code may not: identifiers and string literals are checked, token by token.

And dbsweep's own imports run one way: no cycle among the imports at the top of its modules, and none hidden by
an import inside a function where two were found (configs and the engine registry; a suite's report module and
the suite registry)."""

from __future__ import annotations

import ast
import functools
import io
import re
import tokenize
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "dbsweep"
DRIVERS = {"psycopg", "psycopg2", "asyncpg", "pymysql", "MySQLdb", "mariadb", "rocksdb", "apsw"}
# The results store is dbsweep's own SQLite file, not an engine under test: its module, the merge of a batch job's
# store into it, and its records of the batch jobs.
SQLITE_ALLOWED = {"results/store.py", "results/merge.py", "results/jobs.py"}
# A suite of an engine's own tool may name that tool (and its engine): db_bench is the dbbench suite's program,
# pgbench the pgbench suite's.
TOOL_SUITES = {
    "suites/dbbench/": re.compile(r"db_bench|rocksdb", re.I),
    "suites/pgbench/": re.compile(r"pgbench|postgres|pg_|libpq", re.I),
}
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


# ---- dbsweep's own imports --------------------------------------------------------------------------------


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in SRC.rglob("*.py")}


def _module_of(name: str) -> str | None:
    """The module of dbsweep's that `name` is or is in (a module, or a name a module defines); None outside."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
    )


@functools.cache
def import_edges(name: str) -> tuple[frozenset[str], frozenset[str]]:
    """The dbsweep modules `name` imports: (when it is imported, inside its functions). An `if TYPE_CHECKING:`
    block imports nothing; importing a.b.c runs a and a.b first, except the importer's own packages, which
    are imported before it is (unless it imports from one of them by name: then it needs it whole)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    top: set[str] = set()
    lazy: set[str] = set()

    def add(target: str | None, into: set[str]) -> None:
        if target is None or target == name:
            return
        into.add(target)
        parts = target.split(".")
        for i in range(2, len(parts)):
            prefix = ".".join(parts[:i])
            if prefix in MODULES and not name.startswith(prefix + "."):
                into.add(prefix)

    def visit(nodes: Iterable[ast.AST], into: set[str]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and _type_checking(node):
                visit(node.orelse, into)
                continue
            if isinstance(node, ast.Import):
                for alias in node.names:
                    add(_module_of(alias.name), into)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    base = f"{anchor}.{base}" if base else anchor
                for alias in node.names:
                    # `from a import b`: module a.b, or a name a defines (then a must be whole).
                    sub = f"{base}.{alias.name}"
                    add(sub if sub in MODULES else _module_of(base), into)
            # A function's body runs when it is called; a class's body, like the module's, when it is imported.
            body_into = lazy if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else into
            visit(ast.iter_child_nodes(node), body_into)

    visit(ast.parse(path.read_text()).body, top)
    return frozenset(top), frozenset(lazy)


def import_graph(lazy: bool) -> dict[str, set[str]]:
    """module -> the modules it imports at import time (and, with `lazy`, inside functions too)."""
    graph = {}
    for name in MODULES:
        top, inside = import_edges(name)
        graph[name] = set(top | inside if lazy else top)
    return graph


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The graph's strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return found


def cycle_of(module: str, graph: Mapping[str, set[str]]) -> list[str]:
    return next((c for c in cycles(graph) if module in c), [])


def reachable(start: str, graph: Mapping[str, set[str]]) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for w in graph.get(todo.pop(), ()):
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


# A suite's own report tables (`Suite.report_module`): the report layer loads them, since they read the report
# model, which sits above the study that names the suite; they import their suite at their top, and the suite
# never imports them.
SUITE_REPORTS = sorted(n for n in MODULES if re.fullmatch(r"dbsweep\.suites\.\w+\.report", n))


def test_no_cycle_among_the_imports_at_the_top_of_modules() -> None:
    assert cycles(import_graph(lazy=False)) == []


def test_configs_and_the_engine_registry_import_one_way() -> None:
    # configs looks an engine up by name in the registry, at its top; the engines import configdiff, never
    # configs, so no import inside a function (the registry's of the engines, for their drivers) closes a cycle.
    graph = import_graph(lazy=True)
    assert "dbsweep.engines.registry" in import_edges("dbsweep.configs")[0]
    assert cycle_of("dbsweep.configs", graph) == []
    assert cycle_of("dbsweep.engines.registry", graph) == []
    for module in ("dbsweep.configs", "dbsweep.configdiff"):
        assert not import_edges(module)[1], f"{module} imports inside a function"
    # What the engines need of a config diff does not need the registry at all.
    assert not reachable("dbsweep.configdiff", graph) & {"dbsweep.configs", "dbsweep.engines.registry"}


def test_suite_reports_import_their_suite_and_no_suite_imports_report_code() -> None:
    assert SUITE_REPORTS, "no suite has report tables of its own: the check below checks nothing"
    graph = import_graph(lazy=True)
    for report in SUITE_REPORTS:
        suite = report.removesuffix(".report")
        top, inside = import_edges(report)
        assert suite in top, f"{report} does not import {suite} at its top"
        assert not inside, f"{report} imports {sorted(inside)} inside a function"
    for suite in (m for m in MODULES if m.startswith("dbsweep.suites") and m not in SUITE_REPORTS):
        assert not {m for m in graph[suite] if m.startswith("dbsweep.report") or m in SUITE_REPORTS}, suite
    # Counting imports inside functions too, nothing the suites import leads back to them.
    hidden = [c for c in cycles(graph) if any(m.startswith("dbsweep.suites") for m in c)]
    assert hidden == [], hidden


def test_the_import_checks_see_what_they_look_for() -> None:
    # The graph is itself tested: a cycle is found, and an import inside a function or under TYPE_CHECKING is
    # told apart from one at a module's top.
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    top, inside = import_edges("dbsweep.suites.base")
    assert "dbsweep.measure.integrity" in top and "dbsweep.engines.base" not in top | inside  # under TYPE_CHECKING
    assert "dbsweep.loadclient" in inside and "dbsweep.loadclient" not in top  # in a function (and TYPE_CHECKING)
    assert "dbsweep.engines.mariadb.build" in import_edges("dbsweep.engines.mariadb")[1]
    assert "dbsweep.measure.sampler" in import_edges("dbsweep.measure")[0]  # a relative import
