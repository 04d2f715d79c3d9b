#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/: clang, with ASan+UBSan) and runs each
# for SECONDS (default 60) from a seed corpus of the repository's own examples.
# A crash leaves crash-* in the work folder and fails the script; turn it
# into a regression test (fuzz/regressions/<target>/) and fix the bug.
# Usage: scripts/fuzz.sh [SECONDS] [BUILD_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
build=${2:-$root/build-sanitize}
work=$build/fuzz
# The fuzzers are targets of the sanitizer build (clang, ASan+UBSan, every
# object with libFuzzer's coverage instrumentation: -DTBC_FUZZ=ON), which
# scripts/test-sanitizers.sh builds first in CI: only the links are left.
"$root/scripts/configure-sanitizers.sh" "$build"
echo "== building fuzzers"
ninja -C "$build" tbc tbc-fuzzers >/dev/null
mkdir -p "$work"

# LLVM's headers poison BumpPtrAllocator slabs in our instrumented code (the
# fuzzers, and the tbc that compiles a seed below) while the uninstrumented
# libMLIR.so reuses them: ignore manual poisoning, a known false positive of
# mixing the two (fuzz/regressions/ir holds the inputs that showed it).
export ASAN_OPTIONS=allow_user_poisoning=0:detect_leaks=0

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
