#!/usr/bin/env bash
# Builds tbc and runs its main job on a bundled example.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
"$root/scripts/install-deps.sh"
cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$build" >/dev/null
echo "== tbc-opt examples/blocks/llama.mlir (a Llama-3-8B layer, parsed and verified)" >&2
"$build/bin/tbc-opt" "$root/examples/blocks/llama.mlir"
