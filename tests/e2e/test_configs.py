"""A config with a setting the installed version lacks, in a real run: refused before any work, then applied
where supported when the study lists the setting as optional. A config with an unsafe setting: refused by
`validate` before any work, and let through (with a warning) where the study allows it by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from dbsweep.engines.mariadb import install as mariadb_installs

from ..conftest import dbsweep, own_configs, write_study

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


@pytest.mark.skipif(not mariadb_installs.system_versions(), reason="needs Debian's MariaDB (scripts/setup.sh)")
def test_validate_refuses_an_unsafe_mariadb_setting_until_the_study_allows_it(tmp: Path) -> None:
    env = own_configs(tmp, "mariadb", "cz12a_c2r24", boot="innodb_buffer_pool_size = 128M\ninit_file = /tmp/x.sql\n")
    study = write_study(tmp, engine="mariadb", config_a="cz12a_c2r24", config_b="boot")
    r = dbsweep("validate", study, check=False, env=env)
    assert r.returncode == 2, r.stdout + r.stderr
    said = " ".join(r.stderr.split())
    assert (
        "targets[1].config: config boot sets init_file (boot.cnf:2), which runs the SQL of a file at every start, "
        "with every privilege: it may create accounts."
    ) in said
    assert 'allow_unsafe_settings = ["init_file"]' in said
    assert not (tmp / "ws").exists()
    study.write_text(study.read_text().replace("repeats = 1", 'allow_unsafe_settings = ["init-file"]\nrepeats = 1'))
    r = dbsweep("validate", study, env=env)
    assert "config boot sets init_file (boot.cnf:2), which runs the SQL" in " ".join(r.stderr.split())
    assert "the study allows it (allow_unsafe_settings)" in " ".join(r.stderr.split())


def test_a_refused_value_in_square_brackets_fails_its_target_and_is_printed_whole(tmp: Path) -> None:
    """The server's refusal quotes the value: text, not markup, on every path (the failed target's line, the
    cell lines, the stored error); once a closing tag in it crashed the run before the cells were stored. The value
    is one only a start refuses (validate's `postgres -C` takes a certificate's path; the server reads the file when
    it starts), so the run gets that far."""
    env = own_configs(tmp, "postgres", "cx10a_c2r24", brackets="ssl = on\nssl_cert_file = '[/x] [bold]'\n")
    study = write_study(tmp, config_b="brackets")
    r = dbsweep("run", study, check=False, env=env)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "Traceback" not in out
    assert "2 cells done, 2 failed" in out
    assert '"[/x] [bold]"' in out, out
    st = dbsweep("status", study, env=env)
    assert "done 2, failed 2, pending 0" in st.stdout
