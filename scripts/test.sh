#!/usr/bin/env bash
# `make test`: inside the private stack (scripts/local-stack.sh with: started unless running or
# pointed elsewhere, stopped again if this run started it), migrate, lint, then pytest "$@".
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${LOCAL_STACK_INSIDE:-}" ] || exec scripts/local-stack.sh with scripts/test.sh "$@"

.venv/bin/energy-platform migrate >/dev/null
# Beside lint (mypy keeps one core busy), one collection compiles every module the workers
# import into __pycache__ (the venv's packages, src, the tests' rewritten asserts). A fresh
# clone has no bytecode: else the workers, started together, each compile all of it again.
# Its own result does not count (the run below collects again and reports any error).
.venv/bin/pytest --collect-only -q -p no:xdist -p no:cacheprovider >/dev/null 2>&1 &
warm=$!
make --no-print-directory lint || { wait "$warm" || true; exit 1; }
wait "$warm" || true
.venv/bin/pytest -n "${PYTEST_WORKERS:-4}" --dist loadgroup "$@"
