"""The data directory's size on disk (the seeds' dbgb2; dbgb1, the size the engine reports, is the engine's)."""

from __future__ import annotations

import os
import stat
from pathlib import Path


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
