#!/usr/bin/env bash
# The README's second command: installs what is missing, builds, and runs the whole test suite.
# Tests that need a GPU, or Chromium where it is left out (--no-browser / GRADER_NO_BROWSER=1),
# are reported by CTest as skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
for arg in "$@"; do
  case "$arg" in
    --no-browser) export GRADER_NO_BROWSER=1 ;;
    -h|--help) echo "usage: scripts/run-tests.sh [--no-browser]"; exit 0 ;;
    *) echo "run-tests: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done
scripts/install-deps.sh --tests
GRADER_BUILD_TESTS=ON scripts/build.sh
build_dir="${GRADER_BUILD_DIR:-build}"
echo "run-tests: running the test suite"
ctest --test-dir "$build_dir" --output-on-failure --timeout 900 -j "${GRADER_JOBS:-$(nproc)}"
