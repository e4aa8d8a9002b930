"""Instructions per operation by function: reading cachegrind's and callgrind's files (hand-written ones, and
ones valgrind writes for a tiny C program), the short-minus-long division, and the diff against a base."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from dbsweep.measure import functions as fx
from dbsweep.measure.functions import FunctionCost, Profile
from dbsweep.measure.instructions import read_ir
from dbsweep.report import fmt, instr
from dbsweep.results.counts import Count

PROGRAM = """\
#include <stdlib.h>

volatile long sink;

long leaf(long x)
{
    long r = x * 3 + 1;
#ifdef EXTRA
    for (int i = 0; i < 10; i++)
        sink += i;
#endif
    sink = r;
    return r;
}

long work(long n)
{
    long s = 0;
    for (long i = 0; i < n; i++)
        s += leaf(i);
    return s;
}

int main(int argc, char **argv)
{
    sink = work(argc > 1 ? atol(argv[1]) : 0);
    return 0;
}
"""
SHORT, LONG = 1000, 3000
TOOLS = ("cachegrind", "callgrind")

needs_valgrind = pytest.mark.skipif(
    shutil.which("valgrind") is None or shutil.which("gcc") is None, reason="needs valgrind and gcc"
)


def span(name: str) -> range:
    """The source lines of a function of PROGRAM, from its signature to its closing brace."""
    lines = PROGRAM.splitlines()
    first = next(i for i, ln in enumerate(lines) if re.match(rf"\w+ {name}\(", ln))
    last = next(i for i in range(first, len(lines)) if lines[i] == "}")
    return range(first + 1, last + 2)


@dataclass(frozen=True)
class Runs:
    """valgrind's files for the program (and its variant with a costlier leaf) run SHORT and LONG times."""

    source: Path
    binaries: dict[str, Path]  # variant -> binary
    files: dict[tuple[str, str, int], Path]  # (variant, tool, n) -> output file

    def profile(self, variant: str, tool: str) -> Profile:
        short = fx.read_functions(self.files[variant, tool, SHORT])
        long = fx.read_functions(self.files[variant, tool, LONG])
        return fx.per_operation(short, long, SHORT, LONG)

    def total_per_op(self, variant: str, tool: str) -> float:
        short, long = read_ir(self.files[variant, tool, SHORT]), read_ir(self.files[variant, tool, LONG])
        assert short is not None and long is not None
        return (long - short) / (LONG - SHORT)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    if shutil.which("valgrind") is None or shutil.which("gcc") is None:
        pytest.skip("needs valgrind and gcc")
    d = tmp_path_factory.mktemp("functions")
    source = d / "p.c"
    source.write_text(PROGRAM)
    binaries = {"base": d / "p", "extra": d / "p-extra"}
    for variant, binary in binaries.items():
        extra = ["-DEXTRA"] if variant == "extra" else []
        subprocess.run(["gcc", "-g", "-O1", "-fno-inline", *extra, str(source), "-o", str(binary)], check=True)
    files: dict[tuple[str, str, int], Path] = {}
    procs = []
    for variant, binary in binaries.items():
        for tool in TOOLS:
            for n in (SHORT, LONG):
                out = d / f"{tool}.{variant}.{n}"
                opts = ["--cache-sim=no", "--branch-sim=no", f"--cachegrind-out-file={out}"]
                if tool == "callgrind":
                    opts = [f"--callgrind-out-file={out}"]
                cmd = ["valgrind", "-q", f"--tool={tool}", *opts, str(binary), str(n)]
                procs.append((cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)))
                files[variant, tool, n] = out
    for cmd, p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, f"{cmd}: {err.decode()}"
    return Runs(source, binaries, files)


def only(profile: Profile, name: str) -> FunctionCost:
    found = [c for c in profile.values() if c.function == name]
    assert len(found) == 1, found
    return found[0]


def instructions_in(binary: Path, name: str) -> list[str]:
    """The instructions of a function as objdump disassembles them."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(binary)], capture_output=True, text=True)
    body = out.stdout.split(f"<{name}>:\n", 1)[1].split("\n\n", 1)[0]
    return [ln.split("\t", 1)[1] for ln in body.splitlines() if "\t" in ln]


# ---- valgrind's own files -----------------------------------------------------------------------------


@needs_valgrind
@pytest.mark.parametrize("tool", TOOLS)
def test_a_files_functions_add_up_to_its_total(runs: Runs, tool: str) -> None:
    for n in (SHORT, LONG):
        path = runs.files["base", tool, n]
        profile = fx.read_functions(path)
        assert sum(c.self_ir for c in profile.values()) == read_ir(path)
        assert fx.file_tool(path) == tool
        if tool == "callgrind":
            # main's inclusive cost holds what main and all it called did: most of the run, not all (start-up).
            main = only(profile, "main")
            assert main.inclusive_ir is not None and main.self_ir < main.inclusive_ir < sum(
                c.self_ir for c in profile.values()
            )
        else:
            assert all(c.inclusive_ir is None and c.object is None for c in profile.values())


@needs_valgrind
def test_leaf_costs_one_calls_instructions_per_operation_by_both_tools(runs: Runs) -> None:
    cg, cl = runs.profile("base", "cachegrind"), runs.profile("base", "callgrind")
    leaf_cg, leaf_cl = only(cg, "leaf"), only(cl, "leaf")
    # The start-up cancels: exactly one call's instructions per operation, the same for both tools.
    assert leaf_cg.self_ir == leaf_cl.self_ir == round(leaf_cg.self_ir) > 0
    if shutil.which("objdump"):
        code = instructions_in(runs.binaries["base"], "leaf")
        assert not any(i.startswith("j") for i in code), code  # straight-line code: each instruction runs once
        assert leaf_cg.self_ir == len(code)
    assert leaf_cg.inclusive_ir is None and leaf_cl.inclusive_ir == leaf_cl.self_ir  # it calls nothing
    work_cg, work_cl = only(cg, "work"), only(cl, "work")
    assert work_cg.self_ir == work_cl.self_ir > 0
    assert work_cl.inclusive_ir == work_cl.self_ir + leaf_cl.self_ir >= leaf_cl.self_ir
    assert only(cl, "main").inclusive_ir == work_cl.inclusive_ir  # main's own work is the same in both runs
    for profile in (cg, cl):
        for c in (only(profile, "leaf"), only(profile, "work")):
            assert c.file == str(runs.source)
            assert c.line in span(c.function)
    assert leaf_cg.line == leaf_cl.line and work_cg.line == work_cl.line
    assert leaf_cl.object == str(runs.binaries["base"])
    # All per-operation costs add up to the program's per-operation total.
    for tool, profile in (("cachegrind", cg), ("callgrind", cl)):
        assert sum(c.self_ir for c in profile.values()) == pytest.approx(runs.total_per_op("base", tool), abs=0.5)


@needs_valgrind
@pytest.mark.parametrize("tool", TOOLS)
def test_diff_puts_the_function_that_got_costlier_first(runs: Runs, tool: str) -> None:
    base, target = runs.profile("base", tool), runs.profile("extra", tool)
    changes = fx.diff(base, target)
    first = changes[0]
    assert (first.function, first.file) == ("leaf", str(runs.source))
    # The loop of ten iterations in leaf is the whole change of the program's instructions per operation.
    total = runs.total_per_op("extra", tool) - runs.total_per_op("base", tool)
    assert first.delta_self == pytest.approx(total, abs=0.01)
    assert first.delta_self >= 10 and first.delta_self == round(first.delta_self)
    assert first.base_self == only(base, "leaf").self_ir and first.rel_self == first.delta_self / first.base_self
    assert first.share_of_change == pytest.approx(1.0, abs=1e-6)
    assert all(abs(c.delta_self) < 0.01 for c in changes[1:])
    if tool == "callgrind":
        work = next(c for c in changes if c.function == "work")
        assert work.delta_inclusive == pytest.approx(first.delta_self)  # work pays for what leaf added
    else:
        assert first.delta_inclusive is None
    assert fx.diff(base, target, top=1) == changes[:1]


# ---- hand-written files: every rule of the formats, with numbers worked out by hand ----------------------

# Ir is the second event, so a cost line with one count has Dr only. Positions: absolute, +N/-N from the
# previous cost line, * for the same; a calls= target does not move that base.
CALLGRIND = """\
# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 4242
cmd:  ./hand 3
part: 1

desc: Trigger: Program termination

positions: line
events: Dr Ir
summary: 9 64

ob=(1) /bin/hand
fl=(1) hand.c
fn=(5) never_called
fn=(1) main
10 2 5
cfn=(2) helper
calls=2 -8
* 0 40
-1 1 1
+3 0 3
+1 4
cob=(2) /lib/libx.so
cfi=(2) lib.c
cfn=(3) libfn
calls=1 +88
* 0 10

fn=(2)
30 0 12
fi=(3) inl.h
2 1 16
fe=(1)
+29 0 8
jfi=(3)
jcnd=3/5 -29
*
+3 0 2
fi=(3)
5 0 2
fn=(6) tail
60 0 3

ob=(2)
fl=(2)
fn=(3)
100 1 4
0 0 1
+101 0 5

ob=(1)
fl=(4) ???
fn=(4) 0x0000000000001050
0 0 0

fl=(1)
fn=(1)
20 0 2

totals: 9 64
"""


def write(tmp_path: Path, text: str, name: str = "out") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_callgrind_names_positions_inlined_code_and_calls(tmp_path: Path) -> None:
    profile = fx.read_functions(write(tmp_path, CALLGRIND))
    assert profile == {
        # self 5 + 1 + 3 + 0 (Dr only) + 2 (a second block); inclusive adds the calls' 40 and 10. Line 9: the
        # line after the call to helper is -1 from the call's line 10, not from its target at line 2.
        ("main", "hand.c"): FunctionCost("main", "hand.c", 9, "/bin/hand", 11.0, 61.0),
        # 12 + 16 from inl.h + 8 + 2 + 2 from inl.h; inl.h's line 2 is not hand.c's; the jump's position line
        # costs nothing.
        ("helper", "hand.c"): FunctionCost("helper", "hand.c", 30, "/bin/hand", 40.0, 40.0),
        # A new function starts in its fl= file, whatever file the previous one's inlined code was in.
        ("tail", "hand.c"): FunctionCost("tail", "hand.c", 60, "/bin/hand", 3.0, 3.0),
        # 4 + 1 + 5; line 0 is valgrind's for an instruction without line information.
        ("libfn", "lib.c"): FunctionCost("libfn", "lib.c", 100, "/lib/libx.so", 10.0, 10.0),
        # never_called and the ??? function with 0 instructions are not there.
    }
    assert fx.file_tool(tmp_path / "out") == "callgrind"
    assert fx.annotate_hint(tmp_path / "out") == ["callgrind_annotate", "--inclusive=yes", str(tmp_path / "out")]


def test_callgrind_instruction_and_line_positions(tmp_path: Path) -> None:
    text = """\
# callgrind format
positions: instr line
events: Ir
fl=(1) a.c
fn=(1) f
0x1000 20 3
+4 * 2
+2 -3 1
cfn=(2) g
calls=1 0x2000 50
* +1 7
fn=(2)
0x2000 50 7
totals: 13
"""
    profile = fx.read_functions(write(tmp_path, text))
    assert profile == {
        ("f", "a.c"): FunctionCost("f", "a.c", 17, None, 6.0, 13.0),
        ("g", "a.c"): FunctionCost("g", "a.c", 50, None, 7.0, 7.0),
    }


def test_cachegrind_files_key_inlined_code_by_its_file(tmp_path: Path) -> None:
    text = """\
desc: I1 cache:         32768 B, 64 B, 8-way associative
cmd: ./x
events: Dr Ir
fl=a.c
fn=f
3 1 4
5 . 6
fl=b.h
fn=f
1 2 3
fl=a.c
fn=f
2 . 1
fn=g
9 1
summary: 4 14
"""
    path = write(tmp_path, text, "cg.17")
    profile = fx.read_functions(path)
    assert profile == {
        ("f", "a.c"): FunctionCost("f", "a.c", 2, None, 11.0, None),
        ("f", "b.h"): FunctionCost("f", "b.h", 1, None, 3.0, None),
    }
    assert fx.file_tool(path) == "cachegrind"
    assert fx.annotate_hint(path) == ["cg_annotate", str(path)]
    assert fx.annotate_hint(tmp_path / "callgrind.99") == [
        "callgrind_annotate",
        "--inclusive=yes",
        str(tmp_path / "callgrind.99"),
    ]


CG_HEAD = "events: Ir\nfl=a.c\nfn=f\n"
CL_HEAD = "# callgrind format\npositions: line\nevents: Ir\nfl=(1) a.c\nfn=(1) f\n"


@pytest.mark.parametrize(
    ("text", "line", "what"),
    [
        ("events: Ir\nfl=a.c\n5 10\nsummary: 10\n", 3, "before any fn="),
        (CG_HEAD + "5 1x\nsummary: 1\n", 4, "not a count"),
        (CG_HEAD + "5 1 2\nsummary: 3\n", 4, "more costs than"),
        (CG_HEAD + "calls=1 5\n6 1\nsummary: 1\n", 4, "callgrind's"),
        (CG_HEAD + "5 10\n", 4, "incomplete"),
        (CG_HEAD + "5 10\nsummary: 11\n", 5, "add up to 10 Ir, the totals say 11"),
        ("events: Dr\n", 1, "no Ir"),
        ("fl=a.c\nfn=f\n5 1\n", 3, "before the events line"),
        (CG_HEAD + "hello world\n", 4, "not a line"),
        (CL_HEAD + "fn=(7)\n", 6, "used before a line gives its name"),
        (CL_HEAD + "fn=(1) g\n", 6, "second name"),
        (CL_HEAD + "5 1\ncfn=(1)\ncalls=1 5\nfn=(1)\n5 1\ntotals: 2\n", 9, "followed by the cost line"),
        (CL_HEAD + "5 1\n-9 1\ntotals: 2\n", 7, "below 0"),
        (CL_HEAD + "5 1\ncalls=1\n", 7, "calls=<count>"),
        (CL_HEAD + "5 1\ncalls=1 6\n", 7, "without the cost of the call"),
    ],
)
def test_a_malformed_file_is_named_with_its_line(tmp_path: Path, text: str, line: int, what: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ValueError, match=re.escape(f"{path}:{line}: ") + ".*" + re.escape(what)):
        fx.read_functions(path)


def test_an_empty_file_is_one_still_being_written(tmp_path: Path) -> None:
    path = write(tmp_path, "", "callgrind.123")
    with pytest.raises(ValueError, match=re.escape(f"{path}: the file is empty")):
        fx.read_functions(path)


# ---- arithmetic on profiles --------------------------------------------------------------------------------


def fc(
    name: str, self_ir: float, inclusive: float | None = None, line: int | None = 1, obj: str | None = None
) -> FunctionCost:
    return FunctionCost(name, "x.c", line, obj, self_ir, inclusive)


def prof(*costs: FunctionCost) -> Profile:
    return {c.key: c for c in costs}


def test_add_sums_processes() -> None:
    a = prof(fc("f", 10, 30, line=5), fc("g", 1, 1, obj=None))
    b = prof(fc("f", 5, 6, line=3, obj="/lib/x.so"), fc("h", 2, 2))
    total = fx.add([a, b])
    assert total == prof(fc("f", 15, 36, line=3, obj="/lib/x.so"), fc("g", 1, 1), fc("h", 2, 2))
    with pytest.raises(ValueError, match="cachegrind profile cannot be combined with a callgrind one"):
        fx.add([a, prof(fc("f", 1, None))])


def test_per_operation_is_the_difference_divided_by_the_extra_operations() -> None:
    short = prof(fc("f", 100, 300), fc("once", 50, 50), fc("gone", 4, 4), fc("tiny", 10, 10))
    long = prof(fc("f", 500, 1100), fc("once", 50, 50), fc("new", 8, 8), fc("tiny", 10.01, 10.01))
    per = fx.per_operation(short, long, 10, 50)
    assert per == prof(fc("f", 10, 20), fc("gone", -0.1, -0.1), fc("new", 0.2, 0.2))  # once, tiny: ~0, dropped
    cg = fx.per_operation(prof(fc("f", 100)), prof(fc("f", 300), fc("g", 40)), 0, 100)
    assert cg == prof(fc("f", 2), fc("g", 0.4))
    with pytest.raises(ValueError, match="more operations"):
        fx.per_operation(short, long, 50, 50)


def test_diff_orders_by_change_and_keeps_one_sided_functions() -> None:
    base = prof(fc("gone", 2, 2), fc("c", 3, 3), fc("b", 5, 20), fc("a", 10, 10))
    target = prof(fc("a", 10, 10), fc("b", 9, 24), fc("c", 1, 1), fc("new", 2, 2))
    changes = fx.diff(base, target)
    # |delta|: b 4, c 2, gone 2, new 2 (ties by name), a 0. The total change is 4 - 2 - 2 + 2 = 2.
    assert [c.function for c in changes] == ["b", "c", "gone", "new", "a"]
    b, c, gone, new, a = changes
    assert (b.delta_self, b.rel_self, b.delta_inclusive, b.rel_inclusive) == (4, 0.8, 4, 0.2)
    assert (b.share_of_change, c.share_of_change, a.share_of_change) == (2.0, -1.0, 0.0)
    assert (gone.target_self, gone.target_inclusive, gone.delta_self) == (0.0, 0.0, -2.0)
    assert (new.base_self, new.base_inclusive, new.rel_self, new.rel_inclusive) == (0.0, 0.0, None, None)
    assert fx.diff(base, target, top=2) == changes[:2]
    assert fx.diff(base, target, top=1) == changes[:1]  # the share is of the whole change, not of the top's
    # No total change: no share; no call graph: no inclusive change.
    flat = fx.diff(prof(fc("a", 1), fc("b", 2)), prof(fc("a", 2), fc("b", 1)))
    assert [(c.function, c.share_of_change, c.delta_inclusive) for c in flat] == [("a", None, None), ("b", None, None)]


def test_functions_a_build_folded_into_one_are_one_function_on_both_sides() -> None:
    """BOLT's identical code folding made two of Postgres's functions one, which valgrind names by one of them: the
    cost of tts_buffer_heap_getsomeattrs seemed to move to tts_heap_getsomeattrs. Read as one, the diff shows what
    the pair's code did."""
    base = prof(fc("buffer_get", 170), fc("heap_get", 2), fc("other", 50))
    target = prof(fc("heap_get", 168), fc("other", 40))
    apart = fx.diff(base, target)
    assert [(c.function, c.delta_self) for c in apart] == [("buffer_get", -170), ("heap_get", 166), ("other", -10)]
    one = fx.diff(base, target, folded=((), [("heap_get", "buffer_get")]))
    assert [(c.function, c.delta_self) for c in one] == [("other", -10), ("buffer_get ≡ heap_get", -4)]
    assert fx.diff(base, target, folded=((), [("heap_get",)])) == apart  # a set of one folds nothing
    # The symbols keep gcc's clone suffixes, the stored profiles do not; members from other files are one entry;
    # sets of the two builds that share a name are one set.
    other_file = {("heap_get", "y.c"): FunctionCost("heap_get", "y.c", 1, None, 168.0, None)}
    sets = [("buffer_get.isra.0", "heap_get.lto_priv.0"), ("heap_get", "third")]
    joined = fx.diff(base, other_file, folded=(sets[1:], sets[:1]))
    assert [(c.function, c.file, c.delta_self) for c in joined] == [
        ("other", "x.c", -50),
        ("buffer_get ≡ heap_get ≡ third", "x.c", -4),
    ]
    # The base stored cut to its 2 costliest (cut at 50): heap_get is missing from it, and so may cost up to 50
    # there; the BOLT side names the set's code by one member, so its missing one is no unknown. A range.
    cut = prof(fc("buffer_get", 170), fc("other", 50))
    (s1,) = [c for c in fx.diff(cut, target, kept=2, folded=((), [("heap_get", "buffer_get")])) if "≡" in c.function]
    assert (s1.delta_self, s1.unlisted, s1.delta_range) == (-2.0, ("base", 50.0), (-52.0, -2.0))
    assert fmt.function_change(s1).startswith("-52…-2 (base 170…220) buffer_get ≡ heap_get"), fmt.function_change(s1)
    assert fmt.function_cost(s1, "target") == "168" and s1.least_change == 2.0
    # A count of a BOLT build carries its build's sets; the report's why reads them from either side.
    rows = fx.to_rows(target)
    bolted = Count.from_stored(
        "t", "s", {"per_event": 1.0, "functions": rows, "build": {"bolt": {"folded": [["buffer_get", "heap_get"]]}}}
    )
    plain = Count.from_stored("b", "s", {"per_event": 1.0, "functions": fx.to_rows(base), "build": {}})
    assert bolted.folded == (("buffer_get", "heap_get"),) and plain.folded == ()
    assert [c.function for c in instr.why(plain, bolted)] == ["other", "buffer_get ≡ heap_get"]


def test_diff_of_stored_profiles_tells_a_function_below_the_other_sides_cut_from_a_new_one() -> None:
    # Each side was stored cut to its 3 costliest functions (the target's d kept besides, as by its inclusive
    # cost): the base's cut is at 60, the target's at 65.
    base = prof(fc("a", 100), fc("h", 80), fc("g", 60))
    target = prof(fc("a", 100), fc("e", 70), fc("b", 65), fc("d", 9))
    changes = {c.function: c for c in fx.diff(base, target, kept=3)}
    # e (70) is missing from the base's stored list, whose cut is 60: it rose by 10 to 70, and the line says so.
    e = changes["e"]
    assert e.unlisted == ("base", 60.0) and e.least_change == 10.0
    assert fmt.function_change(e).startswith("+10…+70 (base ≤ 60) e"), fmt.function_change(e)
    # h (80) left the target's stored list, whose cut is 65: it fell by 15 to 80.
    h = changes["h"]
    assert h.unlisted == ("target", 65.0) and fmt.function_change(h).startswith("-80…-15 (target ≤ 65) h")
    # d (9) within the base's cut: it may have cost as much there; its change runs through 0.
    assert fmt.function_change(changes["d"]).startswith("-51…+9 (base ≤ 60) d"), fmt.function_change(changes["d"])
    assert changes["a"].unlisted is None
    # Whole profiles (no cut): one-sided functions are new or gone, as before.
    whole = {c.function: c for c in fx.diff(base, target)}
    assert whole["d"].unlisted is None and fmt.function_change(whole["d"]).startswith("+9 (new) d")


def test_diff_matches_a_function_across_builds_that_name_or_place_it_differently() -> None:
    """gcc's copies (foo.part.0, foo.lto_priv.0, foo.cold) are the function; a generated file is matched by the
    end of its path, whichever build directory compiled it."""
    base = prof(fc("AllocSetAlloc", 100), fc("hash_seq_search", 30), fc("hash_seq_search.cold", 2))
    base[("core_yylex", "/b/.tmp-1/build/src/backend/parser/scan.c")] = FunctionCost(
        "core_yylex", "/b/.tmp-1/build/src/backend/parser/scan.c", 6857, None, 50, None
    )
    target = prof(fc("AllocSetAlloc.lto_priv.0", 90), fc("hash_seq_search.part.0", 33), fc("other.c", 1))
    target[("core_yylex", "/b/.tmp-2/build/src/backend/parser/scan.c")] = FunctionCost(
        "core_yylex", "/b/.tmp-2/build/src/backend/parser/scan.c", 6857, None, 45, None
    )
    changes = fx.diff(base, target)
    got = {c.function: (c.base_self, c.target_self) for c in changes}
    assert got == {  # named without the suffixes: one function, one name, whichever build
        "AllocSetAlloc": (100, 90),
        "hash_seq_search": (32, 33),
        "core_yylex": (50, 45),
        "other.c": (0, 1),  # a name that only looks like a suffix is kept whole
    }
    assert next(c for c in changes if c.function == "core_yylex").file == "src/backend/parser/scan.c"
    assert fx.matching_key(("f.isra.0.cold", "???")) == ("f", "???")


def test_a_function_without_a_file_is_matched_by_its_name() -> None:
    """Code BOLT moved has no file under valgrind (`???`, or `<built-in>` from DWARF it misreads): such a function
    is compared by its name, every entry of it on each side (its inlined headers', its cold fragment's) added up
    under the file of its costliest entry."""
    base = prof(fc("sqlite3VdbeExec", 1000), fc("walChecksumBytes", 500), fc("untouched", 7))
    base[("hash_bytes", "pg_bitutils.h")] = FunctionCost("hash_bytes", "pg_bitutils.h", 1, None, 300, None)
    target = {
        ("sqlite3VdbeExec", "???"): FunctionCost("sqlite3VdbeExec", "???", None, None, 990, None),
        ("walChecksumBytes", "<built-in>"): FunctionCost("walChecksumBytes", "<built-in>", 7, None, 520, None),
        # Its cold fragment kept its file: the moved part adds to it.
        ("walChecksumBytes", "x.c"): FunctionCost("walChecksumBytes", "x.c", 9, None, 3, None),
        ("hash_bytes", "???"): FunctionCost("hash_bytes", "???", None, None, 1027, None),
        ("untouched", "x.c"): FunctionCost("untouched", "x.c", 1, None, 7, None),
        ("nowhere", "???"): FunctionCost("nowhere", "???", None, None, 5, None),
    }
    base[("hash_bytes", "hashfn.c")] = FunctionCost("hash_bytes", "hashfn.c", 1, None, 725, None)
    got = {(c.function, c.file): (c.base_self, c.target_self) for c in fx.diff(base, target)}
    assert got == {
        ("sqlite3VdbeExec", "x.c"): (1000, 990),
        ("walChecksumBytes", "x.c"): (500, 523),
        ("hash_bytes", "hashfn.c"): (1025, 1027),  # the header's inlined part and the file's, added
        ("nowhere", "???"): (0, 5),  # no file anywhere: as it is
        ("untouched", "x.c"): (7, 7),
    }


@pytest.mark.parametrize(
    ("name", "merged"),
    [
        ("heap_update.constprop.0", "heap_update"),
        ("AllocSetAlloc.lto_priv.0", "AllocSetAlloc"),
        ("ExecInterpExpr.isra.0", "ExecInterpExpr"),
        ("hash_search.part.0", "hash_search"),
        ("errfinish.cold", "errfinish"),
        ("f.constprop.0.isra.0.cold.12", "f"),  # combinations, numbered or not
        ("f.part.11.lto_priv.3", "f"),
        ("f.constprop.0'2", "f"),  # and callgrind's recursion levels
        ("row_search_mvcc(unsigned char*) [clone .cold.0]'3", "row_search_mvcc(unsigned char*)"),
        ("handler::ha_write_row(unsigned char const*) [clone .cold]", "handler::ha_write_row(unsigned char const*)"),
        ("rocksdb::f(int) [clone .isra.0] [clone .constprop.1]", "rocksdb::f(int)"),
        ("other.c", "other.c"),
        ("coldstart", "coldstart"),
        ("part", "part"),
    ],
)
def test_gcc_clone_suffixes_are_one_function(name: str, merged: str) -> None:
    assert fx.function_name(name) == merged


@pytest.mark.parametrize(
    ("path", "within"),
    [
        # Postgres 15.18 from Debian's source package, built in the build cache (VPATH): sources, then generated.
        (
            "/work/x/.dbsweep/sources/debian/postgresql-15_15.18-0+deb12u1/tree/src/backend/access/heap/heapam.c",
            "src/backend/access/heap/heapam.c",
        ),
        ("/w/.dbsweep/builds/.tmp-061ac5058cba420469a4/build/src/backend/parser/gram.c", "src/backend/parser/gram.c"),
        ("/w/sources/git/trees/4f0c1e/tree/storage/innobase/row/row0upd.cc", "storage/innobase/row/row0upd.cc"),
        ("/w/sources/tarball/9a7f/tree/sqlite3.c", "sqlite3.c"),
        ("/w/sources/copies/sha256_9a7f-1/tree/src/backend/tcop/postgres.c", "src/backend/tcop/postgres.c"),
        ("./build/../src/backend/utils/mmgr/aset.c", "src/backend/utils/mmgr/aset.c"),  # Debian's own build
        ("./string/../sysdeps/x86_64/multiarch/strlen-avx2.S", "sysdeps/x86_64/multiarch/strlen-avx2.S"),
        (
            "/usr/include/x86_64-linux-gnu/bits/string_fortified.h",
            "/usr/include/x86_64-linux-gnu/bits/string_fortified.h",
        ),
        ("???", "???"),
    ],
)
def test_a_file_is_named_within_its_source_tree(path: str, within: str) -> None:
    assert fx.source_path(path) == within


def test_a_function_and_its_clones_are_kept_and_diffed_as_one() -> None:
    """One build runs heap_update and its constant-propagated copy, in the tree's file under two absolute paths of
    two builds: the stored rows and the diff have one heap_update, its costs added, its file within the tree."""
    tree_a = "/ws/sources/debian/postgresql-15_15.18/tree/src/backend/access/heap/heapam.c"
    tree_b = "/other/sources/debian/postgresql-15_15.18/tree/src/backend/access/heap/heapam.c"
    base = {
        ("heap_update", tree_a): FunctionCost("heap_update", tree_a, 3012, None, 100, None),
        ("heap_update.constprop.0", tree_a): FunctionCost("heap_update.constprop.0", tree_a, 2990, None, 20, None),
        ("small", "x.c"): FunctionCost("small", "x.c", 1, None, 1, None),
    }
    kept = fx.top_functions(base, 1)
    assert list(kept) == [("heap_update", "src/backend/access/heap/heapam.c")]
    assert kept[("heap_update", "src/backend/access/heap/heapam.c")].self_ir == 120
    assert kept[("heap_update", "src/backend/access/heap/heapam.c")].line == 2990
    target = {("heap_update.lto_priv.0", tree_b): FunctionCost("heap_update.lto_priv.0", tree_b, 3012, None, 130, None)}
    (change,) = fx.diff(fx.from_rows(fx.to_rows(kept)), target)  # `small` was not kept, and the target has none
    assert (change.function, change.file, change.base_self, change.target_self) == (
        "heap_update",
        "src/backend/access/heap/heapam.c",
        120,
        130,
    )


def test_a_bolt_split_functions_recursion_levels_are_one_function() -> None:
    """MySQL's row_search_mvcc after BOLT split it: callgrind takes the jumps into its cold part and back for calls,
    so most of its own cost is at a second level `'2` the base build never had. The diff sees one function."""
    row = "storage/innobase/row/row0sel.cc"
    base = prof(
        FunctionCost("row_search_mvcc", row, 1, None, 44_000, 300_000),
        FunctionCost("ha_rnd_next", "handler.cc", 1, None, 4_500, 304_000),
    )
    target = prof(
        FunctionCost("row_search_mvcc", "???", 1, None, 11_300, 299_000),
        FunctionCost("row_search_mvcc'2", "???", 1, None, 32_800, 150_000),
        FunctionCost("row_search_mvcc [clone .cold.0]", "???", 1, None, 50, 150_000),
        FunctionCost("ha_rnd_next", "???", 1, None, 4_450, 302_000),
    )
    changes = {c.function: c for c in fx.diff(base, target)}
    assert set(changes) == {"row_search_mvcc", "ha_rnd_next"}
    mvcc = changes["row_search_mvcc"]
    assert (mvcc.base_self, mvcc.target_self) == (44_000, 44_150)  # the levels and the cold part added
    assert (mvcc.base_inclusive, mvcc.target_inclusive) == (300_000, 299_000)  # the outer level's holds the rest


def test_top_functions_keeps_the_largest_by_self_and_by_inclusive() -> None:
    profile = prof(fc("big", 100, 100), fc("neg", -50, -50), fc("caller", 1, 500), fc("small", 2, 2), fc("mid", 10, 40))
    assert list(fx.top_functions(profile, 2)) == [("big", "x.c"), ("neg", "x.c"), ("caller", "x.c")]
    assert fx.top_functions(profile, 0) == {}
    assert set(fx.top_functions(profile, 9)) == set(profile)
    # A kept function keeps its code inlined from other files: BOLT's output, without debug information, has all
    # of CommitTransaction under one entry, which a cut base (xact.c's part alone) made look twice as costly.
    inlined = FunctionCost("big", "h.h", 1, None, 3.0, None)
    whole = fx.top_functions({**profile, inlined.key: inlined}, 1)
    assert list(whole) == [("big", "x.c"), ("big", "h.h"), ("caller", "x.c")]


def test_rows_round_trip_through_json(tmp_path: Path) -> None:
    profile = fx.read_functions(write(tmp_path, CALLGRIND))
    profile |= prof(fc("per_op", 0.125, None, line=None))
    rows = fx.to_rows(profile)
    assert [r["function"] for r in rows[:2]] == ["helper", "main"]  # largest self cost first
    assert fx.from_rows(json.loads(json.dumps(rows))) == profile
    with pytest.raises(ValueError, match="row 0 lacks self_ir"):
        fx.from_rows([{k: v for k, v in rows[0].items() if k != "self_ir"}])
    with pytest.raises(ValueError, match="appears twice"):
        fx.from_rows([rows[0], rows[0]])


def test_a_place_in_a_build_is_shown_within_its_tree() -> None:
    from dbsweep.report import fmt

    def change(file: str, line: int | None) -> fx.FunctionChange:
        return fx.FunctionChange("f", file, line, 1.0, 2.0, None, None, None)

    tmp = "/work/x/.dbsweep/builds/.tmp-061ac5058cba420469a4/build/cache/clock_cache.cc"
    assert fmt.function_place(change(tmp, 1706)) == "cache/clock_cache.cc:1706"
    assert fmt.function_place(change("./nptl/pthread_mutex_lock.c", 44)) == "nptl/pthread_mutex_lock.c:44"
    assert fmt.function_place(change("???", None)) == ""


def test_a_change_of_a_negative_per_operation_cost_is_signed_as_the_change() -> None:
    # A background function's short-minus-long figure can be below 0 (it ran less in the long run): -484 to -246
    # is 238 more instructions per event, +49 % of the base's magnitude, not -49 %.
    (c,) = fx.diff(prof(fc("LockBufHdr", -484, -484)), prof(fc("LockBufHdr", -246, -246)))
    assert (
        c.delta_self == 238 and c.rel_self == pytest.approx(238 / 484) and c.rel_inclusive == pytest.approx(238 / 484)
    )


def test_rows_name_files_within_the_build_s_own_tree() -> None:
    """A `dir:` source's tree is wherever its owner keeps it: the count's rows read files relative to it."""
    tree = "/home/me/postgresql-15.18"
    file = f"{tree}/src/backend/access/heap/heapam.c"
    profile = prof(FunctionCost("heap_update", file, 3012, None, 100, None), fc("strlen", 5, 5))
    rows = {r["function"]: r["file"] for r in fx.to_rows(profile, tree + "/")}
    assert rows == {"heap_update": "src/backend/access/heap/heapam.c", "strlen": "x.c"}
    assert {r["file"] for r in fx.to_rows(profile)} == {file, "x.c"}
