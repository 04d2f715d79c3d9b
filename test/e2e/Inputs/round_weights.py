#!/usr/bin/env python3
"""round_weights.py IN.safetensors OUT.safetensors [bf16|f16]: the same
checkpoint with every F32 matrix (projection weights, embedding tables: what
--dtype bf16|f16 stores in 16 bits; gains and biases stay f32) rounded to the
nearest bf16 (default) or f16 (ties to even), still stored as F32. A module with f32 weights on OUT must compute what a module with bf16
weights computes on IN, when no bind-time transform changes the weights
first (--no-fuse). Pure Python: lit's interpreter may lack numpy."""
import array, json, struct, sys

src, dst = sys.argv[1], sys.argv[2]
to_f16 = len(sys.argv) > 3 and sys.argv[3] == "f16"
data = open(src, "rb").read()
(n,) = struct.unpack("<Q", data[:8])
header = json.loads(data[8:8 + n])
body = bytearray(data[8 + n:])
for name, t in header.items():
    if name == "__metadata__" or t["dtype"] != "F32" or len(t["shape"]) != 2:
        continue
    begin, end = t["data_offsets"]
    if to_f16:  # struct's "e" format rounds to nearest even
        values = array.array("f")
        values.frombytes(bytes(body[begin:end]))
        for i, v in enumerate(values):
            values[i] = struct.unpack("<e", struct.pack("<e", v))[0]
        body[begin:end] = values.tobytes()
        continue
    words = array.array("I")
    words.frombytes(bytes(body[begin:end]))
    for i, u in enumerate(words):
        if (u & 0x7FFFFFFF) > 0x7F800000:  # NaN stays NaN
            continue
        words[i] = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16 << 16) & 0xFFFFFFFF
    body[begin:end] = words.tobytes()
open(dst, "wb").write(data[:8 + n] + bytes(body))
