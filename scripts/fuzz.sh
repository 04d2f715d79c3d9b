#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, with ASan+UBSan) and runs each for
# SECONDS (default 60) from a seed corpus of the repository's own examples.
# A crash leaves crash-* in the work folder and fails the script; turn it
# into a regression test (fuzz/regressions/<target>/) and fix the bug.
# Usage: scripts/fuzz.sh [SECONDS] [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
build=${2:-$root/build}
work=$build/fuzz
"$root/scripts/install-deps.sh"
if ! command -v clang++ >/dev/null || ! dpkg -s libclang-rt-14-dev >/dev/null 2>&1; then
  sudo_=""; [ "$(id -u)" -ne 0 ] && sudo_=sudo
  DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq --no-install-recommends clang libclang-rt-14-dev >/dev/null
fi
[ -d "$build/dialects/tbc" ] || { cmake -G Ninja -S "$root" -B "$build" >/dev/null && ninja -C "$build"; }
mkdir -p "$work"
# Sources compile once each, side by side (CI's time is short: one clang++
# per fuzzer over all its sources took ten minutes on two cores), with
# libFuzzer's instrumentation; the fuzzers link the objects they need.
cflags=(-std=c++17 -O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize=vptr
        -fno-sanitize-recover=all -I"$root/include" -I"$build/dialects" -I/usr/lib/llvm-22/include)
lflags=(-fsanitize=fuzzer,address,undefined)
mlir=(-L/usr/lib/llvm-22/lib -Wl,-rpath,/usr/lib/llvm-22/lib -lMLIR -lLLVM)
runtime=("$root"/lib/Support/*.cpp "$root"/lib/Runtime/*.cpp)
# Every config reader (HF*.cpp) by glob: a reader file added to lib/Frontend
# links here without touching this list (stop 67's CI failed on a list).
frontend=("$root"/lib/Frontend/{ModelSpec,JsonFields,RopeScalingFields,NativeSpec,ModelReaders}.cpp "$root"/lib/Frontend/HF*.cpp)
compiler=("$root"/lib/Dialect/*.cpp "$root"/lib/Analysis/RowAlignment.cpp "$root"/lib/Transforms/*.cpp
          "$root"/lib/Conversion/Common/*.cpp "$root"/lib/Conversion/TbcToCPU/*.cpp "$root"/lib/Conversion/TbcToCUDA/*.cpp
          "$root"/lib/Target/*.cpp "$root"/lib/Target/*/*.cpp
          "$root"/lib/Registration/InitAll.cpp)
# The object of a source: $work/obj/<its path under the root, / as _>.o
# (exported: the parallel compiles below name their outputs with it too).
export FUZZ_ROOT=$root FUZZ_OBJ=$work/obj FUZZ_CFLAGS="${cflags[*]}"
object() { local rel=${1#"$FUZZ_ROOT"/}; printf '%s\n' "$FUZZ_OBJ/${rel//\//_}.o"; }
export -f object

echo "== building fuzzers"
mkdir -p "$work/obj"
printf '%s\n' "$root"/fuzz/*_fuzzer.cpp "${runtime[@]}" "${frontend[@]}" "${compiler[@]}" | sort -u |
  xargs -P "$(nproc)" -I{} bash -c 'exec clang++ $FUZZ_CFLAGS -c "$1" -o "$(object "$1")"' _ {}
link() { # fuzzer, then its sources, then -- and link flags
  local name=$1 sources=() objs=() s; shift
  while [ "$1" != -- ]; do sources+=("$1"); shift; done
  shift
  for s in "$root/fuzz/${name}.cpp" "${sources[@]}"; do objs+=("$(object "$s")"); done
  clang++ "${lflags[@]}" "${objs[@]}" "$@" -o "$work/$name"
}
link safetensors_fuzzer "${runtime[@]}" -- -ldl -lpthread
# The model spec names the dialect's enums (RoPE scaling): link the dialect.
link config_fuzzer "${frontend[@]}" "${runtime[@]}" "$root"/lib/Dialect/*.cpp -- "${mlir[@]}" -ldl -lpthread
link module_fuzzer "${runtime[@]}" -- -ldl -lpthread
link ir_fuzzer "${compiler[@]}" "$root"/lib/Support/*.cpp -- "${mlir[@]}"

echo "== seed corpora"
for t in safetensors config module ir; do mkdir -p "$work/corpus-$t"; done
cp "$root"/test/fixtures/gpt2/model.safetensors "$work/corpus-safetensors/" 
python3 - "$work/corpus-safetensors" <<'PY'
import json, struct, sys
h = json.dumps({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "__metadata__": {"k": "v"}}).encode()
open(sys.argv[1] + "/small.safetensors", "wb").write(struct.pack("<Q", len(h)) + h + bytes(8))
PY
cp "$root"/examples/models/*/config.json "$work/corpus-config/" 2>/dev/null || true
for d in "$root"/examples/models/*/ "$root"/test/fixtures/*/; do
  [ -f "$d/config.json" ] && cp "$d/config.json" "$work/corpus-config/$(basename "$d").json"
done
cp "$root"/examples/models/specs/*.json "$work/corpus-config/"
"$build/bin/tbc" compile "$root/test/fixtures/gpt2" -o "$work/corpus-module/gpt2.tbcm" 2>/dev/null
python3 -c "import sys,struct; d=open(sys.argv[1],'rb').read(); m=struct.unpack('<Q',d[16:24])[0]; open(sys.argv[2],'wb').write(d[32:32+m])" \
  "$work/corpus-module/gpt2.tbcm" "$work/corpus-module/manifest.json"
cp "$root"/test/Dialect/ops.mlir "$root"/test/Dialect/fused-ops.mlir "$root"/examples/blocks/*.mlir "$root"/test/Transforms/*.mlir "$work/corpus-ir/"

# LLVM's headers poison BumpPtrAllocator slabs in our (instrumented) code
# while libMLIR.so (uninstrumented) reuses them: ignore manual poisoning, a
# known false positive of mixing the two (fuzz/regressions/ir holds the
# inputs that showed it).
export ASAN_OPTIONS=allow_user_poisoning=0:detect_leaks=0
status=0
for t in safetensors config module ir; do
  echo "== fuzzing $t for ${seconds}s"
  regress="$root/fuzz/regressions/$t"
  seeds=("$work/corpus-$t"); [ -d "$regress" ] && seeds+=("$regress")
  log="$work/$t.log"
  rm -f "$work/$t-artifacts/"* 2>/dev/null || true
  mkdir -p "$work/$t-artifacts"
  if (cd "$work" && "./${t}_fuzzer" -max_total_time="$seconds" -max_len=65536 -timeout=10 \
      -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$work/$t-artifacts/" "${seeds[@]}" >"$log" 2>&1); then
    tail -3 "$log"
  else
    # CI keeps only this output: print the report and the input itself, so
    # that a crash found on another machine can be reproduced here.
    status=1
    echo "!! ${t}_fuzzer failed; its report:"
    grep -v -E '^#[0-9]+' "$log" | tail -60
    for a in "$work/$t-artifacts/"*; do
      [ -f "$a" ] || continue
      echo "!! input $(basename "$a") ($(stat -c %s "$a") bytes), base64:"
      head -c 16384 "$a" | base64 -w 120
    done
  fi
done
exit $status
