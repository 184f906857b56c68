#!/usr/bin/env bash
# The grader's RUNPATH, as the loader reads it: every entry absolute. An empty entry (a trailing
# ':') or a relative one is searched from the current folder, so a grader run from a folder
# holding a libm.so.6 would load that file. Then libnvrtc must be found through the RUNPATH
# alone, without the loader's cache (where ld.so.conf would add CUDA's folder on a configured
# machine): a binary that links it resolves it there; the grader, which loads it on first use
# (harness/compile/nvrtc_api.cpp) and must not link it (each of its processes would load it at
# its start), finds the soname it loads in a RUNPATH folder.
# After `--`, a program that compiles with NVRTC is run the same way, without the loader's cache:
# libnvrtc loads its builtins itself, with dlopen, which only an executable's DT_RPATH reaches
# (a DT_RUNPATH does not: NVRTC_ERROR_BUILTIN_OPERATION_FAILURE on a machine whose ld.so.conf
# lacks CUDA's folder).
# Usage: test_runpath.sh PATH/TO/grader... [-- PROGRAM ARGS...]
set -euo pipefail
[ "$#" -gt 0 ] || { echo "usage: $0 PATH/TO/grader... [-- PROGRAM ARGS...]" >&2; exit 2; }
binaries=()
while [ "$#" -gt 0 ] && [ "$1" != -- ]; do binaries+=("$1"); shift; done
[ "$#" -eq 0 ] || shift
program=("$@")
command -v readelf >/dev/null || { echo "FAIL: readelf (binutils) is needed" >&2; exit 1; }
failures=0
for binary in "${binaries[@]}"; do
  dynamic=$(readelf -d "$binary")
  paths=$(sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]$/\2/p' <<<"$dynamic")
  echo "$binary: RUNPATH [${paths}]"
  if [ -n "$paths" ]; then
    # a leading, doubled or trailing ':' is an empty entry; IFS splitting alone would drop it
    case ":$paths:" in *::*) echo "FAIL: $binary has an empty RUNPATH entry: [$paths]"; failures=$((failures + 1)) ;; esac
    IFS=: read -r -a entries <<<"$paths"
    for entry in "${entries[@]}"; do
      case "$entry" in
        /*|'$ORIGIN'|'$ORIGIN/'*) ;;
        '') ;;
        *) echo "FAIL: $binary has a relative RUNPATH entry '$entry'"; failures=$((failures + 1)) ;;
      esac
    done
  fi
  if grep -q 'NEEDED.*\[libcuda\.so' <<<"$dynamic"; then
    echo "FAIL: $binary needs libcuda: it would not start without a driver"
    failures=$((failures + 1))
  fi
  if grep -q 'NEEDED.*\[libnvrtc\.so' <<<"$dynamic"; then
    case "$(basename "$binary")" in
      grader) echo "FAIL: $binary links libnvrtc: each of its processes would load it at start"
              failures=$((failures + 1)) ;;
    esac
    loader=$(readelf -l "$binary" | sed -n 's/.*interpreter: \(.*\)\]$/\1/p')
    nvrtc=$("$loader" --inhibit-cache --list "$binary" | sed -n 's/^[[:space:]]*\(libnvrtc\)/\1/p' || true)
    echo "  without the loader's cache: $nvrtc"
    case "$nvrtc" in
      *'=> /'*) ;;
      *) echo "FAIL: $binary does not find libnvrtc through its RUNPATH"; failures=$((failures + 1)) ;;
    esac
    continue
  fi
  soname=$(grep -ao 'libnvrtc\.so\.[0-9][0-9]*' "$binary" | head -n 1 || true)
  [ -n "$soname" ] || { echo "FAIL: $binary names no libnvrtc.so.<major> to load"; failures=$((failures + 1)); continue; }
  found=""
  if [ -n "$paths" ]; then
    for entry in "${entries[@]}"; do
      [ -f "$entry/$soname" ] && { found="$entry/$soname"; break; }
    done
  fi
  echo "  loads $soname on first use: ${found:-not in its RUNPATH}"
  if [ -z "$found" ]; then
    # Without a RUNPATH the toolkit is in the loader's own folders (Debian's packaged one).
    case "$paths" in
      '') [ -f "/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)/$soname" ] ||
            { echo "FAIL: $binary has no RUNPATH, and the loader's folders lack $soname"; failures=$((failures + 1)); } ;;
      *) echo "FAIL: $binary does not find $soname through its RUNPATH"; failures=$((failures + 1)) ;;
    esac
  fi
done
if [ "${#program[@]}" -gt 0 ]; then
  loader=$(readelf -l "${program[0]}" | sed -n 's/.*interpreter: \(.*\)\]$/\1/p')
  echo "without the loader's cache: ${program[*]}"
  # Run through the loader, the program's /proc/self/exe is the loader: say where it lies.
  if ! GRADER_TEST_PROGRAM_FOLDER="$(dirname "${program[0]}")" \
    "$loader" --inhibit-cache "${program[@]}" >"${TMPDIR:-/tmp}/runpath-program.$$" 2>&1; then
    cat "${TMPDIR:-/tmp}/runpath-program.$$"
    echo "FAIL: ${program[0]} does not compile with NVRTC without the loader's cache"
    failures=$((failures + 1))
  fi
  rm -f "${TMPDIR:-/tmp}/runpath-program.$$"
fi
[ "$failures" -eq 0 ] && echo "every RUNPATH entry is absolute, and libnvrtc is found through it"
exit $((failures > 0))
