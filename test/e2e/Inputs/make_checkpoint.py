#!/usr/bin/env python3
"""Writes a Llama-shaped Hugging Face folder (config.json + model.safetensors)
with deterministic finite weights in F32, BF16 or F16, without numpy or
torch: for tests that need a checkpoint of a given size (peak memory).

    make_checkpoint.py OUT_DIR DTYPE HIDDEN LAYERS
"""
import json
import os
import random
import struct
import sys

out, dtype, hidden, layers = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
inter, vocab, head_dim = hidden * 11 // 4, 8192, 64
heads, kv_heads = hidden // head_dim, max(1, hidden // 256)
config = dict(architectures=["LlamaForCausalLM"], model_type="llama", hidden_size=hidden,
              intermediate_size=inter, num_hidden_layers=layers, num_attention_heads=heads,
              num_key_value_heads=kv_heads, head_dim=head_dim, vocab_size=vocab,
              max_position_embeddings=256, rms_norm_eps=1e-5, rope_theta=10000.0,
              hidden_act="silu", tie_word_embeddings=False, torch_dtype="float32")

shapes = [("model.embed_tokens.weight", [vocab, hidden])]
for i in range(layers):
    p = f"model.layers.{i}."
    shapes += [(p + "input_layernorm.weight", [hidden]),
               (p + "self_attn.q_proj.weight", [heads * head_dim, hidden]),
               (p + "self_attn.k_proj.weight", [kv_heads * head_dim, hidden]),
               (p + "self_attn.v_proj.weight", [kv_heads * head_dim, hidden]),
               (p + "self_attn.o_proj.weight", [hidden, heads * head_dim]),
               (p + "post_attention_layernorm.weight", [hidden]),
               (p + "mlp.gate_proj.weight", [inter, hidden]),
               (p + "mlp.up_proj.weight", [inter, hidden]),
               (p + "mlp.down_proj.weight", [hidden, inter])]
shapes += [("model.norm.weight", [hidden]), ("lm_head.weight", [vocab, hidden])]

# One block of 4096 values in (-0.05, 0.05), repeated: finite in every dtype.
rng = random.Random(0)
values = [rng.uniform(-0.05, 0.05) for _ in range(4096)]
if dtype == "F32":
    block, size = struct.pack("<4096f", *values), 4
elif dtype == "BF16":
    block, size = b"".join(struct.pack("<f", v)[2:] for v in values), 2
elif dtype == "F16":
    block, size = struct.pack("<4096e", *values), 2
else:
    sys.exit(f"unknown dtype {dtype} (F32, BF16 or F16)")

header, offset = {}, 0
for name, shape in shapes:
    n = 1
    for d in shape:
        n *= d
    header[name] = dict(dtype=dtype, shape=shape, data_offsets=[offset, offset + n * size])
    offset += n * size
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "config.json"), "w") as f:
    json.dump(config, f)
with open(os.path.join(out, "model.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text)
    for name, shape in shapes:
        n = header[name]["data_offsets"][1] - header[name]["data_offsets"][0]
        f.write((block * (n // len(block) + 1))[:n])
