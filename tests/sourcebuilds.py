"""The install the tests run for an engine with no prebuilt package here (Oracle's MySQL): a `def` build of
the engine's test version from Debian's source package, kept in the test cache (DBSWEEP_TEST_CACHE).

Such a build takes over an hour on two cores, so the tests that need it are opt-in (DBSWEEP_SLOW_TESTS=1):
without it, or when the cache holds no build and building is not allowed, the test is skipped, saying why.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dbsweep.build import cache, variants
from dbsweep.engines.base import Install
from dbsweep.engines.registry import engine_named
from dbsweep.sources import debian

CACHE = Path(os.environ.get("DBSWEEP_TEST_CACHE", "/var/tmp/dbsweep-test-cache"))
SLOW = os.environ.get("DBSWEEP_SLOW_TESTS") == "1"
# The version each such engine's tests build: Debian serves MySQL 9.7.2's source (9.7.4 is listed, not served).
VERSIONS = {"mysql": "9.7.2"}


def needs_source_build(engine_name: str) -> bool:
    return engine_name in VERSIONS


def source_install(engine_name: str) -> Install:
    """The cached `def` build's install, built first when DBSWEEP_SLOW_TESTS=1; otherwise the test is skipped."""
    if not SLOW:
        pytest.skip(f"{engine_name} has no prebuilt package here; its tests build it from source: DBSWEEP_SLOW_TESTS=1")
    engine = engine_named(engine_name)
    version = VERSIONS[engine_name]
    CACHE.mkdir(parents=True, exist_ok=True)
    CACHE.chmod(0o755)  # the server user runs the install from below here
    tree = debian.resolve_debian(version, version, CACHE / "sources", naming=engine.naming)
    recipe, variant = engine.recipe(), variants.builtin("def")
    found = cache.find(recipe, tree, variant, CACHE / "builds")
    if found is None:
        found = cache.build(recipe, tree, variant, CACHE / "builds")
    return found.install


def study_source(engine_name: str, workspace: Path) -> str:
    """What a test study's targets name as their source: `system` (the prebuilt install), or for an engine without
    one, its test version, with the workspace's sources and builds in the test cache (the build made first)."""
    if not needs_source_build(engine_name):
        return "system"
    source_install(engine_name)
    workspace.mkdir(parents=True, exist_ok=True)
    for part in ("sources", "builds"):
        link = workspace / part
        if not link.is_symlink():
            link.symlink_to(CACHE / part)
    return VERSIONS[engine_name]
