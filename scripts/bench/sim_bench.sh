#!/usr/bin/env bash
# How fast the simulator backend grades, on one core: `grader grade student/ --backend sim` five
# times under `taskset -c 0` (median wall time; target: at most 2 s), then the simulator's own
# speed in instructions per second from `grader explain --stats` (the same 2-block launches a
# grade makes, without the compile and the worker process).
# Usage: scripts/bench/sim_bench.sh [GRADER]   (default: build/harness/cli/grader)
set -euo pipefail
grader=${1:-${GRADER:-build/harness/cli/grader}}
runs=5

echo "sim bench $(date -u +%Y-%m-%dT%H:%MZ) on $(. /etc/os-release && echo "$PRETTY_NAME"), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
"$grader" --version

walls=()
for i in $(seq 1 "$runs"); do
  start=$(date +%s.%N)
  taskset -c 0 "$grader" grade student/ --backend sim --seed "$i" --quiet
  end=$(date +%s.%N)
  walls+=("$(echo "$end - $start" | bc -l)")
done
printf 'grade student/ --backend sim, one core, %d runs (s):' "$runs"
printf ' %.3f' "${walls[@]}"
printf '\n'
median=$(printf '%s\n' "${walls[@]}" | sort -g | sed -n "$(( (runs + 1) / 2 ))p")
printf 'median wall: %.3f s (target: at most 2 s)\n' "$median"

echo
echo "simulator speed, one core: grader explain student/ --stats (16 strides, one 2-block launch each)"
taskset -c 0 "$grader" explain student/ --strides 1,2,3,4,5,6,7,8,12,16,24,31,32,33,48,65 --stats |
  tail -n 1
