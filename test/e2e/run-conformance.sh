#!/usr/bin/env bash
# Compiles every conformance fixture fused and unfused and checks each module
# against transformers' logits.
# Usage: run-conformance.sh FIXTURES_DIR OUT_DIR [WEIGHT_DTYPE (tbc compile --dtype)]
set -u
fixtures=$1 out=$2 dtype=${3:-f32}
status=0
# Split even these tiny projections across the cores by output columns when
# decoding (the runtime only does it for big ones by default), so that the
# column ranges are checked against transformers too.
export TBC_SPLIT_MIN_WORK=0
for dir in "$fixtures"/*/; do
  f=$(basename "$dir")
  for mode in fused unfused; do
    flag=""
    [ "$mode" = unfused ] && flag="--no-fuse"
    echo "== $f $mode"
    if ! tbc compile "$dir" $flag --dtype "$dtype" -o "$out/$f.$mode.tbcm" 2>/dev/null; then
      echo "COMPILE FAIL"; status=1; continue
    fi
    tbc-conformance "$out/$f.$mode.tbcm" "$dir" || status=1
  done
done
exit $status
