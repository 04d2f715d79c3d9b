#!/usr/bin/env bash
# Runs CUDA modules' kernels on the CPU (fake_libcuda.c + ptx_emulator.cpp,
# FAKE_CUDA_EXECUTE=1) and checks conformance fixtures against transformers,
# as scripts/gpu-check.sh does on a GPU. SET picks the modules (one lit test
# each, so lit runs them side by side):
# * fused, unfused: f32 modules of test/fixtures, within 1e-4;
# * fused-sample: the fused set's fixtures whose host side differs (GPT-2's
#   transposed weights, soft-caps and local layers, a relative-position
#   table, dynamic and long RoPE tables, odd sizes), for the sanitizer
#   suite, where the executor's host code is what ASan watches;
# * bf16: bf16 modules of the bf16 checkpoints (test/fixtures-bf16, whose
#   references are transformers' f32-compute logits on the bf16 weights):
#   12-token prompts run the FMA variants (decode GEMV, 8 rows a warp), whose
#   activations stay f32, so with f32 KV caches (--cuda-kv-cache f32) they
#   match within 1e-4; with the default bf16 caches (keys and values rounded,
#   as a bf16 model's are) within 2e-2;
# * bf16-long: the long-prompt bf16 fixtures
#   (80 tokens: tensor-core projections and flash attention, which round
#   activations and P to bf16; once more with split-KV attention, and once
#   for sm_90a alone, whose projections run on wgmma, as built by default
#   and at 256 columns a block with k steps of 64; two of them once more
#   with the flash kernel's 64-position tiles and once with its 128-row
#   blocks; the head dim 256 one in one pass; one with programmatic
#   dependent launch, --cuda-pdl) within the 2e-2 that
#   scripts/gpu-check.sh asks of bf16 on a GPU;
# * bf16-sample, bf16-long-sample: the bf16 sets' three kinds of check on
#   one fixture each (llama with either KV cache; gpt2-long with flash
#   attention), for the sanitizer suite: the executor's bf16 uploads and the [in, out]
#   transposition run under ASan there, while the kernels, run by the
#   uninstrumented emulator, are the whole bf16 set's job in the plain suite.
# Usage: emulated_conformance.sh SET OUT_DIR FIXTURES FIXTURES_BF16
# Builds OUT_DIR/libcuda.so.1 first.
set -u
set=$1 out=$2 fixtures=$3 bf16=$4
here=$(dirname "$0")
cc -c -O2 -fPIC -o "$out/fake.o" "$here/fake_libcuda.c" &&
  c++ -std=c++17 -c -O2 -fPIC -o "$out/emulator.o" "$here/ptx_emulator.cpp" &&
  c++ -shared -o "$out/libcuda.so.1" "$out/fake.o" "$out/emulator.o" || exit 1
export LD_LIBRARY_PATH=$out FAKE_CUDA_EXECUTE=1
status=0
check() { # name fixture compile-flags... -- conformance-flags...
  local name=$1 dir=$2 module="$out/${1// /.}.tbcm"; shift 2
  local compile=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do compile+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  # Decoding attention in 2 slices a head unless a check asks otherwise: by
  # default (16 slices at these models' few heads) the emulator ran 14 blocks
  # of 512 threads per head that find their slice empty, half of a module's
  # emulated time, where 2 slices keep the slices' merge (80-token caches:
  # positions in both) at an eighth of the cost. Every other emulated test
  # (cuda-splitkv-groups, cuda-graphs, ...) and bf16-long's split-kv checks
  # decode in the default slices.
  case " ${compile[*]} " in
    *" --cuda-decode-splits "*) ;;
    *) compile+=(--cuda-decode-splits 2) ;;
  esac
  echo "== $name"
  if ! tbc compile "$dir" --target cuda "${compile[@]}" -o "$module" 2>&1; then
    echo "COMPILE FAIL $name"; status=1; return
  fi
  tbc-conformance "$module" "$dir" "$@" || status=1
}
# The bf16 checkpoints with long prompts (80 tokens).
long="gemma2-long qwen3-long llama-hd128-long gemma2-hd256-long gpt2-long stablelm-hd160-long"
case $set in
  fused | unfused)
    flag=(); [ "$set" = unfused ] && flag=(--no-fuse)
    for dir in "$fixtures"/*/; do
      check "$(basename "$dir") f32 $set" "$dir" --dtype f32 "${flag[@]}"
    done ;;
  fused-sample)
    for f in llama gpt2 gemma2 t5-bias llama-dynamic phi3-longrope-long qwen2-odd-sizes; do
      check "$f f32 fused" "$fixtures/$f" --dtype f32
    done ;;
  bf16)
    for dir in "$bf16"/*/; do
      f=$(basename "$dir")
      case " $long " in *" $f "*) continue ;; esac
      check "$f bf16 f32-cache" "$dir" --dtype bf16 --cuda-kv-cache f32
      check "$f bf16" "$dir" --dtype bf16 -- --tolerance 2e-2 --batch-tolerance 2e-2
    done ;;
  bf16-long)
    # The long prompts' first 64 tokens in one call, then one at a time: the
    # decode kernels from position 64 on (every warp of the first 64-position
    # sweep busy, a second sweep, two slices merged), reading the caches the
    # prefill kernels wrote. Decoding the first 64 one at a time too took a
    # third of this set's emulation; the short prompts decode from 0.
    loose=(--tolerance 2e-2 --batch-tolerance 2e-2 --prefill 64)
    for f in $long; do
      check "$f bf16 flash" "$bf16/$f" --dtype bf16 --cuda-attention flash \
        -- "${loose[@]}"
      # Split-KV prefill, and decoding in the default slices (0: chosen by
      # the heads, 16 here): an 80-token cache's positions in 2 of them,
      # merged, the other 14 empty.
      check "$f bf16 split-kv" "$bf16/$f" --dtype bf16 --cuda-attention split-kv \
        --cuda-decode-splits 0 -- "${loose[@]}"
      # For sm_90a alone: the block-tiled projections on wgmma, as built
      # by default, and at 256 columns a block (the epilogues, RoPE's among
      # them, over 32 column tiles) with k steps of 64 (the 128-byte
      # swizzle). cuda-tiled-grid.test runs each of the two alone.
      check "$f bf16 sm_90a" "$bf16/$f" --dtype bf16 --cuda-arch sm_90a \
        -- "${loose[@]}"
      check "$f bf16 sm_90a wide" "$bf16/$f" --dtype bf16 --cuda-arch sm_90a \
        --cuda-gemm-cols 256 --cuda-gemm-k 64 -- "${loose[@]}"
    done
    # The flash kernel's tiles of 64 positions (--cuda-flash-keys 64) at
    # head dims 128 and 16 (soft-capped, windowed).
    for f in llama-hd128-long gemma2-long; do
      check "$f bf16 flash64" "$bf16/$f" --dtype bf16 --cuda-flash-keys 64 \
        -- "${loose[@]}"
      # and its blocks of 128 query rows (--cuda-flash-rows 128).
      check "$f bf16 flash-rows128" "$bf16/$f" --dtype bf16 --cuda-flash-rows 128 \
        -- "${loose[@]}"
    done
    # The flash kernel's products on wgmma (--cuda-flash-wgmma, sm_90a alone)
    # at head dim 128 (the other fixtures' head dims, 16-32, keep mma.sync;
    # head dim 64 and the kernel's other orders and tiles are compared bit
    # for bit with mma.sync kernels in cuda-flash-wgmma.test).
    check "llama-hd128-long bf16 sm_90a flash-wgmma" "$bf16/llama-hd128-long" --dtype bf16 \
      --cuda-arch sm_90a --cuda-flash-wgmma -- "${loose[@]}"
    # and its blocks of two warpgroups (--cuda-flash-rows 128).
    check "llama-hd128-long bf16 sm_90a flash-wgmma-rows128" "$bf16/llama-hd128-long" --dtype bf16 \
      --cuda-arch sm_90a --cuda-flash-wgmma --cuda-flash-rows 128 \
      -- "${loose[@]}"
    # Programmatic dependent launch (--cuda-pdl) on sm_90a: the staging,
    # wgmma GEMM, flash and decode kernels each wait before their first
    # global access (the emulator fails one that does not).
    check "gemma2-long bf16 sm_90a pdl" "$bf16/gemma2-long" --dtype bf16 --cuda-arch sm_90a \
      --cuda-pdl -- "${loose[@]}"
    # Head dim 256 in one walk (--cuda-flash-passes 1).
    check "gemma2-hd256-long bf16 flash-passes1" "$bf16/gemma2-hd256-long" --dtype bf16 \
      --cuda-flash-passes 1 -- "${loose[@]}" ;;
  bf16-sample)
    check "llama bf16 f32-cache" "$bf16/llama" --dtype bf16 --cuda-kv-cache f32
    check "llama bf16" "$bf16/llama" --dtype bf16 -- --tolerance 2e-2 --batch-tolerance 2e-2 ;;
  bf16-long-sample)
    check "gpt2-long bf16 flash" "$bf16/gpt2-long" --dtype bf16 --cuda-attention flash \
      -- --tolerance 2e-2 --batch-tolerance 2e-2 ;;
  *) echo "unknown set $set"; exit 2 ;;
esac
exit $status
