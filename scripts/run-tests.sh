#!/usr/bin/env bash
# The README's second command: installs what is missing, builds, and runs the whole test suite.
# Tests that need a GPU are reported as skipped where there is none.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --tests
scripts/build.sh
build_dir="${GRADER_BUILD_DIR:-build}"
echo "run-tests: running the test suite"
ctest --test-dir "$build_dir" --output-on-failure --timeout 900 -j "${GRADER_JOBS:-$(nproc)}"
