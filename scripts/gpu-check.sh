#!/usr/bin/env bash
# One call on a GPU machine (CUDA, CMake, Ninja, PyTorch, transformers; no
# LLVM, no network): builds the runtime alone, runs every conformance fixture
# from the modules scripts/gpu-prepare.sh compiled beforehand (prefill, KV
# cache decode and greedy tokens against transformers' logits), then times
# the benchmark (bench/gpu_bench.py) against PyTorch on the same GPU.
# Usage: scripts/gpu-check.sh [--no-bench | --bench-only]
#   (the two halves each fit one 10-minute call; $OUT, when set, receives the
#   benchmark's CSV and chart)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-gpu
pack=$root/gpu-modules/modules.tar.gz
[ -f "$pack" ] || { echo "gpu-check: no gpu-modules/modules.tar.gz (run scripts/gpu-prepare.sh on an LLVM machine first)"; exit 1; }
mods=$build/modules
rm -rf "$mods" && mkdir -p "$mods" && tar -C "$mods" -xzf "$pack" || { echo "gpu-check: cannot unpack $pack"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
echo "== building the runtime (TBC_RUNTIME_ONLY)"
cmake -G Ninja -S "$root" -B "$build" -DTBC_RUNTIME_ONLY=ON -DCMAKE_BUILD_TYPE=Release >/dev/null &&
  ninja -C "$build" tbc-run tbc-conformance >/dev/null || { echo "build failed"; exit 1; }
status=0
part=${1:-all}
if [ "$part" != --bench-only ]; then
# One line per module: fixture, kind, then tbc-conformance's report.
conform() { # fixture kind module fixture-dir [tbc-conformance flags...]
  printf '%-24s %-8s ' "$1" "$2"
  local out rc
  out=$("$build/bin/tbc-conformance" "$3" "$4" "${@:5}" 2>&1)
  rc=$?
  echo "$out" | tr '\n' ' ' | cut -c1-200
  [ $rc -eq 0 ] || status=1
}
echo "== conformance (f32; max|d|/max|ref| against transformers)"
for dir in "$root"/test/fixtures/*/; do
  f=$(basename "$dir")
  for mode in fused unfused; do
    conform "$f" "$mode" "$mods/$f.$mode.tbcm" "$dir"
  done
done
echo "== conformance (bf16 checkpoints, test/fixtures-bf16; within 2e-2, greedy tokens where the top-2 margin allows)"
for dir in "$root"/test/fixtures-bf16/*/; do
  f=$(basename "$dir")
  for kind in bf16 bf16-splitkv; do
    [ -e "$mods/$f.$kind.tbcm" ] || continue
    # (batch-1 within the same bound: a 16-bit module's kernels are variants
    # by chunk size that round differently; see test/e2e/conformance.cpp.)
    conform "$f" "$kind" "$mods/$f.$kind.tbcm" "$dir" --tolerance 2e-2 --batch-tolerance 2e-2
  done
done
echo "== conformance (bf16 weights, f32 KV caches, short prompts: the 16-bit FMA projections; within 1e-4)"
for m in "$mods"/*.bf16-f32cache.tbcm; do
  f=$(basename "$m" .bf16-f32cache.tbcm)
  conform "$f" f32cache "$m" "$root/test/fixtures-bf16/$f"
done
echo "== tbc verify on the GPU (taps against transformers' hooks, prefill and 3 decode steps)"
for m in "$mods"/*.taps.tbcm "$mods"/*.taps-bf16.tbcm; do
  [ -e "$m" ] || continue
  name=$(basename "$m" .tbcm); f=${name%.*}; kind=${name##*.}
  dtype=f32; [ "$kind" = taps-bf16 ] && dtype=bf16
  printf '%-24s %-10s ' "$f" "$kind"
  out=$(python3 "$root/tools/tbc-verify/tbc-verify" "$root/test/fixtures/$f" --module "$m" \
        --tbc-run "$build/bin/tbc-run" --target cuda --dtype "$dtype" 2>&1)
  rc=$?
  echo "$out" | grep -E "^tbc verify: (PASS|FAIL)" || echo "$out" | tail -3
  [ $rc -eq 0 ] || status=1
done
fi
if [ "$part" != --no-bench ]; then
  echo "== benchmark: tbc against PyTorch eager, torch.compile and the roofline (same GPU, same run)"
  python3 "$root/bench/gpu_bench.py" run --tbc-run "$build/bin/tbc-run" --modules "$mods/bench" \
    --out "${OUT:-$root/bench/out}" || status=1
fi
exit $status
