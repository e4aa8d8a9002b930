"""Database size as the engine sees it, and the data directory's size on disk (the seeds' dbgb1 and dbgb2)."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import psycopg


def database_size(conn: psycopg.Connection[Any]) -> int:
    """Bytes of the connected database: pg_database_size(current_database())."""
    row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
    if row is None or row[0] is None:
        raise RuntimeError("pg_database_size returned nothing")
    return int(row[0])


def dir_size(path: Path) -> int:
    """Sum of the sizes of the regular files under `path` (apparent bytes, like `du -b` without directories).

    Symlinks are not followed, hard links count once, and files or directories
    that vanish during the walk (a server deleting WAL segments or temp files)
    are skipped.
    """
    total = 0
    seen: set[tuple[int, int]] = set()
    todo = [path]
    while todo:
        try:
            entries = list(os.scandir(todo.pop()))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for e in entries:
            try:
                st = e.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            if stat.S_ISDIR(st.st_mode):
                todo.append(Path(e.path))
            elif stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) not in seen:
                if st.st_nlink > 1:
                    seen.add((st.st_dev, st.st_ino))
                total += st.st_size
    return total
