#!/usr/bin/env python3
"""Writes a safetensors checkpoint holding every `tbc.param` of a tbc IR file.

Test helper (standard library only): tensors are zero-filled BF16.
  make_checkpoint.py IR OUT_DIR [--shards N] [--drop NAME] [--reshape NAME]
                                [--dtype BF16|F32|I32]
--shards N writes model-0000i-of-0000N.safetensors plus the index file.
"""
import argparse, json, os, re, struct

p = argparse.ArgumentParser()
p.add_argument("ir")
p.add_argument("out")
p.add_argument("--shards", type=int, default=1)
p.add_argument("--drop", default="")
p.add_argument("--reshape", default="")
p.add_argument("--dtype", default="BF16")
a = p.parse_args()

sizes = {"BF16": 2, "F32": 4, "I32": 4}
params = {}
for m in re.finditer(r'tbc\.param "([^"]+)" : tensor<([0-9x]+)x[a-z0-9]+>', open(a.ir).read()):
    params[m.group(1)] = [int(d) for d in m.group(2).split("x")]
if a.drop:
    del params[a.drop]
if a.reshape:
    params[a.reshape] = params[a.reshape][:-1] + [params[a.reshape][-1] + 1]

def write(path, names):
    header, offset = {}, 0
    for n in names:
        nbytes = sizes[a.dtype]
        for d in params[n]:
            nbytes *= d
        header[n] = {"dtype": a.dtype, "shape": params[n], "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    h = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + bytes(offset))

os.makedirs(a.out, exist_ok=True)
names = sorted(params)
if a.shards == 1:
    write(os.path.join(a.out, "model.safetensors"), names)
else:
    weight_map = {}
    for i in range(a.shards):
        shard = f"model-{i + 1:05d}-of-{a.shards:05d}.safetensors"
        part = names[i::a.shards]
        write(os.path.join(a.out, shard), part)
        weight_map.update({n: shard for n in part})
    with open(os.path.join(a.out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f)
