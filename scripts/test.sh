#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh), then runs the whole test suite: the load
# client's Rust tests, the linters and type checks, and pytest against real servers.
# Extra arguments go to pytest (e.g. -k store, -x); the tests run in three workers (DBSWEEP_TEST_WORKERS).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
CARGO=$(command -v cargo || echo "$HOME/.cargo/bin/cargo")
echo "==> cargo test (load/)"
"$CARGO" test --release --locked --quiet --manifest-path load/Cargo.toml
if "$CARGO" clippy --version >/dev/null 2>&1; then
  echo "==> cargo clippy"
  "$CARGO" clippy --release --locked --quiet --manifest-path load/Cargo.toml --all-targets -- -D warnings
fi
echo "==> ruff and mypy"
.venv/bin/ruff check --quiet .
.venv/bin/ruff format --check --quiet .
.venv/bin/mypy
echo "==> pytest"
# The tests run `python -m dbsweep` hundreds of times: without bytecode files each one compiles dbsweep and pandas
# again (report 1.65 s instead of 0.85 s here), so a shell that forbids writing them is overruled for the tests.
unset PYTHONDONTWRITEBYTECODE
# Three workers, a test module each at a time (its module-scoped servers and runs stay in one worker): most tests
# wait on timed steps and servers rather than on a CPU, so two halved the run (29 min to 16 min here), and the
# tests of two kept the CPUs busy 62 % of the time: a third worker took pytest from 1,740 s to 1,466 s.
# DBSWEEP_TEST_WORKERS=0 runs them one after another.
# The slowest tests are listed at the end, so a run shows where its minutes went.
exec .venv/bin/pytest -n "${DBSWEEP_TEST_WORKERS:-3}" --dist loadfile --durations=15 "$@"
