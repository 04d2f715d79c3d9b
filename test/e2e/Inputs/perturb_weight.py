#!/usr/bin/env python3
"""perturb_weight.py IN_DIR OUT_DIR TENSOR [SCALE]: a copy of a Hugging Face
folder whose F32 tensor TENSOR is multiplied by SCALE (default 1.5): a
deliberately wrong weight, to show that `tbc verify` names the first module
it changes. Pure Python: lit's interpreter may lack numpy."""
import array, json, os, shutil, struct, sys

src, dst, name = sys.argv[1], sys.argv[2], sys.argv[3]
scale = float(sys.argv[4]) if len(sys.argv) > 4 else 1.5
shutil.copytree(src, dst)
path = os.path.join(dst, "model.safetensors")
data = bytearray(open(path, "rb").read())
(n,) = struct.unpack("<Q", data[:8])
header = json.loads(data[8:8 + n])
if name not in header or header[name]["dtype"] != "F32":
    sys.exit(f"{path}: no F32 tensor {name}")
begin, end = header[name]["data_offsets"]
values = array.array("f")
values.frombytes(bytes(data[8 + n + begin:8 + n + end]))
for i in range(len(values)):
    values[i] *= scale
data[8 + n + begin:8 + n + end] = values.tobytes()
open(path, "wb").write(data)
