#!/usr/bin/env bash
# Builds the three images (docker/Dockerfile, docker/prairielearn/Dockerfile and
# docker/gradescope/Dockerfile) on a real Docker Engine and runs them as an instructor, Gradescope
# and PrairieLearn do, on a class of correct, wrong, hostile and linked submissions.
#
# STAND-IN BASES. NVIDIA's images (nvidia/cuda:*-devel-*, *-runtime-*) and Gradescope's
# (gradescope/autograder-base) are not pulled: where this runs (CI, the development machine) Docker
# Hub cannot be reached. In their place the script makes stand-ins and passes them to the
# Dockerfiles through their base-image arguments: a Debian 12 made with debootstrap, plus the CUDA
# toolkit found on this machine (/usr/local/cuda, or the one nvcc on PATH belongs to), copied into
# the folder NVIDIA's images use. The "devel" stand-in carries the toolkit (compiler, headers,
# NVRTC, CUPTI; not the math libraries), the "runtime" one only what NVIDIA's runtime image has
# that the grader uses (NVRTC, cudart), and the Gradescope one is the devel stand-in with python3
# and /autograder. They are NOT NVIDIA's or Gradescope's images: what is tested here is the
# grader's side (the Dockerfiles, entry scripts, layouts, limits and confinement), not those bases.
# No GPU is used: every grade runs on the simulator.
#
# usage: docker/test-images.sh [PATH/TO/grader] [--cache DIR] [--no-build]
#   PATH/TO/grader  the grader built outside Docker, whose verdicts the images must repeat
#                   (default build/harness/cli/grader)
#   --cache DIR     where the debootstrapped Debian and the logs are kept between runs (default
#                   build/docker-images); the images themselves stay in Docker's own cache, so a
#                   second run rebuilds nothing
#   --no-build      use the images as they are tagged (grader-test/*), building only those
#                   missing: for iterating on these checks, not for testing a change
# Exit status: 0 every check passed, 1 a check failed, 77 skipped (no Docker Engine could be used
# or started, no CUDA toolkit, or no Debian to debootstrap): CTest reports 77 as skipped.
# It runs wherever a Docker Engine answers or can be started (CI included): the first run builds
# for tens of minutes on 2 cores (the grader is compiled twice, once for the grading image and once
# as Gradescope's setup.sh does it); later runs reuse Docker's cache. GRADER_DOCKER_TESTS=0 skips
# it, visibly. A dockerd it starts itself, it stops at the end.
set -uo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
grader=""
cache=""
no_build=0
while [ "$#" -gt 0 ]; do
  case "$1" in
    --cache) cache="$2"; shift 2 ;;
    --no-build) no_build=1; shift ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) grader="$1"; shift ;;
  esac
done
grader="${grader:-$repo/build/harness/cli/grader}"
cache="${cache:-$repo/build/docker-images}"

say() { echo "test-images: $*"; }
skip() { echo "SKIPPED: test-images: $*"; exit 77; }

[ "${GRADER_DOCKER_TESTS:-1}" != 0 ] || skip "GRADER_DOCKER_TESTS=0 leaves the images out"
command -v docker >/dev/null 2>&1 || skip "no docker client on PATH"
mkdir -p "$cache"
cache="$(cd "$cache" && pwd)"

# --- A Docker Engine: the one running, or one started here (and stopped at the end) -----------
started_dockerd=""
scratch=""
cleanup() {
  if [ -n "$scratch" ]; then
    # Files the containers wrote as root or as other users.
    docker run --rm -v "$scratch:/scratch" --entrypoint /bin/sh "$standin_debian" \
      -c 'rm -rf /scratch/* /scratch/.[!.]*' >/dev/null 2>&1
    rm -rf "$scratch"
  fi
  if [ -n "$started_dockerd" ]; then
    say "stopping the dockerd started here (pid $started_dockerd)"
    kill "$started_dockerd" 2>/dev/null
    for _ in $(seq 60); do kill -0 "$started_dockerd" 2>/dev/null || break; sleep 1; done
  fi
}
trap cleanup EXIT
standin_debian=grader-standin/debian:bookworm

if ! docker info >/dev/null 2>&1; then
  [ "$(id -u)" -eq 0 ] || skip "no Docker Engine answers, and only root can start dockerd here"
  command -v dockerd >/dev/null 2>&1 || skip "no Docker Engine answers and there is no dockerd"
  say "no Docker Engine answers: starting dockerd (log: $cache/dockerd.log)"
  dockerd >"$cache/dockerd.log" 2>&1 </dev/null &
  started_dockerd=$!
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  if ! docker info >/dev/null 2>&1; then
    tail -n 5 "$cache/dockerd.log" | sed 's/^/  | /'
    skip "dockerd did not start within 60 s (its log: $cache/dockerd.log)"
  fi
fi
say "Docker Engine $(docker version --format '{{.Server.Version}}' 2>/dev/null)"

# --- The stand-in bases ----------------------------------------------------------------------
nvcc="$(command -v nvcc || true)"
[ -n "$nvcc" ] || [ ! -x /usr/local/cuda/bin/nvcc ] || nvcc=/usr/local/cuda/bin/nvcc
[ -n "$nvcc" ] || skip "no CUDA toolkit on this machine (no nvcc on PATH or in /usr/local/cuda)"
cuda_root="$(cd "$(dirname "$(readlink -f "$nvcc")")/.." && pwd)"
cuda_version="$("$nvcc" --version | sed -n 's/.*release \([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p')"
[ -n "$cuda_version" ] || skip "cannot read the CUDA version from $nvcc --version"
say "CUDA toolkit $cuda_version in $cuda_root (goes into the stand-in CUDA bases)"

image_exists() { docker image inspect "$1" >/dev/null 2>&1; }
started_at=$(date +%s)

if ! image_exists "$standin_debian"; then
  rootfs_tar="$cache/debian-bookworm.tar"
  if [ ! -s "$rootfs_tar" ]; then
    command -v debootstrap >/dev/null 2>&1 ||
      skip "no stand-in Debian cached in $cache and no debootstrap (apt-get install debootstrap)"
    say "debootstrapping Debian 12 (minbase) into $cache/rootfs (log: $cache/debootstrap.log)"
    rm -rf "$cache/rootfs"
    if ! debootstrap --variant=minbase bookworm "$cache/rootfs" http://deb.debian.org/debian \
      >"$cache/debootstrap.log" 2>&1; then
      tail -n 5 "$cache/debootstrap.log" | sed 's/^/  | /'
      rm -rf "$cache/rootfs"
      skip "debootstrap failed (no Debian mirror reachable?): $cache/debootstrap.log"
    fi
    tar -C "$cache/rootfs" -cf "$rootfs_tar.partial" . && mv "$rootfs_tar.partial" "$rootfs_tar"
    rm -rf "$cache/rootfs"
  fi
  say "importing the stand-in Debian as $standin_debian"
  docker import --change 'CMD ["/bin/bash"]' \
    --message "A debootstrapped Debian 12, a stand-in made by docker/test-images.sh" \
    "$rootfs_tar" "$standin_debian" >/dev/null || { echo "FAIL: docker import" >&2; exit 1; }
fi

# NVIDIA's folder layout: /usr/local/cuda-X.Y, /usr/local/cuda linking to it, lib64 -> lib.
standin_devel="grader-standin/cuda:${cuda_version}-devel"
standin_runtime="grader-standin/cuda:${cuda_version}-runtime"
standin_gradescope="grader-standin/gradescope-base:cuda${cuda_version}"
make_cuda_standin() {  # make_cuda_standin TAG devel|runtime
  local tag="$1" kind="$2" context="$cache/context-$2"
  image_exists "$tag" && return 0
  say "making $tag, a stand-in for nvidia/cuda:${cuda_version}.x-$kind-*"
  rm -rf "$context"
  mkdir -p "$context/cuda/lib"
  local file
  if [ "$kind" = devel ]; then
    cp -a "$cuda_root/bin" "$cuda_root/include" "$cuda_root/nvvm" "$context/cuda/"
    [ ! -d "$cuda_root/targets" ] || cp -a "$cuda_root/targets" "$context/cuda/"
    for file in "$cuda_root"/lib64/*; do
      case "$(basename "$file")" in
        *cudnn* | *cublas* | *cufft* | *curand* | *cusolver* | *cusparse* | *nccl* | *nvblas* | \
          *npp* | *nvjpeg*) ;;
        *) cp -a "$file" "$context/cuda/lib/" ;;
      esac
    done
    [ ! -d "$cuda_root/extras/CUPTI" ] || { mkdir -p "$context/cuda/extras" &&
      cp -a "$cuda_root/extras/CUPTI" "$context/cuda/extras/"; }
  else
    cp -a "$cuda_root"/lib64/libcudart.so* "$cuda_root"/lib64/libnvrtc* "$context/cuda/lib/"
    cp -a "$cuda_root"/lib64/libnvJitLink.so* "$context/cuda/lib/" 2>/dev/null
  fi
  [ -e "$context/cuda/lib64" ] || ln -s lib "$context/cuda/lib64"
  cat >"$context/Dockerfile" <<EOF
FROM $standin_debian
LABEL description="A STAND-IN for NVIDIA's nvidia/cuda:${cuda_version}-$kind image, made by \
docker/test-images.sh from a debootstrapped Debian 12 and this machine's CUDA toolkit. \
Not NVIDIA's."
COPY cuda/ /usr/local/cuda-${cuda_version}/
RUN ln -s cuda-${cuda_version} /usr/local/cuda
ENV PATH=/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    CUDA_VERSION=${cuda_version}
EOF
  docker build -q -t "$tag" "$context" >"$cache/build-standin-$kind.log" 2>&1 ||
    { tail -n 20 "$cache/build-standin-$kind.log" >&2; echo "FAIL: $tag" >&2; exit 1; }
  rm -rf "$context"
}
make_cuda_standin "$standin_devel" devel
make_cuda_standin "$standin_runtime" runtime
if ! image_exists "$standin_gradescope"; then
  say "making $standin_gradescope, a stand-in for gradescope/autograder-base"
  context="$cache/context-gradescope"
  mkdir -p "$context"
  cat >"$context/Dockerfile" <<EOF
FROM $standin_devel
LABEL description="A STAND-IN for Gradescope's gradescope/autograder-base, made by \
docker/test-images.sh: the stand-in CUDA devel base, python3 and /autograder. Not Gradescope's."
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      --no-install-recommends python3 >/dev/null && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /autograder/source /autograder/submission /autograder/results
WORKDIR /autograder
EOF
  docker build -q -t "$standin_gradescope" "$context" >"$cache/build-standin-gradescope.log" 2>&1 ||
    { tail -n 20 "$cache/build-standin-gradescope.log" >&2; echo "FAIL: gradescope stand-in" >&2
      exit 1; }
  rm -rf "$context"
fi

# --- The images, through their base-image arguments ---------------------------------------------
image=grader-test/gpu-grader
image_pl=grader-test/gpu-grader-prairielearn
image_gs=grader-test/gpu-grader-gradescope
build_image() {  # build_image NAME TAG DOCKERFILE ARGS...
  local name="$1" tag="$2" file="$3" begun=$(date +%s)
  shift 3
  if [ "$no_build" = 1 ] && image_exists "$tag"; then
    say "--no-build: using $tag as it is"
    return 0
  fi
  say "building $tag from $file (log: $cache/build-$name.log)"
  if ! docker build -t "$tag" -f "$repo/$file" "$@" "$repo" >"$cache/build-$name.log" 2>&1; then
    tail -n 30 "$cache/build-$name.log" | sed 's/^/  | /' >&2
    echo "FAIL: docker build of $file (log: $cache/build-$name.log)" >&2
    exit 1
  fi
  say "built $tag in $(($(date +%s) - begun)) s"
}
build_image grader "$image" docker/Dockerfile \
  --build-arg BUILD_IMAGE="$standin_devel" --build-arg RUN_IMAGE="$standin_runtime"
build_image prairielearn "$image_pl" docker/prairielearn/Dockerfile --build-arg BASE_IMAGE="$image"
# Gradescope's image compiles the grader again (setup.sh, as Gradescope builds it).
build_image gradescope "$image_gs" docker/gradescope/Dockerfile \
  --build-arg BASE_REPO="${standin_gradescope%%:*}" --build-arg TAG="${standin_gradescope#*:}"
say "bases and images ready in $(($(date +%s) - started_at)) s"
docker history --format '{{.Size}}\t{{.CreatedBy}}' "$image" >"$cache/history-gpu-grader.txt"
say "$image: $(docker image inspect --format '{{.Size}}' "$image") bytes"

# --- Checks ------------------------------------------------------------------------------------
[ -x "$grader" ] || { echo "test-images: no grader at $grader (build it first)" >&2; exit 1; }
grader="$(cd "$(dirname "$grader")" && pwd)/$(basename "$grader")"
scratch="$(mktemp -d "${TMPDIR:-/tmp}/test-images-XXXXXX")"
chmod 755 "$scratch"
failures=0
docker rm -f grader-test-stop grader-test-gs >/dev/null 2>&1  # left by a run that was killed
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# The class: correct, wrong, hostile (includes of the machine's files) and linked submissions.
class="$scratch/class"
mkdir -p "$class"
fixtures="$repo/tests/fixtures"
for name in correct correct_four_accumulators wrong_degrees skips_half_the_reads compile_error; do
  cp -R "$fixtures/submissions/$name" "$class/$name"
done
for name in stringize_include include_after_multiline_comment; do
  cp -R "$fixtures/hostile/$name" "$class/$name"
done
cp -R "$fixtures/submissions/forbidden_include" "$class/forbidden_include"
# Linked: probe.cu names a file of the machine (inside the container: the container's), and a
# second one links to another student's kernel.
mkdir -p "$class/linked_to_etc" "$class/linked_to_other"
cp "$fixtures/submissions/correct/submission.yaml" "$class/linked_to_etc/"
cp "$fixtures/submissions/correct/submission.yaml" "$class/linked_to_other/"
ln -s /etc/passwd "$class/linked_to_etc/probe.cu"
ln -s ../correct/probe.cu "$class/linked_to_other/probe.cu"
rm -f "$class"/*/expected.yaml
chmod -R a+rX "$class"
students=$(find "$class" -mindepth 1 -maxdepth 1 -type d | wc -l)

# Text that must appear in no output: lines of the machine's /etc and of the container's, long
# enough (12 characters) not to occur by chance.
leaks="$scratch/leaks"
{ head -n 3 /etc/passwd; head -n 3 /etc/group
  docker run --rm --entrypoint /bin/sh "$image" -c \
    'head -n 3 /etc/passwd; grep grader /etc/passwd; head -n 3 /etc/group'
} | awk 'length >= 12' | sort -u >"$leaks"
no_leak() {  # no_leak WHAT FOLDER...: no line of $leaks in any file under FOLDER
  local what="$1" hit
  shift
  hit="$(grep -rlF -f "$leaks" "$@" 2>/dev/null | head -n 3)"
  if [ -n "$hit" ]; then fail "$what: a line of /etc reached $hit"; else
    ok "$what: no line of the host's or the container's /etc in any output"; fi
}
verdicts() {  # verdicts FOLDER: "student verdict" lines from each report.json
  python3 - "$1" <<'PY'
import json, os, sys
root = sys.argv[1]
for name in sorted(os.listdir(root)):
    path = os.path.join(root, name, "report.json")
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            print(name, json.load(f)["verdict"])
PY
}

# 1. Outside Docker, for the verdicts to compare with.
outside="$scratch/outside"
"$grader" batch "$class" --output "$outside" >"$scratch/outside.log" 2>&1
status_outside=$?
verdicts "$outside" >"$scratch/verdicts-outside"
[ "$(wc -l <"$scratch/verdicts-outside")" -eq "$students" ] ||
  fail "outside Docker: $(wc -l <"$scratch/verdicts-outside") reports for $students students"

# 2. The documented batch run.
docker_batch() {  # docker_batch OUTPUT [docker options...] -- [grader options...]
  local output="$1"
  shift
  local docker_opts=() grader_opts=()
  while [ "$#" -gt 0 ] && [ "$1" != -- ]; do docker_opts+=("$1"); shift; done
  [ "$#" -eq 0 ] || shift
  grader_opts=("$@")
  docker run --rm --network none --read-only --tmpfs /tmp --user "$(id -u):$(id -g)" \
    -v "$class:/submissions:ro" -v "$output:/reports" "${docker_opts[@]}" \
    "$image" batch /submissions --output /reports "${grader_opts[@]}"
}
inside="$scratch/inside"
mkdir -p "$inside"
docker_batch "$inside" >"$scratch/inside.log" 2>&1
status_inside=$?
verdicts "$inside" >"$scratch/verdicts-inside"
if [ "$status_inside" -ne "$status_outside" ]; then
  fail "batch in Docker exited $status_inside, outside $status_outside"
elif ! diff -u "$scratch/verdicts-outside" "$scratch/verdicts-inside" >&2; then
  fail "batch in Docker: verdicts differ from outside Docker (diff above)"
else
  ok "batch in Docker (--network none --read-only --tmpfs /tmp --user): the $students verdicts" \
    "of outside Docker ($(tr '\n' ' ' <"$scratch/verdicts-inside"))"
fi
for file in gradebook.csv summary.json class-report.html; do
  [ -s "$inside/$file" ] || fail "batch in Docker: no $file"
done
for student in $(cut -d' ' -f1 "$scratch/verdicts-outside"); do
  for file in report.json report.md; do
    [ -s "$inside/$student/$file" ] || fail "batch in Docker: no $student/$file"
  done
done
confinement="$(python3 -c 'import json, sys
print(json.load(open(sys.argv[1]))["environment"]["confinement"])' "$inside/correct/report.json")"
if [[ "$confinement" =~ ^Landlock\ ABI\ [0-9]+ ]]; then
  ok "batch in Docker, the compile's confinement under Docker's default seccomp profile:" \
    "$confinement"
else
  fail "batch in Docker: the compile is not confined by Landlock: $confinement"
fi
no_leak "batch in Docker" "$inside" "$scratch/inside.log"
grep -q 'symbolic link' "$inside/linked_to_etc/report.md" ||
  fail "batch in Docker: the linked probe.cu is not said to be a link"

# 3. docker stop midway, then --resume.
stopped="$scratch/stopped"
mkdir -p "$stopped"
docker run -d --name grader-test-stop --network none --read-only --tmpfs /tmp \
  --user "$(id -u):$(id -g)" -v "$class:/submissions:ro" -v "$stopped:/reports" \
  "$image" batch /submissions --output /reports --jobs 1 >/dev/null
for _ in $(seq 300); do
  [ "$(find "$stopped" -mindepth 2 -name report.json | wc -l)" -ge 2 ] && break
  sleep 0.2
done
docker stop -t 2 grader-test-stop >/dev/null
docker rm grader-test-stop >/dev/null 2>&1
done_before=$(find "$stopped" -mindepth 2 -name report.json | wc -l)
docker_batch "$stopped" >"$scratch/resume-refused.log" 2>&1
status_refused=$?
docker_batch "$stopped" -- --resume >"$scratch/resume.log" 2>&1
status_resume=$?
verdicts "$stopped" >"$scratch/verdicts-resumed"
if [ "$done_before" -ge "$students" ]; then
  fail "docker stop: the batch had finished before it was stopped ($done_before reports)"
elif [ "$status_refused" -ne 2 ]; then
  fail "docker stop: a second batch without --resume exited $status_refused, not 2"
elif [ "$status_resume" -ne "$status_outside" ] ||
  ! diff -u "$scratch/verdicts-outside" "$scratch/verdicts-resumed" >&2; then
  fail "docker stop then --resume: exit $status_resume, verdicts above"
else
  ok "docker stop after $done_before of $students, then --resume: every verdict as outside"
fi

# 4. An output folder the container's user cannot write: a usage error (2) that says so.
unwritable="$scratch/unwritable"
mkdir -p "$unwritable"
chmod 555 "$unwritable"
docker run --rm --network none --read-only --tmpfs /tmp --user 4242:4242 \
  -v "$class:/submissions:ro" -v "$unwritable:/reports" \
  "$image" batch /submissions --output /reports >"$scratch/unwritable.log" 2>&1
status=$?
if [ "$status" -eq 2 ] && grep -q '/reports' "$scratch/unwritable.log" &&
  grep -qi 'writ' "$scratch/unwritable.log"; then
  ok "an unwritable output folder: exit 2, $(grep -i writ "$scratch/unwritable.log" | head -n 1)"
else
  fail "an unwritable output folder: exit $status: $(head -c 600 "$scratch/unwritable.log")"
fi

# 5. A read-only root file system without a writable /tmp: the machine's fault, not the
#    student's: ungradable (3), saying what to give it.
docker run --rm --network none --read-only --user "$(id -u):$(id -g)" \
  -v "$class/correct:/alice:ro" -v "$scratch:/out" \
  "$image" grade /alice --format json --output /out/readonly.json >"$scratch/readonly.log" 2>&1
status=$?
if [ "$status" -eq 3 ] && grep -q -- '--tmpfs /tmp' "$scratch/readonly.json" 2>/dev/null; then
  ok "a read-only root without --tmpfs /tmp: ungradable (3), and the report says to give it one"
else
  fail "a read-only root without --tmpfs /tmp: exit $status:" \
    "$(head -c 600 "$scratch/readonly.log") $(head -c 600 "$scratch/readonly.json" 2>/dev/null)"
fi

# 6. Gradescope, as Gradescope runs it: the image's /autograder/run_autograder as root, the
#    submission unzipped into /autograder/submission (here a zip of a folder: one level down),
#    /autograder/results/results.json read back; Gradescope's default limit, 600 s.
results_valid_gradescope='
import json, numbers, sys
data = json.load(open(sys.argv[1], encoding="utf-8"))
num = lambda v: isinstance(v, numbers.Number) and not isinstance(v, bool)
assert num(data["score"]) and isinstance(data["tests"], list) and data["tests"]
for t in data["tests"]:
    assert isinstance(t["name"], str) and num(t["score"]) and num(t["max_score"])
print("%s %s" % (data["score"], sum(t["max_score"] for t in data["tests"])))'
results_valid_prairielearn='
import json, numbers, sys
data = json.load(open(sys.argv[1], encoding="utf-8"))
num = lambda v: isinstance(v, numbers.Number) and not isinstance(v, bool)
assert isinstance(data["gradable"], bool) and num(data["score"]) and 0 <= data["score"] <= 1
assert isinstance(data["tests"], list)
print("%s %s" % (data["gradable"], data["score"]))'
expected_score() {  # expected_score STUDENT [OUTSIDE]: the score outside Docker, of the maximum
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["score"], d["max_score"])' \
    "${2:-$outside}/$1/report.json"
}
same_numbers() {  # same_numbers "A B..." "C D...": equal lists of numbers, to 1e-4
  python3 -c 'import sys; a, b = sys.argv[1].split(), sys.argv[2].split()
sys.exit(0 if len(a) == len(b) and all(abs(float(x) - float(y)) < 1e-4 for x, y in zip(a, b))
         else 1)' "$1" "$2"
}
# gradescope STUDENT [CLASS EXERCISE]: runs one submission of CLASS (default: the Part 1 class),
# sets gs_result and gs_log; with EXERCISE, the autograder's source carries a grader-exercise
# file naming it, as the zip (or the image) of a Part 2 assignment does.
gradescope() {
  local student="$1" from="${2:-$class}" exercise="${3:-}" zipdir="$scratch/gs-$1" begun
  rm -rf "$zipdir"
  mkdir -p "$zipdir/upload"
  cp -RP "$from/$student" "$zipdir/upload/my-submission"
  (cd "$zipdir/upload" && python3 -m zipfile -c ../submission.zip my-submission >/dev/null)
  docker create --name grader-test-gs "$image_gs" /autograder/run_autograder >/dev/null
  # Gradescope unzips the student's zip into /autograder/submission, as root.
  mkdir -p "$zipdir/unzipped"
  (cd "$zipdir/unzipped" && python3 -m zipfile -e ../submission.zip .)
  # A link survives the zip only as its target's text; put the links back as the student made them.
  for link in $(cd "$from/$student" && find . -type l); do
    rm -f "$zipdir/unzipped/my-submission/$link"
    cp -P "$from/$student/$link" "$zipdir/unzipped/my-submission/$link"
  done
  docker cp "$zipdir/unzipped/." grader-test-gs:/autograder/submission/ >/dev/null
  if [ -n "$exercise" ]; then
    echo "$exercise" >"$zipdir/grader-exercise"
    docker cp "$zipdir/grader-exercise" grader-test-gs:/autograder/source/grader-exercise >/dev/null
  fi
  begun=$(date +%s)
  timeout 600 docker start -a grader-test-gs >"$zipdir.log" 2>&1
  gs_elapsed=$(($(date +%s) - begun))
  rm -f "$zipdir/results.json"
  docker cp grader-test-gs:/autograder/results/results.json "$zipdir/results.json" >/dev/null 2>&1
  docker rm -f grader-test-gs >/dev/null 2>&1
  gs_result="$zipdir/results.json"
  gs_log="$zipdir.log"
}
if docker run --rm "$image_gs" sh -c 'test -x /autograder/run_autograder &&
    test -f /autograder/source/setup.sh && test -f /autograder/source/CMakeLists.txt &&
    command -v grader >/dev/null'; then
  ok "gradescope: the image has /autograder/run_autograder, the source in /autograder/source" \
    "and grader installed by setup.sh"
else
  fail "gradescope: the image's /autograder layout is not Gradescope's"
fi
for student in correct wrong_degrees forbidden_include linked_to_etc; do
  gradescope "$student"
  if ! got="$(python3 -c "$results_valid_gradescope" "$gs_result" 2>&1)"; then
    fail "gradescope $student: no valid /autograder/results/results.json: $got"
  elif [ "$gs_elapsed" -ge 600 ]; then
    fail "gradescope $student: took $gs_elapsed s, past Gradescope's 600 s"
  elif ! same_numbers "$got" "$(expected_score "$student")"; then
    fail "gradescope $student: score and maximum '$got'," \
      "outside Docker '$(expected_score "$student")'"
  else
    ok "gradescope $student: results.json valid in $gs_elapsed s, score $got as outside Docker"
  fi
  no_leak "gradescope $student" "$gs_result" "$gs_log"
done
grep -q 'one folder down' "$scratch/gs-correct.log" ||
  fail "gradescope: the nested zip's folder was not graded from one level down"
grep -q 'symbolic link' "$scratch/gs-linked_to_etc/results.json" ||
  fail "gradescope: the linked probe.cu is not said to be a link in results.json"

# 7. PrairieLearn, as its external grader runs it: /grade owned by root with mode 0700, holding
#    student/, tests/ (with the question's own exercise.yaml) and results/, mounted into the
#    container, which runs the image's entry point; the question's timeout, 600 s here.
# prairielearn STUDENT [with-tests | CLASS EXERCISE]: with CLASS and EXERCISE, a question whose
# info.json gives the grader GRADER_EXERCISE=EXERCISE (externalGradingOptions.environment).
prairielearn() {
  local student="$1" job="$scratch/pl-$1" begun from="$class" env=()
  if [ "$#" -ge 3 ]; then
    from="$2"
    env=(-e "GRADER_EXERCISE=$3")
  fi
  rm -rf "$job"
  mkdir -p "$job/student" "$job/results"
  cp -RP "$from/$student/." "$job/student/"
  if [ "${2:-}" = with-tests ]; then
    # The question's own copy of the exercise: its paths are relative to it, so the reference
    # kernels and the starter example it names travel beside it.
    mkdir -p "$job/tests"
    cp -R "$repo/exercises/day15-bank-conflicts/." "$repo/reference" "$job/tests/"
    cp -R "$repo/student/example" "$job/tests/starter_example"
    sed -e 's|\.\./\.\./reference/|reference/|' -e 's|\.\./\.\./student/example|starter_example|' \
      "$repo/exercises/day15-bank-conflicts/exercise.yaml" >"$job/tests/exercise.yaml"
  fi
  chown -R 0:0 "$job"
  chmod 0700 "$job"
  begun=$(date +%s)
  timeout 600 docker run --rm --network none ${env[@]+"${env[@]}"} -v "$job:/grade" "$image_pl" \
    >"$job.log" 2>&1
  pl_elapsed=$(($(date +%s) - begun))
  pl_result="$job/results/results.json"
  pl_log="$job.log"
}
for student in correct wrong_degrees forbidden_include linked_to_etc; do
  prairielearn "$student"
  if ! got="$(python3 -c "$results_valid_prairielearn" "$pl_result" 2>&1)"; then
    fail "prairielearn $student: no valid /grade/results/results.json: $got"
  elif [ "$pl_elapsed" -ge 600 ]; then
    fail "prairielearn $student: took $pl_elapsed s, past the question's 600 s"
  else
    read -r score max < <(expected_score "$student")
    want="True $(python3 -c "print($score / $max)")"
    if [ "${got%% *}" != True ] || ! same_numbers "${got#* }" "${want#* }"; then
      fail "prairielearn $student: '$got', outside '$want'"; else
      ok "prairielearn $student: results.json valid in $pl_elapsed s, '$got' as outside Docker"; fi
  fi
  no_leak "prairielearn $student" "$pl_result" "$pl_log"
  if grep -q $'\e\[' "$pl_log"; then fail "prairielearn $student: colour codes in the log"; fi
  if grep -q 'prairielearn-[A-Za-z0-9]\{6\}' "$pl_result"; then
    fail "prairielearn $student: a temporary folder's path reaches the student"
  fi
done
grep -q 'symbolic link' "$scratch/pl-linked_to_etc/results/results.json" ||
  fail "prairielearn: the linked probe.cu is not said to be a link in results.json"
prairielearn wrong_degrees with-tests
if got="$(python3 -c "$results_valid_prairielearn" "$pl_result" 2>&1)" &&
  [[ "$got" == True* ]]; then
  ok "prairielearn: a question with its own tests/exercise.yaml under a 0700 /grade: '$got'"
else
  fail "prairielearn: a question with its own tests/exercise.yaml: ${got:-nothing}:" \
    "$(head -c 600 "$pl_result" 2>/dev/null)"
fi

# 8. Part 2 on each platform, as docs/docker.md sets it up: Gradescope's source carries a
#    grader-exercise file naming day15-padding, PrairieLearn's question gives GRADER_EXERCISE in
#    its environment; each scores what `grader batch --exercise day15-padding` does outside.
part2="$scratch/part2"
for name in correct_padded missing_barrier; do
  mkdir -p "$part2/$name"
  cp "$fixtures/padding/$name/transpose.cu" "$fixtures/padding/$name/submission.yaml" "$part2/$name/"
done
chmod -R a+rX "$part2"
"$grader" batch "$part2" --output "$scratch/part2-outside" --exercise day15-padding \
  >"$scratch/part2-outside.log" 2>&1
for student in correct_padded missing_barrier; do
  want="$(expected_score "$student" "$scratch/part2-outside")"
  gradescope "$student" "$part2" day15-padding
  if ! got="$(python3 -c "$results_valid_gradescope" "$gs_result" 2>&1)"; then
    fail "gradescope Part 2 $student: no valid results.json: $got $(tail -n 3 "$gs_log")"
  elif ! same_numbers "$got" "$want" || ! grep -q 'day15-padding' "$gs_result"; then
    fail "gradescope Part 2 $student: '$got', outside Docker '$want'"
  else
    ok "gradescope Part 2 $student: graded as day15-padding in $gs_elapsed s, score $got as outside"
  fi
  prairielearn "$student" "$part2" day15-padding
  read -r score max <<<"$want"
  pl_want="True $(python3 -c "print($score / $max)")"
  if ! got="$(python3 -c "$results_valid_prairielearn" "$pl_result" 2>&1)"; then
    fail "prairielearn Part 2 $student: no valid results.json: $got $(tail -n 3 "$pl_log")"
  elif [ "${got%% *}" != True ] || ! same_numbers "${got#* }" "${pl_want#* }" ||
    ! grep -q 'day15-padding' "$pl_result"; then
    fail "prairielearn Part 2 $student: '$got', outside '$pl_want'"
  else
    ok "prairielearn Part 2 $student: graded as day15-padding in $pl_elapsed s, '$got' as outside"
  fi
done

if [ "$failures" -ne 0 ]; then
  echo "test-images: $failures check(s) failed" >&2
  exit 1
fi
echo "test-images: every check passed"
