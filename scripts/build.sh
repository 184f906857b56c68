#!/usr/bin/env bash
# Configures and builds into build/ (or $GRADER_BUILD_DIR).
#   scripts/build.sh           everything: the grader, and its tests where doctest is installed
#   scripts/build.sh grader    the grader alone (neither doctest nor Chromium needed)
# GRADER_BUILD_TESTS=ON|OFF|AUTO (AUTO by default), GRADER_BUILD_TYPE (Release), GRADER_JOBS
# (all cores); CXX picks the compiler when a build folder is first configured.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${GRADER_BUILD_DIR:-build}"
targets=("$@")
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"   # where FindCUDAToolkit looks for the toolkit
fi
configure=(cmake -S . -B "$build_dir" -G Ninja
           -DCMAKE_BUILD_TYPE="${GRADER_BUILD_TYPE:-Release}")
[ -z "${GRADER_BUILD_TESTS:-}" ] || configure+=(-DGRADER_BUILD_TESTS="$GRADER_BUILD_TESTS")
echo "build: configuring $build_dir"
mkdir -p "$build_dir"
# CMake's own report goes to a log; its warnings and errors still reach the terminal.
"${configure[@]}" >"$build_dir/configure.log" || {
  echo "build: configuring failed (log: $build_dir/configure.log)" >&2; exit 1; }
echo "build: compiling ${targets[*]:-everything} (a few minutes the first time)"
build=(cmake --build "$build_dir" --parallel "${GRADER_JOBS:-$(nproc)}")
[ "${#targets[@]}" -eq 0 ] || build+=(--target "${targets[@]}")
"${build[@]}"
echo "build: done: $build_dir/harness/cli/grader"
