"""The install of a MySQL build that compiled only its server (`cmake --build . --target mysqld`).

CMake's own install stops at the first target that was not built, so this installs what `mysqld` needs, as
CMake would place it in the standalone layout: the binary under bin/, the error messages, character sets and
dictionary that CMake's `Server` component installs from share/ (the tree's `share/cmake_install.cmake`,
`sql/share/` in older trees, which installs nothing else), and an empty lib/plugin/ for the option file's
`plugin_dir` (the storage engine, authentication and performance schema dbsweep uses are built in).

Run as a build step: `python -m dbsweep.engines.mysql.serveronly BUILD_DIR ROOT`, ROOT the install's root as
staged (DESTDIR and prefix joined); CMake's script gets the prefix and DESTDIR from the environment it runs in.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

# Where the server binary lands in a build tree: MySQL 8.0 and later, then 5.7.
BINARIES = ("runtime_output_directory/mysqld", "sql/mysqld")
# CMake's install script of the files the server reads at run time: MySQL 8.0 and later, then 5.7.
SHARE_SCRIPTS = ("share/cmake_install.cmake", "sql/share/cmake_install.cmake")
# The compile flags and link line CMake wrote for the server (Makefiles), kept as the build's record of them.
TARGET_RECORDS = (
    ("sql/CMakeFiles/mysqld.dir/flags.make", "mysqld-flags.make"),
    ("sql/CMakeFiles/mysqld.dir/link.txt", "mysqld-link.txt"),
)


def install(build_dir: Path, root: Path, prefix: str) -> None:
    binary = next((build_dir / b for b in BINARIES if (build_dir / b).is_file()), None)
    if binary is None:
        raise SystemExit(f"no mysqld in {build_dir} (looked for {', '.join(BINARIES)})")
    script = next((build_dir / s for s in SHARE_SCRIPTS if (build_dir / s).is_file()), None)
    if script is None:
        raise SystemExit(f"no install script of the server's share/ files in {build_dir} ({', '.join(SHARE_SCRIPTS)})")
    (root / "bin").mkdir(parents=True, exist_ok=True)
    shutil.copy2(binary, root / "bin" / "mysqld")
    (root / "lib" / "plugin").mkdir(parents=True, exist_ok=True)
    cmake = ["cmake", f"-DCMAKE_INSTALL_PREFIX={prefix}", "-DCMAKE_INSTALL_COMPONENT=Server", "-P", str(script)]
    subprocess.run(cmake, cwd=build_dir, check=True, env=os.environ.copy())
    record = root / "share" / "dbsweep"
    record.mkdir(parents=True, exist_ok=True)
    for made, kept in TARGET_RECORDS:
        if (build_dir / made).is_file():
            shutil.copyfile(build_dir / made, record / kept)


def main(argv: list[str]) -> None:
    if len(argv) != 3:
        raise SystemExit("usage: python -m dbsweep.engines.mysql.serveronly BUILD_DIR ROOT PREFIX")
    install(Path(argv[0]), Path(argv[1]), argv[2])


if __name__ == "__main__":
    main(sys.argv[1:])
