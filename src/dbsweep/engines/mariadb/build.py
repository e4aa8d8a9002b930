"""MariaDB's build recipe: CMake, for `dbsweep.build.cache`.

`cmake -S <tree> -B .` in the build directory (out of tree: one unpacked tree serves every variant), always
`CMAKE_BUILD_TYPE=RelWithDebInfo` (the build type of MariaDB's releases: `-O2 -g`, and `-g` does not change
the code, so profiles can be taken), the standalone layout (bin/, scripts/, lib/plugin/), and only what a
benchmark needs: the server with InnoDB, MyRocks as a plugin (`PLUGIN_ROCKSDB=DYNAMIC`, loaded by the configs
that use it) and the client tools; not the storage engines and features no benchmark loads (Mroonga, Spider,
ColumnStore, CONNECT, TokuDB, OQGraph, S3, Galera, the embedded server, mariabackup, the unit tests, the test
suite's install). An option a version does not have (TokuDB is gone from 10.6, ColumnStore is not in every
tarball) is a harmless CMake warning. PCRE2 and {fmt} come from the system (`WITH_PCRE=system`, `WITH_LIBFMT=
system`): MariaDB would otherwise download them during the build.

A variant's flags replace the build type's (`CMAKE_C_FLAGS_RELWITHDEBINFO` and the C++ one, as the method's
MySQL builds set `CMAKE_C_FLAGS_RELEASE`, 5.2), keeping `-g -DNDEBUG`; `def` keeps MariaDB's own. LDFLAGS go to
the executables', shared libraries' and plugins' link flags. Compiling through ccache is CMake's compiler
launcher. A variant's `configure` options go to cmake as given; its `configure_vars` become cache entries
(`AR`, `RANLIB` and `NM` as CMake's `CMAKE_AR`, ...).

The record of a build is CMake's own: its cache (CMakeCache.txt) is installed under share/dbsweep/ with the
cmake command line; the probe reads the compiler and the flags from it and asks `mariadbd --version`.

PGO: the instrumented build gets `-fprofile-generate=<dir>` in its flags (the build type's, so CMake's
compile checks leave no profiles behind; the link flags too); the training run starts the instrumented server
as the server user and runs a short sysbench workload with the load client; the profile must hold the
server's objects (sql/, InnoDB).
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from dbsweep import loadclient
from dbsweep.build.compiler import output
from dbsweep.build.recipe import Facts, Failure, LogFn, Phase, Recipe, Step, TrainingRun
from dbsweep.build.variants import Variant
from dbsweep.engines.base import Install
from dbsweep.engines.mariadb.install import Install as MariadbInstall
from dbsweep.engines.mariadb.install import server_user, server_version_line
from dbsweep.engines.mariadb.instance import Server
from dbsweep.engines.training import DEFAULT_TRAINING, Training, training_commands
from dbsweep.errors import DbsweepError
from dbsweep.sources import SourceTree

BUILD_TYPE = "RelWithDebInfo"
# What every build of every version gets (methodology 5.2's base, for MariaDB's CMake).
OPTIONS = (
    "-DINSTALL_LAYOUT=STANDALONE",
    "-DPLUGIN_ROCKSDB=DYNAMIC",
    "-DPLUGIN_MROONGA=NO",
    "-DPLUGIN_SPIDER=NO",
    "-DPLUGIN_COLUMNSTORE=NO",
    "-DPLUGIN_CONNECT=NO",
    "-DPLUGIN_TOKUDB=NO",
    "-DPLUGIN_OQGRAPH=NO",
    "-DPLUGIN_S3=NO",
    "-DPLUGIN_SPHINX=NO",
    "-DPLUGIN_AUTH_GSSAPI=NO",
    "-DWITH_WSREP=OFF",
    "-DWITH_EMBEDDED_SERVER=OFF",
    "-DWITH_MARIABACKUP=OFF",
    "-DWITH_UNIT_TESTS=OFF",
    "-DCONC_WITH_UNIT_TESTS=OFF",
    "-DWITH_SSL=system",
    "-DWITH_PCRE=system",
    "-DWITH_LIBFMT=system",
    "-DMYSQL_MAINTAINER_MODE=OFF",
    "-DINSTALL_MYSQLTESTDIR=",
    "-DINSTALL_SQLBENCHDIR=",
)
# A variant's variables that CMake knows by another name.
_CMAKE_VARS = {"AR": "CMAKE_AR", "RANLIB": "CMAKE_RANLIB", "NM": "CMAKE_NM"}
# Objects a build with these options compiles (10.11.18: 1,456); for progress until a build in this root says better.
OBJECTS_ESTIMATE = 1500
# Under the install: CMake's cache and the cmake command line (the build's record).
RECORD_DIR = "share/dbsweep"
CACHE_RECORD = f"{RECORD_DIR}/CMakeCache.txt"
COMMAND_RECORD = f"{RECORD_DIR}/build.json"
# Makefiles' line for each object CMake compiles.
_OBJECT_LINE = re.compile(rb"Building (?:C|CXX|ASM) object ")


def cxx_compiler(compiler: str) -> str:
    """The C++ compiler of a C compiler name: g++ for gcc, clang++-16 for clang-16."""
    family, dash, version = compiler.partition("-")
    cxx = {"gcc": "g++", "clang": "clang++"}.get(family)
    if cxx is None:
        raise DbsweepError(f"no C++ compiler is known for {compiler!r}")
    return f"{cxx}{dash}{version}"


class MariadbRecipe(Recipe):
    engine: ClassVar[str] = "mariadb"
    title: ClassVar[str] = "MariaDB"
    artefact: ClassVar[str] = "bin/mariadbd"
    # What every build gets; another engine of the family (MySQL) gives its own.
    base_options: ClassVar[tuple[str, ...]] = OPTIONS
    install_type: ClassVar[type[MariadbInstall]] = MariadbInstall
    server_type: ClassVar[type[Server]] = Server
    objects_estimate: ClassVar[int] = OBJECTS_ESTIMATE
    object_line: ClassVar[re.Pattern[bytes]] = _OBJECT_LINE
    default_cflags: ClassVar[tuple[str, ...]] = ("-O2",)  # the build type's level, kept when PGO adds flags
    # CMake's own environment variables that would change what it builds.
    leaky_env: ClassVar[tuple[str, ...]] = (
        "CMAKE_GENERATOR",
        "CMAKE_BUILD_TYPE",
        "CMAKE_TOOLCHAIN_FILE",
        "CMAKE_PREFIX_PATH",
        "CMAKE_C_COMPILER_LAUNCHER",
        "CMAKE_CXX_COMPILER_LAUNCHER",
        "CMAKE_EXPORT_COMPILE_COMMANDS",
        "CMAKE_BUILD_PARALLEL_LEVEL",
        "VERBOSE",
    )
    supports_pgo: ClassVar[bool] = True

    def __init__(self, training: Training = DEFAULT_TRAINING) -> None:
        self.workload = training

    def check_tree(self, tree: SourceTree) -> None:
        if not (tree.path / "CMakeLists.txt").is_file() or not (tree.path / "VERSION").is_file():
            raise DbsweepError(f"{tree.spec}: {tree.path} holds no CMakeLists.txt and VERSION; is it MariaDB's source?")

    def options(self, variant: Variant, version: str) -> list[str]:
        extra = [f"-D{_CMAKE_VARS.get(k, k)}={v}" for k, v in variant.configure_vars]
        return [*self.base_options, *variant.configure, *extra]

    def training(self) -> dict[str, Any]:
        return self.workload.describe()

    # ---- the steps

    def cmake_command(self, phase: Phase) -> list[str]:
        cmd = [
            "cmake",
            "-S",
            str(phase.tree.path),
            "-B",
            ".",
            f"-DCMAKE_BUILD_TYPE={BUILD_TYPE}",
            f"-DCMAKE_INSTALL_PREFIX={phase.prefix}",
            f"-DCMAKE_C_COMPILER={phase.compiler}",
            f"-DCMAKE_CXX_COMPILER={cxx_compiler(phase.compiler)}",
        ]
        if phase.ccache:
            cmd += ["-DCMAKE_C_COMPILER_LAUNCHER=ccache", "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
        if phase.cflags:
            # The build type's flags, which come after CMAKE_C_FLAGS on every compile: ours must be last.
            flags = " ".join([*phase.cflags, "-g", "-DNDEBUG"])
            cmd += [f"-DCMAKE_C_FLAGS_{BUILD_TYPE.upper()}={flags}", f"-DCMAKE_CXX_FLAGS_{BUILD_TYPE.upper()}={flags}"]
        if phase.ldflags:
            ld = " ".join(phase.ldflags)
            cmd += [f"-DCMAKE_{kind}_LINKER_FLAGS={ld}" for kind in ("EXE", "SHARED", "MODULE")]
        cmd += self.options(phase.variant, phase.tree.version)
        return cmd

    def configure(self, phase: Phase) -> list[Step]:
        return [Step("cmake", tuple(self.cmake_command(phase)))]

    def compile(self, phase: Phase) -> list[Step]:
        return [Step("cmake --build", ("cmake", "--build", ".", "--parallel", str(phase.jobs)), compiles=True)]

    def install(self, phase: Phase) -> list[Step]:
        root = Path(f"{phase.destdir}{phase.prefix}") if phase.destdir is not None else phase.prefix
        env = {"DESTDIR": str(phase.destdir)} if phase.destdir is not None else {}
        record = {"cmake": shlex.join(self.cmake_command(phase)), "compiler": phase.compiler}
        # Written by a step (an argument list, no shell), so it lands under DESTDIR with the rest.
        write = (
            "import pathlib, sys; p = pathlib.Path(sys.argv[1]); "
            "p.parent.mkdir(parents=True, exist_ok=True); p.write_text(sys.argv[2])"
        )
        return [
            *self.install_files(phase, root, env),
            Step("keep CMake's cache", ("install", "-D", "-m", "0644", "CMakeCache.txt", str(root / CACHE_RECORD))),
            Step(
                "record the cmake command",
                (sys.executable, "-c", write, str(root / COMMAND_RECORD), json.dumps(record, indent=1)),
            ),
        ]

    def install_files(self, phase: Phase, root: Path, env: dict[str, str]) -> list[Step]:
        """The steps that install what the build made under `root` (the staged install's root)."""
        return [Step("cmake --install", ("cmake", "--install", "."), env=env)]

    # ---- the finished install

    def probe(self, install_dir: Path) -> dict[str, Any]:
        cache = read_cmake_cache(install_dir / CACHE_RECORD)
        record = json.loads((install_dir / COMMAND_RECORD).read_text())
        kind = BUILD_TYPE.upper()
        keys = [
            *("CMAKE_BUILD_TYPE", "CMAKE_C_COMPILER", "CMAKE_CXX_COMPILER", "CMAKE_C_FLAGS", "CMAKE_CXX_FLAGS"),
            *(
                f"CMAKE_C_FLAGS_{kind}",
                f"CMAKE_CXX_FLAGS_{kind}",
                "CMAKE_EXE_LINKER_FLAGS",
                "CMAKE_MODULE_LINKER_FLAGS",
            ),
        ]
        return {
            "server_version": server_version_line(install_dir / self.artefact),
            "compiler_version": output([record["compiler"], "--version"]).splitlines()[0].strip(),
            "cmake_cache": {k: cache.get(k, "") for k in keys},
            "cmake": record["cmake"],
        }

    def facts(self, record: Mapping[str, Any]) -> Facts:
        cache = record["cmake_cache"]
        kind = BUILD_TYPE.upper()
        return Facts(
            version=record["server_version"],
            cc=cache["CMAKE_C_COMPILER"],
            cflags=" ".join(f for f in (cache["CMAKE_C_FLAGS"], cache[f"CMAKE_C_FLAGS_{kind}"]) if f),
            ldflags=cache["CMAKE_EXE_LINKER_FLAGS"],
            configure=record["cmake"],
        )

    def install_of(self, bindir: Path, source: str, provenance: dict[str, Any]) -> Install:
        return self.install_type(bindir, provenance["version"], source, provenance)

    # ---- PGO

    def training_user(self) -> str | None:
        return server_user()

    def train(self, run: TrainingRun) -> None:
        """Runs the training workload on the instrumented server; it writes its profile at its clean shutdown."""
        t = self.workload
        run.say(f"PGO training run {t.name}")
        run.progress(0.0, f"training ({t.name})")
        install = self.install_type(run.install_dir / "bin", run.tree.version, run.tree.spec)
        server = self.server_type(install, run.scratch / "train", "pgo-training", "", user=run.user)
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
            server.stop()  # a clean shutdown: the server writes its profile at exit
            run.attach("training: server log", server.log)
            for f in sorted(logs.glob("*.log")) if logs.is_dir() else []:
                run.attach(f"training: {f.name}", f)

    def check_profile(self, profile: Path, user: str | None, note: LogFn) -> dict[str, Any]:
        return self.check_server_profile(profile, user, note, ("#sql#", "#storage#innobase#"))

    def explain(self, failure: Failure) -> str:
        if failure.step.what != "cmake":
            return ""
        failure.attach("CMakeError.log", failure.phase.build_dir / "CMakeFiles" / "CMakeError.log")
        missing = re.findall(r"Could NOT find (\w+)|(\w+) (?:is )?required but not found", failure.tail)
        names = sorted({a or b for a, b in missing})
        if names:
            return (
                f" CMake did not find {', '.join(names)}: install the development packages scripts/setup.sh "
                f"lists for building {self.title}."
            )
        return ""


def read_cmake_cache(path: Path) -> dict[str, str]:
    """`NAME:TYPE=VALUE` entries of a CMakeCache.txt, by name."""
    out: dict[str, str] = {}
    for line in path.read_text(errors="replace").splitlines():
        if not line or line.startswith(("#", "//")):
            continue
        key, sep, value = line.partition("=")
        if sep:
            out[key.partition(":")[0]] = value
    return out


RECIPE = MariadbRecipe()
