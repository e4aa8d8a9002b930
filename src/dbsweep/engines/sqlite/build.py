"""SQLite's build recipe, for `dbsweep.build.cache`: the amalgamation, compiled by dbsweep with the
variant's flags into the shared library the load client opens, and the `sqlite3` shell of the same object.

SQLite's own configure and make only generate the amalgamation (`sqlite3.c`, `shell.c`), in the build
directory (one unpacked tree serves every variant); the compile is dbsweep's, so every version gets the
same flags and the same compile-time options, whatever its build system (autoconf up to 3.48, autosetup
after). The options (`OPTIONS`) are SQLite's defaults with:

* `SQLITE_THREADSAFE=1`: the load client runs a connection per thread (opened with SQLITE_OPEN_NOMUTEX,
  so no mutex per call), as Debian's build does;
* what SQLite's configure finds on Linux and writes into its config.h (fdatasync, usleep, the _r time
  functions, malloc_usable_size, ...): without them SQLite falls back to fsync for every sync and to
  whole-second sleeps, which a configure-built library never does;
* `SQLITE_ENABLE_DBSTAT_VTAB`: the bytes and pages of every table and index after a step (off the path
  of every statement a benchmark sends).

Not Debian's extras (`SECURE_DELETE`, `OMIT_LOOKASIDE`, FTS, R-tree, ...), which change what a write or an
allocation costs: comparing `system` with a build measures those too, and the record says which is which.

`def` is `-O2` (the flags SQLite's configure gives when none are given); every variant adds `-g`, which
does not change the code, so profiles can be taken. PGO: the instrumented library is trained by the load
client running a short sysbench workload on it; the profile must hold `sqlite3.o`'s counts.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from dbsweep import loadclient
from dbsweep.build.autoconf import diagnose_configure
from dbsweep.build.compiler import output
from dbsweep.build.recipe import Facts, Failure, LogFn, Phase, Recipe, Step, TrainingRun
from dbsweep.build.variants import Variant
from dbsweep.engines.base import Install
from dbsweep.engines.sqlite.install import LIBRARY_NAME, library_facts
from dbsweep.engines.sqlite.install import Install as SqliteInstall
from dbsweep.engines.training import DEFAULT_TRAINING, Training, training_commands
from dbsweep.errors import DbsweepError
from dbsweep.sources import SourceTree

OPTIONS = (
    "-DSQLITE_THREADSAFE=1",
    "-DSQLITE_ENABLE_DBSTAT_VTAB",
    "-DHAVE_FDATASYNC=1",
    "-DHAVE_USLEEP=1",
    "-DHAVE_NANOSLEEP=1",
    "-DHAVE_LOCALTIME_R=1",
    "-DHAVE_GMTIME_R=1",
    "-DHAVE_STRCHRNUL=1",
    "-DHAVE_ISNAN=1",
    "-DHAVE_MALLOC_H=1",
    "-DHAVE_MALLOC_USABLE_SIZE=1",
    "-DHAVE_POSIX_FALLOCATE=1",
    "-DHAVE_UTIME=1",
)
LIBS = ("-lm", "-ldl", "-lpthread")
RECORD = "share/dbsweep/build.json"  # under the install: the flags and options the compile used


class SqliteRecipe(Recipe):
    engine: ClassVar[str] = "sqlite"
    artefact: ClassVar[str] = f"lib/{LIBRARY_NAME}"
    objects_estimate: ClassVar[int] = 2  # sqlite3.o and shell.o, which its compile steps make (`Step.objects`)
    default_cflags: ClassVar[tuple[str, ...]] = ("-O2",)
    supports_pgo: ClassVar[bool] = True

    def __init__(self, training: Training = DEFAULT_TRAINING) -> None:
        self.workload = training

    def check_tree(self, tree: SourceTree) -> None:
        if not (tree.path / "configure").is_file() or not (tree.path / "src").is_dir():
            raise DbsweepError(
                f"{tree.spec}: {tree.path} is not SQLite's canonical source tree (configure and src/); "
                "dbsweep builds the amalgamation from it"
            )

    def options(self, variant: Variant, version: str) -> list[str]:
        # The configure options only shape the amalgamation's generation (the variant's, e.g.
        # --enable-update-limit, change its code); the compile-time options are dbsweep's.
        return [*OPTIONS, *variant.configure]

    def training(self) -> dict[str, Any]:
        return self.workload.describe()

    # ---- the steps

    def _cflags(self, phase: Phase) -> list[str]:
        return [*(phase.cflags or self.default_cflags), "-g", "-fPIC"]

    def _cc(self, phase: Phase) -> list[str]:
        return ["ccache", phase.compiler] if phase.ccache else [phase.compiler]

    def configure(self, phase: Phase) -> list[Step]:
        configure_opts = [o for o in self.options(phase.variant, phase.tree.version) if o.startswith("--")]
        cmd = [str(phase.tree.path / "configure"), "--disable-tcl", f"CC={phase.compiler}", *configure_opts]
        return [Step("configure", tuple(cmd))]

    def compile_command(self, phase: Phase) -> list[str]:
        """The compile of the library's object: the build's recorded "configure line"."""
        defines = [o for o in self.options(phase.variant, phase.tree.version) if o.startswith("-D")]
        return [*self._cc(phase), *self._cflags(phase), *defines, "-c", "sqlite3.c", "-o", "sqlite3.o"]

    def compile(self, phase: Phase) -> list[Step]:
        cflags = self._cflags(phase)
        defines = [o for o in self.options(phase.variant, phase.tree.version) if o.startswith("-D")]
        link = [phase.compiler, *cflags, *phase.ldflags]
        return [
            Step("make sqlite3.c shell.c", ("make", "sqlite3.c", "shell.c")),
            # One object each, and silent: the progress counts them as they end.
            Step("compile sqlite3.c", tuple(self.compile_command(phase)), objects=1),
            Step("compile shell.c", (*self._cc(phase), *cflags, *defines, "-c", "shell.c", "-o", "shell.o"), objects=1),
            Step("link the library", (*link, "-shared", "-o", LIBRARY_NAME, "sqlite3.o", *LIBS)),
            Step("link the shell", (*link, "-o", "sqlite3", "shell.o", "sqlite3.o", *LIBS)),
        ]

    def install(self, phase: Phase) -> list[Step]:
        root = Path(f"{phase.destdir}{phase.prefix}") if phase.destdir is not None else phase.prefix
        record = {
            "cc": phase.compiler,
            "cflags": " ".join(self._cflags(phase)),
            "ldflags": " ".join(phase.ldflags),
            "options": [o for o in self.options(phase.variant, phase.tree.version) if o.startswith("-D")],
            "compile": shlex.join(self.compile_command(phase)),
        }
        # Written by a step (an argument list, no shell), so it lands under DESTDIR with the rest.
        write = (
            "import pathlib, sys; p = pathlib.Path(sys.argv[1]); "
            "p.parent.mkdir(parents=True, exist_ok=True); p.write_text(sys.argv[2])"
        )
        return [
            Step(
                "install the library", ("install", "-D", "-m", "0755", LIBRARY_NAME, str(root / "lib" / LIBRARY_NAME))
            ),
            Step("install the shell", ("install", "-D", "-m", "0755", "sqlite3", str(root / "bin" / "sqlite3"))),
            Step(
                "install sqlite3.h", ("install", "-D", "-m", "0644", "sqlite3.h", str(root / "include" / "sqlite3.h"))
            ),
            Step("record the flags", (sys.executable, "-c", write, str(root / RECORD), json.dumps(record, indent=1))),
        ]

    # ---- the finished install

    def probe(self, install_dir: Path) -> dict[str, Any]:
        facts = library_facts(str(install_dir / "lib" / LIBRARY_NAME))
        record = json.loads((install_dir / RECORD).read_text())
        return {
            "library_version": f"{facts['library_version']} {facts['source_id']}",
            "shell_version": output([str(install_dir / "bin" / "sqlite3"), "--version"]).strip(),
            "compile_options": facts["compile_options"],
            "flags": record,
        }

    def facts(self, record: Mapping[str, Any]) -> Facts:
        flags = record["flags"]
        return Facts(
            version=record["library_version"],
            cc=flags["cc"],
            # The compile-time options with the flags: both change the code, and the reports show this line.
            cflags=" ".join([flags["cflags"], *flags["options"]]),
            ldflags=flags["ldflags"],
            configure=flags["compile"],
        )

    def install_of(self, bindir: Path, source: str, provenance: dict[str, Any]) -> Install:
        lib = bindir.parent / "lib" / LIBRARY_NAME
        prov = {**provenance, "library": str(lib)}
        prov.setdefault("compile_options", library_facts(str(lib))["compile_options"])
        return SqliteInstall(bindir, provenance["version"], source, prov)

    # ---- PGO

    def train(self, run: TrainingRun) -> None:
        """The load client runs the training workload on the instrumented library; it writes the profile as
        it exits."""
        from dbsweep.engines.sqlite.instance import Database

        t = self.workload
        run.say(f"PGO training run {t.name}")
        run.progress(0.0, f"training ({t.name})")
        install = SqliteInstall(run.install_dir / "bin", run.tree.version, run.tree.spec)
        db = Database(install, run.scratch / "train", "pgo-training", "journal_mode = wal\n")
        logs = run.scratch / "train-logs"
        commands = training_commands(t)
        try:
            db.init()
            db.start()
            for i, (name, args) in enumerate(commands):
                if i:
                    run.progress(i / len(commands), f"training: {name}")
                loadclient.run(args, db.access(), logs / f"{name}.log")
        except DbsweepError as e:
            raise DbsweepError(f"the PGO training run on the instrumented build failed: {e}") from e
        finally:
            db.stop()
            for f in sorted(logs.glob("*.log")) if logs.is_dir() else []:
                run.attach(f"training: {f.name}", f)

    def check_profile(self, profile: Path, user: str | None, note: LogFn) -> dict[str, Any]:
        files = list(profile.glob("*.gcda"))
        library = [f for f in files if f.name.endswith("sqlite3.gcda")]
        note(f"PGO profile: {len(files)} files, {len(library)} of the library, in {profile}")
        if not library:
            raise DbsweepError(f"the PGO training run left no profile of sqlite3.o in {profile} ({len(files)} files)")
        return {"profile_files": len(files), "profile_bytes": sum(f.stat().st_size for f in files)}

    def explain(self, failure: Failure) -> str:
        if failure.step.what == "configure":
            return diagnose_configure(failure)
        if failure.step.what.startswith("make sqlite3.c") and "tclsh" in failure.tail:
            return " Generating SQLite's amalgamation needs tclsh (apt-get install tcl; scripts/setup.sh does)."
        return ""


RECIPE = SqliteRecipe()
