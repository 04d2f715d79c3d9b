#!/usr/bin/env bash
# Builds tbc as an earlier commit had it, for a same-run comparison against
# the working tree's build: scripts/bench_cpu.py --baseline-build DIR times
# it as the engine tbc-base beside tbc.
#
# Usage: scripts/build-baseline.sh REV DIR
#   REV  a commit of this repository (hash, tag, HEAD~3, ...)
#   DIR  where it goes: DIR/src (the commit's files), DIR/bin/tbc,
#        DIR/lib/libtbc.so and DIR/REVISION (the commit, its date and title)
#
# Only the compiler driver and the C API's shared library are built (about
# five minutes on two cores), with the packages scripts/install-deps.sh
# installs. ff0f0d2 is the commit of the README's AVX-512 table of
# 2026-11-23, the "today" of the CPU issue's "no slower on an AVX-512 host".
set -euo pipefail
if [ $# -ne 2 ]; then
  sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
rev=$1 dir=$2
commit=$(git -C "$root" rev-parse --verify --quiet "$rev^{commit}") || {
  echo "build-baseline: '$rev' is not a commit of $root" >&2; exit 1; }
# DIR is ours to overwrite only if it is new, empty or an earlier baseline.
if [ -e "$dir" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ] && [ ! -e "$dir/.tbc-baseline" ]; then
  echo "build-baseline: $dir is not empty and not an earlier baseline build; name a new folder" >&2
  exit 1
fi
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
touch "$dir/.tbc-baseline"
rm -f "$dir/REVISION"  # written again only once this build succeeds
"$root/scripts/install-deps.sh"
# The commit's files only: a tree of its own, never a checkout that could
# touch the working tree.
rm -rf "$dir/src"
mkdir "$dir/src"
git -C "$root" archive "$commit" | tar -x -C "$dir/src"
echo "build-baseline: building $(git -C "$root" log -1 --format='%h (%ad) %s' --date=short "$commit" | cut -c1-100)" >&2
cmake -G Ninja -S "$dir/src" -B "$dir" -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$dir" tbc TbcRuntimeShared
for out in bin/tbc lib/libtbc.so; do
  [ -e "$dir/$out" ] || { echo "build-baseline: $dir/$out was not built" >&2; exit 1; }
done
git -C "$root" log -1 --format='%h %ad %s' --date=short "$commit" | cut -c1-120 >"$dir/REVISION"
echo "build-baseline: $dir/bin/tbc and $dir/lib/libtbc.so ($(cat "$dir/REVISION"))" >&2
