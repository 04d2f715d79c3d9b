#!/usr/bin/env bash
# cuda_ptx_all.sh PTXAS FIXTURES OUT [DTYPE [MODES]]: every fixture, fused
# and unfused (or MODES: "fused"), to PTX (--target cuda --dtype DTYPE
# --emit ptx; f32 by default), each checked by check_ptx.py; one line each.
# PTXAS "none": compiled only, each line the module's count of PTX objects
# (the sanitizer suite, whose PTX the plain suite assembles). A kernel that
# an earlier fixture's module already assembled cleanly is not assembled again
# (check_ptx.py --seen; most of the fixtures' kernels are alike).
ptxas=$1 fixtures=$2 out=$3 dtype=${4:-f32} modes=${5:-fused unfused}
here=$(dirname "$0")
for f in "$fixtures"/*/; do
  n=$(basename "$f")
  for mode in $modes; do
    flag=""; [ $mode = unfused ] && flag=--no-fuse
    if ! tbc compile "$f" --target cuda --dtype "$dtype" $flag --emit ptx -o "$out/$n.$mode.mlir" 2>"$out/$n.$mode.err"; then
      echo "$n $mode: COMPILE FAIL: $(cat "$out/$n.$mode.err")"; continue
    fi
    if [ "$ptxas" = none ]; then
      echo "$n $mode: $(python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); from ptx_objects import ptx_objects; print(len(ptx_objects(sys.argv[2])))' "$here" "$out/$n.$mode.mlir") PTX objects"
    else
      python3 "$here/check_ptx.py" "$ptxas" "$out/$n.$mode.mlir" --seen "$out/assembled-kernels" | sed "s/^/$n $mode /"
    fi
  done
done
