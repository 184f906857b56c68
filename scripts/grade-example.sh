#!/usr/bin/env bash
# The README's first command: installs what is missing, builds the grader, and grades the bundled
# example submission (student/example/). Exit status is the grader's: 0 pass, 1 fail, 3 ungradable.
# Arguments go to `grader grade` (e.g. --backend sim, --format json).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh grader
build_dir="${GRADER_BUILD_DIR:-build}"
echo "grade-example: grading student/example/"
exec "$build_dir/harness/cli/grader" grade student/example/ "$@"
