#!/usr/bin/env bash
# Runs the README's test command on another Debian release than this machine's, in a root file
# system made with debootstrap, as a new user's machine would be: by default Debian 13 (trixie),
# its GCC 14 and Debian's own packaged CUDA 12.4 toolkit (nvidia-cuda-toolkit, which has no CUPTI
# range profiler), the newest toolchain and the oldest CUDA the README names. .ci/run runs it after
# this machine's own run, so a change that builds with GCC 12 and CUDA 13 but not there fails CI.
#
# Usage (as root, from anywhere in the checkout):
#   scripts/test-on-debian.sh [--release trixie] [--cuda debian|host] [--cache DIR] [--fresh]
#                             [-- COMMAND...]      (default: scripts/run-tests.sh --no-browser)
#   --cuda debian   Debian's packaged toolkit (default); host: this machine's /usr/local/cuda,
#                   mounted read-only
#   --cache DIR     where the prepared root file system is kept between runs (default
#                   $GRADER_CI_CACHE, else ~/.cache/grader-ci); its packages are refreshed by
#                   scripts/install-deps.sh at every run, which installs only what is missing
#   --fresh         make the root file system again
# The tree tested is this checkout's files (tracked, and untracked but not ignored), copied into
# the root file system; nothing of the checkout is written. Browser test left out (Chromium is
# not what differs between releases). Exit status: the command's; 2 for a bad argument or a
# root file system that could not be made.
set -euo pipefail
release=trixie; cuda_from=debian; fresh=0
cache=${GRADER_CI_CACHE:-${HOME:-/root}/.cache/grader-ci}
command=()
while [ $# -gt 0 ]; do
  case "$1" in
    --release) release=${2:?}; shift 2 ;;
    --cuda) cuda_from=${2:?}; shift 2 ;;
    --cache) cache=${2:?}; shift 2 ;;
    --fresh) fresh=1; shift ;;
    --) shift; command=("$@"); break ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "test-on-debian: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ "${#command[@]}" -gt 0 ] || command=(scripts/run-tests.sh --no-browser)
case "$cuda_from" in debian|host) ;; *) echo "test-on-debian: --cuda debian|host" >&2; exit 2 ;; esac
[ "$(id -u)" = 0 ] || { echo "test-on-debian: run as root (debootstrap, chroot, mounts)" >&2; exit 2; }
checkout=$(cd "$(dirname "$0")/.." && pwd)
say() { echo "test-on-debian: $*"; }

host_cuda=
if [ "$cuda_from" = host ]; then
  host_cuda=$(readlink -f /usr/local/cuda 2>/dev/null || true)
  [ -d "$host_cuda" ] || { say "no CUDA toolkit at /usr/local/cuda on this machine" >&2; exit 2; }
fi
mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
[ -n "$mirror" ] || mirror=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
[ -n "$mirror" ] || mirror=http://deb.debian.org/debian

root="$cache/$release-cuda-$cuda_from"
logs="$cache/logs"
mkdir -p "$cache" "$logs"

mounted=()
cleanup() {
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount "${mounted[$i]}" 2>/dev/null || umount -l "${mounted[$i]}" || true
  done
}
trap cleanup EXIT
mount_at() { mount "$@" && mounted+=("${@: -1}"); }

# A root file system is ready once its stamp is written, after every package went in.
if [ "$fresh" = 1 ] || [ ! -f "$root/.grader-ready" ]; then
  rm -rf "$root"
  command -v debootstrap >/dev/null || {
    say "installing debootstrap"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >"$logs/debootstrap-install.log" 2>&1
  }
  say "making a $release root file system in $root (debootstrap, minbase; log: $logs/debootstrap.log)"
  debootstrap --variant=minbase "$release" "$root" "$mirror" >"$logs/debootstrap.log" 2>&1 || {
    say "debootstrap failed; the end of its log:" >&2; tail -n 20 "$logs/debootstrap.log" >&2; exit 2; }
  echo "deb $mirror $release main contrib non-free non-free-firmware" >"$root/etc/apt/sources.list"
fi
mount_at -t proc proc "$root/proc"
mount_at --bind /dev "$root/dev"
mount_at --bind /dev/pts "$root/dev/pts"
mount_at -t tmpfs -o mode=1777 shm "$root/dev/shm"
mount_at -t sysfs sysfs "$root/sys"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
# The certificate authorities this machine added to its own (a network's egress proxy signs
# with one): without them npm and apt over HTTPS in the root file system refuse the proxy.
# Taken up by ca-certificates when it is installed there, and at once where it already is.
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
  if [ -x "$root/usr/sbin/update-ca-certificates" ]; then
    chroot "$root" /usr/sbin/update-ca-certificates >"$logs/ca-certificates.log" 2>&1 || true
  fi
fi
if [ -n "$host_cuda" ]; then
  mkdir -p "$root$host_cuda"
  mount_at --bind "$host_cuda" "$root$host_cuda"
  mount -o remount,bind,ro "$root$host_cuda"
  ln -sfn "$host_cuda" "$root/usr/local/cuda"
fi
in_root() {
  chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin /bin/bash -c "$1"
}
if [ ! -f "$root/.grader-ready" ]; then
  if [ "$cuda_from" = debian ]; then
    say "installing Debian's CUDA toolkit (nvidia-cuda-toolkit; log: $logs/cuda.log)"
    in_root 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nvidia-cuda-toolkit nvidia-cuda-dev' \
      >"$logs/cuda.log" 2>&1 || {
      say "installing the toolkit failed; the end of its log:" >&2; tail -n 20 "$logs/cuda.log" >&2; exit 2; }
  fi
  touch "$root/.grader-ready"
fi

# The checkout's files, fresh at every run; the build folder inside is kept out.
tree="$root/root/grader"
rm -rf "$tree"
mkdir -p "$tree"
(cd "$checkout" && git ls-files -z --cached --others --exclude-standard |
  xargs -0 -r stat --printf '%n\0' 2>/dev/null | tar --null -T - -cf -) | tar -xf - -C "$tree"
say "$(in_root 'echo "$(. /etc/os-release; echo "$PRETTY_NAME"), $(g++ --version | head -n 1 || echo "no g++ yet"), $(PATH=$PATH:/usr/local/cuda/bin nvcc --version | sed -n "s/.*release \([0-9.]*\).*/CUDA \1/p")"' 2>/dev/null)"
say "running ${command[*]} in $release"
started=$(date +%s)
status=0
in_root "cd /root/grader && $(printf '%q ' "${command[@]}")" || status=$?
say "${command[*]} exited $status in $(( $(date +%s) - started )) s on $release"
exit "$status"
