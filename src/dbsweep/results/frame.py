"""Results as a pandas DataFrame, for notebooks: the rows of `dbsweep report --format csv`.

from dbsweep.results import load_frame
df = load_frame("studies/quick.toml")        # the study's latest run
df = load_frame(".dbsweep/results.db", 3)    # or a results store and a run id
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pandas as pd

from dbsweep.errors import DbsweepError
from dbsweep.report import csv_json
from dbsweep.report.data import ReportData, gather
from dbsweep.results.store import Store
from dbsweep.study import Study, load_study


def _from_store(path: Path, run_id: int | None) -> tuple[Study, Store, int]:
    """The study as it was when the run started (its TOML is kept with the run) and the run id."""
    if not path.is_file():
        raise DbsweepError(f"{path}: no such results store")
    store = Store(path, read_only=True)
    row = store.run_of(run_id)
    if row is None:
        store.close()
        raise DbsweepError(f"{path}: no run {run_id}" if run_id is not None else f"{path}: no runs yet")
    study = Study.model_validate({**tomllib.loads(row[1]), "path": Path(row[2])})
    return study, store, row[0]


def load_data(study_or_db_path: str | Path, run_id: int | None = None) -> ReportData:
    """The report model of a run: of a study file (its latest run unless `run_id`), or of a results store
    (`.db`; its latest run of any study unless `run_id`)."""
    from dbsweep.runner import store_path

    path = Path(study_or_db_path)
    if path.suffix == ".db":
        study, store, rid = _from_store(path, run_id)
    else:
        study = load_study(path)
        db = store_path(study)
        if not db.is_file():
            raise DbsweepError(f"no results yet for {study.title}: {db} does not exist")
        store = Store(db, read_only=True)
        latest = store.latest_run(study.title)
        if run_id is None and latest is None:
            store.close()
            raise DbsweepError(f"no runs of {study.title} in {db}")
        rid = run_id if run_id is not None else latest[0] if latest else 0
    try:
        return gather(study, store, rid)
    finally:
        store.close()


def frame(data: ReportData) -> pd.DataFrame:
    return pd.DataFrame(csv_json.records(data), columns=csv_json.columns(data))


def load_frame(study_or_db_path: str | Path, run_id: int | None = None) -> pd.DataFrame:
    """One row per target x step x clients with every metric; columns as in README.md, "Reports"."""
    return frame(load_data(study_or_db_path, run_id))
