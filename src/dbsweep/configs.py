"""Named config diffs: `configs/<engine>/<name>.conf`, appended to the engine's defaults.

A diff may start from another with Postgres's own syntax, `include 'cx10a_c2r24.conf'`;
dbsweep inlines it, so the diff applied and recorded is always self-contained.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from dbsweep import paths
from dbsweep.errors import DbsweepError

_INCLUDE = re.compile(r"""^\s*include\s*=?\s*'([^']+)'\s*(#.*)?$""", re.IGNORECASE)
_SETTING = re.compile(r"""^\s*([A-Za-z_][A-Za-z0-9_.]*)\s*=?\s*(.*?)\s*$""")


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


def _strip_comment(line: str) -> str:
    # A '#' inside a quoted value is not a comment.
    out, quoted = [], False
    for ch in line:
        if ch == "'":
            quoted = not quoted
        if ch == "#" and not quoted:
            break
        out.append(ch)
    return "".join(out).strip()


def _expand(path: Path, seen: tuple[Path, ...]) -> list[tuple[str, str]]:
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
        m = _INCLUDE.match(line)
        if m:
            inc = path.parent / m.group(1)
            if not inc.is_file():
                raise DbsweepError(f"{paths.shown(path)}:{n}: includes {m.group(1)!r}, which does not exist")
            lines.append((f"# ---- from {inc.name} ----", f"{path.name}:{n}"))
            lines.extend(_expand(inc, (*seen, path)))
            lines.append((f"# ---- back in {path.name} ----", f"{path.name}:{n}"))
        else:
            lines.append((line, f"{path.name}:{n}"))
    return lines


def parse(lines: list[tuple[str, str]]) -> tuple[Setting, ...]:
    out: list[Setting] = []
    for line, origin in lines:
        body = _strip_comment(line)
        if not body:
            continue
        m = _SETTING.match(body)
        if not m or not m.group(2):
            raise DbsweepError(f"{origin}: cannot read {line.strip()!r} as `name = value`")
        out.append(Setting(m.group(1), m.group(2).strip("'"), origin))
    return tuple(out)


def available(engine: str) -> list[str]:
    return sorted(p.stem for p in (paths.configs_root() / engine).glob("*.conf"))


# A config is named by its file's stem in the engine's configs directory: a name, never a path.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")


def load(engine: str, name: str) -> ConfigDiff:
    if not _NAME.fullmatch(name) or ".." in name:
        raise DbsweepError(
            f"{name!r} is not a config name: give the name of a file in "
            f"{paths.shown(paths.configs_root() / engine)} without '.conf' (letters, digits and . _ + -), not a path"
        )
    path = paths.configs_root() / engine / f"{name}.conf"
    if not path.is_file():
        have = ", ".join(available(engine)) or "none"
        raise DbsweepError(f"no config {name!r} in {paths.shown(path.parent)}; have: {have}")
    lines = _expand(path, ())
    return ConfigDiff(name=name, text="\n".join(ln for ln, _ in lines) + "\n", settings=parse(lines))


def fit_to_version(diff: ConfigDiff, supported: set[str], version: str, optional: set[str]) -> tuple[str, list[str]]:
    """The diff's text for a server that knows `supported` settings.

    A setting the server lacks is an error unless the study lists it as optional; then its
    lines are commented out and the setting is returned in the list of skipped ones.
    """
    missing = [s for s in diff.settings if "." not in s.name and s.name.lower() not in supported]
    fatal = [s for s in missing if s.name.lower() not in optional]
    if fatal:
        s = fatal[0]
        more = f" (and {', '.join(x.name for x in fatal[1:])})" if len(fatal) > 1 else ""
        raise DbsweepError(
            f"config {diff.name} sets {s.name} ({s.origin}){more}, which Postgres {version} does not have; "
            f"list it in the study's optional_settings to apply it only where supported."
        )
    if not missing:
        return diff.text, []
    skipped = sorted({s.name for s in missing})
    lowered = {n.lower() for n in skipped}
    out = []
    for line in diff.text.splitlines():
        m = _SETTING.match(_strip_comment(line))
        if m and m.group(1).lower() in lowered:
            out.append(f"# not in Postgres {version}, skipped: {line}")
        else:
            out.append(line)
    return "\n".join(out) + "\n", skipped
