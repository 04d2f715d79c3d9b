#!/usr/bin/env bash
# cuda_examples_all.sh PTXAS SASS|"" EXAMPLES OUT: every example model (HF
# folders under EXAMPLES/models, native specs under EXAMPLES/models/specs) at
# its real shapes, --target cuda for sm_80 and sm_90, with f32 and with bf16
# weights, then with bf16 weights for sm_90a alone (H100/H200: the
# block-tiled projections on wgmma): each PTX assembled by check_ptx.py (zero
# spill bytes), and with a disassembler the bf16 machine code read by
# check_sass.py (tensor-core instructions). One line per model, dtype and
# architecture. A kernel an earlier model's module already assembled cleanly
# is not assembled again (check_ptx.py --seen).
ptxas=$1 sass=$2 examples=$3 out=$4
here=$(dirname "$0")
source "$here/example_models.sh"
for m in "${models[@]}"; do
  n=$(basename "$m" .json)
  for config in f32 bf16 bf16:sm_90a; do
    dtype=${config%%:*} archs=()
    [ "$config" != "$dtype" ] && archs=(--cuda-arch "${config#*:}")
    o="$out/$n.${config/:/.}.mlir"
    if ! tbc compile "$m" --target cuda --dtype "$dtype" "${archs[@]}" --emit ptx -o "$o" 2>"$o.err"; then
      echo "$n $dtype: COMPILE FAIL: $(cat "$o.err")"; continue
    fi
    python3 "$here/check_ptx.py" "$ptxas" "$o" --seen "$out/assembled-kernels" | sed "s/^/$n $dtype /"
    if [ "$dtype" = bf16 ] && [ -n "$sass" ]; then
      python3 "$here/check_sass.py" "$ptxas" "$sass" "$o" | sed "s/^/$n $dtype sass /"
    fi
    rm -f "$o"
  done
done
