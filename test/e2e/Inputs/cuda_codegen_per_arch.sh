#!/usr/bin/env bash
# cuda_codegen_per_arch.sh PTXAS EXAMPLES OUT: every example model (as
# example_models.sh lists them), f32 and bf16, lowered to the nvvm stage
# and serialized with a code generation per architecture (share-codegen off),
# then compare_ptx_opcodes.py on the sm_80 and sm_90 PTX. One line per model
# and dtype. libdevice comes from the toolkit that holds PTXAS.
ptxas=$1 examples=$2 out=$3
toolkit=$(dirname "$(dirname "$ptxas")")
here=$(dirname "$0")
source "$here/example_models.sh"
for m in "${models[@]}"; do
  n=$(basename "$m" .json)
  for dtype in f32 bf16; do
    o="$out/$n.$dtype"
    if ! tbc compile "$m" --target cuda --dtype "$dtype" --emit nvvm -o "$o.nvvm.mlir" 2>"$o.err" ||
       ! tbc-opt "$o.nvvm.mlir" -o "$o.ptx.mlir" 2>"$o.err" \
         "--tbc-gpu-module-to-binary=toolkit=$toolkit format=isa kernel-groups=2"; then
      echo "$n $dtype: COMPILE FAIL: $(cat "$o.err")"; continue
    fi
    python3 "$here/compare_ptx_opcodes.py" "$o.ptx.mlir" | sed "s/^/$n $dtype /"
    rm -f "$o.nvvm.mlir" "$o.ptx.mlir"
  done
done
