#!/usr/bin/env python3
"""Interleaved A/B of tbc builds' kernels on one GPU: the kernel times of the
same one-layer models compiled by several builds, round after round, so that a
kernel change is judged against its predecessor on the same machine in the
same minutes (a fresh device machine per call can differ by a few percent).

Here (an LLVM machine):
  bench/gpu_ab.py prepare --variant B=/tmp/tbc-b/bin/tbc --variant C=build/bin/tbc
      [--variant 'S=build/bin/tbc --cuda-attention split-kv']
      [--models llama-3-8b,qwen3-8b] [--out gpu-modules/ab] [--target cuda] [--tiny]
      [--layers 1]
  writes OUT/<model>/config.json (gpu_bench.py's one-layer shapes, or
  --layers of them, random weights bound at run time) and
  OUT/<model>.<variant>.tbcm for each build;
  words after a variant's build are added to its `tbc compile` (one build
  with and without an option).
  (scripts/gpu-prepare.sh replaces only gpu-modules/modules.tar.gz, so both
  travel in one carry of gpu-modules.)
There (the GPU machine, after scripts/gpu-check.sh has built build-gpu/):
  python3 bench/gpu_ab.py run --tbc-run build-gpu/bin/tbc-run --modules gpu-modules/ab
      [--rounds 2] [--prompts 2048,8192] [--decode 0] [--kernels attention] [--out FILE]
  prints, per model, prompt and kernel, each variant's ms per round and its
  ratio to the first variant (medians over rounds), and writes them as CSV;
  and the same for the calls' wall times (kernel `(wall)`: a prefill call,
  a decode step), which alone show launch-order effects (--cuda-pdl), since
  profiled calls launch each kernel between events.
Each measurement is `tbc-run bench --profile` (gpu_bench.tbc_bench): kernel
times per forward call, prefill (and decode with --decode N). Before timing,
each variant's logits for a prompt of --check tokens (random weights, the same
for every build) are compared with the first variant's (max|d|/max|ref|,
within 2e-2: bf16 variants round differently): a kernel change is timed only
where it still computes the same layer at the model's real widths."""
import argparse, csv, json, os, re, shlex, shutil, statistics, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpu_bench  # noqa: E402  (shapes and the tbc-run bench parser)


def prepare(a):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    variants = []
    for v in a.variant:
        name, _, command = v.partition("=")
        words = shlex.split(command)
        if not name or not words or not re.fullmatch(r"[A-Za-z0-9_-]+", name):
            sys.exit(f"gpu_ab prepare: --variant {v!r}: expected NAME=PATH_TO_TBC [COMPILE OPTIONS] "
                     "(NAME: letters, digits, - or _)")
        tbc = shutil.which(words[0]) or words[0]  # a bare name: from PATH
        if not os.access(tbc, os.X_OK):
            sys.exit(f"gpu_ab prepare: --variant {name}: {tbc} is not an executable")
        variants.append((name, [tbc] + words[1:]))
    if len({n for n, _ in variants}) != len(variants):
        sys.exit("gpu_ab prepare: two variants share a name")
    os.makedirs(a.out, exist_ok=True)
    for model in a.models:
        src = os.path.join(root, "examples", "models", model, "config.json")
        if not os.path.exists(src):
            sys.exit(f"gpu_ab prepare: no example model {model} ({src})")
        c = gpu_bench.shrink(json.load(open(src)), a.tiny)
        c["num_hidden_layers"], c["vocab_size"] = a.layers, gpu_bench.HEAD_VOCAB
        folder = os.path.join(a.out, model)
        os.makedirs(folder, exist_ok=True)
        json.dump(c, open(os.path.join(folder, "config.json"), "w"), indent=1)
        for name, (tbc, *options) in variants:
            module = os.path.join(a.out, f"{model}.{name}.tbcm")
            cmd = [tbc, "compile", folder, "--target", a.target, "--dtype", "bf16", "-o", module,
                   *options]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"gpu_ab prepare: {' '.join(cmd)} failed:\n{r.stderr}")
            print(f"  {module} ({os.path.getsize(module) >> 10} KiB)")
    json.dump({"variants": [n for n, _ in variants], "models": a.models, "target": a.target,
               "commands": {n: " ".join(shlex.quote(w) for w in c) for n, c in variants}},
              open(os.path.join(a.out, "ab.json"), "w"))


def run(a):
    manifest = os.path.join(a.modules, "ab.json")
    if not os.path.exists(manifest):
        sys.exit(f"gpu_ab run: no {manifest} (run `gpu_ab.py prepare` first)")
    ab = json.load(open(manifest))
    variants, models = ab["variants"], a.models or ab["models"]
    for v in variants:
        print(f"  variant {v}: {ab.get('commands', {}).get(v, '?')}", flush=True)
    if a.check:
        agree(a, variants, models)
    pick = re.compile(a.kernels)
    # times[(model, prompt, section, kernel)][variant] = [ms per round]
    times = {}
    for r in range(1, a.rounds + 1):
        for prompt in a.prompts:
            for model in models:
                for v in variants:
                    module = os.path.join(a.modules, f"{model}.{v}.tbcm")
                    try:
                        t = gpu_bench.tbc_bench(a.tbc_run, module, prompt, a.decode, repeat=a.repeat,
                                                logits="last")
                    except RuntimeError as e:
                        print(f"  round {r} {model} {v} prompt {prompt}: FAILED: {e}", flush=True)
                        continue
                    for section, kernels in t["profile"].items():
                        for k in kernels:
                            if pick.search(k["name"]):
                                key = (model, prompt, section, k["name"])
                                times.setdefault(key, {}).setdefault(v, []).append(k["ms"])
                    # The unprofiled calls (decode steps as CUDA graphs).
                    for section in ("prefill", "decode"):
                        if t[f"{section}_ms"] is not None:
                            key = (model, prompt, section, "(wall)")
                            times.setdefault(key, {}).setdefault(v, []).append(t[f"{section}_ms"])
            print(f"  round {r}, prompt {prompt}: done", flush=True)
    rows = []
    for (model, prompt, section, kernel), by in sorted(times.items()):
        ref = statistics.median(by[variants[0]]) if variants[0] in by else None
        for v in variants:
            if v not in by:
                continue
            med = statistics.median(by[v])
            ratio = med / ref if ref else None
            rows.append([model, prompt, section, kernel, v, "/".join(f"{x:.4f}" for x in by[v]),
                         f"{med:.4f}", f"{ratio:.3f}" if ratio else ""])
            print(f"  {model:<11} {section:<7} {prompt:>6}  {kernel:<24} {v:<8} "
                  f"{' / '.join(f'{x:8.4f}' for x in by[v])} ms"
                  + (f"   x{ratio:.3f} of {variants[0]}" if ratio and v != variants[0] else ""))
    if a.out:
        with open(a.out, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["model", "prompt", "section", "kernel", "variant", "ms_per_round",
                        "median_ms", "ratio_to_first"])
            w.writerows(rows)
        print(f"wrote {a.out}")
    if not rows:
        sys.exit("gpu_ab run: no kernel matched --kernels, or every run failed")


def agree(a, variants, models):
    """Each variant's logits for the same prompt against the first variant's."""
    import numpy as np  # the GPU machine has it (PyTorch); the LLVM machine need not
    tokens = os.path.join(a.modules, "check-tokens.txt")
    with open(tokens, "w") as f:
        f.write(",".join(str((7 * i + 3) % gpu_bench.HEAD_VOCAB) for i in range(a.check)))
    for model in models:
        logits = {}
        for v in variants:
            module = os.path.join(a.modules, f"{model}.{v}.tbcm")
            out = os.path.join(a.modules, f"{model}.{v}.check.npy")
            try:
                r = subprocess.run([a.tbc_run, module, "--random-weights", "--tokens-file", tokens,
                                    "--output", out], capture_output=True, text=True,
                                   timeout=gpu_bench.RUN_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                print(f"  check {model} {v}: FAILED: no answer after {gpu_bench.RUN_TIMEOUT_S} s",
                      flush=True)
                continue
            if r.returncode != 0:
                print(f"  check {model} {v}: FAILED: {(r.stderr or r.stdout).strip()[-300:]}",
                      flush=True)
                continue
            logits[v] = np.load(out)
        ref = logits.get(variants[0])
        for v in variants[1:]:
            if ref is None or v not in logits:
                continue
            d = float(np.abs(logits[v] - ref).max() / max(float(np.abs(ref).max()), 1e-30))
            print(f"  check {model} {v}: {a.check} tokens, max|d|/max|ref| = {d:.3g} against "
                  f"{variants[0]} ({'ok' if d <= 2e-2 else 'DIFFERENT'}, within 2e-2)", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    pp = sub.add_parser("prepare", help="compile the one-layer models with each build (LLVM machine)")
    pp.add_argument("--variant", action="append", required=True, metavar="NAME=TBC [OPTIONS]",
                    help="a build to compare, and options for its `tbc compile` if any "
                         "(repeatable; the first is the reference)")
    pp.add_argument("--models", type=lambda s: s.split(","), default=gpu_bench.MODELS)
    pp.add_argument("--out", default="gpu-modules/ab")
    pp.add_argument("--target", default="cuda", help="cuda (default), or cpu for a smoke test")
    pp.add_argument("--tiny", action="store_true", help="1/16-wide models (smoke test)")
    pp.add_argument("--layers", type=int, default=1,
                    help="layers of each model (default 1; more for whole-step wall times)")
    pr = sub.add_parser("run", help="time the variants in interleaved rounds (GPU machine)")
    pr.add_argument("--tbc-run", required=True)
    pr.add_argument("--modules", default="gpu-modules/ab")
    pr.add_argument("--models", type=lambda s: s.split(","), help="default: all prepared")
    pr.add_argument("--rounds", type=int, default=2)
    pr.add_argument("--prompts", type=lambda s: [int(x) for x in s.split(",")], default=[2048, 8192])
    pr.add_argument("--decode", type=int, default=0, help="decode steps too (their profile as well)")
    pr.add_argument("--repeat", type=int, default=3)
    pr.add_argument("--kernels", default="attention|linear",
                    help="regex over kernel names (default: attention|linear)")
    pr.add_argument("--out", help="CSV of every time")
    pr.add_argument("--check", type=int, default=256,
                    help="tokens of the logits check before timing (0: none; default 256)")
    a = p.parse_args()
    prepare(a) if a.command == "prepare" else run(a)


if __name__ == "__main__":
    main()
