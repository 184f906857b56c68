#!/usr/bin/env bash
# The Gradescope and PrairieLearn entry scripts, run outside Docker against temporary copies of
# the layouts those platforms give them (/autograder and /grade), with the built grader on PATH.
# Asserts what each platform needs to read: a results.json that exists, parses and has the
# documented fields, also when the grader crashes and writes nothing.
# The example is graded wherever this runs (on the GPU, else on the simulator) and passes. A grade
# the machine cannot give is made so on every machine (the cuda backend told that no driver
# exists): Gradescope shows 0 with an explanation, PrairieLearn "gradable": false.
# Also: a submission's links to the machine's files are neither copied nor followed (and are
# listed), and a hung grader is stopped inside the platform's timeout, in time for the fallback.
# Usage: test_platform_entries.sh PATH/TO/grader
set -euo pipefail

if [ "$#" -ne 1 ] || [ ! -x "$1" ]; then
  echo "usage: $0 PATH/TO/grader (an executable)" >&2
  exit 2
fi
grader_path="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
repo="$(cd "$(dirname "$0")/.." && pwd)"
if ! command -v python3 >/dev/null 2>&1; then
  echo "FAIL: python3 is needed to check the JSON" >&2
  exit 1
fi

scratch="$(mktemp -d "${TMPDIR:-/tmp}/platform-entries-XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
chmod 755 "$scratch"
failures=0

# A bin folder whose `grader` is the given executable, as the images install it.
real_bin="$scratch/bin-real"
mkdir -p "$real_bin"
ln -s "$grader_path" "$real_bin/grader"

# A grader that crashes: exit 4, nothing written.
crash_bin="$scratch/bin-crash"
mkdir -p "$crash_bin"
cat >"$crash_bin/grader" <<'EOF'
#!/bin/sh
echo 'grader: internal error: simulated crash, "quoted" and back\slash' >&2
exit 4
EOF
chmod 755 "$crash_bin/grader"

# A grader that never ends.
hang_bin="$scratch/bin-hang"
mkdir -p "$hang_bin"
printf '#!/bin/sh\nexec sleep 1000\n' >"$hang_bin/grader"
chmod 755 "$hang_bin/grader"

# A grader that says it graded (exit 1) but leaves a truncated file.
truncated_bin="$scratch/bin-truncated"
mkdir -p "$truncated_bin"
cat >"$truncated_bin/grader" <<'EOF'
#!/bin/sh
# grade FOLDER --format F --output FILE: write half a JSON object to FILE
while [ "$#" -gt 0 ]; do
  if [ "$1" = --output ]; then printf '{"score": 3.0, "tests": [' >"$2"; fi
  shift
done
exit 1
EOF
chmod 755 "$truncated_bin/grader"

# A grader that cannot grade on this machine, whatever the machine: the cuda backend, with a
# driver library that does not exist (exit 3, ungradable, a report written).
nogpu_bin="$scratch/bin-nogpu"
mkdir -p "$nogpu_bin"
cat >"$nogpu_bin/grader" <<EOF
#!/bin/sh
GRADER_LIBCUDA=/nonexistent/libcuda.so.1 exec "$grader_path" "\$@" --backend cuda
EOF
chmod 755 "$nogpu_bin/grader"

check() {  # check NAME PYTHON: run PYTHON with `data` bound to the last run's results.json
  local name="$1" file="$results_file" code="$2"
  if [ ! -f "$file" ]; then
    echo "FAIL: $name: $file was not written" >&2
    failures=$((failures + 1))
    return
  fi
  if python3 - "$file" <<PY
import json, numbers, sys
with open(sys.argv[1], encoding="utf-8") as f:
    data = json.load(f)
def number(v):
    return isinstance(v, numbers.Number) and not isinstance(v, bool)
$code
PY
  then
    echo "ok: $name"
  else
    echo "FAIL: $name (results.json below)" >&2
    head -c 3000 "$file" >&2
    echo >&2
    failures=$((failures + 1))
  fi
}

# Each run sets results_file to the results.json the entry script was to write.
run_gradescope() {  # run_gradescope CASE BIN [submission source] [extra env...]
  local case_root="$scratch/gradescope-$1"
  results_file="$case_root/results/results.json"
  mkdir -p "$case_root/submission"
  if [ -n "${3:-}" ]; then cp -R "$3/." "$case_root/submission/"; fi
  local extra_env=(GRADER_WALL_LIMIT=300)
  if [ "$#" -gt 3 ]; then extra_env=("${@:4}"); fi
  env PATH="$2:$PATH" AUTOGRADER_ROOT="$case_root" "${extra_env[@]}" \
    "$repo/docker/gradescope/run_autograder" >"$case_root.log" 2>&1 ||
    { echo "FAIL: gradescope $1: run_autograder exited non-zero" >&2; cat "$case_root.log" >&2;
      failures=$((failures + 1)); }
}

run_prairielearn() {  # run_prairielearn CASE BIN [student source] [extra env]
  local case_root="$scratch/prairielearn-$1"
  results_file="$case_root/results/results.json"
  mkdir -p "$case_root/student"
  if [ -n "${3:-}" ]; then cp -R "$3/." "$case_root/student/"; fi
  local extra_env=()
  if [ -n "${4:-}" ]; then extra_env=("$4"); fi
  env PATH="$2:$PATH" GRADE_ROOT="$case_root" GRADER_WALL_LIMIT=300 "${extra_env[@]}" \
    "$repo/docker/prairielearn/entrypoint.sh" >"$case_root.log" 2>&1 ||
    { echo "FAIL: prairielearn $1: entrypoint.sh exited non-zero" >&2; cat "$case_root.log" >&2;
      failures=$((failures + 1)); }
}

gradescope_fields='
assert number(data["score"]), "score is a number"
assert isinstance(data["tests"], list) and data["tests"], "tests is a non-empty list"
for t in data["tests"]:
    for key in ("name", "score", "max_score", "status", "output"):
        assert key in t, "test %s has %s" % (t.get("name"), key)
    assert isinstance(t["name"], str) and number(t["score"]) and number(t["max_score"])
    assert t["status"] in ("passed", "failed"), t["status"]
    assert isinstance(t["output"], str)
'
prairielearn_fields='
assert isinstance(data["gradable"], bool), "gradable is a boolean"
assert number(data["score"]) and 0.0 <= data["score"] <= 1.0, "score in [0, 1]"
assert isinstance(data["tests"], list), "tests is a list"
for t in data["tests"]:
    for key in ("name", "points", "max_points"):
        assert key in t, "test %s has %s" % (t.get("name"), key)
    assert isinstance(t["name"], str) and number(t["points"]) and number(t["max_points"])
    assert 0 <= t["points"] <= t["max_points"]
'

# 1. The example submission, graded by the real grader.
run_gradescope example "$real_bin" "$repo/student/example"
check "gradescope: the example's results.json has the documented fields" "$gradescope_fields
names = [t[\"name\"] for t in data[\"tests\"]]
assert \"Accumulator check\" in names and \"Compile and ABI\" in names, names
assert data[\"score\"] > 0, \"the example passes, on the GPU or on the simulator\""

run_gradescope no-gpu "$nogpu_bin" "$repo/student/example"
check "gradescope: an ungradable grade shows 0 and says it is not a grade" "$gradescope_fields
assert data[\"score\"] == 0, \"an ungradable grade shows 0\"
assert \"UNGRADABLE\" in data[\"output\"], data[\"output\"][:300]
assert \"not a grade\" in data[\"output\"], data[\"output\"][:300]
assert \"GPU\" in data[\"output\"], \"the output says a GPU is needed\""

run_prairielearn example "$real_bin" "$repo/student/example"
check "prairielearn: the example's results.json has the documented fields" "$prairielearn_fields
names = [t[\"name\"] for t in data[\"tests\"]]
assert \"Accumulator check\" in names and \"Compile and ABI\" in names, names
assert data[\"gradable\"] is True and data[\"score\"] > 0.99, \"the example passes\""

run_prairielearn no-gpu "$nogpu_bin" "$repo/student/example"
check "prairielearn: an ungradable grade is not gradable and says why" "$prairielearn_fields
assert data[\"gradable\"] is False, \"no GPU: not gradable\"
errors = data[\"format_errors\"]
assert errors and \"GPU\" in errors[0], errors"

# 2. A compile error: reported in its test whatever the machine (the compile needs no GPU).
run_gradescope compile-error "$real_bin" "$repo/tests/fixtures/submissions/compile_error"
check "gradescope: a compile error is reported in the Compile and ABI test" "$gradescope_fields
compile = [t for t in data[\"tests\"] if t[\"name\"] == \"Compile and ABI\"][0]
assert compile[\"status\"] == \"failed\", compile
assert \"__syncthread\" in compile[\"output\"], compile[\"output\"]"

# 3. The files zipped inside a folder: graded from one level down.
mkdir -p "$scratch/zipped/my-submission"
cp "$repo/student/example/probe.cu" "$repo/student/example/submission.yaml" "$scratch/zipped/my-submission/"
run_gradescope nested "$real_bin" "$scratch/zipped"
check "gradescope: files one folder down are graded" "$gradescope_fields
answers = [t for t in data[\"tests\"] if t[\"name\"] == \"Answers file\"][0]
assert answers[\"status\"] == \"passed\", answers"

# 3b. Part 2 (transpose.cu), zipped inside a folder too, and as PrairieLearn gives it.
mkdir -p "$scratch/zipped-padding/part2"
cp "$repo/student/padding/example/transpose.cu" "$repo/student/padding/example/submission.yaml" \
  "$scratch/zipped-padding/part2/"
run_gradescope padding-nested "$real_bin" "$scratch/zipped-padding" \
  GRADER_WALL_LIMIT=300 GRADER_EXERCISE="$repo/exercises/day15-padding"
check "gradescope: Part 2's files one folder down are graded" "$gradescope_fields
names = [t[\"name\"] for t in data[\"tests\"]]
assert \"Exact transpose\" in names, names
answers = [t for t in data[\"tests\"] if t[\"name\"] == \"Answers file\"][0]
assert answers[\"status\"] == \"passed\", answers
compile = [t for t in data[\"tests\"] if t[\"name\"] == \"Compile and ABI\"][0]
assert compile[\"status\"] == \"passed\", compile"
run_prairielearn padding "$real_bin" "$repo/student/padding/example" \
  GRADER_EXERCISE="$repo/exercises/day15-padding"
check "prairielearn: a Part 2 submission has the documented fields" "$prairielearn_fields
names = [t[\"name\"] for t in data[\"tests\"]]
assert \"Exact transpose\" in names and \"Compile and ABI\" in names, names"

# 3c. Part 2 as docs/docker.md sets it up: Gradescope's source carries a grader-exercise file
#     naming the bundled exercise by id (its zip or image), PrairieLearn's question gives
#     GRADER_EXERCISE=day15-padding in its environment.
mkdir -p "$scratch/gradescope-padding-by-id/source"
echo day15-padding >"$scratch/gradescope-padding-by-id/source/grader-exercise"
run_gradescope padding-by-id "$real_bin" "$repo/student/padding/example"
check "gradescope: source/grader-exercise names Part 2, which is graded" "$gradescope_fields
names = [t[\"name\"] for t in data[\"tests\"]]
assert \"Exact transpose\" in names, names
assert \"day15-padding\" in data[\"output\"], data[\"output\"][:300]
assert data[\"score\"] > 0, \"the Part 2 example is graded as Part 2\""
run_prairielearn padding-by-id "$real_bin" "$repo/student/padding/example" \
  GRADER_EXERCISE=day15-padding
check "prairielearn: GRADER_EXERCISE=day15-padding grades Part 2" "$prairielearn_fields
names = [t[\"name\"] for t in data[\"tests\"]]
assert \"Exact transpose\" in names, names
assert data[\"gradable\"] is True and data[\"score\"] > 0, data[\"score\"]"

# 4. An empty submission: graded as a failure by the grader, still a valid file.
run_gradescope empty "$real_bin"
check "gradescope: an empty submission still gets a valid results.json" "$gradescope_fields
assert data[\"score\"] == 0"
run_prairielearn empty "$real_bin"
check "prairielearn: an empty submission still gets a valid results.json" "$prairielearn_fields"

# 5. The grader crashes (exit 4, nothing written): the fallback file.
run_gradescope crash "$crash_bin" "$repo/student/example"
check "gradescope: a crashed grader leaves a valid fallback results.json" "$gradescope_fields
assert data[\"score\"] == 0
assert \"harness failed\" in data[\"output\"] and \"status 4\" in data[\"output\"], data[\"output\"]
assert \"simulated crash\" in data[\"output\"], \"the grader's last words are kept\""
run_prairielearn crash "$crash_bin" "$repo/student/example"
check "prairielearn: a crashed grader leaves gradable false with the reason" "$prairielearn_fields
assert data[\"gradable\"] is False
assert \"status 4\" in data[\"format_errors\"][0] and \"simulated crash\" in data[\"output\"], data"

# 6. The grader exits 1 but its file is cut short: the fallback file, not the broken one.
run_gradescope truncated "$truncated_bin" "$repo/student/example"
check "gradescope: a truncated results file is replaced by the fallback" "$gradescope_fields
assert \"no valid results file\" in data[\"output\"], data[\"output\"]"
run_prairielearn truncated "$truncated_bin" "$repo/student/example"
check "prairielearn: a truncated results file is replaced by the fallback" "$prairielearn_fields
assert data[\"gradable\"] is False and \"no valid results file\" in data[\"output\"], data"

# 7. No grader on PATH at all (a broken image).
run_gradescope no-grader "$scratch/nowhere" "$repo/student/example"
check "gradescope: a missing grader leaves a valid fallback results.json" "$gradescope_fields
assert \"could not be started\" in data[\"output\"], data[\"output\"]"

# 8. As root, the grade runs as an unprivileged user (nobody stands in for the image's grader).
if [ "$(id -u)" -eq 0 ] && id -u nobody >/dev/null 2>&1 && command -v setpriv >/dev/null 2>&1; then
  # Installed as an image installs it (bin/ and share/grader/), readable by every user: the
  # checkout itself may sit where nobody cannot look (/root on a fresh machine).
  installed="$scratch/installed"
  mkdir -p "$installed/bin" "$installed/share/grader"
  cp "$(readlink -f "$grader_path")" "$installed/bin/grader"
  cp -R "$repo/exercises" "$repo/reference" "$repo/student" "$installed/share/grader/"
  chmod -R a+rX "$installed"
  run_prairielearn as-nobody "$installed/bin" "$repo/student/example" GRADER_RUN_AS=nobody
  check "prairielearn: graded as an unprivileged user, same outcome" "$prairielearn_fields
assert data[\"gradable\"] is True"
  if ! grep -q "grade student --format prairielearn" "$scratch/prairielearn-as-nobody.log"; then
    echo "FAIL: prairielearn as-nobody: the grade did not run from the copy" >&2
    failures=$((failures + 1))
  fi
  # PrairieLearn's /grade is root's with mode 0700: the question's own exercise in /grade/tests
  # is copied by root, so the unprivileged grade still reads it (it used to say "Directory does
  # not exist: /grade/tests").
  case_root="$scratch/prairielearn-tests-0700"
  mkdir -p "$case_root/student" "$case_root/tests"
  cp -R "$repo/student/example/." "$case_root/student/"
  cp -R "$repo/exercises/day15-bank-conflicts/." "$repo/reference" "$case_root/tests/"
  cp -R "$repo/student/example" "$case_root/tests/starter_example"
  sed -e 's|\.\./\.\./reference/|reference/|' -e 's|\.\./\.\./student/example|starter_example|' \
    "$repo/exercises/day15-bank-conflicts/exercise.yaml" >"$case_root/tests/exercise.yaml"
  chmod 0700 "$case_root"
  results_file="$case_root/results/results.json"
  env PATH="$installed/bin:$PATH" GRADE_ROOT="$case_root" GRADER_WALL_LIMIT=300 \
    GRADER_RUN_AS=nobody "$repo/docker/prairielearn/entrypoint.sh" >"$case_root.log" 2>&1
  check "prairielearn: the question's tests/exercise.yaml is read under a root-only /grade" \
    "$prairielearn_fields
assert data[\"gradable\"] is True, data
assert \"Accumulator check\" in [t[\"name\"] for t in data[\"tests\"]], data"
  if grep -q 'Directory does not exist' "$case_root.log"; then
    echo "FAIL: prairielearn tests-0700: $(grep 'Directory does not exist' "$case_root.log")" >&2
    failures=$((failures + 1))
  fi
fi

# 9. The grader's image has no python3: the entry scripts then check the file's shape alone.
#    A PATH of the tools they use, without python3, stands in for that image.
tools="$scratch/tools-without-python"
mkdir -p "$tools"
for tool in bash mkdir rm mktemp tr sed awk cat mv cp head tail grep timeout id chown setpriv \
  find; do
  if path="$(command -v "$tool")"; then ln -s "$path" "$tools/$tool"; fi
done
run_without_python() {  # run_without_python CASE BIN
  local case_root="$scratch/prairielearn-$1"
  results_file="$case_root/results/results.json"
  mkdir -p "$case_root/student"
  cp -R "$repo/student/example/." "$case_root/student/"
  PATH="$2:$tools" GRADE_ROOT="$case_root" GRADER_WALL_LIMIT=300 GRADER_RUN_AS='' \
    "$tools/bash" "$repo/docker/prairielearn/entrypoint.sh" >"$case_root.log" 2>&1 ||
    { echo "FAIL: prairielearn $1: entrypoint.sh exited non-zero" >&2; cat "$case_root.log" >&2;
      failures=$((failures + 1)); }
}
run_without_python no-python "$real_bin"
check "prairielearn without python3: the grader's own results.json is kept" "$prairielearn_fields
assert \"Accumulator check\" in [t[\"name\"] for t in data[\"tests\"]]"
run_without_python no-python-truncated "$truncated_bin"
check "prairielearn without python3: a truncated file is replaced by the fallback" "$prairielearn_fields
assert data[\"gradable\"] is False and \"no valid results file\" in data[\"output\"], data"

# 10. A submission whose files are links to this machine's files: a symbolic link to a kernel that
#     would print a secret in its compile log, a hard link to an answers file with a secret id.
#     Neither is read, by the script as root or by the grader; the log lists both as skipped.
printf '#error HOST-SECRET-KERNEL\n' >"$scratch/host-kernel.cu"
sed 's/example-student/HOST-SECRET-ID/' "$repo/student/example/submission.yaml" \
  >"$scratch/host-answers.yaml"
for platform in gradescope prairielearn; do
  case_root="$scratch/$platform-links"
  if [ "$platform" = gradescope ]; then folder="$case_root/submission"; else
    folder="$case_root/student"; fi
  mkdir -p "$folder"
  ln -s "$scratch/host-kernel.cu" "$folder/probe.cu"
  ln "$scratch/host-answers.yaml" "$folder/submission.yaml"
  if [ "$platform" = gradescope ]; then
    env PATH="$real_bin:$PATH" AUTOGRADER_ROOT="$case_root" GRADER_WALL_LIMIT=300 \
      "$repo/docker/gradescope/run_autograder" >"$case_root.log" 2>&1
  else
    env PATH="$real_bin:$PATH" GRADE_ROOT="$case_root" GRADER_WALL_LIMIT=300 \
      "$repo/docker/prairielearn/entrypoint.sh" >"$case_root.log" 2>&1
  fi
  results_file="$case_root/results/results.json"
  if grep -q HOST-SECRET "$results_file" "$case_root.log"; then
    echo "FAIL: $platform links: a linked host file was read" >&2
    failures=$((failures + 1))
  elif ! grep -q "skipped probe.cu: a symbolic link" "$case_root.log" ||
    ! grep -q "skipped submission.yaml: a hard link" "$case_root.log"; then
    echo "FAIL: $platform links: the log does not list what was skipped" >&2
    cat "$case_root.log" >&2
    failures=$((failures + 1))
  else
    echo "ok: $platform: links to host files are neither copied nor followed, and are listed"
  fi
done
check "prairielearn: a linked probe.cu is said to be a link, not missing" "$prairielearn_fields
compile = [t for t in data[\"tests\"] if t[\"name\"] == \"Compile and ABI\"][0]
said = compile[\"message\"] + compile[\"output\"]
assert \"symbolic link\" in said and \"not found\" not in said, said"
results_file="$scratch/gradescope-links/results/results.json"
check "gradescope: a linked probe.cu and a hard-linked answers file are said to be links" \
  "$gradescope_fields
text = json.dumps(data)
assert \"symbolic link\" in text and \"hard link\" in text, text[:2000]"
for platform in gradescope prairielearn; do
  if grep -q 'prairielearn-[A-Za-z0-9]\{6\}\|autograder-[A-Za-z0-9]\{6\}' \
    "$scratch/$platform-links/results/results.json"; then
    echo "FAIL: $platform: a temporary folder's path reaches the student's results" >&2
    failures=$((failures + 1))
  fi
done

# 10b. A submission of 60,000 files (it took 230 s to copy one by one, before the grade's limit
#      started): the copy is bounded, and the results come well within the platform's limit.
for platform in gradescope prairielearn; do
  case_root="$scratch/$platform-many"
  if [ "$platform" = gradescope ]; then folder="$case_root/submission"; else
    folder="$case_root/student"; fi
  mkdir -p "$folder"
  (cd "$folder" && seq -f 'f%06g' 60000 | xargs touch)
  cp "$repo/student/example/probe.cu" "$repo/student/example/submission.yaml" "$folder/"
  started=$(date +%s)
  if [ "$platform" = gradescope ]; then
    env PATH="$real_bin:$PATH" AUTOGRADER_ROOT="$case_root" GRADER_PLATFORM_TIMEOUT=120 \
      "$repo/docker/gradescope/run_autograder" >"$case_root.log" 2>&1
  else
    env PATH="$real_bin:$PATH" GRADE_ROOT="$case_root" GRADER_PLATFORM_TIMEOUT=120 \
      "$repo/docker/prairielearn/entrypoint.sh" >"$case_root.log" 2>&1
  fi
  elapsed=$(($(date +%s) - started))
  results_file="$case_root/results/results.json"
  if [ "$platform" = gradescope ]; then
    check "gradescope: 60,000 files: graded from the two that matter" "$gradescope_fields
answers = [t for t in data[\"tests\"] if t[\"name\"] == \"Answers file\"][0]
assert answers[\"status\"] == \"passed\", answers"
  else
    check "prairielearn: 60,000 files: graded from the two that matter" "$prairielearn_fields
assert \"Accumulator check\" in [t[\"name\"] for t in data[\"tests\"]], data"
  fi
  if [ "$elapsed" -ge 60 ]; then
    echo "FAIL: $platform many files: took $elapsed s of the platform's 120" >&2
    failures=$((failures + 1))
  elif ! grep -q "more entries, not looked at" "$case_root.log"; then
    echo "FAIL: $platform many files: the log does not say what was not looked at" >&2
    failures=$((failures + 1))
  else
    echo "ok: $platform: 60,000 files: results in $elapsed s, and the log says what was left"
  fi
  rm -rf "$case_root"
done

# 11. The grader's limit sits inside the platform's: with Gradescope's timeout at 40 s, a grader
#     that never ends is stopped in time for the fallback results to be written.
started=$(date +%s)
run_gradescope hang "$hang_bin" "$repo/student/example" GRADER_PLATFORM_TIMEOUT=40
elapsed=$(($(date +%s) - started))
check "gradescope: a hung grader is stopped inside the platform's timeout" "$gradescope_fields
assert \"did not finish within 6 s\" in data[\"output\"], data[\"output\"]"
if [ "$elapsed" -ge 40 ]; then
  echo "FAIL: gradescope hang: the script took ${elapsed} s, past the platform's 40 s" >&2
  failures=$((failures + 1))
fi
run_gradescope default-limit "$crash_bin" "$repo/student/example" GRADER_PLATFORM_TIMEOUT=600
run_gradescope too-long "$crash_bin" "$repo/student/example" GRADER_WALL_LIMIT=900
if ! grep -q "(limit 510 s of the platform's 600 s)" "$scratch/gradescope-default-limit.log"; then
  echo "FAIL: gradescope: the default limit is not 510 s of 600" >&2
  failures=$((failures + 1))
elif ! grep -q "(limit 570 s of the platform's 600 s)" "$scratch/gradescope-too-long.log" ||
  ! grep -q "leaves no time to write results" "$scratch/gradescope-too-long.log"; then
  echo "FAIL: gradescope: a wall limit past the platform's timeout is not brought inside it" >&2
  failures=$((failures + 1))
else
  echo "ok: gradescope: the wall limit defaults to 510 s of 600 and never passes 570 s"
fi

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "platform entries: every check passed"
