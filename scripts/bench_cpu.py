#!/usr/bin/env python3
"""CPU benchmark: tbc against PyTorch (eager, fp32) on the same machine, same
model, same threads, in one run. Prints tokens/s of each and their ratio.

Needs torch + transformers (a venv outside the repository, as for
scripts/make_fixtures.py); tbc must be built (scripts/test.sh).
    ~/venv-ref/bin/python scripts/bench_cpu.py [--hidden 1024] [--layers 4]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM

p = argparse.ArgumentParser()
p.add_argument("--hidden", type=int, default=1024)
p.add_argument("--layers", type=int, default=4)
p.add_argument("--prompt", type=int, default=64)
p.add_argument("--generate", type=int, default=32)
p.add_argument("--threads", type=int, default=os.cpu_count())
p.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
a = p.parse_args()

torch.set_num_threads(a.threads)
config = LlamaConfig(vocab_size=8192, hidden_size=a.hidden, intermediate_size=a.hidden * 11 // 4,
                     num_hidden_layers=a.layers, num_attention_heads=a.hidden // 64,
                     num_key_value_heads=a.hidden // 256, max_position_embeddings=4096)
torch.manual_seed(0)
model = LlamaForCausalLM(config).eval()
tokens = torch.randint(0, 8192, (1, a.prompt), generator=torch.Generator().manual_seed(1))

with tempfile.TemporaryDirectory() as tmp:
    model.save_pretrained(tmp, safe_serialization=True)
    tbc = os.path.join(a.build, "bin", "tbc")
    t0 = time.perf_counter()
    subprocess.run([tbc, "compile", tmp, "-o", os.path.join(tmp, "m.tbcm")], check=True,
                   stderr=subprocess.DEVNULL)
    compile_s = time.perf_counter() - t0
    run = subprocess.run([tbc, "run", os.path.join(tmp, "m.tbcm"), "--weights", tmp,
                          "--tokens", ",".join(map(str, tokens[0].tolist())),
                          "--generate", str(a.generate)], check=True, capture_output=True, text=True)
    tbc_prefill = float(re.search(r"prefill: .*\(([\d.]+) tokens/s\)", run.stderr).group(1))
    tbc_decode = float(re.search(r"decode: .*\(([\d.]+) tokens/s\)", run.stderr).group(1))
    tbc_ids = [int(t) for t in run.stdout.split(":")[1].strip().split(",")]

with torch.no_grad():
    model(tokens)  # warm up
    t0 = time.perf_counter()
    out = model(tokens, use_cache=True)
    torch_prefill = a.prompt / (time.perf_counter() - t0)
    past, nxt = out.past_key_values, out.logits[0, -1].argmax().item()
    ids, t0 = [nxt], time.perf_counter()
    for _ in range(a.generate - 1):
        out = model(torch.tensor([[nxt]]), past_key_values=past, use_cache=True)
        past, nxt = out.past_key_values, out.logits[0, -1].argmax().item()
        ids.append(nxt)
    torch_decode = (a.generate - 1) / (time.perf_counter() - t0)

print(f"model: Llama hidden {a.hidden}, {a.layers} layers, fp32, {a.threads} threads, "
      f"prompt {a.prompt}, {a.generate} generated; torch {torch.__version__}")
print(f"tbc compile: {compile_s:.2f} s")
print(f"prefill  tbc {tbc_prefill:8.1f} tok/s   torch {torch_prefill:8.1f} tok/s   ratio {tbc_prefill / torch_prefill:.2f}")
print(f"decode   tbc {tbc_decode:8.1f} tok/s   torch {torch_decode:8.1f} tok/s   ratio {tbc_decode / torch_decode:.2f}")
print(f"same greedy tokens: {tbc_ids == ids}")
