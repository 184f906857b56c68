#!/usr/bin/env bash
# The grader as `cmake --install` lays it out, run as a user would: installed into a temporary
# prefix, then started from another folder (which holds a decoy libm.so.6, as a student's folder
# might), it grades a copy of the example submission with the exercise it finds beside itself.
# Its RUNPATH is checked as the build tree's is (test_runpath.sh).
# Usage: test_installed_grader.sh CMAKE BUILD_DIR
set -euo pipefail
[ "$#" -eq 2 ] || { echo "usage: $0 CMAKE BUILD_DIR" >&2; exit 2; }
cmake_command=$1
build_dir=$(cd "$2" && pwd)
repo=$(cd "$(dirname "$0")/.." && pwd)
scratch=$(mktemp -d "${TMPDIR:-/tmp}/installed-grader-XXXXXX")
trap 'rm -rf "$scratch"' EXIT

"$cmake_command" --install "$build_dir" --prefix "$scratch/prefix" >"$scratch/install.log" ||
  { cat "$scratch/install.log"; echo "FAIL: cmake --install"; exit 1; }
installed=$scratch/prefix/bin/grader
exercise=$scratch/prefix/share/grader/exercises/day15-bank-conflicts
[ -x "$installed" ] || { echo "FAIL: no $installed"; exit 1; }
[ -f "$exercise/exercise.yaml" ] || { echo "FAIL: no exercise installed at $exercise"; exit 1; }
"$repo/tests/test_runpath.sh" "$installed"

mkdir -p "$scratch/elsewhere" "$scratch/submission"
cp "$repo/student/example/probe.cu" "$repo/student/example/submission.yaml" "$scratch/submission/"
# Not a library: a loader that searched the current folder would fail on it, loudly.
echo "not a library" >"$scratch/elsewhere/libm.so.6"
cd "$scratch/elsewhere"
for exercise_args in "" "--exercise $exercise"; do
  status=0
  # shellcheck disable=SC2086 # the empty case passes no argument
  "$installed" grade ../submission $exercise_args --format json --output report.json \
    >grade.out 2>&1 || status=$?
  verdict=$(sed -n 's/^ *"verdict": "\([a-z]*\)".*/\1/p' report.json 2>/dev/null | head -n 1)
  echo "installed grader, run from $(pwd)${exercise_args:+ with $exercise_args}: exit $status, verdict ${verdict:-none}"
  if [ "$status" -ne 0 ] || [ "$verdict" != pass ]; then
    cat grade.out
    echo "FAIL: the installed grader did not pass the example submission"
    exit 1
  fi
  rm -f report.json
done
