"""What a config diff is, and how an engine's named diff is read: `configs/<engine>/<name><suffix>`, applied on
top of the engine's defaults.

A diff may start from another with the engine's own include syntax (Postgres's `include 'x.conf'`);
dbsweep inlines it, so the diff applied and recorded is always self-contained. How a line reads is the
engine's business (`Engine.parse_config`); finding, naming and hashing the files is this module's.

The engines import this module, so it takes the engine as an argument and never looks one up by name:
`dbsweep.configs` does that, through the engine registry, for the callers that hold a study's engine name.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from dbsweep import paths
from dbsweep.errors import DbsweepError

if TYPE_CHECKING:
    from dbsweep.engines.base import Engine

# Postgres's include line, `include 'other.conf'`: the engines whose configs are `name = value` lines share it.
_QUOTED_INCLUDE = re.compile(r"""^\s*include\s*=?\s*'([^']+)'\s*(#.*)?$""", re.IGNORECASE)


def stays_inside(path: str) -> bool:
    """Whether a path a server resolves from its data directory stays in it: relative, and without `..`."""
    return not path.startswith("/") and ".." not in path.split("/")


def quoted_include(line: str) -> str | None:
    """The file an `include 'x.conf'` line names, or None for another line."""
    m = _QUOTED_INCLUDE.match(line)
    return m.group(1) if m else None


@dataclass(frozen=True)
class Setting:
    name: str
    value: str
    origin: str  # "file.conf:LINE"


@dataclass(frozen=True)
class ConfigDiff:
    name: str
    text: str  # includes inlined
    settings: tuple[Setting, ...] = field(default=())

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()

    def names(self) -> set[str]:
        return {s.name.lower() for s in self.settings}


def _expand(path: Path, seen: tuple[Path, ...], engine: Engine) -> list[tuple[str, str]]:
    """The lines of a config file with includes inlined, each with its origin."""
    if path in seen:
        chain = " -> ".join(p.name for p in (*seen, path))
        raise DbsweepError(f"config include loop: {chain}")
    try:
        text = path.read_text()
    except OSError as e:
        raise DbsweepError(f"cannot read config {paths.shown(path)}: {e.strerror}") from None
    lines: list[tuple[str, str]] = []
    for n, line in enumerate(text.splitlines(), 1):
        target = engine.include_target(line)
        if target is not None:
            inc = path.parent / target
            if not inc.is_file():
                raise DbsweepError(f"{paths.shown(path)}:{n}: includes {target!r}, which does not exist")
            lines.append((f"# ---- from {inc.name} ----", f"{path.name}:{n}"))
            lines.extend(_expand(inc, (*seen, path), engine))
            lines.append((f"# ---- back in {path.name} ----", f"{path.name}:{n}"))
        else:
            lines.append((line, f"{path.name}:{n}"))
    return lines


def available(engine: Engine) -> list[str]:
    """The names of the engine's config diffs."""
    suffix = engine.config_suffix
    return sorted(p.name.removesuffix(suffix) for p in (paths.configs_root() / engine.name).glob("*" + suffix))


# A config is named by its file's stem in the engine's configs directory: a name, never a path.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")


def read(engine: Engine, name: str) -> ConfigDiff:
    """The engine's config diff `name`, includes inlined; raises DbsweepError saying what is wrong with it."""
    where = paths.configs_root() / engine.name
    if not _NAME.fullmatch(name) or ".." in name:
        raise DbsweepError(
            f"{name!r} is not a config name: give the name of a file in {paths.shown(where)} without "
            f"'{engine.config_suffix}' (letters, digits and . _ + -), not a path"
        )
    path = where / f"{name}{engine.config_suffix}"
    if not path.is_file():
        have = ", ".join(available(engine)) or "none"
        raise DbsweepError(f"no config {name!r} in {paths.shown(path.parent)}; have: {have}")
    lines = _expand(path, (), engine)
    settings = engine.parse_config(lines)
    return ConfigDiff(name=name, text="\n".join(ln for ln, _ in lines) + "\n", settings=settings)
