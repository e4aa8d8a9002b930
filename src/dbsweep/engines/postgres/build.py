"""Postgres's build recipe: configure and make, for `dbsweep.build.cache`.

configure always gets `--enable-debug` (keeps `-g`, which does not change code generation, so profiles
can be taken) and, from Postgres 14, `--with-lz4`; Postgres 18+ also gets `--with-liburing` (the method's
build scripts, methodology 5.1). A variant without CFLAGS lets configure pick Postgres's own `-O2`.

The object tree is a VPATH build (the build directory runs `<tree>/configure`), so one unpacked source
tree serves every variant. Compiling through ccache is `make CC="ccache gcc"`. Only what dbsweep runs is
built and installed (`PARTS`: the server and what it loads, initdb, pg_ctl, pg_config, psql for a person at the
server), each directory made in the order Postgres's own src/Makefile makes them (one at a time, as it does):
not ecpg, the backup, dump and upgrade tools, the regression and isolation tests (about a sixth of a full
`make`'s objects), nor the documentation, which `make` never builds. Besides the server, the contrib modules
later benchmarks need are installed (the statements' statistics, table bloat, pg_prewarm).

PGO: the instrumented build gets `PROFILE=-fprofile-generate=<dir>` on the make command line (not in
CFLAGS, so configure's test programs leave no profiles behind); the training run starts the instrumented
server as the server user and runs a short sysbench workload with the load client; the profile must hold
the backend's objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from dbsweep import loadclient
from dbsweep.build.autoconf import diagnose_configure
from dbsweep.build.compiler import output
from dbsweep.build.recipe import Facts, Failure, LogFn, Phase, Recipe, Step, TrainingRun, major_version
from dbsweep.build.variants import Variant
from dbsweep.engines import postgres
from dbsweep.engines.base import Install
from dbsweep.engines.training import DEFAULT_TRAINING, Training, training_commands
from dbsweep.errors import DbsweepError
from dbsweep.sources import SourceTree

# Objects the build of `PARTS` compiles for Postgres 15 (about 1000 for 15.18); used for progress until a build in
# this root says better.
OBJECTS_ESTIMATE = 1050
# The directories under src/ that are built and installed, in src/Makefile's order (its SUBDIRS, less the clients,
# tools and tests no benchmark runs): the server and the modules it loads (character set conversions, the
# snowball dictionaries initdb installs, the replication modules), libpq and the front-end helpers the programs
# link, and the programs dbsweep runs (initdb, pg_ctl, pg_config) or a person at the server would (psql).
PARTS = (
    "common",
    "port",
    "timezone",
    "backend",
    "backend/utils/mb/conversion_procs",
    "backend/snowball",
    "include",
    "interfaces/libpq",
    "backend/replication/libpqwalreceiver",
    "backend/replication/pgoutput",
    "fe_utils",
    "bin/initdb",
    "bin/pg_ctl",
    "bin/pg_config",
    "bin/psql",
    "pl/plpgsql",
)
# Parts a configure option adds (a variant's `configure`): what that option builds in a full `make`.
OPTIONAL_PARTS = {
    "--with-llvm": "backend/jit/llvm",
    "--with-perl": "pl/plperl",
    "--with-python": "pl/plpython",
    "--with-tcl": "pl/tcl",
}
# Extra modules later benchmarks need (the statements' statistics, table bloat).
CONTRIB = ("pg_stat_statements", "pgstattuple", "pg_prewarm")  # pg_prewarm: the instruction pass's warm-up


class PostgresRecipe(Recipe):
    engine: ClassVar[str] = "postgres"
    artefact: ClassVar[str] = "bin/postgres"
    objects_estimate: ClassVar[int] = OBJECTS_ESTIMATE
    default_cflags: ClassVar[tuple[str, ...]] = ("-O2",)  # CFLAGS replace Postgres's default -O2, so keep it
    # Make variables of Postgres's build that the environment would set (COPT is added to CFLAGS).
    leaky_env: ClassVar[tuple[str, ...]] = ("COPT", "PROFILE", "CUSTOM_COPT")
    supports_pgo: ClassVar[bool] = True

    def __init__(self, training: Training = DEFAULT_TRAINING) -> None:
        self.workload = training

    def check_tree(self, tree: SourceTree) -> None:
        if not (tree.path / "configure").is_file():
            raise DbsweepError(f"{tree.spec}: {tree.path} holds no configure script; is it a Postgres source tree?")

    def options(self, variant: Variant, version: str) -> list[str]:
        major = major_version(version)
        args = ["--enable-debug"]
        if major >= 14:  # lz4 support (--with-lz4) appeared in Postgres 14
            args.append("--with-lz4")
        if major >= 18:  # io_method=io_uring appeared in Postgres 18
            args.append("--with-liburing")
        # ICU is on by default from 16 on; it stays on (libicu-dev is a build dependency).
        args.extend(variant.configure)
        return args

    def training(self) -> dict[str, Any]:
        return self.workload.describe()

    def extra_installs(self) -> list[str]:
        return list(CONTRIB)

    def parts(self, variant: Variant, version: str) -> list[str]:
        """The directories under src/ that this build makes and installs, in order."""
        options = self.options(variant, version)
        extra = [d for opt, d in OPTIONAL_PARTS.items() if any(o.split("=")[0] == opt for o in options)]
        return [*PARTS, *extra]

    def objects_in(self, tree: SourceTree) -> int | None:
        """About the objects the parts compile: their C files (some of src/common and src/port are compiled two
        or three times, and a few files are only included: the two come out near even)."""
        src = tree.path / "src"
        if not src.is_dir():
            return None
        files = {f for part in PARTS if (src / part).is_dir() for f in (src / part).rglob("*.c") if f.is_file()}
        return len(files)

    # ---- the steps

    def configure(self, phase: Phase) -> list[Step]:
        tree, variant = phase.tree, phase.variant
        cmd = [str(tree.path / "configure"), f"--prefix={phase.prefix}", *self.options(variant, tree.version)]
        cmd.append(f"CC={phase.compiler}")
        if phase.cflags:
            cmd.append(f"CFLAGS={' '.join(phase.cflags)}")
        if phase.ldflags:
            cmd.append(f"LDFLAGS={' '.join(phase.ldflags)}")
        cmd.extend(f"{k}={v}" for k, v in variant.configure_vars)
        return [Step("configure", tuple(cmd))]

    def compile(self, phase: Phase) -> list[Step]:
        make = ("make", f"-j{phase.jobs}", *_make_vars(phase))
        # The generated headers first, as src/Makefile makes them: a part asks for them itself, but beside its
        # own compiles, so with -j a compile could start before utils/errcodes.h was there.
        headers = Step("make the generated headers", (*make, "-C", "src/backend", "generated-headers"))
        return [
            headers,
            *(
                Step(f"make in src/{part}", (*make, "-C", f"src/{part}"), compiles=True)
                for part in self.parts(phase.variant, phase.tree.version)
            ),
        ]

    def install(self, phase: Phase) -> list[Step]:
        extra = [*_make_vars(phase), *([f"DESTDIR={phase.destdir}"] if phase.destdir is not None else [])]
        make = ("make", f"-j{phase.jobs}")
        steps = [
            Step(f"make install in src/{part}", (*make, "-C", f"src/{part}", *extra, "install"))
            for part in self.parts(phase.variant, phase.tree.version)
        ]
        for module in CONTRIB:
            steps.append(Step(f"make install of {module}", (*make, "-C", f"contrib/{module}", *extra, "install")))
        return steps

    # ---- the finished install

    def probe(self, install_dir: Path) -> dict[str, Any]:
        bindir = install_dir / "bin"
        pgc = postgres.pg_config(bindir)
        return {
            "server_version": output([str(bindir / "postgres"), "--version"]).strip(),
            "pg_config": {k: pgc.get(k, "") for k in ("CC", "CFLAGS", "LDFLAGS", "CONFIGURE", "VERSION")},
        }

    def facts(self, record: Mapping[str, Any]) -> Facts:
        pgc = record["pg_config"]
        return Facts(
            version=record["server_version"],
            cc=pgc.get("CC", ""),
            cflags=pgc["CFLAGS"],
            ldflags=pgc["LDFLAGS"],
            configure=pgc["CONFIGURE"],
        )

    def install_of(self, bindir: Path, source: str, provenance: dict[str, Any]) -> Install:
        return postgres.Install(bindir, provenance["version"], source, provenance)

    # ---- PGO

    def instrumented(self, phase: Phase, profile: Path) -> Phase:
        # enable_coverage=yes only skips libpq's "no exit() calls" check, which gcc's profiling code fails.
        gen = (f"PROFILE=-fprofile-generate={profile}", "enable_coverage=yes")
        return replace(phase, tool_args=(*phase.tool_args, *gen))

    def training_user(self) -> str | None:
        return postgres.server_user()

    def train(self, run: TrainingRun) -> None:
        """Runs the training workload on the instrumented server; its processes write profiles as they exit."""
        t = self.workload
        run.say(f"PGO training run {t.name}")
        run.progress(0.0, f"training ({t.name})")
        install = postgres.Install(run.install_dir / "bin", run.tree.version, run.tree.spec)
        server = postgres.Server(install, run.scratch / "train", "pgo-training", "", user=run.user)
        logs = run.scratch / "train-logs"
        commands = training_commands(t)
        try:
            server.init()
            server.start()
            conn = loadclient.connection_to(server)
            for i, (name, args) in enumerate(commands):
                if i:
                    run.progress(i / len(commands), f"training: {name}")
                loadclient.run(args, conn, logs / f"{name}.log")
        except DbsweepError as e:
            raise DbsweepError(f"the PGO training run on the instrumented build failed: {e}") from e
        finally:
            server.stop()  # a clean shutdown: the server's processes write their profiles at exit
            run.attach("training: server log", server.log)
            for f in sorted(logs.glob("*.log")) if logs.is_dir() else []:
                run.attach(f"training: {f.name}", f)

    def check_profile(self, profile: Path, user: str | None, note: LogFn) -> dict[str, Any]:
        return self.check_server_profile(profile, user, note, ("#src#backend#",))

    def explain(self, failure: Failure) -> str:
        return diagnose_configure(failure) if failure.step.what == "configure" else ""


def _make_vars(phase: Phase) -> list[str]:
    """make's variables on every make of a phase: the compiler through ccache, and the PGO hook's."""
    return [*([f"CC=ccache {phase.compiler}"] if phase.ccache else []), *phase.tool_args]


RECIPE = PostgresRecipe()
