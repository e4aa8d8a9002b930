"""The compiler a variant names, as the build cache keys it: its version line, and what `-march=native`
means on this host (a build for one CPU must not be reused on another)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass

from dbsweep.build.variants import LLVM_TOOLS, Variant
from dbsweep.errors import DbsweepError


@dataclass(frozen=True)
class Compiler:
    name: str  # as the variant names it: gcc, clang, gcc-13
    version: str  # the first line of `<name> --version`
    native_cpu: str | None  # what -march=native means here, when the variant uses it


def install_line(compiler: str) -> str:
    """The Debian command that installs a compiler by the name a variant gives (C++ too: CMake builds need it)."""
    family, dash, version = compiler.partition("-")
    packages = {"gcc": [f"gcc{dash}{version}", f"g++{dash}{version}"], "clang": [f"clang{dash}{version}"]}
    # clang's LTO needs its own linker plugin and archiver; llvm-<v> carries llvm-ar for the configure_vars.
    if family == "clang":
        packages["clang"] += [f"lld{dash}{version}", f"llvm{dash}{version}"]
    return "apt-get install " + " ".join(packages.get(family, [compiler]))


def missing(compiler: str, variant: Variant | None = None) -> str | None:
    """Why a variant's compiler (and, for a clang LTO build, the LLVM archiver and linker it takes) cannot be
    used here, with the line that installs them; None when everything is installed."""
    if shutil.which(compiler) is None:
        return f"the compiler {compiler} is not installed; install it with `{install_line(compiler)}`"
    if variant is None:
        return None
    _, dash, version = compiler.partition("-")
    clang = variant.compiler_family == "clang"
    tools = [v for k, v in variant.configure_vars if k in LLVM_TOOLS] if clang else []
    if f"-fuse-ld=lld{dash}{version}" in variant.ldflags:
        tools.append(f"ld.lld{dash}{version}")
    absent = [t for t in tools if shutil.which(t) is None]
    if absent:
        return f"{', '.join(absent)} (for {compiler}'s LTO) not installed; install with `{install_line(compiler)}`"
    return None


def compiler_for(variant: Variant) -> Compiler:
    """The variant's compiler on this host, with its version; a clear error when it is missing."""
    why = missing(variant.compiler, variant)
    if why is not None:
        raise DbsweepError(f"variant {variant.name!r}: {why}")
    out = output([variant.compiler, "--version"])
    version = out.splitlines()[0].strip() if out.strip() else variant.compiler
    uses_native = any("=native" in f for f in (*variant.cflags, *variant.ldflags))
    return Compiler(variant.compiler, version, native_cpu(variant) if uses_native else None)


def native_cpu(variant: Variant) -> str:
    """What -march=native resolves to with the variant's compiler."""
    if variant.compiler_family == "gcc":
        out = output([variant.compiler, "-march=native", "-Q", "--help=target"])
        m = re.search(r"^\s*-march=\s+(\S+)", out, re.MULTILINE)
    else:
        out = output([variant.compiler, "-march=native", "-###", "-x", "c", "-c", os.devnull])
        m = re.search(r'"-target-cpu" "([^"]+)"', out)
    return m.group(1) if m else "unknown"


def output(cmd: list[str]) -> str:
    """What a tool prints (stdout, then stderr) in the C locale; for probes of compilers and installs."""
    env = {**os.environ, "LC_ALL": "C"}
    r = subprocess.run(cmd, capture_output=True, text=True, errors="replace", env=env, check=False)
    return r.stdout + r.stderr
