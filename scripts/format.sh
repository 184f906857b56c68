#!/usr/bin/env bash
# The C++ sources' formatting, by clang-format and the repository's .clang-format.
#   scripts/format.sh           rewrites every file that differs, in place
#   scripts/format.sh --check   changes nothing: names each file that differs, exit 1 if any
# The files: harness/ and tests/ (*.cpp, *.hpp, *.cu, *.h), without tests/fixtures/, whose
# kernels' line numbers are in their expected messages. CLANG_FORMAT picks the tool (default
# clang-format, Debian's package of that name). Without it, or with another major version than
# the tree's: exit 77, which CTest's `format` test reports as skipped; with GRADER_FORMAT_REQUIRED=1
# (set by .ci/run) exit 1 instead, so that CI cannot pass with its formatting unchecked.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=fix
case "${1:-}" in
  "") ;;
  --check) mode=check ;;
  -h|--help) echo "usage: scripts/format.sh [--check]"; exit 0 ;;
  *) echo "format: unknown argument '$1'" >&2; exit 2 ;;
esac
tool="${CLANG_FORMAT:-clang-format}"
unchecked=77
if [ "${GRADER_FORMAT_REQUIRED:-0}" = 1 ]; then
  unchecked=1
fi
if ! command -v "$tool" >/dev/null 2>&1; then
  echo "format: $tool is not installed (apt-get install clang-format): formatting not checked" >&2
  exit "$unchecked"
fi
# clang-format's releases format the same file differently: the tree is formatted with Debian 12's
# clang-format 14, and another major version is not asked to agree with it (exit 77: skipped).
formatted_with=14
major=$("$tool" --version | sed -n 's/.*version \([0-9][0-9]*\)\..*/\1/p' | head -n 1)
if [ "$mode" = check ] && [ "$major" != "$formatted_with" ]; then
  echo "format: $tool is version ${major:-unknown}; the tree is formatted with clang-format" \
    "$formatted_with, whose output differs: formatting not checked" >&2
  exit "$unchecked"
fi
mapfile -d '' files < <(find harness tests -path tests/fixtures -prune -o -type f \
  \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.h' \) -print0 | sort -z)
if [ "$mode" = fix ]; then
  "$tool" --style=file -i "${files[@]}"
  echo "format: ${#files[@]} files formatted with $("$tool" --version)"
  exit 0
fi
differ=0
for file in "${files[@]}"; do
  if ! "$tool" --style=file "$file" | cmp -s - "$file"; then
    echo "format: $file differs from $tool's formatting" >&2
    differ=$((differ + 1))
  fi
done
if [ "$differ" -gt 0 ]; then
  echo "format: $differ of ${#files[@]} files differ; scripts/format.sh rewrites them" \
    "($("$tool" --version))" >&2
  exit 1
fi
echo "format: ${#files[@]} files match $tool's formatting"
