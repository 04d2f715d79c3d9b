#!/usr/bin/env bash
# Builds tbc with AddressSanitizer + UndefinedBehaviorSanitizer (clang; the
# build scripts/fuzz.sh then reuses) and runs the whole test suite under them.
# Usage: scripts/test-sanitizers.sh [build-dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-sanitize}
"$root/scripts/configure-sanitizers.sh" "$build"
ninja -C "$build"
# LLVM/MLIR keep process-lifetime singletons that LeakSanitizer would report.
# Manual poisoning by LLVM's inline allocators misfires against the
# uninstrumented libMLIR.so (see scripts/fuzz.sh).
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:allow_user_poisoning=0
export UBSAN_OPTIONS=print_stacktrace=1
ninja -C "$build" check-tbc
