#!/usr/bin/env python3
"""tbc against PyTorch on the same GPU, in one run.

Runs `tbc-run bench` on a CUDA module and times the same model (the config
the module was compiled from, random weights, the same dtype) in PyTorch
eager through transformers: prefill of --prompt tokens and greedy decode
steps through the KV cache. Prints one line per engine and the ratios, and
appends them to --csv when given.

  bench/gpu_compare.py --tbc-run build-gpu/bin/tbc-run --module M.tbcm --config DIR
"""
import argparse, json, re, subprocess, sys, time


def tbc_numbers(tbc_run, module, prompt, decode):
    out = subprocess.run([tbc_run, "bench", module, "--random-weights", "--prompt",
                          str(prompt), "--decode", str(decode), "--repeat", "3"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"tbc bench failed: {out.stderr.strip()}")
    pre = re.search(r"prefill\s+(\d+) tokens\s+([\d.]+) ms", out.stdout)
    dec = re.search(r"decode\s+(\d+) tokens\s+([\d.]+) ms/token", out.stdout)
    return float(pre.group(2)), float(dec.group(2))


def torch_numbers(config_dir, prompt, decode, dtype):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    config = AutoConfig.from_pretrained(config_dir)
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(config, torch_dtype=dtype).eval()
    ids = torch.randint(0, config.vocab_size, (1, prompt), device="cuda")

    def run_once():
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.no_grad():
            out = model(ids, use_cache=True)
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        past = out.past_key_values
        tok = out.logits[:, -1:].argmax(-1)
        with torch.no_grad():
            for _ in range(decode):
                out = model(tok, past_key_values=past, use_cache=True)
                past = out.past_key_values
                tok = out.logits[:, -1:].argmax(-1)
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        return (t1 - t0) * 1e3, (t2 - t1) * 1e3 / decode

    run_once()  # warm-up
    runs = [run_once() for _ in range(3)]
    return min(r[0] for r in runs), min(r[1] for r in runs), torch.cuda.get_device_name()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    p.add_argument("--tbc-run", required=True)
    p.add_argument("--module", required=True)
    p.add_argument("--config", required=True, help="folder with the config.json it was compiled from")
    p.add_argument("--prompt", type=int, default=512)
    p.add_argument("--decode", type=int, default=32)
    p.add_argument("--dtype", choices=["f32", "bf16"], default="f32",
                   help="the module's weights (bf16: PyTorch runs the model in bf16)")
    p.add_argument("--csv")
    a = p.parse_args()
    import torch
    name = json.load(open(f"{a.config}/config.json")).get("model_type", "model")
    t_pre, t_dec = tbc_numbers(a.tbc_run, a.module, a.prompt, a.decode)
    dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float32
    e_pre, e_dec, gpu = torch_numbers(a.config, a.prompt, a.decode, dtype)
    print(f"{name} ({a.config.rstrip('/').split('/')[-1]}, {a.dtype}) on {gpu}:")
    print(f"  prefill {a.prompt:5d}: tbc {t_pre:9.3f} ms   torch eager {e_pre:9.3f} ms   "
          f"tbc speed = {e_pre / t_pre:5.2f}x eager")
    print(f"  decode  per token: tbc {t_dec:9.3f} ms   torch eager {e_dec:9.3f} ms   "
          f"tbc speed = {e_dec / t_dec:5.2f}x eager")
    if a.csv:
        with open(a.csv, "a") as f:
            f.write(f"{gpu},{name},{a.dtype},prefill{a.prompt},{t_pre:.4f},{e_pre:.4f}\n")
            f.write(f"{gpu},{name},{a.dtype},decode,{t_dec:.4f},{e_dec:.4f}\n")


if __name__ == "__main__":
    main()
