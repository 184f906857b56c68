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
#   GRADER_PLATFORM_TIMEOUT
#                       the question's externalGradingOptions.timeout in info.json, in
#                       seconds (default 600, what docs/docker.md sets)
#   GRADER_WALL_LIMIT   seconds before the whole grade is stopped (default: the platform's
#                       timeout less a tenth and 30 s, 510 of 600); kept at least 30 s
#                       under the platform's timeout, so this script still writes results
#                       before the platform kills it
#   GRADER_RUN_AS       as root, grade as this user (default: grader, where that user exists);
#                       empty grades as the caller
set -uo pipefail

root="${GRADE_ROOT:-/grade}"
student="$root/student"
results_dir="$root/results"
results="$results_dir/results.json"
grader_cmd="${GRADER:-grader}"
run_as="${GRADER_RUN_AS-grader}"

# Three limits nest: the exercise's per-stage limits (a compile, a kernel run) inside the grade's
# wall limit, inside the platform's timeout. The wall limit leaves the platform time for this
# script to see the grader stopped (timeout's 10 s grace before SIGKILL) and write its fallback
# results; a platform that kills the script first leaves no results file at all.
kill_grace=10
whole_number() { [[ "$1" =~ ^[0-9]+$ ]]; }
platform_timeout="${GRADER_PLATFORM_TIMEOUT:-600}"
if ! whole_number "$platform_timeout" || [ "$platform_timeout" -lt 40 ]; then
  echo "entrypoint: GRADER_PLATFORM_TIMEOUT='$platform_timeout' is not 40 s or more;" \
    "using 600" >&2
  platform_timeout=600
fi
latest_limit=$((platform_timeout - kill_grace - 20))
wall_limit="${GRADER_WALL_LIMIT:-$((platform_timeout - platform_timeout / 10 - 30))}"
if ! whole_number "$wall_limit" || [ "$wall_limit" -lt 1 ]; then
  echo "entrypoint: GRADER_WALL_LIMIT='$wall_limit' is not a number of seconds;" \
    "using $latest_limit" >&2
  wall_limit=$latest_limit
elif [ "$wall_limit" -gt "$latest_limit" ]; then
  echo "entrypoint: GRADER_WALL_LIMIT=$wall_limit s leaves no time to write results" \
    "within the platform's $platform_timeout s; using $latest_limit s" >&2
  wall_limit=$latest_limit
fi

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
  local message="The grading harness failed, so this submission was not graded, and there is \
nothing in your work to change. Tell your instructor, who must fix the grader."
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

# The submission's files are copied into a folder of the grade's own, before the grade starts and
# within bounds, as this script may run as root on whatever the student handed in:
# - a regular file is copied (at most 16 MiB of it, 64 MiB in all);
# - a symbolic link is copied as a link, never followed, and a file with a second name (a hard
#   link, which may be a file of this machine's) becomes an empty file with a second name in the
#   copy, never read: the grade then tells the student which it was, rather than "not found";
# - a folder or anything else is left behind;
# - at most 100 entries are looked at (the sources and answers files first: a submission is a few
#   files), and the copy stops after 30 s. The grade's own limit counts from this script's start,
#   so the results are still written within the platform's limit.
# So no file of the machine is read as the student's, by this script or by the grader. What was
# left behind or changed is listed in the log.
max_entries=100
max_copy_bytes=$((16 * 1024 * 1024))
max_total_bytes=$((64 * 1024 * 1024))
copy_seconds=30
skipped=()
copy_submission() {  # copy_submission FROM TO
  local from="$1" to="$2" record kind links size name total=0 entries looked=0
  local listing="$work/.listing" deadline=$((SECONDS + copy_seconds))
  local sources='^[^/]*/[^/]*/[^/]*/[^/]*\.(cu|cuh|h|yaml|yml)$'
  mkdir -p "$to"
  if [ -L "$from" ] || [ ! -d "$from" ]; then
    return 0
  fi
  timeout "$copy_seconds" find "$from" -mindepth 1 -maxdepth 1 -printf '%y/%n/%s/%f\0' \
    >"$listing" 2>/dev/null
  entries=$(tr -cd '\0' <"$listing" | wc -c)
  while IFS= read -r -d '' record; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      skipped+=("the rest of the submission: copying it took more than ${copy_seconds} s")
      break
    fi
    looked=$((looked + 1))
    kind="${record%%/*}"
    record="${record#*/}"
    links="${record%%/*}"
    record="${record#*/}"
    size="${record%%/*}"
    name="${record#*/}"
    case "$kind" in
      l)
        skipped+=("$name: a symbolic link, copied as a link and not followed")
        cp -P -- "$from/$name" "$to/$name" 2>/dev/null
        ;;
      d) skipped+=("$name: a folder (only the files at the top of the submission are graded)") ;;
      f)
        if [ "$links" -ne 1 ]; then
          skipped+=("$name: a hard link (a second name of another file), not read")
          : >"$to/$name" && ln -- "$to/$name" "$to/.second-name-of-$name" 2>/dev/null
        elif [ "$size" -gt "$max_copy_bytes" ]; then
          skipped+=("$name: larger than 16 MiB")
        elif [ $((total + size)) -gt "$max_total_bytes" ]; then
          skipped+=("$name: past 64 MiB in all")
        elif ! cp -P -- "$from/$name" "$to/$name" 2>/dev/null; then
          skipped+=("$name: could not be copied")
        else
          total=$((total + size))
        fi
        ;;
      *) skipped+=("$name: not a regular file") ;;
    esac
  done < <({ grep -z -E "$sources" "$listing"; grep -z -v -E "$sources" "$listing"; } |
    head -z -n "$max_entries")
  if [ "$entries" -gt "$looked" ] && [ "$looked" -eq "$max_entries" ]; then
    skipped+=("$((entries - looked)) more entries, not looked at: a submission is a few files")
  fi
  rm -f "$listing"
  # A file swapped for a folder or a device while it was being copied is not graded either.
  find "$to" -mindepth 1 -maxdepth 1 ! -type f ! -type l -exec rm -rf {} + 2>/dev/null
  return 0
}

folder="$student"

copy_submission "$folder" "$work/student"
# Graded by its relative name from the grade's folder, so that no temporary path reaches the
# student's report.
folder="student"
for entry in "${skipped[@]}"; do
  echo "entrypoint: skipped $(printf '%s' "$entry" | LC_ALL=C tr -c '[:print:]' '?')"
done

# The question's own exercise (/grade/tests), copied by root like the submission: PrairieLearn
# makes /grade root's with mode 0700, so the unprivileged user could not read it where it is.
# The instructor's files, so copied whole, links as links; bounded in time all the same.
tests_copy_failed=""
if [ -z "${GRADER_EXERCISE:-}" ] && [ -f "$root/tests/exercise.yaml" ]; then
  if ! timeout "$copy_seconds" cp -R -P -- "$root/tests" "$work/tests" \
    2>"$work/tests-copy.err"; then
    tests_copy_failed="the question's tests folder ($root/tests) could not be copied within \
${copy_seconds} s: $(head -c 300 "$work/tests-copy.err")"
  fi
fi

# As root, grade as an unprivileged user, who can read the copy.
launcher=()
output_file="$work/results.json"
if [ "$(id -u)" -eq 0 ] && [ -n "$run_as" ] && id -u "$run_as" >/dev/null 2>&1 &&
  command -v setpriv >/dev/null 2>&1; then
  chown -R -h "$(id -u "$run_as"):$(id -g "$run_as")" "$work"
  launcher=(setpriv --reuid="$(id -u "$run_as")" --regid="$(id -g "$run_as")" --clear-groups)
fi

exercise_args=()
if [ -n "${GRADER_EXERCISE:-}" ]; then
  exercise_args=(--exercise "$GRADER_EXERCISE")
elif [ -f "$work/tests/exercise.yaml" ]; then
  exercise_args=(--exercise "$work/tests")
fi

# The wall limit counts from this script's start: the copy's time comes out of it.
grade_limit=$((wall_limit - SECONDS))
echo "entrypoint: $grader_cmd grade $folder --format prairielearn" \
  "(limit ${wall_limit} s of the platform's ${platform_timeout} s)"
: >"$work/stderr"
if [ -n "$tests_copy_failed" ]; then
  status=2
  echo "entrypoint: $tests_copy_failed" >"$work/stderr"
elif [ "$grade_limit" -lt 5 ]; then
  status=124
else
  # The log is not a terminal, even where the platform gives the container one: no colour codes.
  (cd "$work" && NO_COLOR=1 TERM=dumb timeout --kill-after="$kill_grace" "$grade_limit" \
    "${launcher[@]}" "$grader_cmd" grade "$folder" "${exercise_args[@]}" --format prairielearn \
    --output "$output_file" 2>"$work/stderr" </dev/null)
  status=$?
fi
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
