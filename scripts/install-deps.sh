#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages the grader needs to build (and, with --tests, to run its
# whole test suite), saying what it does. The Dockerfile and CI run this same script.
# Works on Debian 12 and Ubuntu 24.04 with the CUDA toolkit installed; runs apt-get as root or
# through sudo, and only for packages that are missing.
set -euo pipefail

with_tests=0
for arg in "$@"; do
  case "$arg" in
    --tests) with_tests=1 ;;
    -h|--help) echo "usage: $0 [--tests]"; exit 0 ;;
    *) echo "install-deps: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done

packages=(cmake ninja-build g++ pkg-config
          libyaml-cpp-dev libspdlog-dev libfmt-dev libcli11-dev nlohmann-json3-dev doctest-dev)
if [ "$with_tests" = 1 ]; then
  # Headless Chromium renders the class report in its browser test; python3 checks the
  # Gradescope and PrairieLearn entry scripts' JSON.
  packages+=(chromium python3)
fi

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: every package is already installed"
else
  echo "install-deps: installing ${missing[*]}"
  if [ "$(id -u)" -eq 0 ]; then
    sudo_cmd=()
  elif command -v sudo >/dev/null 2>&1; then
    sudo_cmd=(sudo)
  else
    echo "install-deps: need root or sudo to install: ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  # Ubuntu names the browser chromium-browser (a snap shim); fall back to it where chromium is absent.
  if ! "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"; then
    if printf '%s\n' "${missing[@]}" | grep -qx chromium; then
      echo "install-deps: 'chromium' is not installable here; the browser test will be skipped"
      rest=()
      for p in "${missing[@]}"; do [ "$p" = chromium ] || rest+=("$p"); done
      [ "${#rest[@]}" -eq 0 ] || "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${rest[@]}"
    else
      exit 1
    fi
  fi
fi

# The CUDA toolkit (nvcc, NVRTC, cuda.h) is not a Debian package of a usable version: it must
# already be installed, usually in /usr/local/cuda.
if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "install-deps: the CUDA toolkit was not found (no nvcc on PATH or in /usr/local/cuda)." >&2
  echo "install-deps: install CUDA 12 or 13 from NVIDIA, then run this again." >&2
  exit 1
fi
echo "install-deps: CUDA toolkit found: $(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
