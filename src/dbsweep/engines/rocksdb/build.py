"""RocksDB's build recipe: `db_bench` with RocksDB's own make, for `dbsweep.build.cache`.

RocksDB's make builds in its tree, so `configure` copies the tree into the build directory (one unpacked tree
serves every variant). The compile is `make -jN db_bench DEBUG_LEVEL=0 PORTABLE=1 ...`: a release build (no
debug assertions, `-DNDEBUG`), portable (RocksDB's make would otherwise add `-march=native`, which valgrind
cannot run on a CPU with AVX-512; `o3_native` asks for it by name), linking the compression libraries its
platform detection finds (lz4, zstd, snappy, zlib, bz2: scripts/setup.sh installs their headers) and gflags.
A variant's flags go in `EXTRA_CXXFLAGS`/`EXTRA_CFLAGS`, which come after RocksDB's `-O2` on every compile,
so the variant's level wins; its LDFLAGS in `EXTRA_LDFLAGS`. The make line is the build's recorded
"configure line". PGO: the instrumented db_bench runs a short fillseq, readrandom, seekrandom and overwrite
on a scratch database.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

from dbsweep.build.compiler import output
from dbsweep.build.recipe import Facts, Phase, Recipe, Step, TrainingRun
from dbsweep.build.variants import Variant
from dbsweep.engines.base import Install
from dbsweep.engines.rocksdb.install import Install as RocksdbInstall
from dbsweep.engines.rocksdb.install import linked_libraries
from dbsweep.errors import DbsweepError
from dbsweep.sources import SourceTree

# V=1: make echoes every compile, which the progress counts (RocksDB's make is quiet by default).
OPTIONS = ("DEBUG_LEVEL=0", "PORTABLE=1", "USE_RTTI=1", "DISABLE_WARNING_AS_ERROR=1", "V=1")
RECORD = "share/dbsweep/build.json"
# The training: (benchmarks, extra flags), on 200k keys.
TRAINING = (
    ("fillseq", ["--use_existing_db=0", "--disable_wal=1"]),
    ("readrandom", ["--use_existing_db=1", "--duration=5"]),
    ("seekrandom", ["--use_existing_db=1", "--seek_nexts=10", "--duration=5"]),
    ("overwrite", ["--use_existing_db=1", "--duration=5"]),
)
TRAINING_KEYS = 200_000
# The lists of src.mk whose sources db_bench's rule in the Makefile compiles (through $(LIBRARY) and
# $(BENCH_OBJECTS)); besides them it compiles tools/db_bench.o and $(TESTUTIL), test_util/testutil.o.
# 7.8.3: 328 sources and these two for 329 objects; 10.4.2: 354.
DB_BENCH_LISTS = ("LIB_SOURCES", "RANGE_TREE_SOURCES", "BENCH_LIB_SOURCES")
DB_BENCH_OWN = 2
_ASSIGNMENT = re.compile(r"^([A-Z_]+)\s*[:+]?=(.*)$")


class RocksdbRecipe(Recipe):
    engine: ClassVar[str] = "rocksdb"
    artefact: ClassVar[str] = "bin/db_bench"
    objects_estimate: ClassVar[int] = 355  # db_bench: 329 objects in 7.8.3, about 355 in 10.4.2
    default_cflags: ClassVar[tuple[str, ...]] = ()
    supports_pgo: ClassVar[bool] = True

    def check_tree(self, tree: SourceTree) -> None:
        if not (tree.path / "Makefile").is_file() or not (tree.path / "tools" / "db_bench_tool.cc").is_file():
            raise DbsweepError(
                f"{tree.spec}: {tree.path} is not RocksDB's source tree (Makefile, tools/db_bench_tool.cc)"
            )

    def options(self, variant: Variant, version: str) -> list[str]:
        return [*OPTIONS, *variant.configure, *(f"{k}={v}" for k, v in variant.configure_vars)]

    def objects_in(self, tree: SourceTree) -> int | None:
        try:
            text = (tree.path / "src.mk").read_text(errors="replace")
        except OSError:
            return None
        sources = sum(1 for name, word in make_lists(text) if name in DB_BENCH_LISTS and word.endswith(".cc"))
        return sources + DB_BENCH_OWN if sources else None

    def training(self) -> dict[str, Any]:
        return {"tool": "db_bench", "keys": TRAINING_KEYS, "benchmarks": [b for b, _ in TRAINING]}

    def _make(self, phase: Phase) -> list[str]:
        cxx = (
            phase.compiler.replace("gcc", "g++")
            if phase.compiler.startswith("gcc")
            else phase.compiler.replace("clang", "clang++")
        )
        cc = ["ccache", phase.compiler] if phase.ccache else [phase.compiler]
        cxxs = ["ccache", cxx] if phase.ccache else [cxx]
        flags = " ".join(phase.cflags)
        return [
            "make",
            f"-j{phase.jobs}",
            "db_bench",
            *self.options(phase.variant, phase.tree.version),
            f"CC={' '.join(cc)}",
            f"CXX={' '.join(cxxs)}",
            f"EXTRA_CFLAGS={flags}",
            f"EXTRA_CXXFLAGS={flags}",
            f"EXTRA_LDFLAGS={' '.join(phase.ldflags)}",
        ]

    def configure(self, phase: Phase) -> list[Step]:
        return [Step("copy the tree", ("cp", "-a", f"{phase.tree.path}/.", "."))]

    def compile(self, phase: Phase) -> list[Step]:
        return [Step("make db_bench", tuple(self._make(phase)), compiles=True)]

    def install(self, phase: Phase) -> list[Step]:
        root = Path(f"{phase.destdir}{phase.prefix}") if phase.destdir is not None else phase.prefix
        record = {
            "cc": phase.compiler,
            "cflags": " ".join(phase.cflags),
            "ldflags": " ".join(phase.ldflags),
            "make": shlex.join(self._make(phase)),
        }
        write = (
            "import pathlib, sys; p = pathlib.Path(sys.argv[1]); "
            "p.parent.mkdir(parents=True, exist_ok=True); p.write_text(sys.argv[2])"
        )
        return [
            Step("install db_bench", ("install", "-D", "-m", "0755", "db_bench", str(root / "bin" / "db_bench"))),
            Step("record the flags", (sys.executable, "-c", write, str(root / RECORD), json.dumps(record, indent=1))),
        ]

    def probe(self, install_dir: Path) -> dict[str, Any]:
        db_bench = install_dir / "bin" / "db_bench"
        version = output([str(db_bench), "--version"]).strip().splitlines()
        return {
            "db_bench_version": next((ln for ln in version if ln.startswith("db_bench version")), " ".join(version)),
            "linked": linked_libraries(db_bench),
            "flags": json.loads((install_dir / RECORD).read_text()),
        }

    def facts(self, record: Mapping[str, Any]) -> Facts:
        flags = record["flags"]
        # db_bench 6.x answers --version with its name alone: the tree's version stands in.
        line = str(record["db_bench_version"])
        return Facts(
            version=line if "version" in line else f"db_bench version {record['version']}",
            cc=flags["cc"],
            cflags=flags["cflags"],
            ldflags=flags["ldflags"],
            configure=flags["make"],
        )

    def install_of(self, bindir: Path, source: str, provenance: dict[str, Any]) -> Install:
        prov = dict(provenance)
        prov.setdefault("linked", linked_libraries(bindir / "db_bench"))
        return RocksdbInstall(bindir, provenance["version"], source, prov)

    def train(self, run: TrainingRun) -> None:
        db_bench = run.install_dir / "bin" / "db_bench"
        db = run.scratch / "train-db"
        log = run.scratch / "train.log"
        run.say("PGO training run: db_bench fillseq, readrandom, seekrandom, overwrite")
        with log.open("w") as f:
            for i, (bench, extra) in enumerate(TRAINING):
                run.progress(i / len(TRAINING), f"training: {bench}")
                argv = [str(db_bench), f"--db={db}", f"--benchmarks={bench}", f"--num={TRAINING_KEYS}", *extra]
                r = subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT, check=False)
                if r.returncode != 0:
                    run.attach("training", log)
                    raise DbsweepError(f"the PGO training run's {bench} failed (exit {r.returncode})")
        run.attach("training", log)


def make_lists(text: str) -> Iterator[tuple[str, str]]:
    """(variable, word) for each word a makefile assigns to a variable, `NAME = a.cc b.cc \\` and the lines it
    continues, or `NAME += ...`; whatever the conditionals around them (src.mk's are for other platforms)."""
    name: str | None = None
    for raw in text.splitlines():
        m = _ASSIGNMENT.match(raw)
        if m is not None:
            name, rest = m.group(1), m.group(2)
        elif name is not None:
            rest = raw
        else:
            continue
        for word in rest.replace("\\", " ").split():
            yield name, word
        if not raw.rstrip().endswith("\\"):
            name = None


RECIPE = RocksdbRecipe()
