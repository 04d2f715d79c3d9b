#!/usr/bin/env bash
# Builds tbc and runs its main job on a bundled example: compile the
# Llama-3-8B config.json through the fusion pipeline, print the fused layer
# function, the FLOP/byte report before and after fusion, and MLIR's timing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
"$root/scripts/install-deps.sh"
cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$build" >/dev/null
out="$build/llama-3-8b.fused.mlir"
echo "== tbc compile examples/models/llama-3-8b --report --report-tokens 128 --mlir-timing -o $out" >&2
"$build/bin/tbc" compile "$root/examples/models/llama-3-8b" --report --report-tokens 128 --mlir-timing -o "$out"
echo "== the fused layer function (one for all 32 layers)"
awk '/func.func private @block/{p=1} p' "$out"
