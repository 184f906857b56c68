#!/bin/bash
# A class graded through a real Slurm on this machine, with the shipped scripts: starts munged,
# slurmctld and one slurmd (two fake GPUs, character devices declared in gres.conf) as root, with
# no systemd, submits a class of 40 on the simulator and a Part 2 class (--exercise
# day15-padding, which the merge must be given too), and asserts what docs/slurm.md promises.
# Stops every daemon it started, whatever happens.
#
#   GRADER_SLURM_TEST=1 scripts/slurm/test-real-slurm.sh build/harness/cli/grader
#   GRADER_SLURM_TEST=1 ctest --test-dir build -L slurm --output-on-failure
#
# Needs Debian 12's slurmctld, slurmd, slurm-client and munge (apt-get install; not
# slurm-wlm-emulator) and root. Without GRADER_SLURM_TEST=1, or without them, it exits 77
# (CTest: skipped). GRADER_SLURM_KEEP=1 keeps its folder; GRADER_SLURM_FIGURES=FILE appends the
# timings to FILE.
set -uo pipefail
grader=$(realpath "${1:?usage: test-real-slurm.sh GRADER}")
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
students=${GRADER_SLURM_STUDENTS:-40}
shards=4

skip() { echo "test-real-slurm: skipped: $*"; exit 77; }
[ "${GRADER_SLURM_TEST:-0}" = 1 ] || skip "set GRADER_SLURM_TEST=1 to run it (a few minutes)"
[ "$(id -u)" = 0 ] || skip "it starts Slurm's daemons, which needs root"
for tool in slurmctld slurmd munged sbatch squeue scontrol scancel sinfo python3; do
  command -v "$tool" >/dev/null || skip "$tool is not installed (apt-get install slurmctld slurmd slurm-client munge)"
done

work=$(mktemp -d /tmp/grader-slurm-test.XXXXXX)
pids=()
failures=0
stop_daemons() {
  local pid
  # Jobs first, so that no slurmstepd outlives its slurmd.
  if [ -n "${SLURM_CONF:-}" ] && [ "${#pids[@]}" -gt 1 ]; then
    scancel --quiet --full --user=root 2>/dev/null
    for _ in $(seq 40); do [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break; sleep 0.5; done
  fi
  for pid in "${pids[@]}"; do
    kill -TERM "$pid" 2>/dev/null
  done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null
  done
  if [ "${GRADER_SLURM_KEEP:-0}" = 1 ]; then
    echo "test-real-slurm: kept $work"
  else
    rm -rf "$work"
  fi
}
trap stop_daemons EXIT
check() {  # check DESCRIPTION COMMAND...
  local what=$1
  shift
  if "$@"; then
    echo "ok: $what"
  else
    echo "FAILED: $what"
    failures=$((failures + 1))
  fi
}
now() { date +%s.%N; }

# --- the cluster: one controller, one node with two fake GPUs --------------------------------
host=$(hostname -s)
mkdir -p "$work"/{etc,state,spool,log,munge,dev,run}
mknod "$work/dev/gpu0" c 1 3 && mknod "$work/dev/gpu1" c 1 3  # /dev/null's numbers
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$work/munge/munge.key"
munged --force --key-file="$work/munge/munge.key" --socket="$work/munge/munge.socket" \
  --pid-file="$work/munge/munged.pid" --log-file="$work/log/munged.log" \
  --seed-file="$work/munge/munged.seed" || { echo "munged did not start"; exit 1; }
for _ in $(seq 50); do [ -s "$work/munge/munged.pid" ] && break; sleep 0.1; done
pids+=("$(cat "$work/munge/munged.pid")")
port=$((17000 + RANDOM % 2000))
cat >"$work/etc/slurm.conf" <<EOF
ClusterName=gradertest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$work/munge/munge.socket
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/run/slurmctld.pid
SlurmdPidFile=$work/run/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=defer_batch_requeue_delay=0
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
KillWait=10
MinJobAge=300
GresTypes=gpu
NodeName=$host NodeAddr=127.0.0.1 CPUs=8 RealMemory=2000 Gres=gpu:2 State=UNKNOWN
PartitionName=grading Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
cat >"$work/etc/gres.conf" <<EOF
NodeName=$host Name=gpu File=$work/dev/gpu[0-1]
EOF
export SLURM_CONF="$work/etc/slurm.conf"
slurmctld -D -i -f "$SLURM_CONF" >"$work/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" >"$work/log/slurmd.out" 2>&1 &
pids+=($!)
ready=0
for _ in $(seq 120); do
  if sinfo -h -o '%t' 2>/dev/null | grep -qE '^(idle|mix|alloc)'; then ready=1; break; fi
  sleep 0.5
done
if [ $ready != 1 ]; then
  echo "Slurm did not come up:"; tail -20 "$work/log/slurmctld.log" "$work/log/slurmd.log"
  sinfo -N -l
  exit 1
fi
echo "test-real-slurm: Slurm $(sinfo -V | cut -d' ' -f2) up: $(sinfo -h -N -o '%N %t %G')"

# --- the class, and one batch of it for comparison ---------------------------------------------
python3 "$repo/scripts/bench/make_class.py" "$work/class" --size "$students" --seed 20 \
  --no-never-ends >/dev/null || { echo "make_class failed"; exit 1; }
start=$(now)
"$grader" batch "$work/class" --output "$work/one" --backend sim --jobs 2 -q
one_status=$?
one_seconds=$(python3 -c "print(round($(now) - $start, 1))")
check "one batch of the class exits 0 (every submission has a verdict): $one_status" \
  test "$one_status" = 0

# --- through Slurm: the array and its merge, with one task cancelled and one requeued midway ----
run="$work/run"
export GRADER="$grader" GRADER_BACKEND=sim
start=$(now)
submitted=$("$here/submit.sh" "$work/class" "$run" "$shards" --jobs 1)
echo "$submitted"
array=$(echo "$submitted" | sed -n 's/^grading: job array //p')
merge=$(echo "$submitted" | sed -n 's/^merge: job //p')
[ -n "$array" ] && [ -n "$merge" ] || { echo "submit.sh did not submit"; exit 1; }

reports_in() { find "$run/shards/$1" -mindepth 2 -maxdepth 2 -name report.json 2>/dev/null | wc -l; }
stamps_of() { find "$run/shards/$1" -mindepth 2 -maxdepth 2 -name report.json \
  -printf '%P %i %T@\n' 2>/dev/null | sort; }
cancelled=0 requeued=0 warned=0
for _ in $(seq 900); do
  if [ $cancelled = 0 ] && [ "$(reports_in 0)" -ge 2 ]; then
    stamps_of 0 >"$work/stamps-0"
    scancel "${array}_0" && cancelled=1
    echo "cancelled ${array}_0 after $(wc -l <"$work/stamps-0") reports"
  fi
  if [ $requeued = 0 ] && [ "$(reports_in 1)" -ge 2 ]; then
    stamps_of 1 >"$work/stamps-1"
    scontrol requeue "${array}_1" && requeued=1
    echo "requeued ${array}_1 after $(wc -l <"$work/stamps-1") reports"
  fi
  # Slurm's warning before a time limit (--signal=B:USR1@120 in the script): the task requeues
  # itself.
  if [ $warned = 0 ] && [ "$(reports_in 2)" -ge 2 ]; then
    stamps_of 2 >"$work/stamps-2"
    scancel --batch --signal=USR1 "${array}_2" && warned=1
    echo "sent ${array}_2 the time limit's SIGUSR1 after $(wc -l <"$work/stamps-2") reports"
  fi
  [ -z "$(squeue -h -o %i)" ] && break
  sleep 0.5
done
first_seconds=$(python3 -c "print(round($(now) - $start, 1))")
check "task 0 was cancelled midway" test $cancelled = 1
check "task 1 was requeued midway" test $requeued = 1
check "task 2 was sent the time limit's signal midway" test $warned = 1
check "task 2 requeued itself after the time limit's signal" \
  grep -q "restart 1," "$run/logs/shard-2.log"
check "task 0, cancelled, stayed cancelled" test "$(grep -c "^grade-class: shard 0/4 on" \
  "$run/logs/shard-0.log")" = 1
check "the merge ran after the array, and refused: shard 0 is missing students" \
  grep -q "rerun array indexes: 0$" "$run/logs/merge.log"
check "a refused merge wrote no class outputs" test ! -e "$run/class/gradebook.csv"

# Run again what the merge named, and merge again after it.
rerun=$(sed -n 's/^rerun array indexes: //p' "$run/logs/merge.log" | tail -1)
start=$(now)
again=$(sbatch --parsable --array="$rerun" --output="$run/logs/shard-%a.log" \
  "$here/grade-class.sbatch" "$work/class" "$run" "$shards" --jobs 1)
sbatch --parsable --dependency=afterany:"${again%%;*}" --output="$run/logs/merge.log" \
  "$here/merge-class.sbatch" "$run" >/dev/null
for _ in $(seq 600); do
  [ -z "$(squeue -h -o %i)" ] && break
  sleep 0.5
done
second_seconds=$(python3 -c "print(round($(now) - $start, 1))")
check "the merge after the rerun succeeded" grep -q "^merged $students students from $shards shards" \
  "$run/logs/merge.log"

# Nothing graded twice: every report there when the task was stopped is the same file, untouched.
for index in 0 1 2; do
  check "task $index's reports from before it was stopped were not graded again" \
    python3 - "$work/stamps-$index" "$run/shards/$index" <<'EOF'
import os, sys
for line in open(sys.argv[1]):
    name, inode, mtime = line.split()
    info = os.stat(os.path.join(sys.argv[2], name))
    if str(info.st_ino) != inode or abs(info.st_mtime - float(mtime)) > 1e-6:
        sys.exit(f"{name} was written again")
EOF
done

# Merge alone, timed, into another folder; and refused without a shard, naming it.
start=$(now)
"$grader" merge "$run"/shards/* --output "$work/merged-again" -q
merge_status=$?
merge_seconds=$(python3 -c "print(round($(now) - $start, 2))")
check "grader merge exits 0: $merge_status" test "$merge_status" = 0
"$grader" merge "$run/shards/0" "$run/shards/1" "$run/shards/3" --output "$work/partial" \
  >"$work/partial.out" 2>&1
partial_status=$?
check "merge without shard 2 exits 5: $partial_status" test "$partial_status" = 5
check "merge without shard 2 names it" grep -q "shard 2 of 4 is missing" "$work/partial.out"
check "merge without shard 2 says which index to run again" \
  grep -q "^rerun array indexes: 2$" "$work/partial.out"

# The merged class equals one batch of the same reports, and the same grades as a batch of its
# own; every student graded exactly once; concurrent tasks never shared a GPU.
cp -r "$work/one" "$work/one-copy"
rm -rf "$work/rebuilt"
mkdir -p "$work/rebuilt"
for dir in "$run"/shards/*/*/; do cp -r "$dir" "$work/rebuilt/"; done
"$grader" batch "$work/class" --output "$work/rebuilt" --backend sim --resume -q
check "python checks of the merged class" python3 - "$work" "$students" "$shards" <<'EOF'
import csv, glob, json, os, re, sys
work, students, shards = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
run, merged, rebuilt, one = (os.path.join(work, p) for p in ("run", "run/class", "rebuilt", "one"))
bad = []
manifests = [json.load(open(p)) for p in sorted(glob.glob(f"{run}/shards/*/shard.json"))]
assigned = [name for m in manifests for name in m["assigned"]]
klass = manifests[0]["class"]["students"]
if len(klass) != students or sorted(assigned) != sorted(klass) or len(set(assigned)) != len(assigned):
    bad.append("the shards' assignments are not a partition of the class")
for name in klass:
    holders = glob.glob(f"{run}/shards/*/{glob.escape(name)}/report.json")
    if len(holders) != 1:
        bad.append(f"{name} has {len(holders)} reports across the shards")
if not all(m["complete"] for m in manifests):
    bad.append("a shard's manifest is not complete")
for index in (0, 1, 2):
    runs = [m for m in manifests if m["shard"]["index"] == index][0]["runs"]
    if len(runs) < 2:
        bad.append(f"shard {index} ran {len(runs)} time(s), expected a restart")
# GPUs: tasks whose runs overlap in time never hold the same one.
spans = []
for m in manifests:
    gpus = m["scheduler"].get("SLURM_JOB_GPUS") or m["scheduler"].get("CUDA_VISIBLE_DEVICES")
    for r in m["runs"]:
        if r["finished_at"]:
            spans.append((m["shard"]["index"], gpus, r["started_at"], r["finished_at"]))
overlaps = 0
for i, a in enumerate(spans):
    for b in spans[i + 1:]:
        if a[2] < b[3] and b[2] < a[3]:
            overlaps += 1
            if a[1] == b[1]:
                bad.append(f"shards {a[0]} and {b[0]} ran at once on GPU {a[1]}")
if any(not s[1] for s in spans):
    bad.append("a task was given no GPU by Slurm")
print(f"  {len(spans)} finished task runs, {overlaps} pairs ran at once")
if overlaps == 0:
    bad.append("no two tasks ran at once: the GPU check saw nothing")
def read(path):
    return open(path, "rb").read()
def page(path):  # the page's generation time is the run's own
    return re.sub(rb"\d{4}-\d\d-\d\d \d\d:\d\d UTC", b"TIME", read(path))
if read(f"{merged}/gradebook.csv") != read(f"{rebuilt}/gradebook.csv"):
    bad.append("gradebook.csv differs from one batch's over the same reports")
if page(f"{merged}/class-report.html") != page(f"{rebuilt}/class-report.html"):
    bad.append("class-report.html differs from one batch's over the same reports")
a, b = json.load(open(f"{merged}/summary.json")), json.load(open(f"{rebuilt}/summary.json"))
a.pop("run"), b.pop("run")
if a != b:
    bad.append("summary.json (but its run) differs from one batch's over the same reports")
for name in klass:
    for f in sorted(os.listdir(f"{rebuilt}/{name}")):
        if read(f"{merged}/{name}/{f}") != read(f"{rebuilt}/{name}/{f}"):
            bad.append(f"{name}/{f} differs")
def grades(path):
    rows = list(csv.reader(open(path, newline="", encoding="utf-8-sig")))
    head = rows[0]
    return {r[0]: (r[head.index("verdict")], r[head.index("score")]) for r in rows[1:]}
g_merged, g_one = grades(f"{merged}/gradebook.csv"), grades(f"{one}/gradebook.csv")
if len(g_merged) != students:
    bad.append(f"the merged gradebook has {len(g_merged)} rows")
# Against the separate batch, said but not asserted: each grade draws two unnamed strides afresh,
# so a kernel that sniffs the named strides may pass one grade and fail the next (the exact
# comparison above is over the same reports).
moved = [k for k in g_one if g_merged.get(k) != g_one[k]]
print(f"  {students - len(moved)} of {students} rows have the same verdict and score as the "
      f"separate batch; differing: {moved}")
if not any(v == "fail" for v, _ in g_merged.values()):
    bad.append("no failing student in the class: the merge's tolerance of failures is untested")
pl = list(csv.reader(open(f"{merged}/prairielearn-scores.csv", newline="", encoding="utf-8")))
if pl[0] != ["uid", "qid", "score_perc", "feedback"] or len(pl) != students + 1:
    bad.append("prairielearn-scores.csv is not one row per student under uid,qid,score_perc,feedback")
for line in bad:
    print("  " + line)
sys.exit(1 if bad else 0)
EOF

# Part 2 through Slurm: the exercise reaches the tasks and the merge alike (the merge of a Part 2
# class without it refused and wrote nothing).
part2="$work/part2-class"
for fixture in "$repo"/tests/fixtures/padding/*/; do
  [ -f "$fixture/transpose.cu" ] || continue
  for copy in 1 2; do
    mkdir -p "$part2/$(basename "$fixture")-$copy"
    cp "$fixture/transpose.cu" "$fixture/submission.yaml" "$part2/$(basename "$fixture")-$copy/"
  done
done
part2_students=$(find "$part2" -mindepth 1 -maxdepth 1 -type d | wc -l)
start=$(now)
"$here/submit.sh" "$part2" "$work/part2" 2 --exercise day15-padding --jobs 2 >/dev/null
for _ in $(seq 900); do
  [ -z "$(squeue -h -o %i)" ] && break
  sleep 0.5
done
part2_seconds=$(python3 -c "print(round($(now) - $start, 1))")
check "the Part 2 class through Slurm merged ($part2_students students)" \
  grep -q "^merged $part2_students students from 2 shards" "$work/part2/logs/merge.log"
check "the Part 2 class's outputs are Part 2's" python3 - "$work/part2/class" "$part2_students" <<'EOF'
import csv, json, sys
out, students = sys.argv[1], int(sys.argv[2])
summary = json.load(open(f"{out}/summary.json"))
rows = list(csv.reader(open(f"{out}/gradebook.csv", newline="", encoding="utf-8-sig")))
pl = list(csv.reader(open(f"{out}/prairielearn-scores.csv", newline="", encoding="utf-8")))
verdicts = {r[0]: r[rows[0].index("verdict")] for r in rows[1:]}
bad = []
if summary["exercise_id"] != "day15-padding":
    bad.append(f"summary.json's exercise is {summary['exercise_id']}")
if len(verdicts) != students or len(pl) != students + 1 or pl[1][1] != "day15-padding":
    bad.append("the gradebook or prairielearn-scores.csv is not one row per student of Part 2")
if verdicts.get("correct_padded-1") != "pass" or verdicts.get("missing_barrier-1") != "fail":
    bad.append(f"verdicts: {verdicts}")
print("\n".join("  " + line for line in bad))
sys.exit(1 if bad else 0)
EOF

# A clean pass through Slurm, nothing stopped: the figure to hold against one batch.
start=$(now)
"$here/submit.sh" "$work/class" "$work/clean" "$shards" --jobs 1 >/dev/null
for _ in $(seq 900); do
  [ -z "$(squeue -h -o %i)" ] && break
  sleep 0.5
done
clean_seconds=$(python3 -c "print(round($(now) - $start, 1))")
check "the clean pass through Slurm merged the class" \
  grep -q "^merged $students students from $shards shards" "$work/clean/logs/merge.log"
cmp -s "$work/clean/class/gradebook.csv" "$run/class/gradebook.csv" ||
  echo "note: the clean pass's gradebook differs from the first one's (timed figures move)"

# grader serve with its GPU's lane handed to this Slurm (docs/serve.md): an attempt's GPU report
# comes from a wave of submit.sh's job array, read back as its task writes it.
printf 'student_id\nann\n' >"$work/serve-roster.csv"
"$grader" tokens issue "$work/serve-roster.csv" --state "$work/serve-state" \
  -o "$work/serve-tokens.csv" 2>/dev/null
"$grader" serve --state "$work/serve-state" --listen 127.0.0.1:0 --rate none \
  --slurm "$here/submit.sh" --slurm-backend sim --slurm-tasks 2 >"$work/serve.log" 2>&1 &
serve_pid=$!
serve_port=""
for _ in $(seq 100); do
  serve_port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/serve.log")
  [ -n "$serve_port" ] && break
  sleep 0.1
done
GRADER_TOKEN=$(sed -n 's/^ann,,//p' "$work/serve-tokens.csv") timeout 600 "$grader" submit \
  "$repo/student/example" --server "http://127.0.0.1:$serve_port" --format json \
  >"$work/serve-submit.json" 2>"$work/serve-submit.err"
serve_status=$?
kill -TERM "$serve_pid" 2>/dev/null
wait "$serve_pid"
check "grader serve through Slurm: grader submit exits 0 ($serve_status; $work/serve-submit.err)" \
  test "$serve_status" = 0
check "grader serve through Slurm: the GPU lane's report is a pass" python3 -c \
  "import json, sys; sys.exit(json.load(open('$work/serve-submit.json'))['gpu']['verdict'] != 'pass')"
check "grader serve through Slurm: its wave ran as a job array (a task's log is there)" \
  bash -c "ls '$work/serve-state'/slurm/wave-*/logs/shard-*.log >/dev/null"

echo "figures: one batch ${one_seconds}s; clean pass through Slurm ${clean_seconds}s; through Slurm (4 tasks, 2 fake GPUs, 1 job each," \
  "first pass with a cancel and a requeue) ${first_seconds}s, rerun of index $rerun and merge" \
  "${second_seconds}s; grader merge alone ${merge_seconds}s; a Part 2 class of $part2_students" \
  "through Slurm (2 tasks) ${part2_seconds}s"
if [ -n "${GRADER_SLURM_FIGURES:-}" ]; then
  {
    echo "one_batch_seconds=$one_seconds"
    echo "slurm_first_pass_seconds=$first_seconds"
    echo "slurm_rerun_and_merge_seconds=$second_seconds"
    echo "merge_seconds=$merge_seconds"
    echo "slurm_clean_pass_seconds=$clean_seconds"
    echo "slurm_part2_seconds=$part2_seconds"
    grep -h "graded in" "$work/clean/logs/"shard-*.log
    for log in "$run"/logs/*.log; do echo "--- $(basename "$log")"; cat "$log"; done
  } >>"$GRADER_SLURM_FIGURES"
fi
if [ $failures -gt 0 ]; then
  echo "test-real-slurm: $failures check(s) failed (GRADER_SLURM_KEEP=1 keeps $work)"
  exit 1
fi
echo "test-real-slurm: every check passed"
