"""A config with a setting the installed version lacks, in a real run: refused before any work, then applied
where supported when the study lists the setting as optional."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..conftest import dbsweep, write_study

pytestmark = pytest.mark.server


def test_study_with_unsupported_setting_fails_then_runs_when_optional(tmp: Path) -> None:
    study = write_study(tmp, config_b="cx10b_c2r24")
    # Refused before any work, as bad input: the installed binary is there to ask.
    r = dbsweep("run", study, check=False)
    assert r.returncode == 2
    assert "targets[1].config: config cx10b_c2r24 sets io_method" in r.stderr and "does not have" in r.stderr
    assert not (tmp / "ws" / "results.db").exists()
    text = study.read_text().replace("repeats = 1", 'repeats = 1\noptional_settings = ["io_method"]')
    study.write_text(text)
    r = dbsweep("run", study, "--fresh")
    assert "skipped settings Postgres 15" in r.stderr and "io_method" in r.stderr
    assert "0 failed" in r.stdout
