"""Settings that change who gets in or what runs: the study's side of them.

Each engine names the settings a config may use only where the study allows them (`Engine.unsafe_settings`,
from its config module: accounts, authentication, listening, code it loads, commands it runs, files written
outside the instance's directory) and refuses them in `Engine.refuse_unsafe`. This module checks a study's
`allow_unsafe_settings` against its configs when the study is loaded (so `validate` and `run` refuse before
any work; `Engine.fit_config` checks again at run time, long after the study was read), and words what was
allowed for the provenance and the reports.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from dbsweep import configs
from dbsweep.engines.registry import engine_named
from dbsweep.errors import DbsweepError

if TYPE_CHECKING:
    from dbsweep.configdiff import ConfigDiff
    from dbsweep.study import Study

PROVENANCE_KEY = "unsafe_settings_allowed"


def study_problems(study: Study) -> list[tuple[str, str]]:
    """(field, message) for every allow_unsafe_settings entry that names no unsafe setting, and every config
    that sets an unsafe setting the study does not allow (once per config, at the first target naming it)."""
    engine = engine_named(study.engine)
    out: list[tuple[str, str]] = []
    for i, name in enumerate(study.allow_unsafe_settings):
        if engine.unsafe_name(name) not in engine.unsafe_settings:
            known = ", ".join(sorted(engine.unsafe_settings)) or "none"
            out.append(
                (
                    f"allow_unsafe_settings[{i}]",
                    f"{name!r} is not a setting {engine.title} refuses as unsafe; those a study may allow: {known}",
                )
            )
    for field, diff in _configs(study):
        try:
            engine.refuse_unsafe(diff, study.allow_unsafe_settings)
        except DbsweepError as e:
            out.append((field, str(e)))
    return out


def _configs(study: Study) -> Iterator[tuple[str, ConfigDiff]]:
    """(field, diff) of each config the study names, once, at the first target naming it; a config that cannot
    be loaded is left to the study's own check, which reports it."""
    seen: set[str] = set()
    for i, t in enumerate(study.targets):
        if t.config in seen:
            continue
        seen.add(t.config)
        try:
            yield f"targets[{i}].config", configs.load(study.engine, t.config)
        except DbsweepError:
            continue


def warnings(study: Study) -> list[tuple[str, str]]:
    """(field, message) for every unsafe setting a config sets and the study allows: `validate` and `run` say
    so before any work."""
    engine = engine_named(study.engine)
    out: list[tuple[str, str]] = []
    for field, diff in _configs(study):
        out += [
            (
                field,
                f"config {diff.name} sets {u.setting.name} ({u.setting.origin}), which {u.reason}; "
                "the study allows it (allow_unsafe_settings)",
            )
            for u in engine.unsafe_in(diff.settings)
        ]
    return out


def allowed_in(engine_name: str, config_text: str) -> dict[str, str]:
    """The unsafe settings a fitted config sets (the run got this far, so the study allowed them), each with
    why it is unsafe: for the provenance."""
    engine = engine_named(engine_name)
    lines = [(line, f"line {n}") for n, line in enumerate(config_text.splitlines(), 1)]
    return {u.name: u.reason for u in engine.unsafe_in(engine.parse_config(lines))}


def describe(allowed_settings: Mapping[str, str]) -> str:
    """`init_file (runs SQL ...), plugin_load (loads ...)`, as the reports show it."""
    return ", ".join(f"{name} ({reason})" for name, reason in sorted(allowed_settings.items()))
