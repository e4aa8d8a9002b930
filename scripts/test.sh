#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh), then runs the whole test suite: the load
# client's Rust tests, the linters and type checks (beside pytest), and pytest against real servers.
# Extra arguments go to pytest (e.g. -k store, -x); the tests run in three workers (DBSWEEP_TEST_WORKERS).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
CARGO=$(command -v cargo || echo "$HOME/.cargo/bin/cargo")
echo "==> ruff"
.venv/bin/ruff check --quiet .
.venv/bin/ruff format --check --quiet .
# The load client's tests, clippy and mypy run beside pytest, at a lower priority: from a fresh clone they took
# 130 s before pytest could begin (the Rust tests compile for 76 s); beside it they take what CPU time its workers
# leave (here the CPUs were then 96 % busy through the run). Their output follows pytest's. They run in a process
# group of their own, stopped on any exit.
echo "==> cargo test, cargo clippy and mypy (beside pytest; their output follows it)"
checks_log=$(mktemp)
setsid nice -n 10 bash -c '
  set -euo pipefail
  echo "==> cargo test (load/)"
  "$1" test --release --locked --quiet --manifest-path load/Cargo.toml
  if "$1" clippy --version >/dev/null 2>&1; then
    echo "==> cargo clippy"
    "$1" clippy --release --locked --quiet --manifest-path load/Cargo.toml --all-targets -- -D warnings
  fi
  echo "==> mypy"
  .venv/bin/mypy
' checks "$CARGO" >"$checks_log" 2>&1 </dev/null &
checks=$!
trap 'kill -- -"$checks" 2>/dev/null; rm -f "$checks_log"' EXIT
echo "==> pytest"
# The tests run `python -m dbsweep` hundreds of times: without bytecode files each one compiles dbsweep and pandas
# again (report 1.65 s instead of 0.85 s here), so a shell that forbids writing them is overruled for the tests.
unset PYTHONDONTWRITEBYTECODE
# Three workers, a test module each at a time (its module-scoped servers and runs stay in one worker): most tests
# wait on timed steps and servers rather than on a CPU, so two halved the run (29 min to 16 min here), and the
# tests of two kept the CPUs busy 62 % of the time: a third worker took pytest from 1,740 s to 1,466 s.
# DBSWEEP_TEST_WORKERS=0 runs them one after another.
# The slowest tests are listed at the end, so a run shows where its minutes went.
tests=0
.venv/bin/pytest -n "${DBSWEEP_TEST_WORKERS:-3}" --dist loadfile --durations=15 "$@" || tests=$?
checked=0
wait "$checks" || checked=$?
trap 'rm -f "$checks_log"' EXIT  # the group is gone: nothing of ours is left to stop
cat "$checks_log"
if [ "$checked" -ne 0 ]; then
  echo "test.sh: the load client's tests, clippy or mypy failed (above)" >&2
fi
[ "$tests" -eq 0 ] && [ "$checked" -eq 0 ]
