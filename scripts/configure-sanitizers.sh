#!/usr/bin/env bash
# Configures the sanitizer build that scripts/test-sanitizers.sh and
# scripts/fuzz.sh share: clang, ASan+UBSan, and libFuzzer's coverage
# instrumentation in every object (-DTBC_FUZZ=ON), so that the test suite
# and the fuzzers run one build. (Two builds, gcc's for the tests and
# clang's objects for the fuzzers, were over a quarter of CI's time; clang also
# compiles this code with ASan in half gcc 12's time.)
# Usage: scripts/configure-sanitizers.sh [build-dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-sanitize}
"$root/scripts/install-deps.sh"
if ! command -v clang++ >/dev/null || ! dpkg -s libclang-rt-14-dev >/dev/null 2>&1; then
  sudo_=""; [ "$(id -u)" -ne 0 ] && sudo_=sudo
  DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq --no-install-recommends clang libclang-rt-14-dev >/dev/null
fi
# A build directory configured before with another compiler starts afresh
# (CMake refuses to change the compiler of a cache).
if [ -f "$build/CMakeCache.txt" ] && ! grep -q '^TBC_FUZZ:BOOL=ON' "$build/CMakeCache.txt"; then
  echo "configure-sanitizers: $build was configured without clang/TBC_FUZZ; reconfiguring it from scratch" >&2
  rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"
fi
cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DTBC_SANITIZE=ON -DTBC_FUZZ=ON >/dev/null
