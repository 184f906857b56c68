#!/usr/bin/env bash
# Everything that needs a GPU, in one call: the sweep, a grade of student/, the end-to-end test
# of every fixture, and the speed benchmark. Run on a GPU machine from the repository root with a
# build made on the development machine (build-gpu/, built with scripts/build.sh and
# GRADER_BUILD_DIR=build-gpu): that machine has the CUDA toolkit and driver but none of the
# build's libraries, which the grader carries statically.
# Usage: scripts/gpu-check.sh [OUT_DIR] [--quick]
set -uo pipefail
root=$(pwd)
out=${1:-${OUT:-/tmp/gpu-check}}
quick=${2:-}
mkdir -p "$out"
build="${GRADER_BUILD_DIR:-build-gpu}"
grader="$root/$build/harness/cli/grader"
# The tests were configured with the development machine's absolute paths (/work/main).
if [ ! -e /work/main ]; then
  mkdir -p /work && ln -s "$root" /work/main
fi

section() { printf '\n==== %s ====\n' "$*"; }

section "machine $(date -u +%Y-%m-%dT%H:%MZ)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
"$grader" --version

section "grader sweep"
"$grader" sweep --seed 1

section "grader grade student/"
/usr/bin/time -f "wall %e s" "$grader" grade student/ --seed 7
echo "exit status: $?"
"$grader" grade student/ --seed 7 --format json --output "$out/student-report.json" --quiet

section "every fixture through grader grade (tests/test_gpu_fixtures)"
"$root/$build/tests/test_gpu_fixtures" 2>&1 | tail -120

if [ "$quick" != "--quick" ]; then
  section "benchmark: 20 grades of student/ and the nvcc alternative"
  python3 "$root/scripts/bench/grade_bench.py" "$grader" --runs 20 --out "$out"
fi
