"""Instructions per operation by function, from valgrind's output files: why a build got slower.

`instructions` counts what the serving backend executes per operation in total; this module splits that count
by function. The same short-minus-long method applies function by function:

    per operation(f) = (Ir_long(f) - Ir_short(f)) / (ops_long - ops_short)

and `diff` sets the per-operation profile of a target build against a base build's, largest change first.

Both of valgrind's formats are read (the tool is told by the file's header):

- cachegrind: `fl=` and `fn=` lines name the file and function of the cost lines that follow (`<line> <Ir> ...`).
  An inlined function's lines come under `fl=<its header>` with the caller's `fn=`, so the caller appears once
  per file it has code from. It has no call graph: `inclusive_ir` is None.
- callgrind: a function's cost is keyed by its `fl=` file, its inlined code (after `fi=`/`fe=`) included.
  `calls=` lines give the inclusive cost of the calls a function makes, so inclusive = self + those. For a
  recursive function the calls into itself (callgrind names the deeper levels `name'2`) are counted again at
  every level, as callgrind_annotate --inclusive=yes counts them: the inclusive figure of recursive code is an
  approximation, above the truth, which can exceed the file's total.

A function is keyed by (name, file) as valgrind writes them; costs of the same name and file in different
objects (two `???` functions at the same address in two libraries, say) add up under one key.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

Tool = Literal["cachegrind", "callgrind"]
Key = tuple[str, str]  # (function, file)
NO_FILE = "???"  # valgrind's file name for code without debug info
# File names that say nothing of where a function is: no debug information, or DWARF valgrind misreads.
UNKNOWN_FILES = frozenset({"", NO_FILE, "<built-in>"})

_NEGLIGIBLE = 0.01  # per-operation Ir below which a function is not worth keeping: rounding, not code

# The three name spaces of callgrind's name compression: callgrind numbers a called function's cfn=(id) in
# the same space as fn=(id), and every kind of file name in one space too.
_SPACE = {
    "fl": "file",
    "fi": "file",
    "fe": "file",
    "cfi": "file",
    "cfl": "file",
    "jfi": "file",
    "fn": "fn",
    "cfn": "fn",
    "jfn": "fn",
    "ob": "ob",
    "cob": "ob",
}
_SPEC = re.compile(r"([a-z]+)=(.*)")
_HEADER = re.compile(r"([A-Za-z][\w-]*):\s*(.*)")
_COMPRESSED = re.compile(r"\((\d+)\)(?:\s+(.*))?")
_SUBPOSITION = re.compile(r"[+-]?(?:0x[0-9a-fA-F]+|\d+)|\*")


@dataclass(frozen=True)
class FunctionCost:
    """What one function cost: in one file (total Ir) or per operation."""

    function: str  # as valgrind writes it; callgrind's recursion levels ("name'2") are merged with clones
    file: str  # source file; "???" without debug info
    line: int | None  # the smallest source line with cost in the function: about where it starts
    object: str | None  # the ELF object (callgrind's ob=); None from cachegrind
    self_ir: float  # exclusive: the function's own instructions
    inclusive_ir: float | None  # self + the inclusive cost of the calls it makes; None from cachegrind

    @property
    def key(self) -> Key:
        return (self.function, self.file)


Profile = dict[Key, FunctionCost]


# ---- reading valgrind's files -------------------------------------------------------------------------


def file_tool(path: Path) -> Tool:
    """Which of valgrind's tools wrote the file, from its header."""
    with path.open(encoding="utf-8", errors="replace") as f:
        for i, raw in enumerate(f):
            line = raw.strip()
            verdict = _header_verdict(line, first=i == 0)
            if verdict is not None:
                return verdict
            if line and not line.startswith("#") and not _HEADER.fullmatch(line):
                break  # the body: nothing said callgrind
    return "cachegrind"


def _header_verdict(line: str, *, first: bool) -> Tool | None:
    # callgrind (since 3.13) marks its files on the first line; older ones still name their creator, and only
    # callgrind writes "positions:". Cachegrind's header (desc:, cmd:, events:) has no mark of its own.
    if first and line == "# callgrind format":
        return "callgrind"
    m = _HEADER.fullmatch(line)
    if m and (m[1] == "positions" or (m[1] == "creator" and m[2].startswith("callgrind"))):
        return "callgrind"
    return None


class _Acc:
    """A function's sums while its file is read."""

    __slots__ = ("calls_ir", "line", "object", "self_ir")

    def __init__(self) -> None:
        self.self_ir = 0
        self.calls_ir = 0
        self.line: int | None = None
        self.object: str | None = None


class _Reader:
    """One pass over a cachegrind or callgrind file: its state between lines, and the sums per function."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lineno = 0
        self.header_tool: Tool | None = None  # said by the header
        self.tool: Tool | None = None  # decided at the first body line
        self.events: list[str] | None = None
        self.ir = 0  # the column of Ir among the costs
        self.positions = ["line"]
        self.line_col: int | None = 0
        self.last = [0]  # the previous cost line's positions: the base of relative ones
        self.names: dict[str, dict[int, str]] = {"file": {}, "fn": {}, "ob": {}}
        self.ob: str | None = None
        self.fl: str | None = None  # the current function's file
        self.src: str | None = None  # the file of the code the next cost lines are for (an inlined one after fi=)
        self.fn: str | None = None
        self.acc: _Acc | None = None
        self.in_call = False  # a calls= line was read: the next cost line is that call's inclusive cost
        self.costs: dict[Key, _Acc] = {}
        self.self_total = 0
        self.totals: list[int] = []  # Ir of callgrind's totals: lines (one per part)
        self.summaries: list[int] = []  # Ir of summary: lines (cachegrind's at the end, callgrind's per part)
        self.total_lineno = 0

    def fail(self, what: str, line: str | None = None) -> ValueError:
        shown = f": {line[:200]!r}" if line is not None else ""
        where = f"{self.path}:{self.lineno}" if self.lineno else str(self.path)
        return ValueError(f"{where}: {what}{shown}")

    def read(self) -> Profile:
        with self.path.open(encoding="utf-8", errors="replace") as f:
            for raw in f:
                self.lineno += 1
                self.line(raw.rstrip("\r\n"))
        return self.finish()

    def line(self, line: str) -> None:
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            if self.lineno == 1 and _header_verdict(stripped, first=True):
                self.header_tool = "callgrind"
            return
        c = stripped[0]
        if c.isdigit() or c in "+-*":
            self.cost_line(stripped)
            return
        if self.in_call:
            raise self.fail("a calls= line must be followed by the cost line of its call", line)
        if m := _SPEC.fullmatch(stripped):
            self.spec_line(m[1], m[2])
        elif m := _HEADER.fullmatch(stripped):
            self.header_line(m[1], m[2], stripped)
        else:
            raise self.fail("not a line of valgrind's output format", line)

    # -- header lines: "key: value", at the top of the file and of each callgrind part --

    def header_line(self, key: str, value: str, line: str) -> None:
        if self.tool is None and _header_verdict(line, first=False):
            self.header_tool = "callgrind"
        if key == "events":
            events = value.split()
            if "Ir" not in events:
                raise self.fail("the events line has no Ir (instructions) column", line)
            self.events, self.ir = events, events.index("Ir")
        elif key == "positions":
            positions = value.split()
            if not positions:
                raise self.fail("an empty positions line", line)
            self.positions = positions
            self.line_col = positions.index("line") if "line" in positions else None
            self.last = [0] * len(positions)
        elif key in ("summary", "totals"):
            if self.events is None:
                raise self.fail(f"a {key} line before the events line", line)
            values = self.numbers(value.split(), line)
            (self.totals if key == "totals" else self.summaries).append(values[self.ir] if self.ir < len(values) else 0)
            self.total_lineno = self.lineno
        # Other keys (desc, cmd, version, creator, pid, part, thread, event) describe the run, not its costs.

    # -- position lines: "fl=", "fn=", ..., "calls=" --

    def spec_line(self, key: str, value: str) -> None:
        self.decide_tool()
        space = _SPACE.get(key)
        if self.tool == "cachegrind" and key not in ("fl", "fi", "fe", "fn"):
            raise self.fail(f"{key}= is callgrind's, and the header says this file is cachegrind's")
        if space is not None:
            name = self.name(space, value, f"{key}={value}")
            if key == "fl":
                self.fl = self.src = name
                self.switch()
            elif key in ("fi", "fe"):
                self.src = name  # inlined code: still the current function's cost
            elif key == "fn":
                self.fn, self.src = name, self.fl
                self.switch()
            elif key == "ob":
                self.ob = name
                self.switch()
            # cfn=, cfi=, cob=, jfi=, jfn= name a call's or a jump's target: only their ids matter here.
        elif key == "calls":
            parts = value.split()
            if len(parts) < 2 or not parts[0].isdigit():
                raise self.fail("a calls= line is calls=<count> <target position>", f"calls={value}")
            self.subpositions(parts[1:], f"calls={value}")  # checked; the target is the callee's, not ours
            self.in_call = True
        # jump= and jcnd= (--collect-jumps) count jumps, and the position line after one has no cost. Other
        # keys are skipped: the documented format is not all valgrind writes (3.19 writes jfi= and jfn=, which
        # it does not list), and a newer valgrind may add more.

    def name(self, space: str, value: str, line: str) -> str:
        value = value.strip()
        m = _COMPRESSED.fullmatch(value)
        if m is None:
            return value
        ids, ident = self.names[space], int(m[1])
        if m[2] is not None:
            if ids.get(ident, m[2]) != m[2]:
                raise self.fail(f"name id ({ident}) given a second name, first {ids[ident]!r}", line)
            ids[ident] = m[2]
            return m[2]
        if ident not in ids:
            raise self.fail(f"name id ({ident}) used before a line gives its name", line)
        return ids[ident]

    def switch(self) -> None:
        if self.fn is None:
            return
        key = (self.fn, self.fl if self.fl is not None else NO_FILE)
        acc = self.costs.get(key)
        if acc is None:
            acc = self.costs[key] = _Acc()
        if acc.object is None:
            acc.object = self.ob
        self.acc = acc

    def decide_tool(self) -> None:
        if self.tool is None:
            self.tool = self.header_tool or "cachegrind"

    # -- cost lines: "<positions> <costs>" --

    def cost_line(self, line: str) -> None:
        self.decide_tool()
        if self.events is None:
            raise self.fail("a cost line before the events line", line)
        acc = self.acc
        if acc is None:
            raise self.fail("a cost line before any fn= line", line)
        parts = line.split()
        n = len(self.positions)
        if len(parts) < n:
            raise self.fail(f"a cost line needs {n} position(s) ({' '.join(self.positions)})", line)
        pos = self.subpositions(parts[:n], line)
        self.last = pos
        costs = parts[n:]
        if len(costs) > len(self.events):
            raise self.fail(f"more costs than the {len(self.events)} events", line)
        values = self.numbers(costs, line)
        ir = values[self.ir] if self.ir < len(values) else 0  # missing columns are 0
        if self.in_call:
            # The inclusive cost of the calls= line above: the callee's work, not this function's own.
            self.in_call = False
            acc.calls_ir += ir
            return
        acc.self_ir += ir
        self.self_total += ir
        # Lines of inlined code belong to another file; 0 is valgrind's line for code without line info.
        if self.line_col is not None and self.src == self.fl and pos[self.line_col] > 0:
            at = pos[self.line_col]
            acc.line = at if acc.line is None else min(acc.line, at)

    def subpositions(self, tokens: list[str], line: str) -> list[int]:
        """Absolute positions; callgrind's compression writes "+N"/"-N" relative to the previous cost line's
        position in that column, "*" for the same one."""
        if len(tokens) > len(self.last):
            raise self.fail(f"more positions than the {len(self.last)} of the positions line", line)
        out = []
        for tok, prev in zip(tokens, self.last, strict=False):
            if not _SUBPOSITION.fullmatch(tok):
                raise self.fail(f"not a position: {tok!r}", line)
            if tok == "*":
                out.append(prev)
                continue
            sign = tok[0] if tok[0] in "+-" else ""
            digits = tok[len(sign) :]
            value = int(digits, 16) if digits.startswith("0x") else int(digits)
            at = prev + value if sign == "+" else prev - value if sign == "-" else value
            if at < 0:
                raise self.fail(f"position {tok} goes below 0 (from {prev})", line)
            out.append(at)
        return out

    def numbers(self, tokens: list[str], line: str) -> list[int]:
        out = []
        for tok in tokens:
            if tok == ".":  # cachegrind's zero
                out.append(0)
            elif tok.isascii() and tok.isdigit():
                out.append(int(tok))
            else:
                raise self.fail(f"not a count: {tok!r}", line)
        return out

    def finish(self) -> Profile:
        if self.lineno == 0:
            raise self.fail("the file is empty (valgrind writes it as the process exits)")
        if self.in_call:
            raise self.fail("the file ends after a calls= line, without the cost of the call")
        if self.events is None:
            raise self.fail("no events line: not a cachegrind or callgrind output file")
        callgrind = self.tool == "callgrind" or self.header_tool == "callgrind"
        # The last line holds the totals (callgrind: totals:, cachegrind: summary:); a file without one is
        # still being written, or was cut. The totals must be what the cost lines add up to: a check of both
        # the file and this reader. Callgrind's header summary may exceed them (the format allows costs that
        # no cost line holds), but callgrind writes totals: too.
        if callgrind and self.totals:
            expected, exact = sum(self.totals), True
        elif self.summaries:
            expected, exact = sum(self.summaries), not callgrind
        else:
            raise self.fail("no totals line at the end: the file is incomplete (still being written?)")
        if (self.self_total != expected) if exact else (self.self_total > expected):
            self.lineno = self.total_lineno
            raise self.fail(f"the cost lines add up to {self.self_total} Ir, the totals say {expected}")
        return {
            key: FunctionCost(
                function=key[0],
                file=key[1],
                line=acc.line if key[1] != NO_FILE else None,
                object=acc.object,
                self_ir=float(acc.self_ir),
                inclusive_ir=float(acc.self_ir + acc.calls_ir) if callgrind else None,
            )
            for key, acc in self.costs.items()
            if acc.self_ir or acc.calls_ir  # a name defined before its cost, or code that never ran
        }


def read_functions(path: Path) -> Profile:
    """(function, file) -> costs, from one cachegrind or callgrind output file (the tool told by its header).

    Raises ValueError naming the file and line on a malformed or incomplete file."""
    return _Reader(path).read()


def annotate_hint(path: Path | str) -> list[str]:
    """The command (an argument list) that shows a file annotated by valgrind's own tools."""
    p = Path(path)
    try:
        tool = file_tool(p)
    except OSError:
        tool = "callgrind" if p.name.startswith("callgrind") else "cachegrind"  # the name the tools give
    if tool == "callgrind":
        return ["callgrind_annotate", "--inclusive=yes", str(path)]
    return ["cg_annotate", str(path)]


# ---- arithmetic on profiles ----------------------------------------------------------------------------


def _min_line(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


def _check_same_kind(a: FunctionCost, b: FunctionCost) -> None:
    if (a.inclusive_ir is None) != (b.inclusive_ir is None):
        raise ValueError(
            f"{a.function} ({a.file}) has an inclusive cost on one side only: "
            "a cachegrind profile cannot be combined with a callgrind one"
        )


def add(profiles: Iterable[Mapping[Key, FunctionCost]]) -> Profile:
    """The sum of several processes' profiles (self and inclusive add; the smallest line; the first object)."""
    out: Profile = {}
    for profile in profiles:
        for key, c in profile.items():
            have = out.get(key)
            if have is None:
                out[key] = c
                continue
            _check_same_kind(have, c)
            out[key] = FunctionCost(
                function=c.function,
                file=c.file,
                line=_min_line(have.line, c.line),
                object=have.object if have.object is not None else c.object,
                self_ir=have.self_ir + c.self_ir,
                inclusive_ir=None
                if have.inclusive_ir is None or c.inclusive_ir is None
                else have.inclusive_ir + c.inclusive_ir,
            )
    return out


def _has_inclusive(profile: Mapping[Key, FunctionCost]) -> bool:
    return any(c.inclusive_ir is not None for c in profile.values())


def per_operation(
    short: Mapping[Key, FunctionCost], long: Mapping[Key, FunctionCost], ops_short: int, ops_long: int
) -> Profile:
    """(long - short) / (ops_long - ops_short), function by function.

    What every run costs once (start-up, exit) cancels. A function absent from one run counts 0 there.
    Functions whose per-operation self and inclusive cost are both below 0.01 Ir are dropped."""
    ops = ops_long - ops_short
    if ops <= 0:
        raise ValueError(f"the long run must do more operations than the short one: {ops_long} vs {ops_short}")
    out: Profile = {}
    for key in dict.fromkeys([*short, *long]):
        s, lg = short.get(key), long.get(key)
        if s is not None and lg is not None:
            _check_same_kind(s, lg)
        some = lg if lg is not None else s
        assert some is not None
        self_ir = ((lg.self_ir if lg else 0.0) - (s.self_ir if s else 0.0)) / ops
        inclusive = None
        if some.inclusive_ir is not None:
            li = lg.inclusive_ir if lg and lg.inclusive_ir is not None else 0.0
            si = s.inclusive_ir if s and s.inclusive_ir is not None else 0.0
            inclusive = (li - si) / ops
        if abs(self_ir) < _NEGLIGIBLE and (inclusive is None or abs(inclusive) < _NEGLIGIBLE):
            continue
        out[key] = FunctionCost(
            function=key[0],
            file=key[1],
            line=_min_line(s.line if s else None, lg.line if lg else None),
            object=lg.object if lg is not None and lg.object is not None else s.object if s else None,
            self_ir=self_ir,
            inclusive_ir=inclusive,
        )
    return out


@dataclass(frozen=True)
class FunctionChange:
    """One function's cost per operation in a base and a target build."""

    function: str
    file: str
    line: int | None
    base_self: float
    target_self: float
    base_inclusive: float | None
    target_inclusive: float | None
    # This function's part of the change of the total (delta_self / the sum of every function's): near 1 when
    # it explains the whole change; above 1 or negative when others moved the other way. None: no change.
    share_of_change: float | None
    # Absent from one side's stored profile, which keeps only its costliest functions: the most its own cost can be
    # there ("base" or "target", and the bound). Its change is then known to be at least |delta_self| - bound.
    unlisted: tuple[Literal["base", "target"], float] | None = None

    @property
    def delta_self(self) -> float:
        return self.target_self - self.base_self

    @property
    def delta_range(self) -> tuple[float, float]:
        """The change of own cost as far as it is known: a side's cost may be up to `unlisted`'s bound more than
        its stored figure (0 where it was not stored, a folded set's members that were not)."""
        d = self.delta_self
        if self.unlisted is None:
            return d, d
        side, bound = self.unlisted
        return (d - bound, d) if side == "base" else (d, d + bound)

    @property
    def least_change(self) -> float:
        """The smallest |change| the function's range allows (0 when it holds no change at all)."""
        low, high = self.delta_range
        return 0.0 if low <= 0 <= high else min(abs(low), abs(high))

    @property
    def rel_self(self) -> float | None:
        """The relative change of self cost, signed as the change (a background function's per-operation cost can
        be below 0: of the base's magnitude); None when the base had none, or a side's figure is only a bound."""
        return self.delta_self / abs(self.base_self) if self.base_self and self.unlisted is None else None

    @property
    def delta_inclusive(self) -> float | None:
        if self.base_inclusive is None or self.target_inclusive is None:
            return None
        return self.target_inclusive - self.base_inclusive

    @property
    def rel_inclusive(self) -> float | None:
        d = self.delta_inclusive
        return d / abs(self.base_inclusive) if d is not None and self.base_inclusive else None


# The suffixes gcc gives the copies it makes of a function (a part split off, an LTO-private or constant-
# propagated copy, its cold path; several at once, each numbered or not), and clang's ThinLTO `.llvm.<n>`: two
# builds of the same code name them differently, and one build may run a function and its copies. A C++ name is
# demangled with the suffix in brackets (`f(int) [clone .constprop.0]`). Callgrind names a recursion's deeper
# levels `name'2`, `name'3`: one function too, whose own cost is the sum of its levels' (and the outer level's
# inclusive cost holds the deeper ones'). A binary BOLT split makes such levels of code that does not recurse:
# callgrind takes the jump into a split-off cold part for a call, and the jump back for a call of the function
# again, so the cost of the function's hot code moves between `f` and `f'2` from one build to the next.
_CLONE = re.compile(
    r"(?:\.(?:part|isra|constprop|lto_priv|cold|localalias|clone|llvm)(?:\.\d+)?"
    r"|\s*\[clone \.[\w.]+\])+(?=(?:'\d+)?$)"
)
_LEVEL = re.compile(r"'\d+$")
# Where a build compiles: the build cache's temporary directory (`.tmp-<key>/build/`, renamed once built, so
# the path names nothing that exists), or an unpacked source of the workspace's source cache
# (`sources/debian/<package>_<version>/tree/`, `sources/git/trees/<commit>/tree/`, `sources/tarball/<digest>/tree/`,
# which a crate's tree is unpacked into too). Neither says anything about the code, and both differ by build. The
# load client's own code (counted with an embedded engine) names Rust's library and its crates where they were
# compiled (`/rustc/<commit>/library/`, `~/.cargo/registry/src/<index>/`): the crate's own path is kept.
_BUILD_ROOT = re.compile(
    r"^.*/\.tmp-[0-9a-f]+/build/|^.*/sources/(?:debian|git/trees|tarball|copies)/[^/]+/tree/"
    r"|^/rustc/[0-9a-f]+/|^.*/\.cargo/registry/src/[^/]+/"
)


def function_name(function: str) -> str:
    """A function's name without gcc's clone suffixes and callgrind's recursion levels: `heap_update.constprop.0`,
    `heap_update'2` and `heap_update` are one function."""
    return _CLONE.sub("", _LEVEL.sub("", function))


def source_path(file: str) -> str:
    """A function's file relative to its source tree: `src/backend/access/heap/heapam.c` rather than the
    workspace's absolute path of the build (`.../sources/debian/postgresql-15_15.18-0+deb12u1/tree/src/...`
    or `.../builds/.tmp-<key>/build/src/...`); a relative path (a Debian package's `./build/../src/...`) is
    normalised. `???` (no debug information) and a path outside any build stay as they are."""
    if file in UNKNOWN_FILES:
        return file
    rel = _BUILD_ROOT.sub("", file)
    return posixpath.normpath(rel) if rel != file or not rel.startswith("/") else rel


def matching_key(key: Key) -> Key:
    """What matches a function across two builds: its name without gcc's clone suffixes, and the last two parts
    of its file's path within its tree (each build compiles generated files such as the parser in its own
    directory)."""
    function, file = key
    return function_name(function), "/".join(Path(source_path(file)).parts[-2:])


def merge_clones(profile: Mapping[Key, FunctionCost]) -> Profile:
    """The profile with a function's copies added into one entry named without the suffixes, its file relative
    to its tree (self summed; inclusive the largest, as an outer copy's includes the inner's)."""
    groups: dict[Key, list[FunctionCost]] = {}
    for c in profile.values():
        groups.setdefault((function_name(c.function), source_path(c.file)), []).append(c)
    return {key: _one(key, cs) for key, cs in groups.items()}


def _one(key: Key, cs: list[FunctionCost]) -> FunctionCost:
    if len(cs) == 1 and cs[0].key == key:
        return cs[0]
    top = max(cs, key=lambda c: (abs(c.self_ir), c.function))
    incl = [c.inclusive_ir for c in cs if c.inclusive_ir is not None]
    return FunctionCost(
        function=key[0],
        file=key[1],
        line=min((c.line for c in cs if c.line is not None), default=None),
        object=top.object,
        self_ir=sum(c.self_ir for c in cs),
        inclusive_ir=max(incl, key=abs) if incl else None,
    )


def _matched(profile: Mapping[Key, FunctionCost]) -> dict[Key, FunctionCost]:
    """The profile by matching key: a function's copies added (`merge_clones`), named without gcc's suffixes and
    placed in its tree (of two files that end alike, the costlier's path)."""
    groups: dict[Key, list[FunctionCost]] = {}
    for c in merge_clones(profile).values():
        groups.setdefault(matching_key(c.key), []).append(c)
    out: dict[Key, FunctionCost] = {}
    for mk, cs in groups.items():
        top = max(cs, key=lambda c: (abs(c.self_ir), c.file))
        out[mk] = _one(top.key, cs)
    return out


def left_out_below(profile: Mapping[Key, FunctionCost], kept: int | None) -> float:
    """The most own cost a function left out of a stored profile can have: the `kept`-th largest when the profile
    was cut to its `kept` costliest functions (`top_functions`), else 0 (the profile is whole)."""
    if kept is None:
        return 0.0
    costs = sorted((abs(c.self_ir) for c in profile.values()), reverse=True)
    return costs[kept - 1] if kept > 0 and len(costs) >= kept else 0.0


def diff(
    base: Mapping[Key, FunctionCost],
    target: Mapping[Key, FunctionCost],
    top: int | None = None,
    kept: int | None = None,
    folded: tuple[Iterable[Iterable[str]], Iterable[Iterable[str]]] = ((), ()),
) -> list[FunctionChange]:
    """The functions' changes from base to target (per-operation profiles), largest |delta_self| first
    (ties by name); functions on one side only included. `top` keeps the first ones. Functions are matched
    across the builds by `matching_key`, and named as the target names them.

    `kept`: the profiles were stored cut to their `kept` costliest functions. A function in one and not the other
    may then be below the other's cut rather than absent: it is marked with that bound (`FunctionChange.unlisted`),
    and its change is a range.

    `folded`: the sets of functions the base's and the target's build made one (BOLT's identical code folding),
    whose code valgrind names by any one of them: on both sides each set is one function, named `a ≡ b`. On a side
    whose build kept a set's members apart, each member missing from its stored profile may be below the cut."""
    if top is not None and top < 0:
        raise ValueError(f"top must not be negative, not {top}")
    cut = {"base": left_out_below(base, kept), "target": left_out_below(target, kept)}
    sets = _folded_names([*folded[0], *folded[1]])
    unseen = {
        "base": _members_unseen(base, sets, folded[0]) if cut["base"] else {},
        "target": _members_unseen(target, sets, folded[1]) if cut["target"] else {},
    }
    base, target = _as_one(base, target, sets)
    base, target = _by_name_where_unknown(_matched(base), _matched(target))
    base_incl, target_incl = _has_inclusive(base), _has_inclusive(target)
    total = sum(c.self_ir for c in target.values()) - sum(c.self_ir for c in base.values())
    changes = []
    for key in dict.fromkeys([*base, *target]):
        b, t = base.get(key), target.get(key)
        # Absent from a side that has a call graph: no cost there, inclusive included.
        named = t if t is not None else b
        assert named is not None
        missing: Literal["base", "target"] | None = "base" if b is None else "target" if t is None else None
        unlisted = None
        if missing is not None and cut[missing] > 0:
            unlisted = (missing, cut[missing])  # it may cost up to the cut there: the change is a range
        for side in ("base", "target"):
            if n := unseen[side].get(named.function):  # a set's members, each up to the cut
                unlisted = (side, n * cut[side])
        changes.append(
            FunctionChange(
                function=named.function,
                file=named.file,
                line=t.line if t is not None and t.line is not None else b.line if b is not None else None,
                base_self=b.self_ir if b else 0.0,
                target_self=t.self_ir if t else 0.0,
                base_inclusive=b.inclusive_ir if b else 0.0 if base_incl else None,
                target_inclusive=t.inclusive_ir if t else 0.0 if target_incl else None,
                share_of_change=None,
                unlisted=unlisted,
            )
        )
    changes.sort(key=lambda c: (-abs(c.delta_self), c.function, c.file))
    if top is not None:
        changes = changes[:top]
    if total:
        changes = [_with_share(c, c.delta_self / total) for c in changes]
    return changes


def _members_unseen(
    profile: Mapping[Key, FunctionCost], name: Mapping[str, str], own: Iterable[Iterable[str]]
) -> dict[str, int]:
    """set name -> how many of its members a stored profile lacks, on a side whose build did not fold them (one
    that did names the set's code by one of them)."""
    folded_here = {function_name(n) for g in own for n in g}
    present = {function_name(k[0]) for k in profile}
    out: dict[str, int] = {}
    for member, set_name in name.items():
        if member not in present and member not in folded_here:
            out[set_name] = out.get(set_name, 0) + 1
    return out


def _as_one(
    base: Mapping[Key, FunctionCost], target: Mapping[Key, FunctionCost], name: Mapping[str, str]
) -> tuple[dict[Key, FunctionCost], dict[Key, FunctionCost]]:
    """Both profiles with each folded set (`name`: member -> the set's name) as one, named `a ≡ b` and placed in
    the file of its costliest entry on either side: the names taken without gcc's clone suffixes, as the profiles
    are stored."""
    if not name:
        return dict(base), dict(target)
    costliest = _costliest((*base.values(), *target.values()), lambda c: name.get(function_name(c.function)))

    def one(profile: Mapping[Key, FunctionCost]) -> dict[Key, FunctionCost]:
        out: dict[Key, FunctionCost] = {}
        for k, c in profile.items():
            n = name.get(function_name(k[0]))
            if n is not None:  # one key per set, whatever files its members' code came from
                c = replace(c, function=n, file=costliest[n].file)
                k = c.key
            out[k] = _one(k, [out[k], c]) if k in out else c
        return out

    return one(base), one(target)


def _costliest(entries: Iterable[FunctionCost], group: Callable[[FunctionCost], str | None]) -> dict[str, FunctionCost]:
    """group -> its entry of the largest own cost, of the entries `group` puts in one (None: in none)."""
    out: dict[str, FunctionCost] = {}
    for c in entries:
        g = group(c)
        if g is not None and (g not in out or abs(c.self_ir) > abs(out[g].self_ir)):
            out[g] = c
    return out


def _folded_names(same: Iterable[Iterable[str]]) -> dict[str, str]:
    """name -> the name of its set (`a ≡ b`), the sets joined where they share a name; sets of one dropped."""
    sets: list[set[str]] = []
    for g in same:
        names = {function_name(n) for n in g}
        for other in [o for o in sets if o & names]:
            names |= other
            sets.remove(other)
        sets.append(names)
    return {n: " ≡ ".join(sorted(g)) for g in sets if len(g) > 1 for n in g}


def _by_name_where_unknown(
    base: dict[Key, FunctionCost], target: dict[Key, FunctionCost]
) -> tuple[dict[Key, FunctionCost], dict[Key, FunctionCost]]:
    """A function one build knows no file of, for some of its code (code BOLT moved, a build without debug
    information), is compared by its name: on both sides its entries (one per file its code came from, inlined
    headers included) add up under one key, which names the file of its costliest entry that has one."""
    blind = {k[0] for side in (base, target) for k in side if k[1] in UNKNOWN_FILES}
    if not blind:
        return base, target
    costliest = _costliest(
        (*base.values(), *target.values()),
        lambda c: c.function if c.function in blind and c.file not in UNKNOWN_FILES else None,
    )

    def folded(side: dict[Key, FunctionCost]) -> dict[Key, FunctionCost]:
        out: dict[Key, FunctionCost] = {}
        for k, c in side.items():
            top = costliest.get(k[0])
            if k[0] in blind and top is not None:
                k, c = matching_key(top.key), replace(c, file=top.file)
            out[k] = _one(k, [out[k], c]) if k in out else c
        return out

    return folded(base), folded(target)


def _with_share(c: FunctionChange, share: float) -> FunctionChange:
    return replace(c, share_of_change=share)


def _by_self(c: FunctionCost) -> tuple[float, str, str]:
    return (-abs(c.self_ir), c.function, c.file)


def top_functions(profile: Mapping[Key, FunctionCost], n: int) -> Profile:
    """The n largest functions by self cost and the n largest by inclusive cost (by magnitude: a per-operation
    figure can be slightly negative), each with all its entries, to keep a stored profile small; a function's
    clones are merged first (`merge_clones`), so the rows are keyed by name and file within the tree."""
    if n < 0:
        raise ValueError(f"n must not be negative, not {n}")
    profile = merge_clones(profile)  # a function's copies are one function: kept, or not, together
    ranked = sorted(profile.values(), key=_by_self)
    keep = {c.key for c in ranked[:n]}
    inclusive = sorted(
        (c for c in profile.values() if c.inclusive_ir is not None),
        key=lambda c: (-abs(c.inclusive_ir or 0.0), c.function, c.file),
    )
    keep |= {c.key for c in inclusive[:n]}
    # A kept function is kept whole: its code inlined from other files is entries of its own, and a build without
    # debug information (BOLT's output) puts all of it under one, which the diff must meet with all of it.
    names = {k[0] for k in keep}
    keep |= {c.key for c in ranked if c.function in names}
    return {c.key: c for c in ranked if c.key in keep}


# ---- the results store's form -----------------------------------------------------------------------------

_FIELDS = ("function", "file", "line", "object", "self_ir", "inclusive_ir")


def to_rows(profile: Mapping[Key, FunctionCost], tree: str | None = None) -> list[dict[str, Any]]:
    """The profile as JSON-able rows, largest self cost first; a file inside `tree` (the build's source tree)
    relative to it."""
    prefix = tree.rstrip("/") + "/" if tree else None
    return [
        {
            "function": c.function,
            "file": c.file.removeprefix(prefix) if prefix else c.file,
            "line": c.line,
            "object": c.object,
            "self_ir": c.self_ir,
            "inclusive_ir": c.inclusive_ir,
        }
        for c in sorted(profile.values(), key=_by_self)
    ]


def from_rows(rows: Iterable[Mapping[str, Any]]) -> Profile:
    """The profile `to_rows` gave (after a trip through JSON, say); ValueError on a row it did not write."""
    out: Profile = {}
    for i, row in enumerate(rows):
        missing = [f for f in _FIELDS if f not in row]
        if missing:
            raise ValueError(f"row {i} lacks {', '.join(missing)}: {dict(row)}")
        try:
            c = FunctionCost(
                function=str(row["function"]),
                file=str(row["file"]),
                line=None if row["line"] is None else int(row["line"]),
                object=None if row["object"] is None else str(row["object"]),
                self_ir=float(row["self_ir"]),
                inclusive_ir=None if row["inclusive_ir"] is None else float(row["inclusive_ir"]),
            )
        except (TypeError, ValueError) as e:
            raise ValueError(f"row {i} is not a function's cost ({e}): {dict(row)}") from e
        if c.key in out:
            raise ValueError(f"row {i}: {c.function} ({c.file}) appears twice")
        out[c.key] = c
    return out
