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
    return _built("dbsweep-load", "DBSWEEP_LOAD", "the load client")


def flame_binary() -> Path:
    """The dbsweep-flame binary (folds perf's stacks, draws flame graphs) the setup built, or DBSWEEP_FLAME's."""
    return _built("dbsweep-flame", "DBSWEEP_FLAME", "the flame graph tool")


def _built(name: str, env_var: str, what: str) -> Path:
    """A binary of load/: the one `env_var` names, else the setup's build, else one on the PATH."""
    env = os.environ.get(env_var)
    candidates = [Path(env)] if env else []
    candidates.append(PROJECT_ROOT / "load" / "target" / "release" / name)
    on_path = shutil.which(name)
    if on_path:
        candidates.append(Path(on_path))
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return c
    raise DbsweepError(
        f"{what} {name} is not built; run scripts/setup.sh (or `cargo build --release` in load/), or set "
        f"{env_var} to its path."
    )


def shown(path: Path) -> str:
    """A path as the user would type it: relative to the current directory when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
