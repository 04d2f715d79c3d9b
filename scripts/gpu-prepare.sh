#!/usr/bin/env bash
# Compiles, on an LLVM machine, everything scripts/gpu-check.sh runs on a GPU
# machine (which has CUDA, CMake, PyTorch and transformers but no LLVM): every
# conformance fixture for --target cuda, fused and unfused in f32 and fused
# with bf16 weights, and the benchmark models with their CPU-path logits
# (scripts/gpu-cpu-reference.py). Output: gpu-modules/modules.tar.gz
# (ignored by git; carry gpu-modules/ to the GPU machine, where gpu-check.sh
# unpacks it). The modules are PTX text, about 70 MB unpacked, more than the
# 64 MiB a device call carries; packed they are about 13 MB.
# Usage: scripts/gpu-prepare.sh [BUILD_DIR [BASELINE_TBC]]
#   BASELINE_TBC: an earlier build's tbc (scripts/build-baseline.sh COMMIT DIR
#   gives DIR/bin/tbc): the benchmark's one-layer models are compiled by it too,
#   and gpu_bench.py times their prefill projections in the same run (the
#   A/B of a kernel change on one GPU).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
baseline=${2:-}
tbc=$build/bin/tbc
dest=$root/gpu-modules
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mkdir -p "$out/bench"
for dir in "$root"/test/fixtures/*/; do
  f=$(basename "$dir")
  "$tbc" compile "$dir" --target cuda --dtype f32 -o "$out/$f.fused.tbcm" 2>/dev/null
  "$tbc" compile "$dir" --target cuda --dtype f32 --no-fuse -o "$out/$f.unfused.tbcm" 2>/dev/null
done
# bf16 weights from the bf16 checkpoints (their references are transformers'
# logits on the same bf16 weights, so what is left is the kernels' own
# rounding): FMA variants for short prompts, tensor cores for long ones.
for dir in "$root"/test/fixtures-bf16/*/; do
  f=$(basename "$dir")
  "$tbc" compile "$dir" --target cuda --dtype bf16 -o "$out/$f.bf16.tbcm" 2>/dev/null
done
# The short-prompt ones with f32 KV caches too: their decode GEMV and 8-row
# kernels keep activations f32, so with f32 caches they must match within 1e-4.
for f in llama gemma2 qwen3 phi3 gpt2 olmo2 mpt bloom; do
  "$tbc" compile "$root/test/fixtures-bf16/$f" --target cuda --dtype bf16 --cuda-kv-cache f32 \
    -o "$out/$f.bf16-f32cache.tbcm" 2>/dev/null
done
# The long-prompt fixtures once more with split-KV attention: should the
# flash kernel (the bf16 default for prefill) fail, this tells whether it is
# the one to blame.
for f in gemma2-long qwen3-long llama-hd128-long gemma2-hd256-long; do
  "$tbc" compile "$root/test/fixtures-bf16/$f" --target cuda --dtype bf16 --cuda-attention split-kv \
    -o "$out/$f.bf16-splitkv.tbcm" 2>/dev/null
done
# The long-prompt fixtures for sm_90a alone (H100/H200): their projections
# (80 rows) take the block-tiled GEMM, there on wgmma; gpu-check.sh runs them
# on an sm_90 GPU only; once more at 256 columns a block with k steps of 64
# (--cuda-gemm-cols 256 --cuda-gemm-k 64).
for f in gemma2-long qwen3-long llama-hd128-long gemma2-hd256-long gpt2-long; do
  "$tbc" compile "$root/test/fixtures-bf16/$f" --target cuda --dtype bf16 --cuda-arch sm_90a \
    -o "$out/$f.bf16-sm90a.tbcm" 2>/dev/null
  "$tbc" compile "$root/test/fixtures-bf16/$f" --target cuda --dtype bf16 --cuda-arch sm_90a \
    --cuda-gemm-cols 256 --cuda-gemm-k 64 -o "$out/$f.bf16-sm90a-wide.tbcm" 2>/dev/null
done
# The flash kernel on wgmma (--cuda-flash-wgmma: head dims 64 and 128), which
# has run in the PTX emulator alone: in blocks of one and two warpgroups
# (--cuda-flash-rows 128), in FlashAttention-3's order (--cuda-flash-overlap)
# and in tiles of 64 positions. Of the fixtures only llama-hd128-long has
# such a head dim (the others are 16-32: they keep mma.sync).
f=llama-hd128-long
for kind in "flashwg:" "flashwg128:--cuda-flash-rows 128" "flashov:--cuda-flash-overlap" \
    "flashwg128k64:--cuda-flash-rows 128 --cuda-flash-keys 64" \
    "flashov128k64:--cuda-flash-rows 128 --cuda-flash-keys 64 --cuda-flash-overlap"; do
  # shellcheck disable=SC2086 # the kind's options split on purpose
  "$tbc" compile "$root/test/fixtures-bf16/$f" --target cuda --dtype bf16 --cuda-arch sm_90a \
    --cuda-flash-wgmma ${kind#*:} -o "$out/$f.bf16-sm90a-${kind%%:*}.tbcm" 2>/dev/null
done
# Programmatic dependent launch (--cuda-pdl, sm_90 alone): every fixture in
# f32 (within 1e-4: a kernel that read its predecessor's output early would
# show) and the bf16 ones for sm_90a (the wgmma GEMM, its staging, flash).
for dir in "$root"/test/fixtures/*/; do
  f=$(basename "$dir")
  "$tbc" compile "$dir" --target cuda --dtype f32 --cuda-arch sm_90 --cuda-pdl \
    -o "$out/$f.pdl.tbcm" 2>/dev/null
done
for dir in "$root"/test/fixtures-bf16/*/; do
  f=$(basename "$dir")
  "$tbc" compile "$dir" --target cuda --dtype bf16 --cuda-arch sm_90a --cuda-pdl \
    -o "$out/$f.bf16-sm90a-pdl.tbcm" 2>/dev/null
done
# Tapped modules for tbc verify on the GPU (tools/tbc-verify --module).
for f in llama gemma2 qwen3 phi3-longrope-long gpt2 gemma2-long; do
  "$tbc" compile "$root/test/fixtures/$f" --target cuda --dtype f32 --taps all -o "$out/$f.taps.tbcm" 2>/dev/null
  "$tbc" compile "$root/test/fixtures/$f" --target cuda --taps all --dtype bf16 \
    -o "$out/$f.taps-bf16.tbcm" 2>/dev/null
done
# The benchmark (bench/gpu_bench.py): one-layer Llama-3-8B, Gemma-2-9B and
# Qwen3-8B shapes and the whole 8B-shaped Llama, bf16 weights.
python3 "$root/bench/gpu_bench.py" prepare --tbc "$tbc" --out "$out/bench" \
  ${baseline:+--baseline-tbc "$baseline"}
# Those layers' logits on the CPU path (bf16 weights, the same random ones),
# which gpu-check.sh asks the CUDA modules to match: the fixtures' hidden
# sizes (64-192) leave the kernels' long-K paths unchecked.
python3 "$root/scripts/gpu-cpu-reference.py" make --tbc "$tbc" --tbc-run "$build/bin/tbc-run" \
  --bench "$out/bench" --out "$out/cpu-ref"
echo "$(ls "$out"/*.tbcm "$out"/bench/*.tbcm | wc -l) modules, $(du -sh "$out" | cut -f1) unpacked"
# Only the pack is replaced: gpu-modules/ may hold other things for the same
# carry (bench/gpu_ab.py prepare's gpu-modules/ab).
mkdir -p "$dest" && rm -f "$dest/modules.tar.gz"
tar -C "$out" -czf "$dest/modules.tar.gz" .
du -sh "$dest/modules.tar.gz"
