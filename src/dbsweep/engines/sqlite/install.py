"""SQLite installs: the library and the `sqlite3` shell of a build, or Debian's packaged `libsqlite3`
(`source = "system"`). The library says what it is itself (its version, source id and compile options,
read through ctypes), so the record is the truth of the file the load client opens."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from dbsweep.engines import base
from dbsweep.errors import DbsweepError

# Debian's multiarch library directories, in the order the dynamic linker would look.
_SYSTEM_LIBRARIES = (
    "usr/lib/*-linux-gnu/libsqlite3.so.0",
    "usr/lib/libsqlite3.so.0",
    "lib/*-linux-gnu/libsqlite3.so.0",
)
SYSTEM_SHELL = Path("/usr/bin/sqlite3")
LIBRARY_NAME = "libsqlite3.so"  # under a build's lib/


@dataclass(frozen=True)
class Install(base.Install):
    """An SQLite installation: the shared library the load client opens, and the shell of the same code."""

    def __post_init__(self) -> None:
        if not self.short_version:
            # "3.46.1" from "3.46.1 2024-08-13 09:16:08 c9c2ab54...".
            object.__setattr__(self, "short_version", self.version.split()[0] if self.version.split() else "")

    @property
    def library(self) -> Path:
        lib = self.provenance.get("library")
        return Path(lib) if lib else self.bindir.parent / "lib" / LIBRARY_NAME

    @property
    def shell(self) -> Path:
        return self.bin("sqlite3")


# Asks a library what it is, in a child process (stdout: JSON).
_ASK = """
import ctypes, json, sys
lib = ctypes.CDLL(sys.argv[1])
lib.sqlite3_libversion.restype = ctypes.c_char_p
lib.sqlite3_sourceid.restype = ctypes.c_char_p
lib.sqlite3_compileoption_get.restype = ctypes.c_char_p
lib.sqlite3_compileoption_get.argtypes = [ctypes.c_int]
options = []
while (opt := lib.sqlite3_compileoption_get(len(options))) is not None:
    options.append(opt.decode())
print(json.dumps({"library_version": lib.sqlite3_libversion().decode(),
                  "source_id": lib.sqlite3_sourceid().decode(), "compile_options": options}))
"""


@cache
def library_facts(path: str) -> dict[str, Any]:
    """What a library says of itself: version, source id, compile options. Loaded in a child process, never in
    dbsweep's: a library being built (an instrumented one, which writes a profile when its process exits) or a
    broken one must not stay mapped into, or crash, the process that measures."""
    r = subprocess.run([sys.executable, "-c", _ASK, path], capture_output=True, text=True, check=False)
    if r.returncode != 0:
        words = (r.stderr.strip().splitlines() or ["it could not be loaded"])[-1]
        raise DbsweepError(f"{path} is not an SQLite library that can be loaded: {words}")
    facts: dict[str, Any] = json.loads(r.stdout)
    return facts


def system_library() -> Path | None:
    for pattern in _SYSTEM_LIBRARIES:
        found = sorted(Path("/").glob(pattern))
        if found:
            return found[0]
    return None


def system_versions() -> list[str]:
    lib = system_library()
    return [library_facts(str(lib))["library_version"]] if lib is not None else []


def system_install(source: str) -> Install:
    """Debian's packaged library: `system`, or `system:VERSION` to insist on the version installed."""
    lib = system_library()
    if lib is None:
        raise DbsweepError(
            f"source {source!r}: Debian's libsqlite3 is not installed; run scripts/setup.sh "
            "(it installs libsqlite3-0 and the sqlite3 shell)."
        )
    if not SYSTEM_SHELL.is_file():
        raise DbsweepError(f"source {source!r}: the sqlite3 shell is not installed (apt-get install sqlite3).")
    facts = library_facts(str(lib))
    want = source.partition(":")[2]
    version = facts["library_version"]
    if want and want not in (version, "3"):
        raise DbsweepError(f"source {source!r}: the installed libsqlite3 is {version}, not {want}")
    shell_version = shell_version_line(SYSTEM_SHELL)
    return Install(
        bindir=SYSTEM_SHELL.parent,
        version=f"{version} {facts['source_id']}",
        source=source,
        provenance={
            "source": source,
            "source_identity": base.debian_package_of(lib),
            "version": f"{version} {facts['source_id']}",
            "library": str(lib.resolve()),
            "shell_version": shell_version,
            "bindir": str(SYSTEM_SHELL.parent),
            "cc": "Debian's build",
            "cflags": "",
            "compile_options": facts["compile_options"],
        },
    )


def shell_version_line(shell: Path) -> str:
    r = subprocess.run([shell, "--version"], capture_output=True, text=True, check=False)
    return r.stdout.strip()
