#!/usr/bin/env bash
# One call on a GPU machine (CUDA, CMake, Ninja, PyTorch, transformers; no
# LLVM, no network): builds the runtime alone, runs every conformance fixture
# from the modules scripts/gpu-prepare.sh compiled beforehand (prefill, KV
# cache decode and greedy tokens against transformers' logits) and the
# benchmark's 8B-shaped layers against the CPU path's logits
# (scripts/gpu-cpu-reference.py), then times the benchmark
# (bench/gpu_bench.py) against PyTorch on the same GPU.
# Usage: scripts/gpu-check.sh [--no-bench | --bench-only] [gpu_bench.py run flags...]
#   The checks run side by side (TBC_GPU_JOBS at a time, default: the cores,
#   at most 12; the driver's PTX JIT is CPU work), each under a time limit
#   (TBC_GPU_JOB_TIMEOUT seconds, default 120: a kernel that hangs the GPU
#   fails its line instead of the call), and print in order once all are done.
#   The benchmark runs alone afterwards; $OUT, when set, receives its CSV and
#   chart. The two halves each fit one 10-minute call.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-gpu
mods=$build/modules
jobdir=$build/jobs

# A check: line N of $jobdir/list is name, kind, filter and command, split by US (\x1f);
# it prints one line (the command's output, filtered and joined) into N.out.
if [ "${1:-}" = --run-job ]; then
  IFS=$'\x1f' read -r -a f < <(sed -n "${2}p" "$jobdir/list")
  out=$(timeout "${TBC_GPU_JOB_TIMEOUT:-120}" "${f[@]:3}" 2>&1)
  rc=$?
  [ $rc -eq 124 ] && out="TIMEOUT after ${TBC_GPU_JOB_TIMEOUT:-120} s; $out"
  [ "${f[2]}" = verify ] && out=$(echo "$out" | grep -E "^tbc verify: (PASS|FAIL)|TIMEOUT" || echo "$out" | tail -3)
  printf '%-24s %-12s %s\n' "${f[0]}" "${f[1]}" "$(echo "$out" | tr '\n' ' ' | cut -c1-220)" >"$jobdir/$2.out"
  [ "${f[2]}" = header ] && rc=-
  echo $rc >"$jobdir/$2.rc"
  exit 0
fi

pack=$root/gpu-modules/modules.tar.gz
[ -f "$pack" ] || { echo "gpu-check: no gpu-modules/modules.tar.gz (run scripts/gpu-prepare.sh on an LLVM machine first)"; exit 1; }
rm -rf "$mods" && mkdir -p "$mods" && tar -C "$mods" -xzf "$pack" || { echo "gpu-check: cannot unpack $pack"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
echo "== building the runtime (TBC_RUNTIME_ONLY)"
started=$SECONDS
mkdir -p "$build"
{ cmake -G Ninja -S "$root" -B "$build" -DTBC_RUNTIME_ONLY=ON -DCMAKE_BUILD_TYPE=Release &&
  ninja -C "$build" tbc-run tbc-conformance; } >"$build/build.log" 2>&1 ||
  { tail -30 "$build/build.log"; echo "build failed"; exit 1; }
echo "   built in $((SECONDS - started)) s"
status=0
part=${1:-all}
case $part in --no-bench | --bench-only) shift ;; *) part=all ;; esac

if [ "$part" != --bench-only ]; then
rm -rf "$jobdir" && mkdir -p "$jobdir"
: >"$jobdir/list"
job() { # name kind filter command...
  local IFS=$'\x1f'
  echo "$*" >>"$jobdir/list"
}
header() { job "== $*" "" header echo -n; }
conform() { # fixture kind module fixture-dir [tbc-conformance flags...]
  job "$1" "$2" plain "$build/bin/tbc-conformance" "$3" "$4" "${@:5}"
}
header "conformance (f32; max|d|/max|ref| against transformers)"
# sm_90a's modules (the wgmma GEMM), and sm_90's with programmatic
# dependent launch (pdl), run on an sm_90 GPU alone.
sm90=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1)
for dir in "$root"/test/fixtures/*/; do
  f=$(basename "$dir")
  for mode in fused unfused pdl; do
    [ "$mode" = pdl ] && { [ -e "$mods/$f.pdl.tbcm" ] && [ "$sm90" = 9.0 ] || continue; }
    conform "$f" "$mode" "$mods/$f.$mode.tbcm" "$dir"
  done
done
header "conformance (bf16 checkpoints, test/fixtures-bf16; within 2e-2, greedy tokens where the top-2 margin allows)"
for dir in "$root"/test/fixtures-bf16/*/; do
  f=$(basename "$dir")
  for kind in bf16 bf16-splitkv bf16-sm90a bf16-sm90a-wide bf16-sm90a-flashwg bf16-sm90a-flashwg128 \
      bf16-sm90a-flashov bf16-sm90a-flashwg128k64 bf16-sm90a-flashov128k64 bf16-sm90a-pdl; do
    [ -e "$mods/$f.$kind.tbcm" ] || continue
    [[ "$kind" = bf16-sm90a* ]] && [ "$sm90" != 9.0 ] && continue
    # (batch-1 within the same bound: a 16-bit module's kernels are variants
    # by chunk size that round differently; see test/e2e/conformance.cpp.)
    conform "$f" "$kind" "$mods/$f.$kind.tbcm" "$dir" --tolerance 2e-2 --batch-tolerance 2e-2
  done
done
header "conformance (bf16 weights, f32 KV caches, short prompts: the 16-bit FMA projections; within 1e-4)"
for m in "$mods"/*.bf16-f32cache.tbcm; do
  f=$(basename "$m" .bf16-f32cache.tbcm)
  conform "$f" f32cache "$m" "$root/test/fixtures-bf16/$f"
done
header "the benchmark's 8B-shaped layers against the CPU path (same random weights, bf16; scripts/gpu-cpu-reference.py)"
while read -r i model; do
  job "$model" cpu-ref plain python3 "$root/scripts/gpu-cpu-reference.py" check --tbc-run "$build/bin/tbc-run" \
    --modules "$mods/bench" --ref "$mods/cpu-ref" --case "$i"
done < <(python3 -c 'import json, sys
for i, c in enumerate(json.load(open(sys.argv[1]))): print(i, c["model"])' "$mods/cpu-ref/cases.json")
header "tbc verify on the GPU (taps against transformers' hooks, prefill and 3 decode steps)"
for m in "$mods"/*.taps.tbcm "$mods"/*.taps-bf16.tbcm; do
  [ -e "$m" ] || continue
  name=$(basename "$m" .tbcm); f=${name%.*}; kind=${name##*.}
  dtype=f32; [ "$kind" = taps-bf16 ] && dtype=bf16
  job "$f" "$kind" verify python3 "$root/tools/tbc-verify/tbc-verify" "$root/test/fixtures/$f" --module "$m" \
    --tbc-run "$build/bin/tbc-run" --target cuda --dtype "$dtype"
done
cores=$(nproc)
jobs=${TBC_GPU_JOBS:-$((cores > 12 ? 12 : cores))}
count=$(wc -l <"$jobdir/list")
echo "== checks, $jobs at a time"
started=$SECONDS
seq 1 "$count" | xargs -P "$jobs" -I{} bash "$0" --run-job {}
for i in $(seq 1 "$count"); do
  line=$(cat "$jobdir/$i.out" 2>/dev/null) || { echo "check $i did not run"; status=1; continue; }
  case $line in "== "*) echo "${line%"${line##*[! ]}"}" ;; *) echo "$line" ;; esac
  case $(cat "$jobdir/$i.rc") in 0 | -) ;; *) status=1 ;; esac
done
passed=$(grep -lx 0 "$jobdir"/*.rc | wc -l) checks=$(grep -Lx -- - "$jobdir"/*.rc | wc -l)
echo "== $checks checks in $((SECONDS - started)) s: $passed passed, $((checks - passed)) failed"
fi

if [ "$part" != --no-bench ]; then
  echo "== benchmark: tbc against PyTorch eager, torch.compile and the roofline (same GPU, same run)"
  python3 "$root/bench/gpu_bench.py" run --tbc-run "$build/bin/tbc-run" --modules "$mods/bench" \
    --out "${OUT:-$root/bench/out}" "$@" || status=1
fi
exit $status
