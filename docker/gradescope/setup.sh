#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image: it installs the grader
# the same way the grader's own image and a new user do (scripts/install-deps.sh, then
# scripts/build.sh grader, the steps of scripts/grade-example.sh; then cmake --install), plus the
# CUDA toolkit, which Gradescope's base image lacks.
# Works from the autograder zip (this file at the root beside CMakeLists.txt, harness/, ...) and
# from the repository (docker/gradescope/setup.sh), on Gradescope's Ubuntu 22.04 and 24.04 bases.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
source_dir=""
for candidate in "$here" "$here/../.."; do
  if [ -f "$candidate/CMakeLists.txt" ] && [ -d "$candidate/harness" ]; then
    source_dir="$(cd "$candidate" && pwd)"
    break
  fi
done
if [ -z "$source_dir" ]; then
  echo "setup.sh: the grader's source (CMakeLists.txt, harness/) is neither beside this script" \
    "nor two folders up: zip the repository's CMakeLists.txt, harness, scripts, exercises," \
    "reference and student with setup.sh and run_autograder (docs/docker.md)" >&2
  exit 1
fi
echo "setup.sh: building the grader from $source_dir"

cuda_series="${CUDA_SERIES:-13-0}"  # NVIDIA's package suffix: 13-0 is CUDA 13.0
export DEBIAN_FRONTEND=noninteractive

# The CUDA toolkit from NVIDIA's repository: nvcc (for CMake's FindCUDAToolkit), the headers and
# NVRTC. No driver: the driver belongs to the machine, and there is no GPU here anyway.
if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  # shellcheck source=/dev/null
  . /etc/os-release
  distro="${ID}${VERSION_ID//./}"  # ubuntu2404
  arch="$(uname -m)"
  [ "$arch" = aarch64 ] && arch=sbsa
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends ca-certificates curl >/dev/null
  keyring="$(mktemp --suffix=.deb)"
  repository="https://developer.download.nvidia.com/compute/cuda/repos/${distro}/${arch}"
  curl -fsSL -o "$keyring" "$repository/cuda-keyring_1.1-1_all.deb"
  dpkg -i "$keyring"
  rm -f "$keyring"
  apt-get update -qq
  echo "setup.sh: installing NVIDIA's cuda-minimal-build-${cuda_series} and cuda-nvrtc-dev-${cuda_series}"
  apt-get install -y -qq --no-install-recommends \
    "cuda-minimal-build-${cuda_series}" "cuda-nvrtc-dev-${cuda_series}" >/dev/null
fi
export PATH="/usr/local/cuda/bin:$PATH"

export GRADER_BUILD_DIR="${GRADER_BUILD_DIR:-/tmp/grader-build}"  # apt's log goes there too
build_dir="$GRADER_BUILD_DIR"
"$source_dir/scripts/install-deps.sh"
"$source_dir/scripts/build.sh" grader
cmake --install "$build_dir" --prefix /usr/local
rm -rf "$build_dir"

# The grade runs as this user (run_autograder drops root for it).
if ! id -u grader >/dev/null 2>&1; then
  useradd --create-home --shell /bin/bash grader
fi
grader --version
echo "setup.sh: grader installed in /usr/local/bin"
