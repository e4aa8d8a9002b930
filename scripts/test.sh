#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh), then runs the whole test suite: the load
# client's Rust tests, the linters and type checks, and pytest against real servers.
# Extra arguments go to pytest (e.g. -k store, -x).
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
exec .venv/bin/pytest "$@"
