#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages the grader needs to build (and, with --tests, to run its
# test suite), only those that are missing, with apt-get as root or through sudo. Prints what it
# installs and where apt's log is; the Dockerfiles and CI run this same script.
# Debian 12 and 13, Ubuntu 22.04 (Colab) and 24.04, with a CUDA 12 or 13 toolkit installed.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: scripts/install-deps.sh [--tests] [--no-browser]
  --tests        also what the test suite needs: doctest, python3, xmllint, Node.js and Chromium
  --no-browser   leave Chromium (about 200 MB) out, as GRADER_NO_BROWSER=1 does; the browser
                 test is then reported as skipped
Environment: GRADER_INSTALL_LOG names apt's log (default build/install-deps.log).
EOF
}

with_tests=0
no_browser=${GRADER_NO_BROWSER:-0}
for arg in "$@"; do
  case "$arg" in
    --tests) with_tests=1 ;;
    --no-browser) no_browser=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "install-deps: unknown argument '$arg'" >&2; usage >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/.."

say() { echo "install-deps: $*"; }

# The CUDA toolkit (nvcc, NVRTC, cuda.h) comes from NVIDIA (or Debian's non-free
# nvidia-cuda-toolkit): checked first, so nothing is installed on a machine that cannot build.
nvcc=$(command -v nvcc || true)
[ -n "$nvcc" ] || [ ! -x /usr/local/cuda/bin/nvcc ] || nvcc=/usr/local/cuda/bin/nvcc
if [ -z "$nvcc" ]; then
  say "no CUDA toolkit found (no nvcc on PATH or in /usr/local/cuda/bin)." >&2
  say "install the CUDA toolkit 12 or 13 from NVIDIA, then run this again." >&2
  exit 1
fi
say "CUDA toolkit: $nvcc ($("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'))"

# grader serve: Boost.Beast (header-only), SQLite, minizip, zlib and OpenSSL, each linked
# statically into the binary (harness/serve/CMakeLists.txt says why these). libzstd-dev: Debian
# 13's static libcrypto compresses with zstd (its libcrypto.pc lists -lzstd), so its archive is
# needed to link OpenSSL's.
packages=(cmake ninja-build g++ pkg-config
          libyaml-cpp-dev libspdlog-dev libfmt-dev libcli11-dev nlohmann-json3-dev
          libboost-dev libsqlite3-dev libminizip-dev zlib1g-dev libssl-dev libzstd-dev)
# cpp-jwt (header-only, over the same OpenSSL) makes `grader serve` an LTI 1.3 tool: Debian 12 and
# 13 and Ubuntu 24.04 have it; Ubuntu 22.04 does not, and its grader is built without LTI.
optional=(libcpp-jwt-dev)
if [ "$with_tests" = 1 ]; then
  # xmllint checks the JUnit report against its schema; python3 reads the Gradescope and
  # PrairieLearn entry scripts' JSON; clang-format checks the sources' formatting (the `format`
  # test) and include-what-you-use their includes (the `includes` test); Chromium renders the
  # class report.
  packages+=(doctest-dev python3 libxml2-utils clang-format)
  optional+=(iwyu)
  # Node.js and npm run the LTI test's platform (tests/lti: npm's jose); a Node.js already
  # installed (with its own npm) is kept.
  command -v npm >/dev/null 2>&1 || optional+=(nodejs npm)
  if [ "$no_browser" = 1 ]; then
    say "Chromium left out (--no-browser): the browser test will be reported as skipped"
  else
    optional+=(chromium)
  fi
fi

# Outputs are compared whole, not piped to `grep -q`: under pipefail, grep's early exit would
# fail the pipeline through the writer's SIGPIPE.
is_installed() {
  [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null || true)" = "install ok installed" ]
}
missing=()
for package in "${packages[@]}" "${optional[@]}"; do
  is_installed "$package" || missing+=("$package")
done
if [ "${#missing[@]}" -eq 0 ]; then
  say "all $(( ${#packages[@]} + ${#optional[@]} )) packages are installed already"
  exit 0
fi

# Who may install: root, or a user with sudo. Asked before anything is said to be installing.
if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1 && { sudo -n true 2>/dev/null || { [ -t 0 ] && sudo -v; }; }; then
  as_root=(sudo)
else
  say "missing packages: ${missing[*]}" >&2
  say "installing them needs root or sudo, which this user cannot use here. Ask an administrator" >&2
  say "to run: apt-get install --no-install-recommends ${missing[*]}" >&2
  exit 1
fi

log=${GRADER_INSTALL_LOG:-${GRADER_BUILD_DIR:-build}/install-deps.log}
mkdir -p "$(dirname "$log")"
: >"$log"
log=$(cd "$(dirname "$log")" && pwd)/$(basename "$log")
# env carries the settings through sudo, which resets the environment; LC_ALL=C keeps apt's
# summary lines in English for the count below.
apt() {
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive LC_ALL=C apt-get -q -y "$@" >>"$log" 2>&1
}
fail() {
  say "$1 failed; the end of its log ($log):" >&2
  tail -n 20 "$log" | sed 's/^/  | /' >&2
  exit 1
}

say "updating the package lists (log: $log)"
apt update || fail "apt-get update"

# The optional packages are left out where apt has none (Ubuntu ships Chromium as a snap, not as
# an installable package); the tests that need them are then reported as skipped.
to_install=()
for package in "${missing[@]}"; do
  if [[ " ${optional[*]} " == *" $package "* ]] &&
     ! [[ "$(LC_ALL=C apt-cache policy "$package" 2>/dev/null || true)" =~ Candidate:\ [0-9] ]]; then
    say "$package is not installable from apt here: the tests that need it will be reported as skipped"
    continue
  fi
  to_install+=("$package")
done
[ "${#to_install[@]}" -gt 0 ] || exit 0

say "installing ${to_install[*]}"
started=$(date +%s)
apt install --no-install-recommends "${to_install[@]}" || fail "apt-get install"
count=$(sed -n 's/.* \([0-9][0-9]*\) newly installed.*/\1/p' "$log" | tail -n 1)
size=$(sed -n 's/^Need to get \([0-9.,]* [kMG]*B\)\( of archives\|\/\).*/\1/p' "$log" | tail -n 1)
say "installed ${count:-?} packages with their dependencies (download ${size:-0 B}) in $(( $(date +%s) - started )) s"
