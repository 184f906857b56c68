#!/usr/bin/env bash
# Builds the grader at COMMIT, installed into .carry/before/ (bin/grader beside share/grader/, so
# that it reads its own exercises wherever the folder is carried): the "before" column of
# scripts/bench/table_bench.py and of scripts/gpu-check.sh's bench section. Run from the
# repository root; the source is checked out as a detached worktree in .carry/before-src/.
# Usage: scripts/bench/build-before.sh [COMMIT]
#   (default 5e5b133, main before issue 19's pipeline change; for a branch, the main it starts
#   from: scripts/bench/build-before.sh $(git merge-base HEAD main))
set -euo pipefail
commit=${1:-5e5b133}
root=$(pwd)
if [ ! -d .carry/before-src ]; then
  git worktree add --detach .carry/before-src "$commit"
fi
git -C .carry/before-src checkout --quiet --detach "$commit"
(cd .carry/before-src && GRADER_BUILD_TESTS=OFF scripts/build.sh grader)
rm -rf .carry/before
cmake --install .carry/before-src/build --prefix "$root/.carry/before" >/dev/null
echo "build-before: $root/.carry/before/bin/grader ($(.carry/before/bin/grader --version))"
