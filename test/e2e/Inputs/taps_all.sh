#!/usr/bin/env bash
# taps_all.sh FIXTURES OUT [NAME...]: for every fixture (or those named),
# the layer outputs (and logits) of the fused module equal the unfused
# module's (<= 1e-5), prefill and two decode steps. Prints one line per
# fixture; exits 1 on any difference.
set -u
fixtures=$1 out=$2 status=0
shift 2
dirs=()
if [ $# -gt 0 ]; then
  for f in "$@"; do dirs+=("$fixtures/$f/"); done
else
  dirs=("$fixtures"/*/)
fi
for dir in "${dirs[@]}"; do
  f=$(basename "$dir")
  for mode in fused unfused; do
    flag=""
    [ "$mode" = unfused ] && flag="--no-fuse"
    tbc compile "$dir" --taps layers $flag -o "$out/$f.$mode.tbcm" 2>/dev/null &&
      tbc run "$out/$f.$mode.tbcm" --weights "$dir" --tokens 3,1,4,1,5,9,2 --generate 3 \
        --ignore-eos --dump "$out/$f.$mode" >/dev/null 2>&1 || { echo "$f $mode: FAIL to run"; status=1; }
  done
  if log=$(bash "$(dirname "$0")/compare_taps.sh" "$out/$f.fused" "$out/$f.unfused" 1e-5); then
    echo "$f: $(echo "$log" | tail -1), same"
  else
    echo "$f: FAIL"; echo "$log" | grep -v " ok$"; status=1
  fi
done
exit $status
