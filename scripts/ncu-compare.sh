#!/usr/bin/env bash
# Nsight Compute's shared-memory counts beside the simulator's, launch by launch: the reference
# probe at strides 1..65, the lesson's transposes (tile[32][32], tile[32][33]) and the
# tx*2%32 demo. Run on a GPU machine with ncu, from the repository root, with a grader built for
# it (scripts/build.sh, GRADER_BUILD_DIR=build-gpu). Each kernel is launched once by the hidden
# `grader __launch`; the simulator runs the same source for the exercise's default arch and
# scales one block's counts to the grid (the blocks of these kernels are alike).
# Usage: scripts/ncu-compare.sh [GRADER] [OUT_FILE]
# Environment: NCU (default ncu), NCU_COMPARE_STRIDES (default 1..65, e.g. "3 16" for a quick run).
# Prints: kernel, stride, metric, ncu, simulator, simulator/ncu. Exit 0 when every pair is equal.
set -uo pipefail
grader=${1:-${GRADER:-build-gpu/harness/cli/grader}}
out=${2:-/dev/null}
ncu=${NCU:-ncu}
metrics=l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,smsp__sass_inst_executed_op_shared_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,smsp__sass_inst_executed_op_shared_st.sum
mismatches=0

# metric,value lines from ncu's --csv output (quoted fields; the value may have thousands commas).
ncu_values() {
  python3 -c '
import csv, sys
rows = list(csv.reader(sys.stdin))
head = next((i for i, r in enumerate(rows) if "Metric Name" in r), None)
if head is None:
    sys.exit(1)
name, value = rows[head].index("Metric Name"), rows[head].index("Metric Value")
for r in rows[head + 1:]:
    if len(r) > value:
        print(r[name] + "," + r[value].replace(",", ""))
'
}

# compare LABEL STRIDE KERNEL_NAME -- launch arguments...
compare() {
  local label=$1 stride=$2 name=$3
  shift 4
  local gpu sim
  gpu=$("$ncu" --clock-control none --metrics "$metrics" --csv -k "$name" \
        "$grader" __launch --name "$name" --stride "$stride" "$@" 2>/dev/null | ncu_values)
  sim=$("$grader" __launch --name "$name" --stride "$stride" "$@" --sim --sim-blocks 1)
  for metric in ${metrics//,/ }; do
    local g s ratio
    g=$(echo "$gpu" | grep "^$metric," | tail -n 1 | cut -d, -f2)
    s=$(echo "$sim" | grep "^$metric," | cut -d, -f2)
    if [ -n "$g" ] && [ "$g" != "0" ]; then
      ratio=$(awk -v s="$s" -v g="$g" 'BEGIN { printf "%.4f", s / g }')
    else
      ratio="-"
    fi
    [ "$g" = "$s" ] || mismatches=$((mismatches + 1))
    printf '%-22s %6s  %-55s %14s %14s  %s\n' "$label" "$stride" "$metric" "${g:-?}" "${s:-?}" "$ratio"
  done
}

{
  echo "ncu-compare $(date -u +%Y-%m-%dT%H:%MZ) on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
  "$grader" --version
  printf '%-22s %6s  %-55s %14s %14s  %s\n' kernel stride metric ncu simulator sim/ncu
  for stride in ${NCU_COMPARE_STRIDES:-$(seq 1 65)}; do
    compare probeSharedStride "$stride" probeSharedStride -- \
      --kernel reference/probe_shared_stride.cu --grid 1056 --block 256
  done
  for tile in 32 33; do
    compare "transpose tile[32][$tile]" 0 transposeTiled -- \
      --kernel "tests/fixtures/kernels/transpose_tile$tile.cu" --grid 32,32 --block 32,8 \
      --arg buf=4194304 --arg buf=4194304 --arg i32=1024
  done
  compare "tx*2%32 demo" 0 broadcastHalfTile -- \
    --kernel tests/fixtures/kernels/broadcast_half_tile.cu --grid 64 --block 32,32 \
    --arg buf=262144 --arg buf=262144
  echo "pairs that differ: $mismatches"
  [ "$mismatches" -eq 0 ]
} | tee "$out"
exit "${PIPESTATUS[0]}"
