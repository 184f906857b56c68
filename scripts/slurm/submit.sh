#!/bin/bash
# Grades CLASS across a Slurm cluster, N tasks with one GPU each, then merges into RUN/class:
#   scripts/slurm/submit.sh CLASS RUN N [grader batch options]
# The merge is given the options of the batch's that it reads too (--exercise, for Part 2:
# --exercise day15-padding; --prairielearn-qid), so it merges the class the tasks graded.
# Logs: RUN/logs/shard-I.log and RUN/logs/merge.log. Environment: GRADER, GRADER_BACKEND.
#   scripts/slurm/submit.sh --check
# says whether a class can be submitted from here (sbatch on PATH): `grader serve --slurm` runs
# it at its start and refuses to start where it exits other than 0.
set -eu
if [ "${1:-}" = --check ]; then
  if ! command -v sbatch >/dev/null 2>&1; then
    echo "sbatch is not on PATH here (PATH=$PATH): install Slurm's client commands (Debian:" \
         "slurm-client) or start the service where they are" >&2
    exit 1
  fi
  echo "submit.sh: waves go to Slurm through $(command -v sbatch)"
  exit 0
fi
here=$(cd "$(dirname "$0")" && pwd); class=$1 run=$2 count=$3; shift 3; mkdir -p "$run/logs"
merge_options=()
rest=("$@")
for ((i = 0; i < ${#rest[@]}; i++)); do
  case "${rest[$i]}" in
    --exercise|--prairielearn-qid)
      [ $((i + 1)) -lt ${#rest[@]} ] || { echo "submit.sh: ${rest[$i]} needs a value" >&2; exit 2; }
      merge_options+=("${rest[$i]}" "${rest[$((i + 1))]}"); i=$((i + 1)) ;;
    --exercise=*|--prairielearn-qid=*) merge_options+=("${rest[$i]}") ;;
  esac
done
array=$(sbatch --parsable --array=0-$((count - 1)) --output="$run/logs/shard-%a.log" "$here/grade-class.sbatch" "$class" "$run" "$count" "$@") && echo "grading: job array ${array%%;*}"
echo "merge: job $(sbatch --parsable --dependency=afterany:"${array%%;*}" --output="$run/logs/merge.log" "$here/merge-class.sbatch" "$run" ${merge_options[@]+"${merge_options[@]}"})"
