#!/usr/bin/env bash
# Installs what is missing, builds tbc and runs every test (lit + GoogleTest,
# conformance against the transformers fixtures), then checks that the
# runtime builds and runs a module without LLVM (-DTBC_RUNTIME_ONLY=ON).
# Usage: scripts/test.sh [build-dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
"$root/scripts/install-deps.sh"
# A disassembler for the SASS test (cuda-sass.test), unless one is named.
if [ -z "${TBC_NVDISASM:-}" ]; then
  TBC_NVDISASM=$("$root/scripts/fetch-nvdisasm.sh")
  export TBC_NVDISASM
fi
cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$build"
ninja -C "$build" check-tbc

echo "== runtime-only build (no LLVM/MLIR)"
cmake -G Ninja -S "$root" -B "$build-runtime" -DTBC_RUNTIME_ONLY=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$build-runtime" >/dev/null
if ldd "$build-runtime/bin/tbc-run" | grep -qi -e libLLVM -e libMLIR; then
  echo "tbc-run links LLVM/MLIR" >&2; exit 1
fi
fixture="$root/test/fixtures/llama"
"$build/bin/tbc" compile "$fixture" -o "$build-runtime/llama.tbcm" 2>/dev/null
got=$("$build-runtime/bin/tbc-run" "$build-runtime/llama.tbcm" --weights "$fixture" \
        --tokens-file "$fixture/tokens.txt" --generate 4 2>/dev/null)
want="generated: $(cat "$fixture/generated.txt")"
if [ "$got" != "$want" ]; then
  echo "runtime-only tbc-run: got '$got', want '$want'" >&2; exit 1
fi
echo "runtime-only tbc-run: $got (matches transformers)"
