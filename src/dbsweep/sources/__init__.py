"""Where an engine's source code comes from, and its identity.

A target's `source` names one of: a Debian source package version (`debian:15.18`
or just `15.18`), a git repository and ref (`git:URL_OR_PATH@REF`), a tarball
(`tarball:PATH_OR_URL`), or a local source directory (`dir:PATH`). Each resolves
to a SourceTree: an unpacked tree ready to configure, plus an identity recorded
with every result.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

SourceKind = Literal["debian", "git", "tarball", "dir"]


@dataclass(frozen=True)
class SourceTree:
    spec: str  # as written in the study
    kind: SourceKind
    path: Path  # the unpacked source root (holds `configure`)
    version: str  # the upstream version, e.g. "15.18"
    identity: str  # "sha256:<hex>" of the upstream tarball, "git:<commit>", or "dir:sha256:<hex>"
    details: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
