#!/usr/bin/env bash
# Prepares a GPU session's whole kernel A/B here, on the LLVM machine, in one
# command, so that the session's device time goes to the two calls that
# scripts/gpu-ab-prepare.sh prints at its end and not to deciding what to
# compile. A lent GPU is rare and its minutes few: every option of the CUDA
# backend that waits for a measurement is one variant below.
#
# Usage: scripts/gpu-ab-prepare.sh [BUILD [BASELINE_REV]]
#   BUILD         the build whose bin/tbc compiles the variants (default build/)
#   BASELINE_REV  an earlier commit, built by scripts/build-baseline.sh into
#                 /tmp/tbc-ab-base (kept between runs; about five minutes),
#                 timed as variant B (default 9b121e4: the kernels the H200
#                 measured on 2026-11-28, bench/README.md)
#
# Writes gpu-modules/ (carry it to the device: `run` with carry
# ["gpu-modules"]): scripts/gpu-prepare.sh's conformance modules, and three
# A/B sets for bench/gpu_ab.py, each variant's times read against the first:
#   ab-linear  Llama-3-8B and Gemma-2-9B's prefill projections: WG (sm_90a:
#              the wgmma GEMM, 128 columns, k 32), D (sm_80,sm_90: mma.sync),
#              B (the baseline), WGW (256 columns), WGK (k 64), WGWK (both),
#              WGR (WG as ef37ebc built it: the epilogue's accumulators in
#              registers, 4-730 bytes spilled, where WG reads them from
#              shared memory; a second baseline build, /tmp/tbc-ab-regs)
#   ab-attn    Llama-3-8B's flash kernel (head dim 128), all sm_90a: WG
#              (mma.sync), FR (mma.sync, 128 rows), FK (mma.sync, 64 keys), FW
#              (wgmma), FW2 (wgmma, two warpgroups), FO / FO2 (those in
#              FlashAttention-3's order, --cuda-flash-overlap), FK2 (two
#              warpgroups, 64 keys), FOK2 (that in FA3's order)
#   ab-gemma   Gemma-2-9B's flash kernel (head dim 256, which keeps mma.sync):
#              WG (two walks) and FP (one walk, --cuda-flash-passes 1)
#   ab-pdl     a 4-layer Llama-3-8B for sm_90: S (kernels launched after
#              their predecessors end) and P (--cuda-pdl: programmatic
#              dependent launch, the decode GEMVs prefetching the start of
#              their weight rows while the kernel before them drains), read
#              by their decode steps' wall times (profiled calls launch each
#              kernel between events, which undoes P)
# ab-linear's Llama-3-8B once more, decoding after a 4096-token prompt: the
# decode attention kernel of B (a block per query head and slice) against
# the others' (a block per GQA group's 4 heads and slice: each cached key
# and value read once for the group).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
rev=${2:-9b121e4}
tbc=$build/bin/tbc
[ -x "$tbc" ] || { echo "gpu-ab-prepare: no $tbc (build tbc first)" >&2; exit 1; }
baseline() { # rev dir: builds rev into dir unless dir already holds it
  # (REVISION starts with the commit's short hash: resolved, to compare.)
  local built
  built=$(git -C "$root" rev-parse --verify --quiet \
            "$(cut -d' ' -f1 "$2/REVISION" 2>/dev/null)^{commit}" 2>/dev/null || true)
  if [ "$built" != "$(git -C "$root" rev-parse "$1^{commit}")" ]; then
    echo "== baseline $1 into $2"
    rm -rf "$2"
    "$root/scripts/build-baseline.sh" "$1" "$2"
  fi
}
base=/tmp/tbc-ab-base regs=/tmp/tbc-ab-regs
baseline "$rev" "$base"
baseline ef37ebc "$regs"
cd "$root"
echo "== conformance modules (scripts/gpu-prepare.sh)"
scripts/gpu-prepare.sh "$build" "$base/bin/tbc"
ab() { # set models variants...
  local set=$1 models=$2
  shift 2
  local args=()
  for v in "$@"; do args+=(--variant "$v"); done
  echo "== A/B set $set ($models): ${*%%=*}"
  rm -rf "gpu-modules/$set"
  python3 bench/gpu_ab.py prepare --models "$models" --out "gpu-modules/$set" "${args[@]}"
}
wg="$tbc --cuda-arch sm_90a"
ab ab-linear llama-3-8b,gemma-2-9b "WG=$wg" "D=$tbc" "B=$base/bin/tbc" \
  "WGW=$wg --cuda-gemm-cols 256" "WGK=$wg --cuda-gemm-k 64" \
  "WGWK=$wg --cuda-gemm-cols 256 --cuda-gemm-k 64" "WGR=$regs/bin/tbc --cuda-arch sm_90a"
ab ab-attn llama-3-8b "WG=$wg" "FR=$wg --cuda-flash-rows 128" "FK=$wg --cuda-flash-keys 64" \
  "FW=$wg --cuda-flash-wgmma" "FW2=$wg --cuda-flash-wgmma --cuda-flash-rows 128" \
  "FO=$wg --cuda-flash-wgmma --cuda-flash-overlap" \
  "FO2=$wg --cuda-flash-wgmma --cuda-flash-overlap --cuda-flash-rows 128" \
  "FK2=$wg --cuda-flash-wgmma --cuda-flash-rows 128 --cuda-flash-keys 64" \
  "FOK2=$wg --cuda-flash-wgmma --cuda-flash-rows 128 --cuda-flash-keys 64 --cuda-flash-overlap"
ab ab-gemma gemma-2-9b "WG=$wg" "FP=$wg --cuda-flash-passes 1"
echo "== A/B set ab-pdl (llama-3-8b, 4 layers): S P"
rm -rf gpu-modules/ab-pdl
python3 bench/gpu_ab.py prepare --models llama-3-8b --layers 4 --out gpu-modules/ab-pdl \
  --variant "S=$tbc --cuda-arch sm_90" --variant "P=$tbc --cuda-arch sm_90 --cuda-pdl"
du -sh gpu-modules
cat <<'EOF'
== ready. Two device calls (run with carry ["gpu-modules"]; each builds the
runtime first, since an idle machine is handed back within a minute):
1. correctness of every module on the GPU, then the decode step with and
   without programmatic dependent launch, then the flash kernel's A/B:
   scripts/gpu-check.sh --no-bench 2>&1 | tee $OUT/check.txt;
   timeout 120 python3 bench/gpu_ab.py run --tbc-run build-gpu/bin/tbc-run
     --modules gpu-modules/ab-pdl --prompts 512 --decode 32 --rounds 3
     --kernels linear --out $OUT/ab-pdl.csv 2>&1 | tee $OUT/ab-pdl.txt;
   timeout 240 python3 bench/gpu_ab.py run --tbc-run build-gpu/bin/tbc-run
     --modules gpu-modules/ab-attn --prompts 512,2048,8192 --kernels attention
     --out $OUT/ab-attn.csv 2>&1 | tee $OUT/ab-attn.txt
2. the table against PyTorch, then the projections' and Gemma's A/B:
   scripts/gpu-check.sh --bench-only --models llama-3-8b --no-compile --budget-s 200
     2>&1 | tee $OUT/bench.txt;
   timeout 200 python3 bench/gpu_ab.py run --tbc-run build-gpu/bin/tbc-run
     --modules gpu-modules/ab-linear --prompts 4096 --kernels linear
     --out $OUT/ab-linear.csv 2>&1 | tee $OUT/ab-linear.txt;
   timeout 120 python3 bench/gpu_ab.py run ... --modules gpu-modules/ab-gemma
     --prompts 2048,8192 --kernels attention 2>&1 | tee $OUT/ab-gemma.txt;
   timeout 120 python3 bench/gpu_ab.py run ... --modules gpu-modules/ab-linear
     --models llama-3-8b --prompts 4096 --decode 16 --kernels attend_decode --check 0
     --out $OUT/ab-decode.csv 2>&1 | tee $OUT/ab-decode.txt
EOF
