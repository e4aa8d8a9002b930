"""Oracle's MySQL behind the engine boundary, without running a server: its Debian names and tree versions, the
CMake recipe's options (MySQL's own, and the boost a version's tree needs), and what an install says of
itself. What it shares with MariaDB is tested there."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from dbsweep.build.recipe import Phase
from dbsweep.build.variants import Variant, bolt_base, builtin
from dbsweep.engines.mariadb.build import OPTIONS as MARIADB_OPTIONS
from dbsweep.engines.mysql import Install, Server, source
from dbsweep.engines.mysql.build import OPTIONS, RECIPE, _cache_entries, compile_flags, link_flags
from dbsweep.engines.registry import engine_named
from dbsweep.errors import DbsweepError, ServerError
from dbsweep.sources import SourceTree, debian


def _tree(path: Path, version: str = "9.7.2", name: str = "MYSQL_VERSION") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "CMakeLists.txt").write_text("PROJECT(MySQL)\n")
    major, minor, patch = version.split(".")
    (path / name).write_text(
        f"MYSQL_VERSION_MAJOR={major}\nMYSQL_VERSION_MINOR={minor}\nMYSQL_VERSION_PATCH={patch}\n"
        'MYSQL_VERSION_EXTRA=\nMYSQL_VERSION_MATURITY="LTS"\n'
    )
    return path


def test_debian_names_and_versions(tmp_path: Path) -> None:
    assert source.debian_package("9.7.4") == source.debian_package("9.7.4-2") == "mysql-9.7"
    assert source.debian_package("8.0.36") == "mysql-8.0" and source.debian_package("5.7.44") == "mysql-5.7"
    assert source.debian_major("mysql-9.7") == 9 and source.debian_major("mysql-8.4") == 8
    for other in ("mysql-connector-python", "mysql++", "mysql-defaults", "mysql-workbench"):
        assert source.debian_major(other) is None, other
    with pytest.raises(DbsweepError, match="not a MySQL version"):
        source.debian_package("nine")
    assert source.tree_version(_tree(tmp_path / "new")) == "9.7.2"
    # Before 8.0.28 the file was VERSION.
    assert source.tree_version(_tree(tmp_path / "old", "5.7.44", "VERSION")) == "5.7.44"
    with pytest.raises(DbsweepError, match="does not look like a MySQL source tree"):
        source.tree_version(tmp_path / "missing")


def test_the_listing_keeps_mysqls_packages_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stanzas = [("mysql-9.7", "9.7.2-4"), ("mysql-9.7", "9.7.4-2"), ("mysql-connector-python", "26.7.0-1")]
    index = b"".join(f"Package: {p}\nBinary: {p}\nVersion: {v}\n\n".encode() for p, v in stanzas)
    monkeypatch.setattr(debian, "_index_files", lambda root: [("Sources", "sid")])
    monkeypatch.setattr(debian, "_index_text", lambda filename: index)
    found = debian._query(tmp_path, source.NAMING)
    assert [(s.package, s.upstream_version, s.major, s.suite) for s in found] == [
        ("mysql-9.7", "9.7.2", 9, "sid"),
        ("mysql-9.7", "9.7.4", 9, "sid"),
    ]


def _phase(tmp_path: Path, variant: Variant, tree: Path) -> Phase:
    return Phase(
        tree=SourceTree("9.7.2", "debian", tree, "9.7.2", "sha256:x"),
        variant=variant,
        compiler="gcc",
        build_dir=tmp_path / "b",
        prefix=tmp_path / "p",
        destdir=tmp_path / "d",
        cflags=variant.cflags,
        ldflags=variant.ldflags,
        jobs=2,
        ccache=False,
    )


def test_the_recipe_has_mysqls_options_not_mariadbs(tmp_path: Path) -> None:
    cmd = RECIPE.cmake_command(_phase(tmp_path, builtin("def"), _tree(tmp_path / "tree")))
    assert "-DCMAKE_BUILD_TYPE=RelWithDebInfo" in cmd and "-DCMAKE_CXX_COMPILER=g++" in cmd
    for option in ("-DWITH_ROUTER=OFF", "-DWITH_MYSQLX=OFF", "-DWITH_UNIT_TESTS=OFF", "-DENABLED_LOCAL_INFILE=ON"):
        assert option in cmd, option
    assert set(OPTIONS) <= set(cmd) and not (set(MARIADB_OPTIONS) - set(OPTIONS)) & set(cmd)
    assert not [a for a in cmd if a.startswith("-DWITH_BOOST")]  # 9.7 carries its boost under extra/
    o3 = RECIPE.cmake_command(_phase(tmp_path, builtin("o3"), _tree(tmp_path / "tree")))
    assert "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O3 -g -DNDEBUG" in o3
    assert RECIPE.artefact == "bin/mysqld" and RECIPE.engine == "mysql"


def test_a_variants_link_flags_survive_debians_package_flags(tmp_path: Path) -> None:
    # On Debian, MySQL's configure sets CMAKE_*_LINKER_FLAGS to dpkg-buildflags' LDFLAGS: the variant's go to
    # the build type's, which CMake adds after them (BOLT's --emit-relocs was lost as a plain one).
    cmd = RECIPE.cmake_command(_phase(tmp_path, bolt_base(builtin("bolt")), _tree(tmp_path / "tree")))
    for kind in ("EXE", "SHARED", "MODULE"):
        assert f"-DCMAKE_{kind}_LINKER_FLAGS_RELWITHDEBINFO=-Wl,--emit-relocs" in cmd
    assert not [a for a in cmd if a.startswith(("-DCMAKE_EXE_LINKER_FLAGS=", "-DCMAKE_SHARED_LINKER_FLAGS="))]
    plain = RECIPE.cmake_command(_phase(tmp_path, builtin("def"), _tree(tmp_path / "tree")))
    assert not [a for a in plain if "LINKER_FLAGS" in a]


def test_the_record_is_the_servers_own_compile_flags_and_link_line(tmp_path: Path) -> None:
    flags_make = (
        "# CMAKE generated file: DO NOT EDIT!\nCXX_DEFINES = -DHAVE_CONFIG_H\n"
        "CXX_FLAGS = -fno-omit-frame-pointer -g -O2 -fstack-protector-strong  -O2 -g -DNDEBUG -std=c++20\n"
    )
    cflags = compile_flags(flags_make)
    assert cflags == "-fno-omit-frame-pointer -g -O2 -fstack-protector-strong -O2 -g -DNDEBUG -std=c++20"
    link = (
        "/usr/bin/c++ -fno-omit-frame-pointer -g -O2 -fstack-protector-strong -O2 -g -DNDEBUG -std=c++20 "
        "-Wl,-z,relro -Wl,--emit-relocs -rdynamic CMakeFiles/mysqld.dir/main.cc.o -o ../bin/mysqld -lssl -lcrypto"
    )
    assert link_flags(link, cflags) == "-Wl,-z,relro -Wl,--emit-relocs -rdynamic"
    record = {
        "server_version": "mysqld  Ver 9.7.2 for Linux on x86_64 (Source distribution)",
        "cmake": "cmake -S /src -B .",
        "cmake_cache": {"CMAKE_C_COMPILER": "/usr/bin/gcc", "CMAKE_C_FLAGS": "", "CMAKE_C_FLAGS_RELWITHDEBINFO": "-O2"},
        "mysqld_flags": cflags,
        "mysqld_link": link,
    }
    record["cmake_cache"]["CMAKE_EXE_LINKER_FLAGS"] = ""
    facts = RECIPE.facts(record)
    assert (facts.cflags, facts.ldflags) == (cflags, "-Wl,-z,relro -Wl,--emit-relocs -rdynamic")
    # The build type's link flags are read from CMake's cache by their own names.
    cache = tmp_path / "share" / "dbsweep" / "CMakeCache.txt"
    cache.parent.mkdir(parents=True)
    cache.write_text("CMAKE_EXE_LINKER_FLAGS_RELWITHDEBINFO:STRING=-Wl,--emit-relocs\n")
    assert _cache_entries(tmp_path, ["CMAKE_EXE_LINKER_FLAGS_RELWITHDEBINFO", "CMAKE_MODULE_LINKER_FLAGS"]) == {
        "CMAKE_EXE_LINKER_FLAGS_RELWITHDEBINFO": "-Wl,--emit-relocs",
        "CMAKE_MODULE_LINKER_FLAGS": "",
    }
    # A build that did not keep them says what CMake's cache has.
    del record["mysqld_flags"], record["mysqld_link"]
    assert RECIPE.facts(record).cflags == "-O2"


def test_only_the_server_is_built_and_what_it_reads_installed(tmp_path: Path) -> None:
    phase = _phase(tmp_path, builtin("def"), _tree(tmp_path / "tree"))
    cmd = RECIPE.cmake_command(phase)
    # NDB is left out of the server itself, and the plugins a benchmark never loads are not built.
    for option in ("-DWITH_NDBCLUSTER_STORAGE_ENGINE=OFF", "-DWITHOUT_GROUP_REPLICATION=ON", "-DWITH_ICU=system"):
        assert option in cmd, option
    (compile_step,) = RECIPE.compile(phase)
    assert compile_step.argv[:5] == ("cmake", "--build", ".", "--target", "mysqld") and compile_step.compiles
    # A build tree as CMake leaves it after `--target mysqld`: the binary, and the share/ files' install script
    # (its Server component only; a real one installs errmsg.sys, charsets/ and the dictionary).
    build = phase.build_dir
    (build / "runtime_output_directory").mkdir(parents=True)
    (build / "runtime_output_directory" / "mysqld").write_text("#!/bin/sh\n")
    (build / "share").mkdir()
    (build / "share" / "errmsg.sys").write_text("messages")
    (build / "share" / "cmake_install.cmake").write_text(
        'if(CMAKE_INSTALL_COMPONENT STREQUAL "Server")\n'
        '  file(INSTALL DESTINATION "${CMAKE_INSTALL_PREFIX}/share/english" TYPE FILE\n'
        f'       FILES "{build}/share/errmsg.sys")\n'
        "endif()\n"
        'if(CMAKE_INSTALL_COMPONENT STREQUAL "Test")\n'
        f'  file(INSTALL DESTINATION "${{CMAKE_INSTALL_PREFIX}}/mysql-test" TYPE FILE FILES "{build}/missing")\n'
        "endif()\n"
    )
    steps = RECIPE.install(phase)
    assert steps[0].argv[1:3] == ("-m", "dbsweep.engines.mysql.serveronly"), steps[0]
    root = Path(f"{phase.destdir}{phase.prefix}")
    subprocess.run(steps[0].argv, cwd=build, env={**os.environ, **steps[0].env}, check=True)
    assert (root / "bin" / "mysqld").is_file() and (root / "lib" / "plugin").is_dir()
    assert (root / "share" / "english" / "errmsg.sys").read_text() == "messages"
    assert not (root / "mysql-test").exists()
    # The compile flags and link line CMake wrote for the server are kept as the build's record.
    target = build / "sql" / "CMakeFiles" / "mysqld.dir"
    target.mkdir(parents=True)
    (target / "flags.make").write_text("CXX_FLAGS = -O2 -g\n")
    (target / "link.txt").write_text("/usr/bin/c++ -O2 -g -Wl,--emit-relocs main.o -o mysqld\n")
    subprocess.run(steps[0].argv, cwd=build, env={**os.environ, **steps[0].env}, check=True)
    assert (root / "share" / "dbsweep" / "mysqld-flags.make").read_text() == "CXX_FLAGS = -O2 -g\n"
    assert (root / "share" / "dbsweep" / "mysqld-link.txt").is_file()
    # A tree without a server binary is a plain error.
    (build / "runtime_output_directory" / "mysqld").unlink()
    failed = subprocess.run(
        steps[0].argv, cwd=build, env={**os.environ, **steps[0].env}, capture_output=True, text=True
    )
    assert failed.returncode != 0 and "no mysqld in" in failed.stderr


def test_a_mysql_boost_tarball_gives_its_boost(tmp_path: Path) -> None:
    old = _tree(tmp_path / "old", "8.0.32")
    (old / "boost" / "boost_1_77_0").mkdir(parents=True)
    cmd = RECIPE.cmake_command(_phase(tmp_path, builtin("def"), old))
    assert f"-DWITH_BOOST={old / 'boost'}" in cmd


def test_a_mariadb_tree_is_refused(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "m", "10.11.19", "VERSION")
    (tree / "CMakeLists.txt").write_text("PROJECT(MySQL)\n# This is MariaDB\n")
    with pytest.raises(DbsweepError, match='is MariaDB\'s source; use engine = "mariadb"'):
        RECIPE.check_tree(SourceTree("dir:x", "dir", tree, "10.11.19", "x"))


def test_an_install_and_the_engine(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "mysqld").write_text("")
    i = Install(tmp_path / "bin", "mysqld  Ver 9.7.2 for Linux on x86_64 (Source distribution)", "9.7.2")
    assert i.short_version == "9.7.2" and i.server == tmp_path / "bin" / "mysqld" and not i.has_rocksdb
    assert (i.title, i.section) == ("MySQL", "mysqld")
    engine = engine_named("mysql")
    assert engine.title == "MySQL" and engine.system_versions() == []
    with pytest.raises(DbsweepError, match="there is no prebuilt MySQL here"):
        engine.system_install("system")


def _server(tmp_path: Path, config_text: str = "innodb_buffer_pool_size = 1G\n") -> Server:
    bindir = tmp_path / "usr" / "bin"
    bindir.mkdir(parents=True)
    (bindir / "mysqld").write_text("")
    (tmp_path / "usr" / "lib" / "plugin").mkdir(parents=True)
    install = Install(bindir, "mysqld  Ver 9.7.2 for Linux on x86_64 (Source distribution)", "9.7.2")
    server = engine_named("mysql").instance(install, tmp_path / "home", "cz", config_text, None)
    assert isinstance(server, Server)
    return server


def test_the_option_file_is_mysqls(tmp_path: Path) -> None:
    server = _server(tmp_path, "local_infile = OFF\n")
    lines = server.defaults_text(port=4242).splitlines()
    assert lines[1] == "[mysqld]" and "[mariadbd]" not in lines
    assert "port = 4242" in lines and "bind_address = 127.0.0.1" in lines
    # dbsweep turns LOAD DATA LOCAL on (MySQL's default is off); a config's own line comes after and wins.
    assert lines.index("local_infile = ON") < lines.index("local_infile = OFF")
    assert lines[lines.index("local_infile = OFF") - 1] == "[mysqld]"
    assert server._server_binary() == tmp_path / "usr" / "bin" / "mysqld"


def test_the_accounts_lock_root_and_counts_set_no_ssl(tmp_path: Path) -> None:
    server = _server(tmp_path)
    sql = server._account_statements("s3cret")
    assert "CREATE USER 'dbsweep'@'127.0.0.1' IDENTIFIED BY 's3cret';" in sql
    assert "GRANT ALL PRIVILEGES ON *.* TO 'dbsweep'@'localhost';" in sql
    root = next(line for line in sql.splitlines() if "root" in line)
    assert root.endswith("ACCOUNT LOCK;") and "s3cret" not in root
    assert "mysql.global_priv" not in sql  # MariaDB's grant table
    with pytest.raises(ServerError, match="plain letters"):
        server._account_statements("x'; DROP USER")
    # MySQL 9 has no `ssl` option; the other settings that hold a count still are.
    assert "ssl" not in server.quiet_config and "innodb_fast_shutdown = 0" in server.quiet_config
    assert server.client_thread_functions == ("handle_connection",)
    assert server.aborting.search("2026-11-27T13:00:00Z 0 [ERROR] [MY-010119] [Server] Aborting")
