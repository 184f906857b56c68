#!/usr/bin/env bash
# The grading image's per-grade figures, as docs/measurements records them: one grade of the
# bundled example in a fresh container against the same grade outside Docker, the empty
# container's own cost, and a batch of 8 fixtures outside Docker against one container.
#
# usage: scripts/bench/docker_bench.sh [PATH/TO/grader] [--image TAG] [--runs N]
#   PATH/TO/grader  the grader built outside Docker (default build/harness/cli/grader)
#   --image TAG     the grading image (default grader-test/gpu-grader, what docker/test-images.sh
#                   builds; it must exist)
#   --runs N        how many times each single grade is timed (default 5); medians are printed
# Needs a Docker Engine that answers (docker/test-images.sh starts one and stops it; start dockerd
# yourself to run this after it). Every grade runs on the simulator unless the container is given
# a GPU, which this script never does.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
grader="$repo/build/harness/cli/grader"
image=grader-test/gpu-grader
runs=5
while [ "$#" -gt 0 ]; do
  case "$1" in
    --image) image="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    -h | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) grader="$1"; shift ;;
  esac
done
docker info >/dev/null 2>&1 || { echo "docker_bench: no Docker Engine answers" >&2; exit 2; }
docker image inspect "$image" >/dev/null 2>&1 ||
  { echo "docker_bench: no image $image (docker/test-images.sh builds it)" >&2; exit 2; }
[ -x "$grader" ] || { echo "docker_bench: no grader at $grader" >&2; exit 2; }

work="$(mktemp -d "${TMPDIR:-/tmp}/docker-bench-XXXXXX")"
trap 'docker run --rm -v "$work:/w" --entrypoint /bin/sh "$image" -c "rm -rf /w/*" >/dev/null 2>&1 || true
      rm -rf "$work"' EXIT
chmod 777 "$work"
cp -R "$repo/student/example" "$work/alice"
mkdir -p "$work/class"
for name in correct correct_four_accumulators wrong_degrees skips_half_the_reads compile_error \
  broadcast_ignores_stride stride_sniffing forbidden_include; do
  cp -R "$repo/tests/fixtures/submissions/$name" "$work/class/$name"
  rm -f "$work/class/$name/expected.yaml"
done
chmod -R a+rwX "$work"

seconds() { # seconds COMMAND...: the wall time of one run, output discarded
  local start end
  start=$(date +%s.%N)
  "$@" >/dev/null 2>&1 || true
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}
median() { sort -n | awk '{v[NR]=$1} END {m=(NR%2)?v[(NR+1)/2]:(v[NR/2]+v[NR/2+1])/2; printf "%.2f", m}'; }
measure() { # measure LABEL COMMAND...
  local label="$1" all=() s
  shift
  for _ in $(seq "$runs"); do all+=("$(seconds "$@")"); done
  printf '%-58s median %s s  (%s)\n' "$label" "$(printf '%s\n' "${all[@]}" | median)" \
    "$(printf '%.2f ' "${all[@]}")"
}
run_flags=(--rm --network none --read-only --tmpfs /tmp --user "$(id -u):$(id -g)")

echo "docker_bench: $(date -u '+%Y-%m-%d %H:%M UTC'), image $image ($(docker image inspect \
  --format '{{.Size}}' "$image") bytes), Docker Engine $(docker version --format \
  '{{.Server.Version}}'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
measure "one grade outside Docker" \
  "$grader" grade "$work/alice" -q --format json --output "$work/outside.json"
measure "one grade in a fresh container" \
  docker run "${run_flags[@]}" -v "$work/alice:/alice:ro" "$image" grade /alice -q --format json
measure "the empty container (--entrypoint /bin/true)" \
  docker run "${run_flags[@]}" --entrypoint /bin/true "$image"
measure "grader --version in a fresh container" docker run "${run_flags[@]}" "$image" --version
wall() { sed -n 's/.*"wall_seconds": *\([0-9.]*\).*/\1/p' "$1" | head -n 1; }
echo "the grade's own wall_seconds outside Docker: $(wall "$work/outside.json") s"

rm -rf "$work/out-outside" "$work/out-docker"
mkdir -p "$work/out-docker"
chmod 777 "$work/out-docker"
printf '%-58s %s s\n' "a batch of 8 outside Docker" \
  "$(seconds "$grader" batch "$work/class" --output "$work/out-outside" -q)"
printf '%-58s %s s\n' "the same batch in one container" \
  "$(seconds docker run "${run_flags[@]}" -v "$work/class:/submissions:ro" \
    -v "$work/out-docker:/reports" "$image" batch /submissions --output /reports -q)"
