"""Named config diffs by the engine's name, as a study names them: `configs/<engine>/<name><suffix>`.

What a diff is and how its file is read live in `dbsweep.configdiff`, which the engines import; this module
looks the engine up in the registry, so the dependency runs one way: configs -> registry -> engines ->
configdiff.
"""

from __future__ import annotations

from dbsweep import configdiff
from dbsweep.configdiff import ConfigDiff
from dbsweep.engines.registry import engine_named


def available(engine: str) -> list[str]:
    """The names of the config diffs of the engine named `engine`."""
    return configdiff.available(engine_named(engine))


def load(engine: str, name: str) -> ConfigDiff:
    """The config diff `name` of the engine named `engine`; raises DbsweepError saying what is wrong with it."""
    return configdiff.read(engine_named(engine), name)
