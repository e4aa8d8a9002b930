"""Results: the typed records a run produces (`model`), the store that keeps them (`store`, the only module
that speaks SQL) and a pandas view of a run for notebooks (`frame`)."""

import importlib
from typing import Any


def __getattr__(name: str) -> Any:
    # `from dbsweep.results import load_frame` without importing pandas for everyone who imports the store.
    if name in ("load_frame", "load_data", "frame"):
        # import_module, not `from dbsweep.results import frame`: that asks this very function for `frame` first.
        _frame = importlib.import_module("dbsweep.results.frame")
        return getattr(_frame, name)
    raise AttributeError(name)
