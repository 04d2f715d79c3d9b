#!/usr/bin/env python3
"""Writes the hostile inputs of test/e2e/hostile.test into a folder:
  make_hostile.py OUT_DIR FIXTURES_DIR"""
import json, os, shutil, struct, sys

out, fixtures = sys.argv[1], sys.argv[2]

def st(path, tensors):
    """A safetensors file from {name: (dtype, shape, bytes)}."""
    header, data = {}, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header).encode()
    open(path, "wb").write(struct.pack("<Q", len(h)) + h + data)

def read_st(path):
    d = open(path, "rb").read()
    (n,) = struct.unpack("<Q", d[:8])
    header = json.loads(d[8:8 + n])
    body = d[8 + n:]
    return {k: (v["dtype"], v["shape"], body[v["data_offsets"][0]:v["data_offsets"][1]])
            for k, v in header.items() if k != "__metadata__"}

# Llama weights with one NaN, beside the fixture's config.
nan = os.path.join(out, "nan")
os.makedirs(nan, exist_ok=True)
shutil.copy(os.path.join(fixtures, "llama", "config.json"), nan)
t = read_st(os.path.join(fixtures, "llama", "model.safetensors"))
name = "model.layers.1.mlp.down_proj.weight"
dtype, shape, raw = t[name]
raw = bytearray(raw); raw[40:44] = struct.pack("<f", float("nan")); t[name] = (dtype, shape, bytes(raw))
st(os.path.join(nan, "model.safetensors"), t)

# The Llama fixture plus tensors it does not use (a warning) and the
# buffers real checkpoints carry (quiet).
extra = os.path.join(out, "extra")
os.makedirs(extra, exist_ok=True)
shutil.copy(os.path.join(fixtures, "llama", "config.json"), extra)
t = read_st(os.path.join(fixtures, "llama", "model.safetensors"))
t["model.layers.0.self_attn.q_proj.bias"] = ("F32", [64], bytes(256))
t["model.layers.0.self_attn.rotary_emb.inv_freq"] = ("F32", [8], bytes(32))
st(os.path.join(extra, "model.safetensors"), t)

# The Llama config with a position table of 2^24: a 3-token run must not
# allocate caches for all of them (8.6 GB).
long = os.path.join(out, "long")
os.makedirs(long, exist_ok=True)
c = json.load(open(os.path.join(fixtures, "llama", "config.json")))
c["max_position_embeddings"] = 1 << 24
json.dump(c, open(os.path.join(long, "config.json"), "w"))
shutil.copy(os.path.join(fixtures, "llama", "model.safetensors"), long)

# A config of 2M values (4 MB): past the reader's value budget.
c = json.load(open(os.path.join(fixtures, "llama", "config.json")))
c["padding"] = [0] * (1 << 21)
os.makedirs(os.path.join(out, "wide"), exist_ok=True)
json.dump(c, open(os.path.join(out, "wide", "config.json"), "w"), separators=(",", ":"))

# A native spec with a typo.
spec = json.load(open(os.path.join(os.path.dirname(fixtures), "..", "examples", "models", "specs",
                                   "postnorm-gqa-reglu-sinusoidal.json")))
spec["attention"]["kv_head"] = spec["attention"].pop("kv_heads")
json.dump(spec, open(os.path.join(out, "typo.json"), "w"), indent=1)

# tbc IR nested 4,000 modules deep.
open(os.path.join(out, "deep.mlir"), "w").write("module {" * 4000 + "}" * 4000 + "\n")
