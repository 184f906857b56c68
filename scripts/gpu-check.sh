#!/usr/bin/env bash
# Everything that needs a GPU, in one call: the sweep, a grade of student/example/, the end-to-end test
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
/usr/bin/time -f "wall %e s" "$grader" grade student/example/ --seed 7
echo "exit status: $?"
"$grader" grade student/example/ --seed 7 --format json --output "$out/student-report.json" --quiet

section "every fixture through grader grade (tests/test_gpu_fixtures)"
"$root/$build/tests/test_gpu_fixtures" 2>&1 | tail -120

if [ "$quick" != "--quick" ]; then
  section "benchmark: 20 grades of student/example/ and the nvcc alternative"
  python3 "$root/scripts/bench/grade_bench.py" "$grader" --runs 20 --out "$out"
fi

if [ "$quick" != "--quick" ]; then
  section "batch: a generated class of 100 (scripts/bench/make_class.py, batch_bench.py)"
  rm -rf /tmp/class /tmp/class-out
  python3 "$root/scripts/bench/make_class.py" /tmp/class --size 100 --seed 1
  python3 "$root/scripts/bench/batch_bench.py" "$grader" /tmp/class /tmp/class-out --timeout 5
  cp /tmp/class-out/gradebook.csv "$out/" 2>/dev/null
  cp /tmp/class-out/class-report.html "$out/" 2>/dev/null

  section "batch killed with SIGKILL midway, then resumed"
  rm -rf /tmp/class-kill
  "$grader" batch /tmp/class --output /tmp/class-kill --timeout 5 --quiet &
  batch_pid=$!
  sleep 8
  kill -KILL "$batch_pid"
  wait "$batch_pid" 2>/dev/null
  echo "reports before the kill: $(ls /tmp/class-kill/*/report.json 2>/dev/null | wc -l)"
  "$grader" batch /tmp/class --output /tmp/class-kill --timeout 5 --resume --quiet
  echo "resume exit status: $?"
  submissions=$(find /tmp/class -mindepth 1 -maxdepth 1 -type d ! -name '.*' | wc -l)
  rows=$(python3 -c 'import csv,sys; print(sum(1 for _ in csv.DictReader(open(sys.argv[1]))))' /tmp/class-kill/gradebook.csv)
  unique=$(python3 -c 'import csv,sys; print(len({r["folder"] for r in csv.DictReader(open(sys.argv[1]))}))' /tmp/class-kill/gradebook.csv)
  echo "submissions: $submissions, gradebook rows: $rows, distinct folders: $unique"
fi

if [ "$quick" != "--quick" ] && [ -z "${GPU_CHECK_SKIP_NCU:-}" ] && [ -x "$root/scripts/ncu-compare.sh" ] && command -v ncu >/dev/null; then
  section "simulator against Nsight Compute (scripts/ncu-compare.sh)"
  "$root/scripts/ncu-compare.sh" "$grader" "$out/ncu-compare.txt"
fi
