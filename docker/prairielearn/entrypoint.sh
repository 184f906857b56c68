#!/usr/bin/env bash
# PrairieLearn's external grader runs this in the grading container: the student's files are in
# /grade/student, the question's tests in /grade/tests, and PrairieLearn reads
# /grade/results/results.json when it returns. Whatever happens to the grader, this script leaves
# a valid results.json: the grader's own, or "gradable": false with the reason, which PrairieLearn
# shows as a grading problem instead of a score (the student keeps the attempt).
#
# Environment (for testing and for other layouts):
#   GRADE_ROOT          the root instead of /grade
#   GRADER              the grader command (default: grader, found on PATH)
#   GRADER_EXERCISE     an exercise folder (default: /grade/tests when it holds an exercise.yaml,
#                       else the installed one)
#   GRADER_WALL_LIMIT   seconds before the whole grade is stopped (default 540); keep it under the
#                       question's externalGradingOptions.timeout
#   GRADER_RUN_AS       as root, grade as this user (default: grader, where that user exists);
#                       empty grades as the caller
set -uo pipefail

root="${GRADE_ROOT:-/grade}"
student="$root/student"
results_dir="$root/results"
results="$results_dir/results.json"
grader_cmd="${GRADER:-grader}"
wall_limit="${GRADER_WALL_LIMIT:-540}"
run_as="${GRADER_RUN_AS-grader}"

mkdir -p "$results_dir"
rm -f "$results"
work="$(mktemp -d "${TMPDIR:-/tmp}/prairielearn-XXXXXX")"
trap 'rm -rf "$work"' EXIT

# A JSON string of arbitrary text: printable ASCII, tabs and newlines only, so that a byte that is
# not UTF-8 (a compiler or a crash can print anything) cannot make the file unreadable.
json_string() {
  printf '%s' "$1" | LC_ALL=C tr -cd '\11\12\15\40-\176' |
    LC_ALL=C sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/\t/\\t/g' -e 's/\r/\\r/g' |
    LC_ALL=C awk 'BEGIN { printf "\"" } NR > 1 { printf "\\n" } { printf "%s", $0 }
                  END { printf "\"" }'
}

write_fallback() {
  local why="$1"
  local message="The grading harness failed, so this submission was not graded. Submit again, and \
tell your instructor if it happens again."
  cat >"$results_dir/.results.json.tmp" <<EOF
{
  "gradable": false,
  "score": 0.0,
  "message": $(json_string "$message"),
  "output": $(json_string "$why"),
  "format_errors": [$(json_string "$why")],
  "tests": []
}
EOF
  mv -f "$results_dir/.results.json.tmp" "$results"
}

# A valid PrairieLearn file: a JSON object with a boolean "gradable", a score in [0, 1] when it
# is gradable, and well-formed tests. Without python3 (not in the grader's image), a JSON object
# that is not empty.
results_are_valid() {
  local file="$1"
  [ -s "$file" ] || return 1
  if command -v python3 >/dev/null 2>&1; then
    python3 - "$file" <<'PY'
import json, numbers, sys
try:
    with open(sys.argv[1], encoding="utf-8") as f:
        data = json.load(f)
except (OSError, ValueError):
    sys.exit(1)
def number(v):
    return isinstance(v, numbers.Number) and not isinstance(v, bool)
ok = isinstance(data, dict) and isinstance(data.get("gradable", True), bool)
if ok and data.get("gradable", True):
    ok = number(data.get("score")) and 0.0 <= data["score"] <= 1.0
tests = data.get("tests", []) if ok else None
ok = ok and isinstance(tests, list) and all(isinstance(t, dict) for t in tests)
sys.exit(0 if ok else 1)
PY
  else
    [ "$(LC_ALL=C head -c 1 "$file")" = "{" ] && LC_ALL=C tail -c 2 "$file" | grep -q '}'
  fi
}

folder="$student"

# As root, grade as an unprivileged user, from a copy that user can read.
launcher=()
output_file="$work/results.json"
if [ "$(id -u)" -eq 0 ] && [ -n "$run_as" ] && id -u "$run_as" >/dev/null 2>&1 &&
  command -v setpriv >/dev/null 2>&1; then
  mkdir -p "$work/student"
  if [ -d "$folder" ]; then
    cp -R "$folder/." "$work/student/" 2>/dev/null || true
  fi
  folder="$work/student"
  chown -R "$(id -u "$run_as"):$(id -g "$run_as")" "$work"
  launcher=(setpriv --reuid="$(id -u "$run_as")" --regid="$(id -g "$run_as")" --clear-groups)
fi

exercise_args=()
if [ -n "${GRADER_EXERCISE:-}" ]; then
  exercise_args=(--exercise "$GRADER_EXERCISE")
elif [ -f "$root/tests/exercise.yaml" ]; then
  exercise_args=(--exercise "$root/tests")
fi

echo "entrypoint: $grader_cmd grade $folder --format prairielearn (limit ${wall_limit} s)"
timeout --kill-after=10 "$wall_limit" "${launcher[@]}" "$grader_cmd" grade "$folder" \
  "${exercise_args[@]}" --format prairielearn --output "$output_file" 2>"$work/stderr"
status=$?
cat "$work/stderr" >&2
echo "entrypoint: grader exited with status $status"

# 0 pass, 1 fail and 3 ungradable each come with a report; 2 (usage or exercise error) and
# 4 (internal error) come with none, and 124/137 mean the wall limit stopped it.
case "$status" in
  0 | 1 | 3)
    if results_are_valid "$output_file"; then
      cp "$output_file" "$results_dir/.results.json.tmp" &&
        mv -f "$results_dir/.results.json.tmp" "$results"
      exit 0
    fi
    why="the grader exited with status $status but wrote no valid results file."
    ;;
  124 | 137) why="the grader did not finish within ${wall_limit} s (exit status $status)." ;;
  126 | 127) why="the grader could not be started ('$grader_cmd', exit status $status)." ;;
  2) why="the grader rejected its configuration (exit status 2: a usage or exercise-file error)." ;;
  4) why="the grader hit an internal error (exit status 4)." ;;
  *) why="the grader stopped with exit status $status." ;;
esac
last_error="$(tail -c 2000 "$work/stderr" 2>/dev/null)"
if [ -n "$last_error" ]; then
  why="$why
The grader said: $last_error"
fi
write_fallback "$why"
echo "entrypoint: wrote a fallback results.json: $why" >&2
exit 0
