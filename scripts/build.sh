#!/usr/bin/env bash
# Configures and builds the grader and its tests into build/ (or $GRADER_BUILD_DIR).
# GRADER_BUILD_TESTS=OFF builds the grader alone (the Docker images do).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${GRADER_BUILD_DIR:-build}"
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
echo "build: configuring $build_dir"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${GRADER_BUILD_TYPE:-Release}" \
  -DGRADER_BUILD_TESTS="${GRADER_BUILD_TESTS:-ON}" >/dev/null
echo "build: compiling (this takes a few minutes the first time)"
cmake --build "$build_dir" --parallel "${GRADER_JOBS:-$(nproc)}"
echo "build: done: $build_dir/harness/cli/grader"
