#!/usr/bin/env bash
# Refreshes test/.lit_test_times.txt from the last runs' timings: lit reads
# it where a build has none of its own (CI's clean build) and starts the
# longest tests first, so that no long test starts last and runs alone on
# one core. Each test gets the longer of its times in the plain and the
# sanitizer build (the suites' longest tests differ).
# Usage: scripts/lit-times.sh [BUILD_DIR [SANITIZER_BUILD_DIR]]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
files=()
for b in "${1:-$root/build}" "${2:-$root/build-sanitize}"; do
  [ -f "$b/test/.lit_test_times.txt" ] && files+=("$b/test/.lit_test_times.txt")
done
[ ${#files[@]} -gt 0 ] || { echo "lit-times: no .lit_test_times.txt in the build dirs" >&2; exit 1; }
# A failed test's time is negative: its magnitude still says how long it ran.
awk '{ t = $1 < 0 ? -$1 : $1; if (!($2 in m) || t > m[$2]) m[$2] = t }
     END { for (p in m) printf "%.1f %s\n", m[p], p }' "${files[@]}" |
  sort -k1,1gr -k2 > "$root/test/.lit_test_times.txt"
echo "wrote test/.lit_test_times.txt ($(wc -l < "$root/test/.lit_test_times.txt") tests)"
