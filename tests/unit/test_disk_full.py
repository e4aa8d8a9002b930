"""A full disk is named as the cause of whatever failed, from the engine's words or the free space, and nothing
else is blamed on it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from dbsweep import workspace


def test_the_words_of_a_full_disk_are_found_in_an_error_or_a_log(tmp_path: Path) -> None:
    for said in (
        'loading sbtest1: 53100: could not extend file "base/16384/16393": No space left on device',
        "[ERROR] InnoDB: preallocating 2147483648 bytes for file ./ib_logfile101 failed with error 28",
        "database or disk is full",
        "IO error: No space left on device: While appending to file: ./#rocksdb/000018.log",
    ):
        cause = workspace.disk_full(tmp_path / "ws" / "data", f"the step failed\n{said}\nmore")
        assert cause is not None and cause.startswith(f"the disk holding {tmp_path} ran out of space (")
        assert cause.endswith(f": {said}")


def test_other_errors_are_not_blamed_on_the_disk(tmp_path: Path) -> None:
    for said in ("the server died during the step: killed by SIGKILL", "53400: error 280 in a sort", "", "28 rows"):
        assert workspace.disk_full(tmp_path, said) is None


def test_a_disk_with_nothing_left_is_full_whatever_was_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    full = os.statvfs_result((4096, 4096, 25600, 10, 10, 1000, 10, 10, 0, 255))  # 100 MiB, 40 KiB free

    def statvfs(path: Any) -> os.statvfs_result:
        return full

    monkeypatch.setattr(workspace.os, "statvfs", statvfs)
    cause = workspace.disk_full(tmp_path, "the server died during the step: WAL writer terminated by signal 6")
    assert cause == f"the disk holding {tmp_path} ran out of space (0.0 MiB free of 100 MiB now)"
