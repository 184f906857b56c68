#!/usr/bin/env bash
# Nsight Compute's memory counts beside the simulator's, launch by launch: the reference probe at
# strides 1..65, the lesson's transposes (tile[32][32], tile[32][33]) and the tx*2%32 demo, a
# 32 x 32 tile of 8-, 16-, 32-, 64- and 128-bit elements transposed conflicting, padded and
# swizzled (tests/fixtures/kernels/vector_tile_accesses.cu), and Part 2's float4, diluted and
# idle-tile fixtures. Run on a GPU machine with ncu, from the repository root, with a grader
# built for it (scripts/build.sh, GRADER_BUILD_DIR=build-gpu). Each kernel is launched once by
# the hidden `grader __launch`; the simulator runs the same source for the exercise's default arch
# and scales one block's counts to the grid (the blocks of these kernels are alike).
# Usage: scripts/ncu-compare.sh [GRADER] [OUT_FILE]
# Environment: NCU (default ncu), NCU_COMPARE_STRIDES (default 1..65, e.g. "3 16" for a quick run).
# Prints: kernel, stride, metric, ncu, simulator, simulator/ncu; then, per kernel, what the
# grader derives from them on each side: the conflict degree of loads and stores (wavefronts over
# wavefronts less bank conflicts: the fewest the width allows) and global sectors per request, and
# the hand-worked degree where one is known. Exit 0 when every pair is equal.
set -uo pipefail
grader=${1:-${GRADER:-build-gpu/harness/cli/grader}}
out=${2:-/dev/null}
ncu=${NCU:-ncu}
shared=l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,smsp__sass_inst_executed_op_shared_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,smsp__sass_inst_executed_op_shared_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
global=l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum,smsp__inst_executed_op_global_ld.sum,smsp__inst_executed_op_global_st.sum
metrics=$shared,$global
mismatches=0
derived_mismatches=0

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

# The grader's derived figures from one side's metric,value lines: the conflict degree of loads
# and stores, and global sectors per request. "-" where there was no such access.
derived() {
  python3 -c '
import sys
v = {}
for line in sys.stdin:
    name, _, value = line.strip().rpartition(",")
    try:
        v[name] = float(value)
    except ValueError:
        pass
def degree(kind):
    w = v.get("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_" + kind + ".sum", 0)
    c = v.get("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_" + kind + ".sum", 0)
    return "%.3f" % (w / (w - c)) if w > c else "-"
def sectors(kind):
    r = v.get("l1tex__t_requests_pipe_lsu_mem_global_op_" + kind + ".sum", 0)
    s = v.get("l1tex__t_sectors_pipe_lsu_mem_global_op_" + kind + ".sum", 0)
    return "%.3f" % (s / r) if r > 0 else "-"
print(degree("ld"), degree("st"), sectors("ld"), sectors("st"))
'
}

# compare LABEL STRIDE KERNEL_NAME EXPECTED_LOAD_DEGREE -- launch arguments...
# EXPECTED_LOAD_DEGREE: the hand-worked degree of the kernel's worst load ("-": none stated); it
# is printed beside the launch's, which is that degree only where every load of the launch has it.
compare() {
  local label=$1 stride=$2 name=$3 expected=$4
  shift 5
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
  local gd sd
  gd=$(echo "$gpu" | derived)
  sd=$(echo "$sim" | derived)
  [ "$gd" = "$sd" ] || derived_mismatches=$((derived_mismatches + 1))
  printf '%-22s %6s  %-55s %14s %14s  %s\n' "$label" "$stride" \
    "derived: degree ld, st; sectors/request ld, st" "" "" "$([ "$gd" = "$sd" ] && echo equal || echo DIFFER)"
  printf '%-22s %6s    ncu       %s\n' "" "" "$gd"
  printf '%-22s %6s    simulator %s   (hand-worked degree of the worst load line: %s)\n' "" "" "$sd" "$expected"
}

{
  echo "ncu-compare $(date -u +%Y-%m-%dT%H:%MZ) on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
  "$grader" --version
  printf '%-22s %6s  %-55s %14s %14s  %s\n' kernel stride metric ncu simulator sim/ncu
  for stride in ${NCU_COMPARE_STRIDES:-$(seq 1 65)}; do
    compare probeSharedStride "$stride" probeSharedStride "gcd($stride,32)" -- \
      --kernel reference/probe_shared_stride.cu --grid 1056 --block 256
  done
  for tile in 32 33; do
    compare "transpose tile[32][$tile]" 0 transposeTiled "$([ "$tile" = 32 ] && echo 32 || echo 1)" -- \
      --kernel "tests/fixtures/kernels/transpose_tile$tile.cu" --grid 32,32 --block 32,8 \
      --arg buf=4194304 --arg buf=4194304 --arg i32=1024
  done
  compare "tx*2%32 demo" 0 broadcastHalfTile 1 -- \
    --kernel tests/fixtures/kernels/broadcast_half_tile.cu --grid 64 --block 32,32 \
    --arg buf=262144 --arg buf=262144
  # Every width, laid out three ways; the hand-worked column degrees are in the .cu.
  # bits:conflicting degree:bytes per element
  for width in 8:8:1 16:16:2 32:32:4 64:16:8 128:8:16; do
    IFS=: read -r bits conflicting bytes <<<"$width"
    for layout in conflicting padded swizzled; do
      degree=$([ "$layout" = conflicting ] && echo "$conflicting" || echo 1)
      compare "tile${bits}_$layout" 0 "tile${bits}_$layout" "$degree" -- \
        --kernel tests/fixtures/kernels/vector_tile_accesses.cu --grid 64 --block 32,8 \
        --arg "buf=$((64 * 1024 * bytes))" --arg "buf=$((64 * 1024 * bytes))"
    done
  done
  # Part 2's fixtures of issue 31, at n = 1024.
  for fixture in float4_swizzled:1 diluted_column_read:32 idle_tile_strided_writes:1; do
    IFS=: read -r name degree <<<"$fixture"
    compare "$name" 0 transposeTiled "$degree" -- \
      --kernel "tests/fixtures/padding/$name/transpose.cu" --exercise exercises/day15-padding \
      --grid 32,32 --block 32,8 --arg buf=4194304 --arg buf=4194304 --arg i32=1024
  done
  echo "pairs that differ: $mismatches"
  echo "kernels whose derived degrees or sectors per request differ: $derived_mismatches"
  [ "$mismatches" -eq 0 ]
} | tee "$out"
exit "${PIPESTATUS[0]}"
