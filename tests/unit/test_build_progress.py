"""A build's progress: the objects counted from make's, CMake's and ninja's output and their estimated total, the
lines a build prints in a log (at least every 30 s, with the objects, the elapsed time and the time left; a fake
clock here), the same figures on a terminal's bar, and a real make of a toy tree through the build cache."""

from __future__ import annotations

import io
import time
from pathlib import Path

from rich.console import Console

from dbsweep import say
from dbsweep.build import cache
from dbsweep.build.compiler import output
from dbsweep.build.objects import Objects, Status
from dbsweep.build.recipe import COMPILE_LINE, Facts, Phase, Recipe, Step
from dbsweep.build.variants import Variant
from dbsweep.engines.base import Install
from dbsweep.engines.mariadb.build import RECIPE as MARIADB
from dbsweep.engines.postgres.build import RECIPE as POSTGRES
from dbsweep.engines.rocksdb.build import RECIPE as ROCKSDB
from dbsweep.progress import BuildLog
from dbsweep.sources import SourceTree

WHAT = "15.18/def (postgres 15.18, variant def)"


def make_line(name: str) -> bytes:
    """A line of Postgres's make compiling one object, as make echoes it."""
    return (
        b"gcc -Wall -Wmissing-prototypes -O2 -fno-omit-frame-pointer -I../../src/include -D_GNU_SOURCE "
        + f"-c -o {name}.o /src/postgresql-15.18/src/backend/{name}.c\n".encode()
    )


MAKE_NOISE = [
    b"make -C ./src/backend generated-headers\n",
    b"make[1]: Entering directory '/b/src/backend'\n",
    b"gcc -Wall -O2 -shared -o libpq.so.5.15 fe-auth.o fe-connect.o -lm\n",  # a link makes no object
    b"ar crs libpgcommon.a archive.o base64.o\n",
]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def log_console(terminal: bool = False) -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return say.console(file=buf, width=400, color_system=None, force_terminal=terminal), buf


def lines(buf: io.StringIO) -> list[str]:
    return buf.getvalue().splitlines()


# ---- counting objects ---------------------------------------------------------------------------------------


def test_make_output_counts_compiles_only_and_the_estimate_holds_until_the_compile_ends() -> None:
    objects = Objects(COMPILE_LINE, expected=1196)
    assert objects.total == 1196 and objects.done == 0
    objects.start()
    changed = [objects.line(b) for b in MAKE_NOISE]
    assert changed == [False] * len(MAKE_NOISE) and objects.done == 0
    for i in range(299):
        assert objects.line(make_line(f"f{i}"))
    assert (objects.done, objects.total) == (299, 1196)
    assert objects.fraction == 299 / 1196
    objects.end()  # a compile of fewer objects than expected: the count is now the total
    assert (objects.done, objects.total, objects.fraction) == (299, 299, 1.0)


def test_more_objects_than_expected_raise_the_total() -> None:
    objects = Objects(COMPILE_LINE, expected=2)
    objects.start()
    for i in range(5):
        objects.line(make_line(f"f{i}"))
    assert (objects.done, objects.total, objects.fraction) == (5, 5, 1.0)


def test_cmake_percentages_give_the_total_once_they_say_enough() -> None:
    objects = Objects(MARIADB.object_line, expected=1500)
    objects.start()
    # 50 objects by 5 %: too little to go by, the estimate stands.
    for i in range(50):
        objects.line(f"[{i // 10:3d}%] Building C object strings/CMakeFiles/strings.dir/s{i}.c.o\n".encode())
    assert objects.line(b"[  5%] Built target strings\n")  # a new percentage, no object
    assert (objects.done, objects.total, objects.stated) == (50, 1500, 0.05)
    for i in range(50, 200):
        objects.line(f"[{i // 10:3d}%] Building CXX object sql/CMakeFiles/sql.dir/f{i}.cc.o\n".encode())
    assert objects.line(b"[ 20%] Built target sql\n")
    # Parallel jobs print out of order: the highest percentage stands.
    assert objects.line(b"[ 19%] Building CXX object sql/CMakeFiles/sql.dir/late.cc.o\n")
    assert (objects.done, objects.stated) == (201, 0.2)
    assert objects.total == round(201 / 0.2) and objects.fraction == 0.2


def test_ninja_counts_give_the_total() -> None:
    objects = Objects(MARIADB.object_line, expected=1500)
    objects.start()
    for i in range(1, 41):
        objects.line(f"[{i}/400] Building C object mysys/CMakeFiles/mysys.dir/m{i}.c.o\n".encode())
    assert (objects.done, objects.total, objects.fraction) == (40, 400, 0.1)


def test_a_pgo_build_expects_its_second_compile_to_make_what_the_first_did() -> None:
    objects = Objects(COMPILE_LINE, expected=10, compiles=2)
    assert objects.total == 20  # before anything is compiled: twice the estimate
    objects.start()
    for i in range(12):
        objects.line(make_line(f"f{i}"))
    assert objects.total == 24  # this compile's 12 and as many again
    objects.end()
    objects.start()
    for i in range(3):
        objects.line(make_line(f"f{i}"))
    assert (objects.done, objects.this, objects.total) == (15, 3, 24)


def test_recipes_count_the_objects_of_a_source_tree(tmp_path: Path) -> None:
    pg = tmp_path / "postgresql-15.18"
    not_built = ("test/regress/regress.c", "interfaces/ecpg/preproc/ecpg.c", "bin/pg_dump/pg_dump.c")
    for f in ("backend/access/heap/heapam.c", "port/snprintf.c", "common/base64.c", *not_built):
        (pg / "src" / f).parent.mkdir(parents=True, exist_ok=True)
        (pg / "src" / f).write_text("int x;\n")
    (pg / "src" / "tutorial").mkdir()
    (pg / "src" / "tutorial" / "funcs.c").write_text("int y;\n")
    (pg / "src" / "include").mkdir()
    (pg / "src" / "include" / "c.h").write_text("\n")
    # Not the tests', the tutorial's, nor those of the clients and tools a benchmark does not run.
    assert POSTGRES.objects_in(SourceTree("t", "dir", pg, "15.18", "x")) == 3

    rocks = tmp_path / "rocksdb"
    rocks.mkdir()
    (rocks / "src.mk").write_text(
        "# These are the sources from which librocksdb.a is built:\n"
        "LIB_SOURCES =                                    \\\n"
        "  cache/cache.cc                                 \\\n"
        "  db/db_impl/db_impl.cc                          \\\n"
        "\n"
        "ifeq (,$(shell $(CXX) -fsyntax-only -maltivec -xc /dev/null 2>&1))\n"
        "LIB_SOURCES_ASM =\\\n"
        "  util/crc32c_ppc_asm.S\n"
        "endif\n"
        "RANGE_TREE_SOURCES =\\\n"
        "  utilities/transactions/lock/range/range_tree/lib/util/dbt.cc \\\n"
        "\n"
        "BENCH_LIB_SOURCES =                                     \\\n"
        "  tools/db_bench_tool.cc                                \\\n"
        "  tools/simulated_hybrid_file_system.cc                 \\\n"
        "\n"
        "TEST_MAIN_SOURCES =                                     \\\n"
        "  db/db_test.cc                                         \\\n"
    )
    # 5 sources, and db_bench.o and testutil.o
    assert ROCKSDB.objects_in(SourceTree("t", "dir", rocks, "7.8.3", "x")) == 7
    assert ROCKSDB.objects_in(SourceTree("t", "dir", tmp_path / "none", "7.8.3", "x")) is None


# ---- the lines in a log -------------------------------------------------------------------------------------


def test_a_build_in_a_log_prints_its_figures_at_least_every_30_seconds() -> None:
    clock = Clock()
    console, buf = log_console()
    log = BuildLog(console, WHAT, clock)
    objects = Objects(COMPILE_LINE, expected=1196)

    def report(stage: str, compiling: bool) -> None:
        log.update(Status(0.5, stage, objects.done, objects.total, compiling))

    clock.now = 1
    report("configure", compiling=False)
    clock.now = 29
    log.tick()
    assert lines(buf) == []  # not due yet
    clock.now = 30
    log.tick()
    clock.now = 40
    objects.start()
    report("compile", compiling=True)
    for i in range(200):  # an object every 0.25 s, from 40 s to 90 s
        clock.now += 0.25
        if objects.line(make_line(f"f{i}")):
            report("compile", compiling=True)
    clock.now = 120  # a long compile: nothing for 30 s, the ticker prints
    log.tick()
    clock.now = 140
    for i in range(200, 1196):
        objects.line(make_line(f"f{i}"))
    report("compile", compiling=True)  # the last object, 10 s after the last line: not due
    objects.end()
    clock.now = 150
    report("install", compiling=False)
    assert lines(buf) == [
        f"build {WHAT}: configure, 0/1196 objects · 30 s elapsed · time left not known yet",
        # 80 objects in 20 s of compiling: 0.25 s each for the 1116 left
        f"build {WHAT}: compile, 80/1196 objects · 1 min 00 s elapsed · about 4 min 39 s left",
        f"build {WHAT}: compile, 200/1196 objects · 1 min 30 s elapsed · about 4 min 09 s left",
        # nothing for 30 s: 80 s of compiling for 200 objects, 0.4 s each for the 996 left
        f"build {WHAT}: compile, 200/1196 objects · 2 min 00 s elapsed · about 6 min 38 s left",
        f"build {WHAT}: install, 1196/1196 objects · 2 min 30 s elapsed · nothing left to compile",
    ]


def test_a_build_on_a_terminal_prints_no_lines_and_its_bar_shows_the_same_figures() -> None:
    clock = Clock()
    console, buf = log_console(terminal=True)
    log = BuildLog(console, WHAT, clock)
    assert log.figures() == "waiting to start · time left not known yet"
    log.update(Status(0.0, "compile", 0, 1196, compiling=True))
    clock.now = 60
    log.update(Status(0.3, "compile", 299, 1196, compiling=True))
    clock.now = 120
    log.tick()
    assert buf.getvalue() == ""
    assert log.figures() == "compile, 299/1196 objects · about 6 min 00 s left"
    log.update(Status(0.9, "compile", 1300, 1300, compiling=True))
    assert log.figures() == "compile, 1300/1300 objects · linking or past the estimate, time left not known"


def test_after_a_burst_of_cached_objects_the_time_left_follows_the_recent_pace() -> None:
    """900 objects ccache had, 0.1 s each, then one every 2 s: the pace of the whole compile (0.45 s) would promise
    a quarter of the time the rest takes; the last five minutes' pace holds."""
    clock = Clock()
    console, _ = log_console(terminal=True)
    log = BuildLog(console, WHAT, clock)
    done = 0
    for _ in range(900):
        clock.now += 0.1
        done += 1
        log.update(Status(0.1, "compile", done, 1500, compiling=True))
    assert log.figures() == "compile, 900/1500 objects · about 1 min 00 s left"  # nothing says otherwise yet
    for _ in range(200):
        clock.now += 2
        done += 1
        log.update(Status(0.1, "compile", done, 1500, compiling=True))
    # 490 s for 1100 objects would say 400 x 0.45 s = 3 min; the last 300 s made 150 objects.
    assert log.figures() == "compile, 1100/1500 objects · about 13 min 20 s left"


def test_before_the_first_object_the_time_left_is_what_the_last_like_build_took() -> None:
    clock = Clock()
    console, buf = log_console()
    log = BuildLog(console, WHAT, clock)
    log.update(Status(0.0, "configure", 0, 1209, compiling=False, seconds_expected=343.4))
    clock.now = 30
    log.tick()
    clock.now = 300
    log.update(Status(0.04, "compile", 0, 1209, compiling=True, seconds_expected=343.4))
    clock.now = 350  # longer than that build took, and still no object
    log.tick()
    assert lines(buf) == [
        f"build {WHAT}: configure, 0/1209 objects · 30 s elapsed · about 5 min 13 s left",
        f"build {WHAT}: compile, 0/1209 objects · 5 min 00 s elapsed · about 43 s left",
        f"build {WHAT}: compile, 0/1209 objects · 5 min 50 s elapsed · time left not known yet",
    ]


def test_the_ticker_prints_while_the_build_says_nothing() -> None:
    clock = Clock()
    console, buf = log_console()
    log = BuildLog(console, WHAT, clock)
    with log.ticking():
        log.update(Status(0.1, "PGO phase 1: compile", 0, 2400, compiling=True))
        clock.now = 12
        log.update(Status(0.5, "PGO training (sysbench)", 1200, 2400, compiling=False))
        clock.now = 31  # the training says nothing; the ticker is due
        deadline = time.monotonic() + 20
        while not buf.getvalue() and time.monotonic() < deadline:
            time.sleep(0.05)
    assert lines(buf) == [f"build {WHAT}: PGO training (sysbench), 1200/2400 objects · 31 s elapsed · about 12 s left"]


# ---- a real build through the cache ---------------------------------------------------------------------------

MAKEFILE = """\
OBJS = a.o b.o c.o
toy: $(OBJS)
\t$(CC) $(CFLAGS) -o toy $(OBJS)
%.o: %.c
\t$(CC) $(CFLAGS) -c -o $@ $<
"""


class ThreeObjects(Recipe):
    """A tool of three C files whose Makefile builds in its tree; its count of the tree is two too many."""

    engine = "three"
    artefact = "bin/toy"
    objects_estimate = 1000

    def options(self, variant: Variant, version: str) -> list[str]:
        return []

    def objects_in(self, tree: SourceTree) -> int | None:
        return len(list(tree.path.glob("*.c"))) + 2

    def configure(self, phase: Phase) -> list[Step]:
        return [Step("copy the tree", ("cp", "-a", f"{phase.tree.path}/.", "."))]

    def compile(self, phase: Phase) -> list[Step]:
        return [Step("make", ("make", f"CC={phase.compiler}", f"CFLAGS={' '.join(phase.cflags)}"), compiles=True)]

    def install(self, phase: Phase) -> list[Step]:
        return [Step("install", ("install", "-D", "toy", f"{phase.destdir or ''}{phase.prefix}/bin/toy"))]

    def probe(self, install_dir: Path) -> dict[str, object]:
        return {"toy": output([str(install_dir / "bin" / "toy")]).strip()}

    def facts(self, record: object) -> Facts:
        assert isinstance(record, dict)
        return Facts(record["toy"], "cc", "", "", "")

    def install_of(self, bindir: Path, source: str, provenance: dict[str, object]) -> Install:
        return Install(bindir, str(provenance["version"]), source, provenance)


def test_a_real_make_reports_its_objects_and_a_log_prints_them(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "Makefile").write_text(MAKEFILE)
    (src / "a.c").write_text('#include <stdio.h>\nint b(void); int c(void);\nint main(void) { printf("toy\\n"); ')
    (src / "a.c").write_text((src / "a.c").read_text() + "return b() + c(); }\n")
    (src / "b.c").write_text("int b(void) { return 0; }\n")
    (src / "c.c").write_text("int c(void) { return 0; }\n")
    tree = SourceTree(f"dir:{src}", "dir", src, "1.0", "dir:sha256:" + "3" * 64)
    recipe, root = ThreeObjects(), tmp_path / "builds"

    clock = Clock()
    console, buf = log_console()
    log = BuildLog(console, "toy (three 1.0, variant o1)", clock)
    seen: list[Status] = []

    def hear(status: Status) -> None:
        seen.append(status)
        clock.now += 30  # every report is 30 s after the last: each prints a line
        log.update(status)

    b = cache.build(recipe, tree, Variant("o1", cflags=("-O1",)), root, status=hear)
    assert b.metadata["objects"] == 3
    compiled = [(s.objects, s.objects_total) for s in seen if s.compiling]
    assert compiled == [(0, 5), (1, 5), (2, 5), (3, 5)]  # the tree's count until the compile ends
    assert all(not s.compiling for s in seen if s.stage != "compile")
    assert (seen[-1].stage, seen[-1].fraction, seen[-1].objects, seen[-1].objects_total) == ("built", 1.0, 3, 3)
    printed = lines(buf)
    what = "build toy (three 1.0, variant o1)"
    assert printed[0] == f"{what}: configure, 0/5 objects · 30 s elapsed · time left not known yet"
    # 30 s of compile steps an object, four to go
    assert f"{what}: compile, 1/5 objects · 1 min 30 s elapsed · about 2 min 00 s left" in printed
    assert printed[-1].startswith(f"{what}: built, 3/3 objects · ")
    assert printed[-1].endswith(" elapsed · nothing left to compile")

    assert {s.seconds_expected for s in seen} == {None}  # the first build: nothing to go by

    # The next build of the same major version expects what this one compiled, not the tree's count, and to take
    # as long.
    seen.clear()
    cache.build(recipe, tree, Variant("o2", cflags=("-O2",)), root, status=hear)
    assert [(s.objects, s.objects_total) for s in seen if s.compiling] == [(0, 3), (1, 3), (2, 3), (3, 3)]
    assert {s.seconds_expected for s in seen} == {b.build_seconds}
    seen.clear()
    cache.build(recipe, tree, Variant("o2", cflags=("-O2",)), root, status=hear)
    assert seen == [Status(1.0, "cached", 3, 3, compiling=False)]
