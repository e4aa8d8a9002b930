"""Named config diffs: `configs/<engine>/<name><suffix>`, applied on top of the engine's defaults.

A diff may start from another with the engine's own include syntax (Postgres's `include 'x.conf'`);
dbsweep inlines it, so the diff applied and recorded is always self-contained. How a line reads is the
engine's business (`Engine.parse_config`); finding, naming and hashing the files is this module's.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from dbsweep import paths
from dbsweep.errors import DbsweepError

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


def _expand(path: Path, seen: tuple[Path, ...], engine: str) -> list[tuple[str, str]]:
    """The lines of a config file with includes inlined, each with its origin."""
    from dbsweep.engines.registry import engine_named

    if path in seen:
        chain = " -> ".join(p.name for p in (*seen, path))
        raise DbsweepError(f"config include loop: {chain}")
    try:
        text = path.read_text()
    except OSError as e:
        raise DbsweepError(f"cannot read config {paths.shown(path)}: {e.strerror}") from None
    lines: list[tuple[str, str]] = []
    for n, line in enumerate(text.splitlines(), 1):
        target = engine_named(engine).include_target(line)
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


def _suffix(engine: str) -> str:
    from dbsweep.engines.registry import engine_named

    return engine_named(engine).config_suffix


def available(engine: str) -> list[str]:
    suffix = _suffix(engine)
    return sorted(p.name.removesuffix(suffix) for p in (paths.configs_root() / engine).glob("*" + suffix))


# A config is named by its file's stem in the engine's configs directory: a name, never a path.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")


def load(engine: str, name: str) -> ConfigDiff:
    from dbsweep.engines.registry import engine_named

    if not _NAME.fullmatch(name) or ".." in name:
        raise DbsweepError(
            f"{name!r} is not a config name: give the name of a file in "
            f"{paths.shown(paths.configs_root() / engine)} without '{_suffix(engine)}' (letters, digits and . _ + -), "
            "not a path"
        )
    path = paths.configs_root() / engine / f"{name}{_suffix(engine)}"
    if not path.is_file():
        have = ", ".join(available(engine)) or "none"
        raise DbsweepError(f"no config {name!r} in {paths.shown(path.parent)}; have: {have}")
    lines = _expand(path, (), engine)
    settings = engine_named(engine).parse_config(lines)
    return ConfigDiff(name=name, text="\n".join(ln for ln, _ in lines) + "\n", settings=settings)
