#!/usr/bin/env bash
# Everything that needs a GPU, in one call. Run on a GPU machine from the repository root with a
# build made on the development machine and carried there (the GPU machine has the CUDA toolkit
# and driver but none of the build's libraries, which the grader carries statically).
#
# Usage: scripts/gpu-check.sh OUT_DIR [SECTION...]      (no section: every one, in this order)
#   machine   the GPU, driver, profiling permission, the grader's version
#   probe     Part 1: grader sweep, a grade of student/example/ (text and JSON)
#   padding   Part 2: grader sweep and a grade of student/padding/example/ (the lesson's table)
#   fixtures  every fixture of both exercises through grader grade (tests/test_gpu_fixtures)
#   hostile   every hostile submission (tests/fixtures/hostile) through grader grade on the GPU
#   counters  CUPTI: tests/test_counters as this user, then as the user nobody (the fallback):
#             every access width's counted degree (wavefronts over wavefronts less bank
#             conflicts) and global sectors per request against the simulator's and the
#             hand-worked ones (tests/fixtures/kernels/vector_tile_accesses.cu), and a grade's
#             note on the simulator's witness, compared at the grid's scale
#   bench     this grader beside another build of it in one run, their grades interleaved
#             (scripts/bench/table_bench.py): 20 grades of each exercise's example (the probe
#             also without counters) and the class of 100 through grader batch: walls, stages,
#             ratio spreads, verdict flips; then a grade alone of each, stage by stage
#             (scripts/bench/worker_timeline.py). The other build is .carry/before/bin/grader,
#             made from any commit by scripts/bench/build-before.sh COMMIT (a branch against the
#             main it starts from: build-before.sh $(git merge-base HEAD main)), with its own
#             exercises; GRADER_BEFORE=PREFIX names another installed build instead
#   isolation a faulting, a hanging and a trapping kernel between two correct ones in one batch
#   class     the class of 100 through grader batch; SIGKILL midway and --resume
#   share     two batches sharing one GPU at once; --devices 0,0
#   ncu       Nsight Compute against the simulator (scripts/ncu-compare.sh): shared wavefronts,
#             instructions and bank conflicts, global requests and sectors, for the probe, the
#             lesson's transposes, every access width and Part 2's fixtures of issue 31
#   shards    the class of 100 as one task per GPU of this machine (batch --shard I/N with
#             CUDA_VISIBLE_DEVICES=I, as Slurm runs them), merged, against one batch on every GPU
#   corpus    every kernel of tests/fixtures/corpus (real kernels by other people) graded at the
#             manifest's seeds on the simulator and on the GPU (tests/test_corpus, both suites):
#             a table of each one's hand-set verdict beside what each backend gave; JSON in
#             OUT_DIR/corpus-sim.json and OUT_DIR/corpus-cuda.json
#   serve     grader serve (scripts/bench/serve_bench.py): five Part 1 self-checks with the queue
#             empty (upload to the simulator's report and to the GPU's), then 300 students in one
#             minute, ten of them ten times: waits, fairness, none lost, the service's memory;
#             one "goal PASS|MISS" line per goal of issue 35; every attempt's times in
#             OUT_DIR/serve/serve-bench.json; then issue 42's idle connections
#             (serve_hold_bench.py): 2,000 from one address, the red team's 4 x 256, and 2,000
#             behind a proxy, each held 30 s under an open-file limit of 1,024 while 12 students
#             submit and a client polls: the service's CPU, its descriptors, the polls' answers,
#             every attempt's end (OUT_DIR/serve/serve-hold-this.json)
#   lock      the GPU's lock against another local user (issue 32 item 4): its folder and file
#             modes, the user nobody unable to open or replace it, a held lock waited for 3 s
#             and the holder named, a squatted folder refused, a team's shared folder
#   behaviours what a kernel can observe of the GPU (scripts/bench/h200_behaviours.cu): %warpid,
#             shared leftovers, block order, %gridid, NaN results, __fdividef's range, the
#             approximate instructions against the correctly rounded results (their per-mantissa
#             differences into OUT_DIR/approx/), %globaltimer's steps, shared and local addresses,
#             cudaMalloc's placement, %clock_hi/%pm/%envreg, unwritten registers, reads past a
#             buffer's end; issue 42's: the rounded intrinsics in every direction against the
#             host's fesetround, atomics' flush to zero, clock() back to back, the blocks an SM
#             holds of a 200-register kernel, shared reads past a block's declared size; then the
#             simulator's tests of the same (test_sim_fidelity, test_sim_rounding). The
#             simulator's model of each is docs/simulator-fidelity.md
#   class2    issue 32's class figures: a generated Part 2 class of 100 (make_class.py --exercise
#             padding), then Part 1's class of 100, each through grader batch with the device
#             servers' resident memory sampled through it (batch_bench.py --server-memory): wall,
#             verdicts against expected.json, memory after the first report, at the end and at
#             the peak; the same with the grader from before (.carry/before/bin/grader, made by
#             scripts/bench/build-before.sh ac621a7) where it is there
#   spin      kernels that spin 200 and 700 ms a launch (tests/fixtures/spinning): each graded
#             alone, then in a batch between correct ones; where each stopped, whose fault, and
#             how long each grade held the GPU and waited for it
#   slips     what each slip of the example costs on the GPU (scripts/slips.py, issue 33): a
#             decimal comma, a unit, a blank sentence give 15/15 PASS with a note; a wrong
#             prediction 14/15 PASS; the placeholder id 14/15 FAIL; a misnamed file names the
#             rename; each report's second line is its diagnosis
#   engine    issue 39's figures (scripts/bench/engine_bench.py; no GPU needed, not in the default
#             list): the simulator's grades beside the grader of ac621a7 (.carry/before, made by
#             scripts/bench/build-before.sh ac621a7): the class of 100 through batch --jobs 2,
#             its slowest student, one Part 1, one Part 2 and one missing-barrier grade alone;
#             first on two cores (taskset -c 0,1: as the development machine), then the grades
#             alone on every core (the simulator's blocks on all of them)
#   findings  issue 40's six cases on the GPU (tests/fixtures/submissions and padding): each graded
#             in text and JSON, its reason (the summary) and the first screen of its report up to
#             the rule, with the number of lines; reports in OUT_DIR/findings/
#   redteam   the red team's eight sim_fidelity fixtures of 2026-12-06 (large-argument __sinf and
#             __cosf; dependent-FMA and load latency, __nanosleep of 1 us and of 10 ms, each read
#             by clock64(); __launch_bounds__(128); printf's result) graded on the GPU, and what
#             they observe (scripts/bench/redteam_behaviours.cu)
# Environment: GRADER_BUILD_DIR (default build), GRADER_BEFORE (bench: the other build's install
# prefix, default .carry/before), NCU_COMPARE_STRIDES (passed on), GRADER_CORPUS_SIM
# (corpus: the simulator's corpus-sim.json made beforehand by tests/test_corpus on a machine
# without a GPU, so that the GPU's time goes to the GPU's half).
set -uo pipefail
root=$(pwd)
out=${1:?usage: scripts/gpu-check.sh OUT_DIR [SECTION...]}
shift
sections=("$@")
[ "${#sections[@]}" -gt 0 ] ||
  sections=(machine probe padding fixtures hostile counters bench isolation class share ncu shards
            corpus lock serve behaviours class2 spin slips findings redteam)
mkdir -p "$out"
build="${GRADER_BUILD_DIR:-build}"
grader="$root/$build/harness/cli/grader"
padding=(--exercise exercises/day15-padding)
# Every scratch folder of this run lies in one folder of its own, removed at the end.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check-XXXXXX")
chmod 755 "$scratch"  # the user nobody reads a report it writes there
trap 'rm -rf "$scratch"' EXIT

section() { printf '\n==== %s (%s) ====\n' "$*" "$(date -u +%H:%M:%SZ)"; }

# Runs the rest of the line as the user nobody, with a home of its own in the scratch folder.
as_nobody() {
  mkdir -p $scratch/nobody-home && chown nobody $scratch/nobody-home
  setpriv --reuid=nobody --regid=nogroup --clear-groups env HOME=$scratch/nobody-home "$@"
}

run_machine() {
  section "machine $(date -u +%Y-%m-%dT%H:%MZ)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
  grep -i profiling /proc/driver/nvidia/params 2>/dev/null
  echo "user: $(id)"
  "$grader" --version
}

run_probe() {
  section "Part 1: grader sweep"
  "$grader" sweep --seed 1
  section "Part 1: grader grade student/example/"
  /usr/bin/time -f "wall %e s" "$grader" grade student/example/ --seed 7
  echo "exit status: $?"
  "$grader" grade student/example/ --seed 7 --format json --output "$out/probe-report.json" --quiet
}

run_padding() {
  section "Part 2: grader sweep --exercise exercises/day15-padding"
  "$grader" sweep "${padding[@]}" --seed 1
  "$grader" sweep "${padding[@]}" --seed 1 --format json > "$out/padding-sweep.json"
  section "Part 2: grader grade student/padding/example/"
  /usr/bin/time -f "wall %e s" "$grader" grade student/padding/example/ "${padding[@]}" --seed 7
  echo "exit status: $?"
  "$grader" grade student/padding/example/ "${padding[@]}" --seed 7 --format json \
    --output "$out/padding-report.json" --quiet
}

run_fixtures() {
  section "every fixture through grader grade (tests/test_gpu_fixtures)"
  "$root/$build/tests/test_gpu_fixtures" 2>&1 | tail -150
}

# One line for a grade's JSON report $1 of fixture $2 that exited $3: its exit status, verdict,
# score, failed checks and where it stopped.
grade_line() {
  python3 - "$1" "$2" "$3" <<'EOF'
import json, sys
path, name, code = sys.argv[1:]
try:
    r = json.load(open(path))
except Exception as e:
    print(f"{name:45s} exit {code:>3}  no report ({e})")
    sys.exit()
failed = [c["id"] for c in r.get("checks", []) if c.get("status") == "failed"]
stop = r.get("interruption") or {}
print(f"{name:45s} exit {code:>3}  {r['verdict']:10s} {r.get('score')}/{r.get('max_score')}"
      f"  failed: {','.join(failed) or '-'}  {stop.get('stage', '')} {stop.get('message', '')[:90]}")
print("    " + r.get("summary", "")[:200])
EOF
}

run_hostile() {
  section "hostile submissions through grader grade on the GPU"
  local reports="$scratch/hostile"
  rm -rf "$reports" && mkdir -p "$reports"
  for folder in tests/fixtures/hostile/*/; do
    local name exercise=()
    name=$(basename "$folder")
    [ -f "$folder/probe.cu" ] || [ -f "$folder/transpose.cu" ] || continue
    [ -f "$folder/transpose.cu" ] && exercise=("${padding[@]}")
    timeout 300 "$grader" grade "$folder" "${exercise[@]}" --seed 7 --format json \
      --output "$reports/$name.json" --quiet >/dev/null 2>&1
    grade_line "$reports/$name.json" "$name" "$?"
  done
}

# The red team's sim_fidelity fixtures of 2026-12-06, which the simulator passes: each graded on
# the GPU at the seed the simulator graded it (a GPU is expected to fail every one), then what
# they observe, measured (scripts/bench/redteam_behaviours.cu).
run_redteam() {
  section "the red team's simulator-fidelity fixtures graded on the GPU"
  local reports="$scratch/redteam"
  rm -rf "$reports" && mkdir -p "$reports"
  for name in sinf_large_argument_sniffing cosf_large_argument_sniffing fma_latency_sniffing \
              load_latency_sniffing launch_bounds_below_block printf_return_sniffing \
              nanosleep_exact_sniffing nanosleep_beyond_limit_sniffing; do
    timeout 300 "$grader" grade "tests/fixtures/sim_fidelity/$name" --backend cuda \
      --seed 20261202 --format json --output "$reports/$name.json" --quiet >/dev/null 2>&1
    grade_line "$reports/$name.json" "$name" "$?"
  done
  section "what they observe on this GPU (scripts/bench/redteam_behaviours.cu)"
  nvcc -O2 -arch=native -o "$scratch/redteam_behaviours" scripts/bench/redteam_behaviours.cu &&
    "$scratch/redteam_behaviours"
}

run_counters() {
  section "CUPTI counters (tests/test_counters) as $(id -un)"
  "$root/$build/tests/test_counters" 2>&1 | tail -140
  section "CUPTI counters and a grade as the user nobody"
  chmod -R a+rX "$root" 2>/dev/null
  as_nobody "$root/$build/tests/test_counters" 2>&1 | tail -40
  mkdir -p "$scratch/nobody" && chown nobody "$scratch/nobody"
  as_nobody "$grader" grade student/example/ --seed 7 --format json --output "$scratch/nobody/report.json" --quiet
  echo "exit status: $?"
  cp $scratch/nobody/report.json "$out/nobody-probe-report.json" 2>/dev/null
  python3 - $scratch/nobody/report.json <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
print("verdict:", r["verdict"], r["score"], "/", r["max_score"])
for note in r["environment"]["notes"]:
    print("note:", note)
print("count sources:", sorted({row["count_source"] for row in r["rows"] if row["count_source"]}))
EOF
  # What a grade says of its counts (issue 31, issue 30 item 4): each row's counted degree and
  # global sectors per request, the counted-degree check's details (the witness note must be
  # absent where the GPU and the simulator agree at the grid's scale), the lines.
  section "counted degrees, sectors and the witness note in a grade, as $(id -un)"
  local submission name
  for submission in student/example/ tests/fixtures/padding/float4_swizzled \
                    tests/fixtures/padding/diluted_column_read \
                    tests/fixtures/padding/idle_tile_strided_writes; do
    name=$(basename "$submission")
    local extra=()
    [ "${submission#tests/fixtures/padding}" != "$submission" ] && extra=("${padding[@]}")
    "$grader" grade "$submission" "${extra[@]}" --seed 7 --format json \
      --output "$scratch/counts-$name.json" --quiet
    echo "$submission: exit status $?"
    cp "$scratch/counts-$name.json" "$out/counts-$name.json" 2>/dev/null
    python3 - "$scratch/counts-$name.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
print("  verdict:", r["verdict"], r["score"], "/", r["max_score"])
for row in r["rows"]:
    print(f"  {row['kernel']:10s} stride {row['stride']:2d}  degree {row['counted_degree']} "
          f"(ld {row.get('counted_load_degree')}, st {row.get('counted_store_degree')}, "
          f"{row['count_source']})  sectors/request ld {row.get('global_load_sectors_per_request')} "
          f"st {row.get('global_store_sectors_per_request')}  ratio {row['ratio']}")
for check in r["checks"]:
    if check.get("kind") == "counted_degree":
        print("  counted-degree check:", check["status"])
        for detail in check["details"]:
            print("    ", detail)
for row in r["rows"]:
    for line in row.get("shared_lines", []):
        print(f"  line {line['file']}:{line['line']} {'st' if line['store'] else 'ld'} "
              f"{8 * line['bytes_per_lane']}-bit stride {row['stride']}: degree {line['degree']}")
    if row.get("shared_lines"):
        break
EOF
  done
}

run_bench() {
  # The "before" column: the grader installed into $GRADER_BEFORE (default .carry/before/, where
  # scripts/bench/build-before.sh COMMIT installs it; any `cmake --install` prefix will do), which
  # reads its own exercises from its share/grader/.
  local before_dir="${GRADER_BEFORE:-.carry/before}" before=()
  case "$before_dir" in /*) ;; *) before_dir="$root/$before_dir" ;; esac
  if [ -x "$before_dir/bin/grader" ]; then
    before=(--before "$before_dir/bin/grader")
    echo "bench: before is $before_dir/bin/grader ($("$before_dir/bin/grader" --version))"
  else
    echo "bench: no $before_dir/bin/grader (scripts/bench/build-before.sh): no 'before' column"
  fi
  section "benchmark: issue 19's table, this grader beside the one before (table_bench.py)"
  python3 "$root/scripts/bench/table_bench.py" "$grader" "${before[@]}" --rows gpu --runs 20 \
    --class-size 100 --timeout 5
  section "a grade alone, stage by stage (worker_timeline.py): Part 1, then Part 2"
  python3 "$root/scripts/bench/worker_timeline.py" "$grader" student/example --runs 3
  python3 "$root/scripts/bench/worker_timeline.py" "$grader" student/padding/example --runs 2 \
    --exercise exercises/day15-padding
}

run_isolation() {
  section "isolation: faulting, hanging, trapping kernels between correct ones (test_gpu_isolation)"
  "$root/$build/tests/test_gpu_isolation" 2>&1 | tail -40
}

run_class() {
  section "batch: a generated class of 100 (scripts/bench/make_class.py, batch_bench.py)"
  rm -rf $scratch/class $scratch/class-out
  python3 "$root/scripts/bench/make_class.py" $scratch/class --size 100 --seed 1
  python3 "$root/scripts/bench/batch_bench.py" "$grader" $scratch/class $scratch/class-out --timeout 5
  cp $scratch/class-out/gradebook.csv $scratch/class-out/class-report.html "$out/" 2>/dev/null

  section "batch killed with SIGKILL midway, then resumed"
  rm -rf $scratch/class-kill
  "$grader" batch $scratch/class --output $scratch/class-kill --timeout 5 --quiet &
  local batch_pid=$!
  sleep 8
  kill -KILL "$batch_pid"
  wait "$batch_pid" 2>/dev/null
  echo "reports before the kill: $(ls $scratch/class-kill/*/report.json 2>/dev/null | wc -l)"
  "$grader" batch $scratch/class --output $scratch/class-kill --timeout 5 --resume --quiet
  echo "resume exit status: $?"
  local submissions rows unique
  submissions=$(find $scratch/class -mindepth 1 -maxdepth 1 -type d ! -name '.*' | wc -l)
  rows=$(python3 -c 'import csv,sys; print(sum(1 for _ in csv.DictReader(open(sys.argv[1], encoding="utf-8-sig"))))' $scratch/class-kill/gradebook.csv)
  unique=$(python3 -c 'import csv,sys; print(len({r["folder"] for r in csv.DictReader(open(sys.argv[1], encoding="utf-8-sig"))}))' $scratch/class-kill/gradebook.csv)
  echo "submissions: $submissions, gradebook rows: $rows, distinct folders: $unique"
}

run_share() {
  section "two batches sharing GPU 0 at once (halves of the class), then --devices 0,0"
  [ -d $scratch/class ] || python3 "$root/scripts/bench/make_class.py" $scratch/class --size 100 --seed 1
  rm -rf $scratch/half-a $scratch/half-b $scratch/share-a $scratch/share-b $scratch/share-00
  mkdir -p $scratch/half-a $scratch/half-b
  local i=0
  for d in $scratch/class/*/; do
    [ -f "$d/probe.cu" ] || continue
    if [ $((i % 2)) -eq 0 ]; then cp -r "$d" $scratch/half-a/; else cp -r "$d" $scratch/half-b/; fi
    i=$((i + 1))
    [ "$i" -lt 40 ] || break
  done
  local began=$SECONDS
  "$grader" batch $scratch/half-a --output $scratch/share-a --timeout 5 --quiet &
  local a=$!
  "$grader" batch $scratch/half-b --output $scratch/share-b --timeout 5 --quiet &
  local b=$!
  wait "$a"; echo "batch A exit status: $?"
  wait "$b"; echo "batch B exit status: $?"
  echo "both batches: $((SECONDS - began)) s"
  python3 "$root/scripts/bench/timing_overlap.py" $scratch/share-a $scratch/share-b
  section "grader batch --devices 0,0"
  began=$SECONDS
  "$grader" batch $scratch/half-a --output $scratch/share-00 --timeout 5 --devices 0,0 --quiet
  echo "exit status: $?, $((SECONDS - began)) s"
  python3 "$root/scripts/bench/timing_overlap.py" $scratch/share-00
}

run_ncu() {
  if ! command -v ncu >/dev/null; then
    section "ncu: not on this machine, skipped"
    return
  fi
  section "simulator and the grader's counters against Nsight Compute (scripts/ncu-compare.sh)"
  "$root/scripts/ncu-compare.sh" "$grader" "$out/ncu-compare.txt"
}

# docs/slurm.md: a node's GPUs, one array task each, as Slurm would run them on one node.
run_shards() {
  local gpus
  gpus=$(nvidia-smi -L | wc -l)
  section "shards: the class of 100 as $gpus tasks, one per GPU, then grader merge"
  [ -d $scratch/class ] || python3 "$root/scripts/bench/make_class.py" $scratch/class --size 100 --seed 1
  rm -rf $scratch/shards-one $scratch/shards-run
  local began=$SECONDS
  "$grader" batch $scratch/class --output $scratch/shards-one --timeout 5 --backend cuda --quiet
  echo "one batch on every GPU: exit $?, $((SECONDS - began)) s"
  began=$SECONDS
  local pids=() i
  for ((i = 0; i < gpus; i++)); do
    CUDA_VISIBLE_DEVICES=$i "$grader" batch $scratch/class --output "$scratch/shards-run/shards/$i" \
      --shard "$i/$gpus" --backend cuda --timeout 5 --quiet &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do wait "${pids[$i]}"; echo "task $i exit $?"; done
  echo "$gpus tasks: $((SECONDS - began)) s"
  local merge_began
  merge_began=$(date +%s.%N)
  "$grader" merge $scratch/shards-run/shards/* --output $scratch/shards-run/class
  echo "merge exit $?, $(python3 -c "import time; print(round(time.time() - $merge_began, 2))") s"
  python3 - $scratch/shards-run $scratch/shards-one <<'PY'
import csv, glob, json, sys
run, one = sys.argv[1], sys.argv[2]
for path in sorted(glob.glob(f"{run}/shards/*/shard.json")):
    m = json.load(open(path))
    print("shard", m["shard"]["index"], "gpus", [(g["bus_id"], g["name"], g["uuid"]) for g in m["gpus"]],
          "graded", sum(r["graded"] for r in m["runs"]))
def grades(path):
    return {r["folder"]: r["verdict"] for r in csv.DictReader(open(path, encoding="utf-8-sig"))}
a, b = grades(f"{run}/class/gradebook.csv"), grades(f"{one}/gradebook.csv")
print("students", len(a), "verdicts equal to one batch:", sum(a[k] == b.get(k) for k in a))
PY
}

run_behaviours() {
  section "what a kernel can observe of this GPU (scripts/bench/h200_behaviours.cu)"
  mkdir -p "$out/approx"
  # -frounding-math: section 16's reference is the host's own directed rounding (fesetround).
  nvcc -O2 -arch=native -Xcompiler -frounding-math -I. -o "$scratch/behaviours" \
    scripts/bench/h200_behaviours.cu &&
    "$scratch/behaviours" "$out/approx"
  gzip -f "$out"/approx/*.delta 2>/dev/null
  ls -l "$out/approx"
  # Shared memory past a block's declared 16,388 bytes: one process per word, since a fault ends
  # the context. 4097 is the first word past the end; 4128 and 4160 the first past 128- and
  # 256-byte allocation units; 4352 past a further 1 KiB.
  for word in 4097 4100 4127 4128 4159 4160 4352 8192; do
    "$scratch/behaviours" --shared-past "$word"
  done
  # The simulator beside it: the same rounding sweep, atomics, granule and registers
  # (tests/test_sim_fidelity) and the fixtures of issue 42 graded there (test_sim_fixtures).
  "$root/$build/tests/test_sim_fidelity" 2>&1 | tail -3
  "$root/$build/tests/test_sim_rounding" 2>&1 | tail -3
}

# One grade of student/example/ as JSON into $1, with the rest of the line before the grader (an
# environment, as_nobody); prints its exit status, wall, verdict and interruption.
lock_grade() {
  local report=$1
  shift
  rm -f "$report"
  local began
  began=$(date +%s.%N)
  "$@" "$grader" grade student/example/ --seed 7 --format json --output "$report" --quiet
  local code=$?
  python3 - "$report" "$code" "$began" <<'PY'
import json, sys, time
path, code, began = sys.argv[1], sys.argv[2], float(sys.argv[3])
try:
    r = json.load(open(path))
except Exception as e:
    print(f"exit {code}, {time.time() - began:.1f} s, no report ({e})")
    sys.exit()
stop = r.get("interruption") or {}
print(f"exit {code}, {time.time() - began:.1f} s, {r['verdict']} {r['score']}/{r['max_score']}"
      f"  {stop.get('stage', '')}: {stop.get('message', '')}")
PY
}

run_lock() {
  local uid folder lock holder
  uid=$(id -u)
  folder=/tmp/grader-gpu-locks-$uid
  section "lock: this user's GPU lock folder after a grade (expect 700 and 600, owner $(id -un))"
  lock_grade $scratch/lock-first.json env
  stat -c '%a %U %F %n' "$folder" "$folder"/*
  lock=$(ls "$folder"/gpu-*.lock | head -1)
  section "lock: the user nobody opens, replaces, squats (expect every one refused)"
  chmod -R a+rX "$root" 2>/dev/null  # nobody grades below, from this tree
  as_nobody flock -n "$lock" true; echo "nobody flock: exit $? (expect 1, Permission denied)"
  as_nobody mkfifo "$folder/gpu-fifo.lock"; echo "nobody mkfifo: exit $? (expect 1)"
  as_nobody rm -f "$lock"; echo "nobody rm: exit $? (expect 1)"
  section "lock: held by this user's flock -o for 20 s; a grade waits 3 s (expect exit 3 in ~3 s," \
    "'wait for device', naming the flock process)"
  flock -o "$lock" sleep 20 &  # -o: the flock process alone holds it, and goes with kill
  holder=$!
  sleep 1
  echo "holder: $holder ($(cat /proc/$holder/cmdline | tr '\0' ' '))"
  lock_grade $scratch/lock-held.json env GRADER_GPU_LOCK_WAIT=3
  section "lock: meanwhile a grade as nobody, in its own lock (expect exit 0, not waiting)"
  mkdir -p $scratch/nobody-lock && chown nobody $scratch/nobody-lock
  lock_grade $scratch/nobody-lock/report.json as_nobody env GRADER_GPU_LOCK_WAIT=3
  kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null
  section "lock: nobody's folder squatted by root, mode 0777 (expect exit 3, 'belongs to user 0')"
  rm -rf /tmp/grader-gpu-locks-65534 && mkdir -m 0777 /tmp/grader-gpu-locks-65534
  lock_grade $scratch/nobody-lock/report.json as_nobody env
  rm -rf /tmp/grader-gpu-locks-65534
  section "lock: a team's folder (group nogroup, 2770) held by this user; nobody's grade waits 3 s" \
    "(expect exit 3 naming this user's flock process)"
  rm -rf $scratch/team-locks && mkdir $scratch/team-locks
  chgrp nogroup $scratch/team-locks && chmod 2770 $scratch/team-locks
  lock_grade $scratch/lock-team.json env GRADER_GPU_LOCK_DIR=$scratch/team-locks
  stat -c '%a %U %G %n' $scratch/team-locks/*
  flock -o "$(ls $scratch/team-locks/gpu-*.lock | head -1)" sleep 20 &
  holder=$!
  sleep 1
  lock_grade $scratch/nobody-lock/report.json as_nobody env GRADER_GPU_LOCK_DIR=$scratch/team-locks \
    GRADER_GPU_LOCK_WAIT=3
  kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null
}

# The corpus's runner is tests/test_corpus, on both backends: the table puts the hand-set verdict
# beside each backend's verdict and score at each seed ("*" where it differs).
run_corpus() {
  section "corpus: real kernels by other people against their hand-set verdicts (tests/test_corpus)"
  if [ -n "${GRADER_CORPUS_SIM:-}" ]; then
    # The simulator's half needs no GPU: made beforehand on another machine, from the same commit.
    echo "simulator: $GRADER_CORPUS_SIM (made beforehand, not run here)"
    cp "$GRADER_CORPUS_SIM" "$out/corpus-sim.json"
  else
    GRADER_CORPUS_OUT="$out" "$root/$build/tests/test_corpus" --test-suite-exclude=gpu 2>&1 | tail -25
  fi
  GRADER_CORPUS_OUT="$out" "$root/$build/tests/test_corpus" --test-suite=gpu 2>&1 | tail -25
  python3 - "$out/corpus-sim.json" "$out/corpus-cuda.json" <<'EOF'
import json, sys
def load(path):
    try:
        return {e["name"]: e for e in json.load(open(path))["entries"]}
    except (OSError, ValueError) as error:
        print(f"{path}: {error}")
        return {}
sim, gpu = load(sys.argv[1]), load(sys.argv[2])
def cell(entry):
    if entry is None:
        return "-"
    return "  ".join(f"{r['verdict']} {r['score']:g}" + ("" if r["agrees"] else "*")
                     for r in entry["results"])
print(f"{'kernel':40s} {'expected':9s} {'simulator':20s} {'GPU':20s} failed checks: expected | GPU")
differ = {"simulator": 0, "GPU": 0}
for name, entry in (gpu or sim).items():
    e = entry["expected"]
    g = gpu.get(name)
    failed = ",".join(sorted({c for r in g["results"] for c in r["failed"]})) if g else "-"
    for label, table in (("simulator", sim), ("GPU", gpu)):
        differ[label] += sum(not r["agrees"] for r in table.get(name, {"results": []})["results"])
    print(f"{name:40s} {e['verdict'] + ' ' + format(e['score'], 'g'):9s} {cell(sim.get(name)):20s} "
          f"{cell(g):20s} {','.join(e['failed']) or '-'} | {failed or '-'}"
          + ("  (known simulator gap)" if entry["known_sim_gap"] else ""))
print(f"* differs from the hand verdict: simulator {differ['simulator']} grades, GPU {differ['GPU']}")
EOF
}

run_serve() {
  section "grader serve: a self-check with the queue empty, then 300 students in one minute (scripts/bench/serve_bench.py)"
  python3 "$root/scripts/bench/serve_bench.py" "$grader" "$out/serve" --students 300 --heavy 10 \
    --per-heavy 10 --minute 60 --self-checks 5
  echo "exit status: $?"
  section "grader serve through idle connections under 1,024 open files: 2,000 from one address, 4 x 256, 2,000 behind a proxy (scripts/bench/serve_hold_bench.py)"
  python3 "$root/scripts/bench/serve_hold_bench.py" "$grader" "$out/serve" --seconds 30 \
    --students 12 --open-files 1024
  echo "exit status: $?"
}

# Issue 32's figures: the Part 2 and the Part 1 class of 100, each with its device server's
# memory sampled, by this grader and (where built) the one from before.
run_class2() {
  local graders=("$grader") g label exercise
  [ -x "$root/.carry/before/bin/grader" ] && graders+=("$root/.carry/before/bin/grader")
  rm -rf $scratch/class2
  python3 "$root/scripts/bench/make_class.py" $scratch/class2 --size 100 --seed 1 --exercise padding
  [ -d $scratch/class ] || python3 "$root/scripts/bench/make_class.py" $scratch/class --size 100 --seed 1
  for g in "${graders[@]}"; do
    label=now
    exercise=exercises/day15-padding
    if [ "$g" != "$grader" ]; then
      label="before: $("$g" --version)"
      exercise="$(dirname "$(dirname "$g")")/share/grader/exercises/day15-padding"  # its own
    fi
    section "Part 2: a class of 100 through grader batch ($label), the device server's memory sampled"
    rm -rf $scratch/class2-out
    python3 "$root/scripts/bench/batch_bench.py" "$g" $scratch/class2 $scratch/class2-out \
      --timeout 5 --exercise "$exercise" --server-memory --alone 3
    section "Part 1: the class of 100 through grader batch ($label), the device server's memory sampled"
    rm -rf $scratch/class1-out
    python3 "$root/scripts/bench/batch_bench.py" "$g" $scratch/class $scratch/class1-out \
      --timeout 5 --server-memory --alone 3
  done
}

# Issue 32's third goal: a kernel that runs just under its limit costs the GPU at most 3 s.
run_spin() {
  section "kernels that spin 200 and 700 ms a launch, each graded alone (tests/fixtures/spinning)"
  local folder name
  for folder in tests/fixtures/spinning/*/; do
    name=$(basename "$folder")
    /usr/bin/time -f "$name: wall %e s" "$grader" grade "$folder" --seed 7 --format json \
      --output "$out/spin-$name.json" --quiet
    python3 "$root/scripts/bench/gpu_hold.py" "$out/spin-$name.json"
  done
  section "the same in a batch of five, between correct ones: each grade's hold on the GPU and wait"
  rm -rf $scratch/spin-class $scratch/spin-out
  local i=0 kind
  for kind in submissions/correct spinning/spins_200ms submissions/correct_four_accumulators \
              spinning/spins_700ms submissions/correct; do
    i=$((i + 1))
    mkdir -p "$scratch/spin-class/$i-$(basename $kind)"
    cp tests/fixtures/$kind/probe.cu tests/fixtures/$kind/submission.yaml \
      "$scratch/spin-class/$i-$(basename $kind)/"
  done
  /usr/bin/time -f "batch: wall %e s" "$grader" batch $scratch/spin-class \
    --output $scratch/spin-out 2>&1 | grep -E "device server|batch: wall"
  python3 "$root/scripts/bench/gpu_hold.py" $scratch/spin-out/*/report.json
}

run_engine() {
  local before="${GRADER_BEFORE:-$root/.carry/before}"
  if [ ! -x "$before/bin/grader" ]; then
    echo "engine: no $before/bin/grader (scripts/bench/build-before.sh ac621a7): skipped"
    return
  fi
  section "engine: issue 39's figures on two cores (taskset -c 0,1), beside ac621a7"
  taskset -c 0,1 python3 "$root/scripts/bench/engine_bench.py" "$before/bin/grader" \
    "$grader" --out $scratch/engine --jobs 2 --runs 5 | tee "$out/engine-2cores.txt"
  section "engine: the grades alone on every core of this machine"
  python3 "$root/scripts/bench/engine_bench.py" "$before/bin/grader" "$grader" \
    --out $scratch/engine-all --class-dir $scratch/engine/class --no-class --runs 5 |
    tee "$out/engine-all-cores.txt"
}

run_findings() {
  section "issue 40's cases: the reason each report gives on the GPU, and its first screen"
  mkdir -p "$out/findings"
  local folder name extra screen
  for folder in tests/fixtures/submissions/pointer_chase_missing_barrier \
                tests/fixtures/submissions/never_reads_the_tile \
                tests/fixtures/submissions/same_value_flag \
                tests/fixtures/submissions/load_check_strided_fill \
                tests/fixtures/padding/padded_strided_global_write \
                tests/fixtures/padding/tile_16x17 \
                tests/fixtures/padding/missing_barrier; do
    name=$(basename "$folder")
    extra=()
    [ "${folder#tests/fixtures/padding}" != "$folder" ] && extra=("${padding[@]}")
    "$grader" grade "$folder" "${extra[@]}" --backend cuda --seed 20261202 --format json \
      -o "$out/findings/$name.json" --quiet
    "$grader" grade "$folder" "${extra[@]}" --backend cuda --seed 20261202 \
      > "$out/findings/$name.txt" 2>&1
    screen=$(awk -v rule="$(printf '%100s' '' | tr ' ' '-')" '$0 == rule {exit} {n++} END {print n}' \
      "$out/findings/$name.txt")
    echo "--- $name: first screen $screen lines; cause $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print((d.get("diagnosis") or {}).get("cause"), d["verdict"], d["score"])' "$out/findings/$name.json")"
    awk -v rule="$(printf '%100s' '' | tr ' ' '-')" '$0 == rule {exit} {print}' \
      "$out/findings/$name.txt"
  done
}

run_slips() {
  section "slips: what each slip of student/example costs on the GPU (scripts/slips.py)"
  python3 "$root/scripts/slips.py" "$grader" --seed 7 | tee "$out/slips.txt"
}

for s in "${sections[@]}"; do
  case "$s" in
    machine|probe|padding|fixtures|hostile|counters|bench|isolation|class|share|ncu|shards|corpus|lock|serve|behaviours|class2|spin|slips|findings|redteam)
      "run_$s" ;;
    *) echo "gpu-check: unknown section '$s'" >&2; exit 2 ;;
  esac
done
