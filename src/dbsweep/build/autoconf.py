"""For recipes built with autoconf's `configure`: plain words for its usual failure, flags the compiler does
not accept (configure then says only "C compiler cannot create executables")."""

from __future__ import annotations

from dbsweep.build.recipe import Failure


def diagnose_configure(failure: Failure) -> str:
    """Keeps config.log in the build log; names the flags and the compiler's complaint when configure could
    not compile at all; "" for other failures."""
    config_log = failure.phase.build_dir / "config.log"
    failure.attach("config.log", config_log)  # its details go to the kept log
    if "C compiler cannot create executables" not in failure.tail:
        return ""
    variant = failure.phase.variant
    complaint = _compiler_complaint(failure)
    return (
        f" The C compiler cannot create executables: {failure.phase.compiler} rejects the variant's flags "
        f"(CFLAGS={variant.cflags_str!r} LDFLAGS={variant.ldflags_str!r})."
        + (f" The compiler said: {complaint}" if complaint else "")
        + " (config.log is at the end of the build log.)"
    )


def _compiler_complaint(failure: Failure) -> str:
    """The compiler's error about our flags, not its answers to configure's version probes."""
    config_log = failure.phase.build_dir / "config.log"
    if not config_log.is_file():
        return ""
    lines = config_log.read_text(errors="replace").splitlines()
    errors = [ln.strip() for ln in lines if "error:" in ln and not ln.startswith("configure")]
    flags = (*failure.phase.variant.cflags, *failure.phase.variant.ldflags)
    ours = [ln for ln in errors if any(f in ln for f in flags)]
    others = [ln for ln in errors if not any(p in ln for p in ("'-V'", "'-qversion'", "no input files"))]
    return (ours or others or [""])[0]
