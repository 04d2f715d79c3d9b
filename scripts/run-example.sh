#!/usr/bin/env bash
# Builds tbc and runs its main job on a bundled example: compile the
# Llama-3-8B config.json to tbc IR, with MLIR's timing report.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
"$root/scripts/install-deps.sh"
cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$build" >/dev/null
echo "== tbc compile examples/models/llama-3-8b --emit tbc --mlir-timing" >&2
"$build/bin/tbc" compile "$root/examples/models/llama-3-8b" --emit tbc --mlir-timing
