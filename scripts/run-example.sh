#!/usr/bin/env bash
# Builds tbc and runs its main job on a bundled example, end to end:
#  1. compile the bundled tiny Llama (a Hugging Face folder: config.json +
#     model.safetensors, test/fixtures/llama) into a native module, printing
#     the fusion report and MLIR's timing;
#  2. run it on the bundled prompt and greedily generate 8 tokens through
#     the KV cache, printing them and the prefill/decode speed;
#  3. show the fused layer function of Llama-3-8B (config only) for reading.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
"$root/scripts/install-deps.sh"
cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C "$build" >/dev/null
model="$root/test/fixtures/llama"
echo "== tbc compile test/fixtures/llama -o $build/tiny-llama.tbcm --report --mlir-timing" >&2
"$build/bin/tbc" compile "$model" -o "$build/tiny-llama.tbcm" --report --report-tokens 12 --mlir-timing
echo "== tbc run tiny-llama.tbcm --weights test/fixtures/llama --tokens $(cat "$model/tokens.txt") --generate 8" >&2
"$build/bin/tbc" run "$build/tiny-llama.tbcm" --weights "$model" --tokens-file "$model/tokens.txt" --generate 8
echo "== transformers generated (first 4): $(cat "$model/generated.txt")" >&2
echo "== the fused Llama-3-8B layer (one function for all 32 layers)" >&2
"$build/bin/tbc" compile "$root/examples/models/llama-3-8b" --emit fused | awk '/func.func private @block/{p=1} p'
