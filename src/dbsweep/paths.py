"""Where dbsweep finds its own files: the project's configs and the load client."""

import os
import shutil
from pathlib import Path

from dbsweep.errors import DbsweepError

# src/dbsweep/paths.py -> the project's root, when running from a checkout.
PROJECT_ROOT = Path(__file__).resolve().parents[2]


def configs_root() -> Path:
    """The directory holding `<engine>/<name>.conf` config diffs."""
    env = os.environ.get("DBSWEEP_CONFIGS")
    if env:
        return Path(env)
    return PROJECT_ROOT / "configs"


def load_binary() -> Path:
    """The dbsweep-load binary the setup built (or one named by DBSWEEP_LOAD)."""
    env = os.environ.get("DBSWEEP_LOAD")
    candidates = [Path(env)] if env else []
    candidates.append(PROJECT_ROOT / "load" / "target" / "release" / "dbsweep-load")
    on_path = shutil.which("dbsweep-load")
    if on_path:
        candidates.append(Path(on_path))
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return c
    raise DbsweepError(
        "the load client dbsweep-load is not built; run scripts/setup.sh "
        "(or `cargo build --release` in load/), or set DBSWEEP_LOAD to its path."
    )


def flame_binary() -> Path:
    """The dbsweep-flame binary (folds perf's stacks, draws flame graphs) the setup built, or DBSWEEP_FLAME's."""
    env = os.environ.get("DBSWEEP_FLAME")
    candidates = [Path(env)] if env else []
    candidates.append(PROJECT_ROOT / "load" / "target" / "release" / "dbsweep-flame")
    on_path = shutil.which("dbsweep-flame")
    if on_path:
        candidates.append(Path(on_path))
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return c
    raise DbsweepError(
        "the flame graph tool dbsweep-flame is not built; run scripts/setup.sh "
        "(or `cargo build --release` in load/), or set DBSWEEP_FLAME to its path."
    )


def shown(path: Path) -> str:
    """A path as the user would type it: relative to the current directory when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
