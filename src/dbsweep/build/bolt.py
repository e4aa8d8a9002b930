"""BOLT: a finished build's main binary (or library) rewritten by `llvm-bolt` with a profile of the same training
workload PGO uses, the method's "BOLT on top of the strongest build" step.

The profile comes from instrumentation (`llvm-bolt -instrument`): the rewritten copy counts its own branches and
writes them when each process exits. Sampling the last branch records with `perf record -j` would cost less, but
needs the CPU's branch-sampling counters, which a VM such as this one does not have (`perf_branch_sampling`
says whether this machine has them). The instrumented copy takes the binary's place for the training run, then
the original comes back and is rewritten with the merged profile:

    llvm-bolt BIN -instrument --instrumentation-file=DIR/prof --instrumentation-file-append-pid -o BIN.inst
    (training, as PGO's)                       one DIR/prof.<pid> per process that ran
    merge-fdata DIR/prof.* > merged.fdata
    llvm-bolt BIN -o BIN.bolt --data=merged.fdata OPTIONS

BOLT needs the binary's relocations (`-Wl,--emit-relocs`), which every BOLT variant links with; a binary without
them (a build system that did not pass the flag on) fails its build saying so. The rewritten binary keeps its
symbols, so valgrind names every function as in any other build. It does not keep the DWARF: llvm-bolt drops
it from what it writes ("debug info will be stripped from the binary", its log says) unless it is told to rewrite
it (`--update-debug-sections`), and the DWARF so rewritten is beyond valgrind 3.19 (it gave up reading a BOLTed
PGO + LTO SQLite library, "Possibly corrupted debuginfo file", and named a BOLTed -O2 one's files `<built-in>`).
So a BOLTed build's functions have no file and line under valgrind (`???`), and the per-function diff matches
each to the base build's by its name alone (`measure.functions.diff`).
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from dbsweep.errors import DbsweepError

# The newest first: Debian has bolt-16 in bookworm-backports' LLVM and bolt-19 beside it; 19 is the one whose
# instrumentation of shared libraries (SQLite's) and of PIE executables works on Debian 12's toolchain.
VERSIONS = (21, 20, 19, 18, 17, 16)
INSTALL_LINE = "apt-get install bolt-19"
RELOCS_FLAG = "-Wl,--emit-relocs"
# The rewrite: blocks and functions laid out by the profile (cdsort from BOLT 18, hfsort before), cold code
# split off, identical functions folded.
OPTIONS = (
    "--reorder-blocks=ext-tsp",
    "--split-functions",
    "--split-all-cold",
    "--split-eh",
    "--icf",
    "--dyno-stats",
)


@dataclass(frozen=True)
class Tool:
    bolt: Path
    merge: Path
    version: str  # `llvm-bolt --version`'s LLVM version line, e.g. "LLVM version 19.1.7"


@functools.cache
def tool() -> Tool | None:
    """The newest llvm-bolt installed (with its merge-fdata), or None."""
    for v in VERSIONS:
        bolt, merge = shutil.which(f"llvm-bolt-{v}"), shutil.which(f"merge-fdata-{v}")
        if bolt is None:
            continue
        if merge is None:
            sibling = Path(bolt).resolve().parent / "merge-fdata"
            merge = str(sibling) if sibling.is_file() else None
        if merge is None:
            continue
        out = subprocess.run([bolt, "--version"], capture_output=True, text=True, check=False).stdout
        m = re.search(r"LLVM version (\S+)", out)
        version = f"LLVM version {m.group(1)}" if m else out.strip()[:80]
        # By its real path: llvm-bolt looks for its instrumentation runtime in ../lib from the path it was run
        # as, which for Debian's /usr/bin/llvm-bolt-19 would be /usr/lib, not LLVM's own /usr/lib/llvm-19/lib.
        return Tool(Path(bolt).resolve(), Path(merge).resolve(), version)
    return None


def missing() -> str | None:
    """Why no BOLT variant can be built here, with the line that installs it; None when llvm-bolt is there."""
    if tool() is None:
        return f"llvm-bolt is not installed; install it with `{INSTALL_LINE}`"
    return None


def require() -> Tool:
    found = tool()
    if found is None:
        raise DbsweepError(f"a BOLT variant needs llvm-bolt, which is not installed; install it with `{INSTALL_LINE}`")
    return found


def perf_branch_sampling() -> bool:
    """Whether this machine can sample branch records (`perf record -j any,u`): in a VM usually not."""
    if shutil.which("perf") is None:
        return False
    r = subprocess.run(
        ["perf", "record", "-j", "any,u", "-o", "/dev/null", "--", "true"], capture_output=True, check=False
    )
    return r.returncode == 0


def has_relocations(binary: Path) -> bool:
    """Whether the linker kept the relocations BOLT needs (a `.rela.text` section)."""
    r = subprocess.run(["readelf", "-S", "-W", str(binary)], capture_output=True, text=True, check=False)
    return ".rela.text" in r.stdout


def check_relocations(binary: Path, name: str) -> None:
    if not has_relocations(binary):
        raise DbsweepError(
            f"BOLT cannot rewrite {name}: it was linked without its relocations. Link it with {RELOCS_FLAG} "
            "(every BOLT variant adds it to its ldflags; this build's linking did not pass it on)."
        )


# Symbols BOLT adds to mark its own layout, not functions.
_MARKERS = ("__hot_", "__bolt_")


def _aliases(binary: Path) -> set[frozenset[str]]:
    """The sets of function symbols that name one address in `binary` (two or more each)."""
    try:  # demangled (-C): valgrind names C++ functions so
        out = subprocess.run(["nm", "-C", "--defined-only", str(binary)], capture_output=True, text=True).stdout
    except OSError:
        return set()  # no nm: no folding is known, and the build stands
    at: dict[str, set[str]] = {}
    for line in out.splitlines():
        parts = line.split(maxsplit=2)
        if len(parts) == 3 and parts[1] in "tTwWiI" and not parts[2].startswith(_MARKERS):
            at.setdefault(parts[0], set()).add(parts[2])
    return {frozenset(names) for names in at.values() if len(names) > 1}


def folded(before: Path, after: Path) -> list[list[str]]:
    """The functions BOLT's identical code folding (--icf) made one: symbols that name one address in `after` and
    did not in `before`. Valgrind names such code by one of them, so a per-function diff against a build without
    the folding sees one function's cost move to another; `why` reads each set as one function."""
    return sorted(sorted(g) for g in _aliases(after) - _aliases(before))


# BOLT's account of a function it cannot move: "unable to get new address corresponding to input address 0x2d2240
# in function ExecInterpExpr/1(*2)" (Postgres's expression interpreter jumps through a table of label addresses),
# or after LTO "... in function ExecInterpExpr.lto_priv.0/1. Consider adding this function to --skip-funcs=...":
# the sentence's full stop is not part of the name.
_UNMOVABLE = re.compile(r"BOLT-ERROR: unable to get new address .* in function ([^\s(]+?)\.?(?:[\s(]|$)")
# Functions left as they are before the rewrite gives up.
MAX_SKIPPED = 20


def unmovable(output: str) -> str | None:
    """The function a failed llvm-bolt run could not move (to leave as it is, `--skip-funcs`), if that was why."""
    m = _UNMOVABLE.search(output)
    return m.group(1) if m else None


def _skip(skipped: Sequence[str]) -> list[str]:
    return [f"--skip-funcs={','.join(skipped)}"] if skipped else []


def instrument_command(t: Tool, binary: Path, out: Path, profile_dir: Path, skipped: Sequence[str] = ()) -> list[str]:
    return [
        str(t.bolt),
        str(binary),
        "-instrument",
        f"--instrumentation-file={profile_dir / 'prof'}",
        "--instrumentation-file-append-pid",
        *_skip(skipped),
        "-o",
        str(out),
    ]


def options(t: Tool) -> list[str]:
    m = re.search(r"(\d+)\.", t.version)
    functions = "cdsort" if m and int(m.group(1)) >= 18 else "hfsort"
    return [*OPTIONS, f"--reorder-functions={functions}"]


def optimise_command(t: Tool, binary: Path, out: Path, profile: Path, skipped: Sequence[str] = ()) -> list[str]:
    return [str(t.bolt), str(binary), "-o", str(out), f"--data={profile}", *options(t), *_skip(skipped)]


def profiles(profile_dir: Path) -> list[Path]:
    """The profiles the instrumented processes wrote (one per process)."""
    return sorted(p for p in profile_dir.glob("prof*") if p.is_file() and p.stat().st_size > 0)
