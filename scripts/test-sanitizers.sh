#!/usr/bin/env bash
# Builds tbc with AddressSanitizer + UndefinedBehaviorSanitizer and runs the
# whole test suite under them. Usage: scripts/test-sanitizers.sh [build-dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-sanitize}
"$root/scripts/install-deps.sh"
cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTBC_SANITIZE=ON >/dev/null
ninja -C "$build"
# LLVM/MLIR keep process-lifetime singletons that LeakSanitizer would report.
# Manual poisoning by LLVM's inline allocators misfires against the
# uninstrumented libMLIR.so (see scripts/fuzz.sh).
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:allow_user_poisoning=0
export UBSAN_OPTIONS=print_stacktrace=1
ninja -C "$build" check-tbc
