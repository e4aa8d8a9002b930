"""MariaDB behind the engine boundary, without running a server: its Debian names and tree versions, my.cnf
config diffs read, refused, fitted and sized, what an install says of itself and where its programs are, the
option file and accounts an instance gets, the log lines that explain a failure, and the CMake recipe's steps."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from dbsweep.build import cache
from dbsweep.build.compiler import Compiler
from dbsweep.build.recipe import Phase
from dbsweep.build.variants import Variant, builtin
from dbsweep.configdiff import ConfigDiff
from dbsweep.engines.mariadb import Install, Server, config, instance, source, stop_stale
from dbsweep.engines.mariadb import install as installs
from dbsweep.engines.mariadb.build import OPTIONS, RECIPE, cxx_compiler, read_cmake_cache
from dbsweep.engines.registry import engine_named
from dbsweep.errors import DbsweepError
from dbsweep.sources import SourceTree, debian

VERSION_LINE = "mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)"


# ---- sources ------------------------------------------------------------------------------------------


def test_debian_names_and_versions(tmp_path: Path) -> None:
    assert source.debian_package("10.5.29") == source.debian_package("1:10.5.29-0+deb11u1") == "mariadb-10.5"
    assert source.debian_package("10.11.19") == source.debian_package("1:11.8.9+ds-0+deb13u1") == "mariadb"
    assert source.debian_major("mariadb-10.5") == 10 and source.debian_major("mariadb") is not None
    assert source.debian_major("mariadb-connector-c") is None and source.debian_major("mariadb-mysql-kbs") is None
    assert source.major_of("11.8.9+ds") == 11 and source.series_of("1:10.11.19-0+deb12u1") == (10, 11)
    with pytest.raises(DbsweepError, match="not a MariaDB version"):
        source.debian_package("ten")
    (tmp_path / "CMakeLists.txt").write_text("project(MySQL)\n")
    (tmp_path / "VERSION").write_text(
        "MYSQL_VERSION_MAJOR=10\nMYSQL_VERSION_MINOR=11\nMYSQL_VERSION_PATCH=19\nMYSQL_VERSION_EXTRA=\n"
        "SERVER_MATURITY=stable\n"
    )
    assert source.tree_version(tmp_path) == "10.11.19"
    (tmp_path / "VERSION").write_text("MYSQL_VERSION_MAJOR=12\nMYSQL_VERSION_MINOR=0\nMYSQL_VERSION_PATCH=1\n")
    assert source.tree_version(tmp_path) == "12.0.1"
    with pytest.raises(DbsweepError, match="does not look like a MariaDB source tree"):
        source.tree_version(tmp_path / "missing")


def test_the_unversioned_package_carries_several_majors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`mariadb` holds 10.11 in bookworm and 11.8 in trixie: each version's major is its own, and Debian's
    repacked tarball (11.8.9+ds) is the upstream 11.8.9."""
    stanzas = [
        ("mariadb-10.5", "1:10.5.29-0+deb11u1"),
        ("mariadb", "1:10.11.19-0+deb12u1"),
        ("mariadb", "1:11.8.9+ds-0+deb13u1"),
        ("mariadb-connector-c", "1:3.3.8-1"),
    ]
    index = b"".join(f"Package: {p}\nBinary: {p}\nVersion: {v}\n\n".encode() for p, v in stanzas)
    monkeypatch.setattr(debian, "_index_files", lambda root: [("Sources", "trixie")])
    monkeypatch.setattr(debian, "_index_text", lambda filename: index)
    found = debian._query(tmp_path, source.NAMING)
    assert [(s.package, s.upstream_version, s.major) for s in found] == [
        ("mariadb-10.5", "10.5.29", 10),
        ("mariadb", "10.11.19", 10),
        ("mariadb", "11.8.9+ds", 11),
    ]
    assert debian.not_listed(found, "11.8.9", naming=source.NAMING) is None
    assert debian.not_listed(found, "10.6.1", naming=source.NAMING) == (
        "no Debian source for MariaDB 10.6.1; have: 10.11.19, 11.8.9+ds"
    )


# ---- configs -----------------------------------------------------------------------------------------------


def _lines(text: str) -> list[tuple[str, str]]:
    return [(ln, f"x.cnf:{n}") for n, ln in enumerate(text.splitlines(), 1)]


def _diff(text: str, name: str = "x") -> ConfigDiff:
    return ConfigDiff(name, text, config.parse(_lines(text)))


def test_configs_are_read_as_the_server_reads_an_option_file() -> None:
    text = (
        "# a comment\n; another\n[mysqld]\ninnodb-buffer-pool-size = 8G  # why\nskip_log_bin\n"
        "loose-rocksdb_block_cache_size=1G\nrocksdb_default_cf_options = 'a=1;b={c=2}'\nINNODB_IO_CAPACITY=10000\n"
    )
    assert [(s.name, s.value, s.origin) for s in config.parse(_lines(text))] == [
        ("innodb_buffer_pool_size", "8G", "x.cnf:4"),
        ("skip_log_bin", "", "x.cnf:5"),
        ("loose_rocksdb_block_cache_size", "1G", "x.cnf:6"),
        ("rocksdb_default_cf_options", "a=1;b={c=2}", "x.cnf:7"),
        ("innodb_io_capacity", "10000", "x.cnf:8"),
    ]
    assert config.include_target("!include base.cnf") == "base.cnf"
    assert config.include_target("!includedir /etc/mysql") is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("port = 3306", r"x.cnf:1: port cannot be set in a config: dbsweep picks a free loopback port"),
        ("bind-address=0.0.0.0", r"x.cnf:1: bind-address cannot be set in a config: servers listen on loopback only"),
        ("loose-skip-grant-tables", r"x.cnf:1: loose-skip-grant-tables cannot be set in a config: every server has"),
        ("skip-networking", r"x.cnf:1: skip-networking cannot be set in a config"),
        ("datadir=/var/lib/mysql", r"x.cnf:1: datadir cannot be set in a config"),
        ("[client]\nuser=root", r"x.cnf:1: section \[client\] is not one every server reads"),
        ("[mariadb-10.11]", r"x.cnf:1: section \[mariadb-10.11\] is not one every server reads"),
        ("!includedir /etc/mysql/conf.d", r"x.cnf:1: !includedir is not supported"),
        ("= 5", r"x.cnf:1: cannot read '= 5'"),
    ],
)
def test_configs_refuse_what_is_dbsweeps_or_unreadable(text: str, expected: str) -> None:
    with pytest.raises(DbsweepError, match=expected):
        config.parse(_lines(text))


def test_a_config_is_fitted_to_what_the_binary_knows() -> None:
    known = {"innodb_buffer_pool_size", "log_bin", "innodb_io_capacity"}
    text = "innodb_buffer_pool_size=8G\nskip-log-bin\ninnodb_idle_flush_pct = 100\nloose_rocksdb_x = 1\n"
    with pytest.raises(DbsweepError) as e:
        config.fit_to_version(_diff(text, "cz"), known, "10.11.19", set())
    assert str(e.value) == (
        "config cz sets innodb_idle_flush_pct (x.cnf:3), which MariaDB 10.11.19 does not have; "
        "list it in the study's optional_settings to apply it only where supported."
    )
    fitted, skipped = config.fit_to_version(_diff(text, "cz"), known, "10.11.19", {"innodb-idle-flush-pct"})
    assert skipped == ["innodb_idle_flush_pct", "rocksdb_x"]
    assert fitted.splitlines() == [
        "innodb_buffer_pool_size=8G",
        "skip-log-bin",
        "# not in MariaDB 10.11.19, skipped: innodb_idle_flush_pct = 100",
        "# not in MariaDB 10.11.19, skipped: loose_rocksdb_x = 1",
    ]
    assert config.fit_to_version(_diff("innodb_io_capacity=1\n"), known, "10.5.29", set()) == (
        "innodb_io_capacity=1\n",
        [],
    )


def test_connection_limit_rocksdb_and_storage() -> None:
    assert config.connection_limit(_diff("")) == (151, "MariaDB's default")
    assert config.connection_limit(_diff("max_connections=100\nmax-connections = 1K\n")) == (1024, "x.cnf:2")
    with pytest.raises(DbsweepError, match=r"sets max_connections = 'many' \(x.cnf:1\), which is not an integer"):
        config.connection_limit(_diff("max_connections=many"))
    assert config.uses_rocksdb("default_storage_engine = RocksDB\n")
    assert config.uses_rocksdb("rocksdb_block_cache_size = 1G\n")
    assert not config.uses_rocksdb("innodb_buffer_pool_size = 1G\n# rocksdb_block_cache_size = 1G\n")
    assert config.loads_rocksdb("plugin_load_add = ha_rocksdb.so\n")
    small, big = config.storage_bytes(None, 10**8), config.storage_bytes(_diff("innodb_log_file_size=4G"), 10**8)
    assert big - small == (4 << 30) - config.DEFAULT_REDO_BYTES
    assert config.int_value("8G") == 8 << 30 and config.int_value("lots") is None


def test_every_shipped_config_fits_debians_binary_by_its_option_names() -> None:
    """The shipped configs name options as the options list of 10.11 has them (the list is the binary's own,
    read by the contract tests; here: each name is a plain option name and parses)."""
    from dbsweep import configs

    names = configs.available("mariadb")
    assert {"cz12a_c2r24", "za4_c2r24"} <= set(names)
    for name in names:
        diff = configs.load("mariadb", name)
        assert diff.settings and all(s.name == config.canonical(s.name) for s in diff.settings)
    assert config.uses_rocksdb(configs.load("mariadb", "za4_c2r24").text)
    assert not config.uses_rocksdb(configs.load("mariadb", "cz12a_c2r24").text)


# ---- installs ------------------------------------------------------------------------------------------------


def _executable(path: Path, text: str = "#!/bin/sh\nexit 0\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def test_an_install_finds_its_programs_and_plugins(tmp_path: Path) -> None:
    # Debian's split: the server in sbin, the tools in bin, the plugins in lib/mysql/plugin.
    usr = tmp_path / "usr"
    _executable(usr / "sbin" / "mariadbd")
    _executable(usr / "bin" / "mariadb-install-db")
    (usr / "lib" / "mysql" / "plugin").mkdir(parents=True)
    (usr / "lib" / "mysql" / "plugin" / "ha_rocksdb.so").write_text("")
    system = Install(usr / "bin", VERSION_LINE, "system")
    assert system.short_version == "10.11.19"
    assert system.server == usr / "sbin" / "mariadbd" and system.basedir == usr
    assert system.bin("mariadb-install-db") == usr / "bin" / "mariadb-install-db"
    assert system.plugin_dir == usr / "lib" / "mysql" / "plugin" and system.has_rocksdb
    # A build's standalone layout: bin/, scripts/, lib/plugin/.
    prefix = tmp_path / "build" / "install"
    _executable(prefix / "bin" / "mariadbd")
    _executable(prefix / "scripts" / "mariadb-install-db")
    (prefix / "lib" / "plugin").mkdir(parents=True)
    built = Install(prefix / "bin", "10.5.29", "10.5.29")
    assert built.short_version == "10.5.29" and built.server == prefix / "bin" / "mariadbd"
    assert built.bin("mariadb-install-db") == prefix / "scripts" / "mariadb-install-db"
    assert built.plugin_dir == prefix / "lib" / "plugin" and not built.has_rocksdb
    assert built.bin("nothing") == prefix / "bin" / "nothing"


def test_known_settings_are_the_binarys_own_options(tmp_path: Path) -> None:
    """`mariadbd --no-defaults --verbose --help` (with MyRocks loaded when the install has it): every option
    line, `-` read as `_`."""
    help_text = (
        "Usage: mariadbd [OPTIONS]\n\n"
        "  --allow-suspicious-udfs \n                      Allows use of ...\n"
        "  -a, --ansi          Use ANSI SQL syntax\n"
        "  --innodb-buffer-pool-size=# \n"
        "  --rocksdb-block-cache-size=# \n"
        "  --skip-name-resolve Don't resolve hostnames\n"
        "\nVariables (--variable-name=value)\nallow-suspicious-udfs  FALSE\n"
    )
    args = tmp_path / "args"
    server = _executable(
        tmp_path / "usr" / "sbin" / "mariadbd", f"#!/bin/sh\necho \"$@\" > {args}\ncat <<'EOF'\n{help_text}EOF\n"
    )
    (tmp_path / "usr" / "lib" / "mysql" / "plugin").mkdir(parents=True)
    (tmp_path / "usr" / "lib" / "mysql" / "plugin" / "ha_rocksdb.so").write_text("")
    install = Install(tmp_path / "usr" / "bin", VERSION_LINE, "system")
    assert install.server == server
    assert engine_named("mariadb").known_settings(install) == {
        "allow_suspicious_udfs",
        "ansi",
        "innodb_buffer_pool_size",
        "rocksdb_block_cache_size",
        "skip_name_resolve",
    }
    assert args.read_text().split()[:3] == ["--no-defaults", "--verbose", "--help"]
    assert "--plugin-load-add=ha_rocksdb.so" in args.read_text().split()


def test_system_install_says_when_mariadb_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(installs, "SYSTEM_SERVER", tmp_path / "sbin" / "mariadbd")
    engine = engine_named("mariadb")
    assert engine.system_versions() == []
    with pytest.raises(DbsweepError, match=r"Debian's MariaDB is not installed .* run scripts/setup.sh"):
        engine.system_install("system")


# ---- instances (never started here) ----------------------------------------------------------------------


def _server(tmp_path: Path, config_text: str = "innodb_buffer_pool_size = 1G\n", **kw: object) -> Server:
    usr = tmp_path / "usr"
    _executable(usr / "sbin" / "mariadbd")
    (usr / "lib" / "mysql" / "plugin").mkdir(parents=True, exist_ok=True)
    install = Install(usr / "bin", VERSION_LINE, "system")
    server = engine_named("mariadb").instance(install, tmp_path / "home", "cz", config_text, None, **kw)
    assert isinstance(server, Server)
    return server


def test_the_option_file_puts_dbsweeps_settings_first_and_the_diff_after(tmp_path: Path) -> None:
    server = _server(tmp_path, "default_storage_engine = rocksdb\n")
    server.socket_dir = tmp_path / "home" / "sock"
    text = server.defaults_text(port=4242)
    lines = text.splitlines()
    assert lines[1] == "[mariadbd]"
    for wanted in (
        f"datadir = {tmp_path / 'home' / 'data'}",
        "port = 4242",
        "bind_address = 127.0.0.1",
        f"socket = {tmp_path / 'home' / 'sock' / 'mariadb.sock'}",
        f"pid_file = {tmp_path / 'home' / 'data' / 'mariadbd.pid'}",
        f"log_error = {tmp_path / 'home' / 'server.log'}",
        "skip_name_resolve",
        f"plugin_dir = {tmp_path / 'usr' / 'lib' / 'mysql' / 'plugin'}",
        "plugin_load_add = ha_rocksdb.so",  # the config makes its tables in MyRocks
    ):
        assert wanted in lines, (wanted, text)
    assert lines.index("plugin_load_add = ha_rocksdb.so") < lines.index("default_storage_engine = rocksdb")
    # The diff's own section opens again: a diff ending in [mysqld] cannot swallow anything after it.
    assert lines[lines.index("default_storage_engine = rocksdb") - 1] == "[mariadbd]"
    assert "plugin_load_add" not in _server(tmp_path / "b", "innodb_buffer_pool_size=1G\n").defaults_text(1)


def test_a_wrapped_server_does_its_io_in_threads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(instance, "known_settings", lambda install: {"innodb_buffer_pool_size_max"})
    server = _server(tmp_path, wrapper=["valgrind", "--tool=none"])
    assert server.wrapped_settings() == {"innodb_use_native_aio": "OFF", "innodb_buffer_pool_size_max": "1G"}
    assert server.defaults_text(1).rstrip().splitlines()[-2:] == [
        "innodb_use_native_aio = OFF",
        "innodb_buffer_pool_size_max = 1G",
    ]
    monkeypatch.setattr(instance, "known_settings", lambda install: set())  # 10.5: no such option
    assert server.wrapped_settings() == {"innodb_use_native_aio": "OFF"}
    assert "innodb_use_native_aio" not in _server(tmp_path / "plain").defaults_text(1)


def test_access_keeps_the_password_off_the_command_line(tmp_path: Path) -> None:
    server = _server(tmp_path)
    server.home.mkdir()
    server.password_file.write_text("s3cret\n")
    server.port, server.socket_dir = 4242, tmp_path / "home" / "sock"
    tcp, local = server.access(), server.access(via_socket=True)
    assert tcp.args == [
        "--engine", "mariadb", "--host", "127.0.0.1", "--port", "4242", "--user", "dbsweep", "--dbname", "dbsweep",
    ]  # fmt: skip
    assert local.args[3] == str(tmp_path / "home" / "sock" / "mariadb.sock")
    assert tcp.env == local.env == {"DBSWEEP_PASSWORD": "s3cret"}
    assert server.threaded and server.pid is None and server.workers() == set()


def test_the_accounts_have_a_password_and_no_anonymous_or_remote_root() -> None:
    sql = instance._accounts_sql("pw-1_X")
    assert "CREATE USER 'dbsweep'@'127.0.0.1' IDENTIFIED BY 'pw-1_X';" in sql
    assert "CREATE USER 'dbsweep'@'localhost' IDENTIFIED BY 'pw-1_X';" in sql
    assert "DELETE FROM mysql.global_priv WHERE User = '' OR (User = 'root' AND Host <> 'localhost');" in sql
    assert "CREATE DATABASE IF NOT EXISTS `dbsweep`;" in sql
    with pytest.raises(DbsweepError, match="plain letters"):
        instance._accounts_sql("x'; DROP USER root; --")


def test_the_log_lines_that_explain_a_failure(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text(
        "2026-11-24  8:45:02 0 [Note] Starting MariaDB 10.11.19-MariaDB\n"
        "2026-11-24  8:45:02 0 [Warning] Could not increase number of max_open_files to more than 20000\n"
        "2026-11-24  8:45:02 0 [ERROR] mariadbd: Error while setting value 'lots' to 'innodb-buffer-pool-size'\n"
        "2026-11-24  8:45:02 0 [ERROR] Aborting\n"
    )
    assert instance.relevant_log_lines(log).splitlines() == [
        "    2026-11-24  8:45:02 0 [ERROR] mariadbd: Error while setting value 'lots' to 'innodb-buffer-pool-size'",
        "    2026-11-24  8:45:02 0 [ERROR] Aborting",
    ]
    start = log.stat().st_size
    with log.open("a") as f:
        f.write("2026-11-24  8:45:03 0 [Note] /usr/sbin/mariadbd: ready for connections.\n")
    assert instance.relevant_log_lines(log, start=start) == (
        "    2026-11-24  8:45:03 0 [Note] /usr/sbin/mariadbd: ready for connections."
    )
    assert "no log at" in instance.relevant_log_lines(tmp_path / "missing.log")


def test_stop_stale_sets_aside_a_pid_file_it_cannot_prove(tmp_path: Path) -> None:
    datadir = tmp_path / "home" / "data"
    datadir.mkdir(parents=True)
    stop_stale(datadir)  # no PID file: nothing to do
    assert list(datadir.iterdir()) == []
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    (datadir / "mariadbd.pid").write_text(f"{gone.pid}\n")
    stop_stale(datadir)
    assert not (datadir / "mariadbd.pid").exists()
    assert [p.name.split("-")[0] for p in datadir.iterdir()] == ["mariadbd.pid.stale"]
    # This very process, which no option file of that home names: set aside, never signalled.
    (datadir / "mariadbd.pid").write_text(f"{os.getpid()}\n")
    stop_stale(datadir)
    assert not (datadir / "mariadbd.pid").exists()


def test_a_bootstrap_reads_its_sql_from_a_file_not_a_command_line(tmp_path: Path) -> None:
    """The accounts' SQL (with the password) reaches a bootstrap on its stdin (procs.run_as)."""
    from dbsweep import procs

    sql = tmp_path / "accounts.sql"
    sql.write_text("CREATE USER 'dbsweep'@'localhost' IDENTIFIED BY 'pw';\n")
    with sql.open() as f:
        r = procs.run_as(["cat"], user=None, stdin=f)
    assert r.returncode == 0 and r.stdout == sql.read_text()
    assert procs.run_as(["cat"], user=None).stdout == ""  # no stdin unless given one


# ---- the build recipe -------------------------------------------------------------------------------------------


def _phase(tmp_path: Path, variant: Variant, compiler: str = "gcc", **kw: object) -> Phase:
    tree = SourceTree("10.11.19", "debian", tmp_path / "tree", "10.11.19", "sha256:x")
    args: dict[str, object] = {
        "tree": tree,
        "variant": variant,
        "compiler": compiler,
        "build_dir": tmp_path / "b",
        "prefix": tmp_path / "p",
        "destdir": tmp_path / "d",
        "cflags": variant.cflags,
        "ldflags": variant.ldflags,
        "jobs": 2,
        "ccache": False,
    }
    args.update(kw)
    return Phase(**args)


def test_the_recipe_configures_with_cmake(tmp_path: Path) -> None:
    plain = RECIPE.cmake_command(_phase(tmp_path, builtin("def")))
    assert plain[:5] == ["cmake", "-S", str(tmp_path / "tree"), "-B", "."]
    assert "-DCMAKE_BUILD_TYPE=RelWithDebInfo" in plain
    assert f"-DCMAKE_INSTALL_PREFIX={tmp_path / 'p'}" in plain
    assert "-DCMAKE_C_COMPILER=gcc" in plain and "-DCMAKE_CXX_COMPILER=g++" in plain
    assert not [a for a in plain if "FLAGS" in a or "LAUNCHER" in a]  # def: MariaDB's own flags
    for option in ("-DPLUGIN_ROCKSDB=DYNAMIC", "-DPLUGIN_MROONGA=NO", "-DWITH_WSREP=OFF", "-DWITH_UNIT_TESTS=OFF"):
        assert option in plain and option in OPTIONS
    assert plain[-len(OPTIONS) :] == list(OPTIONS)

    lto = RECIPE.cmake_command(_phase(tmp_path, builtin("o3_native_lto"), ccache=True))
    flags = "-O3 -march=native -mtune=native -flto=auto -g -DNDEBUG"
    assert f"-DCMAKE_C_FLAGS_RELWITHDEBINFO={flags}" in lto and f"-DCMAKE_CXX_FLAGS_RELWITHDEBINFO={flags}" in lto
    for kind in ("EXE", "SHARED", "MODULE"):
        assert f"-DCMAKE_{kind}_LINKER_FLAGS=-flto=auto -Wl,--emit-relocs" in lto
    assert "-DCMAKE_C_COMPILER_LAUNCHER=ccache" in lto and "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache" in lto

    clang = Variant("clang_lto", compiler="clang-16", configure=("--fresh",), configure_vars=(("AR", "llvm-ar"),))
    cmd = RECIPE.cmake_command(_phase(tmp_path, clang, compiler="clang-16"))
    assert "-DCMAKE_CXX_COMPILER=clang++-16" in cmd and cmd[-2:] == ["--fresh", "-DCMAKE_AR=llvm-ar"]
    assert cxx_compiler("gcc-13") == "g++-13"
    with pytest.raises(DbsweepError, match="no C\\+\\+ compiler"):
        cxx_compiler("icc")


def test_the_recipe_builds_installs_and_records(tmp_path: Path) -> None:
    phase = _phase(tmp_path, builtin("o2_nofp"))
    (compile_step,) = RECIPE.compile(phase)
    assert compile_step.argv == ("cmake", "--build", ".", "--parallel", "2") and compile_step.compiles
    assert RECIPE.object_line.search(b"[ 12%] Building CXX object sql/CMakeFiles/sql.dir/sql_parse.cc.o")
    assert not RECIPE.object_line.search(b"[100%] Linking CXX executable mariadbd")
    install, keep, record = RECIPE.install(phase)
    assert install.argv == ("cmake", "--install", ".") and install.env == {"DESTDIR": str(tmp_path / "d")}
    assert keep.argv[-1] == f"{tmp_path / 'd'}{tmp_path / 'p'}/share/dbsweep/CMakeCache.txt"
    assert json.loads(record.argv[-1])["cmake"].startswith("cmake -S ")
    assert RECIPE.artefact == "bin/mariadbd" and RECIPE.supports_pgo
    # PGO's instrumented phase: the profile flags go where the variant's do, and to the link.
    gen = RECIPE.cmake_command(RECIPE.instrumented(phase, tmp_path / "profile"))
    generate = f"-fprofile-generate={tmp_path / 'profile'}"
    assert f"-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -fno-omit-frame-pointer {generate} -g -DNDEBUG" in gen
    assert f"-DCMAKE_EXE_LINKER_FLAGS=-fprofile-generate={tmp_path / 'profile'}" in gen


def test_the_record_is_cmakes_own_cache(tmp_path: Path) -> None:
    cache_file = tmp_path / "CMakeCache.txt"
    cache_file.write_text(
        "# This is the CMakeCache file.\n//Flags used by the C compiler\nCMAKE_C_FLAGS:STRING=\n"
        "CMAKE_C_FLAGS_RELWITHDEBINFO:STRING=-O3 -g -DNDEBUG -DDBUG_OFF\nCMAKE_C_COMPILER:FILEPATH=/usr/bin/gcc\n"
        "CMAKE_EXE_LINKER_FLAGS:STRING=-flto=auto\n"
    )
    got = read_cmake_cache(cache_file)
    assert got["CMAKE_C_FLAGS_RELWITHDEBINFO"] == "-O3 -g -DNDEBUG -DDBUG_OFF" and got["CMAKE_C_FLAGS"] == ""
    record = {
        "server_version": VERSION_LINE,
        "cmake": "cmake -S /src -B .",
        "cmake_cache": {
            "CMAKE_C_COMPILER": "/usr/bin/gcc",
            "CMAKE_C_FLAGS": "",
            "CMAKE_C_FLAGS_RELWITHDEBINFO": "-O3 -g -DNDEBUG -DDBUG_OFF",
            "CMAKE_EXE_LINKER_FLAGS": "-flto=auto",
        },
    }
    facts = RECIPE.facts(record)
    assert (facts.version, facts.cc, facts.cflags, facts.ldflags) == (
        VERSION_LINE,
        "/usr/bin/gcc",
        "-O3 -g -DNDEBUG -DDBUG_OFF",
        "-flto=auto",
    )
    assert facts.configure == "cmake -S /src -B ."


def test_the_cache_key_covers_the_recipes_options(tmp_path: Path) -> None:
    tree = SourceTree("10.11.19", "debian", tmp_path, "10.11.19", "sha256:x")
    gcc = Compiler("gcc", "gcc (Debian 12.2.0-14) 12.2.0", None)
    base = cache.cache_key(RECIPE, tree, builtin("def"), gcc)
    assert cache.cache_key(RECIPE, tree, builtin("o3"), gcc) != base
    other = Variant("def2", configure=("-DPLUGIN_ROCKSDB=NO",))
    assert cache.cache_key(RECIPE, tree, other, gcc) != base
    with pytest.raises(DbsweepError, match=r"holds no CMakeLists\.txt and VERSION"):
        RECIPE.check_tree(tree)
