#!/bin/bash
# Grades CLASS across a Slurm cluster, N tasks with one GPU each, then merges into RUN/class:
#   scripts/slurm/submit.sh CLASS RUN N [grader batch options]
# Logs: RUN/logs/shard-I.log and RUN/logs/merge.log. Environment: GRADER, GRADER_BACKEND.
set -eu
here=$(cd "$(dirname "$0")" && pwd); class=$1 run=$2 count=$3; shift 3; mkdir -p "$run/logs"
array=$(sbatch --parsable --array=0-$((count - 1)) --output="$run/logs/shard-%a.log" "$here/grade-class.sbatch" "$class" "$run" "$count" "$@") && echo "grading: job array ${array%%;*}"
echo "merge: job $(sbatch --parsable --dependency=afterany:"${array%%;*}" --output="$run/logs/merge.log" "$here/merge-class.sbatch" "$run")"
