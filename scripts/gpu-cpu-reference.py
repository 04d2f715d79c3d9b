#!/usr/bin/env python3
"""The benchmark's 8B-shaped layers on the GPU against the CPU path.

The fixtures' conformance checks (scripts/gpu-check.sh) run models whose hidden
size is 64 to 192; the kernels' long-K paths (the decode GEMV's 8 loads in
flight, the tiled GEMM's k walk) run only in the benchmark, which times them
and checks nothing. This script closes that gap without a GPU on the LLVM
machine side: with the same deterministic random weights (`--random-weights`,
identical for every target), it runs each benchmark layer (gpu_bench.py
prepare's folders) through a CPU module with bf16 weights and keeps the
logits as the reference; on the GPU machine, the CUDA modules must give the
same logits.

  make   (LLVM machine, scripts/gpu-prepare.sh): compile each layer for the
         CPU with bf16 weights and for CUDA with f32 KV caches, run the CPU
         module on prompts of 1, 9, 24 and 80 tokens, write REF/*.npy and
         REF/cases.json;
  check  (GPU machine, scripts/gpu-check.sh): run one case's CUDA module and
         compare, one line of output, exit status 1 past the tolerance.

Prompts of 1 and 9 tokens run the FMA kernels (the GEMV, 8 rows a warp),
which keep activations in f32: with f32 KV caches they must match the CPU
within 1e-4. 24 and 80 tokens run the tensor-core projections (per-warp and
block-tiled) and flash attention, which round activations to bf16 (as a bf16
model's kernels do): within 2e-2, the bound gpu-check.sh sets for bf16.
Usage:
  gpu-cpu-reference.py make --tbc BIN --tbc-run BIN --bench DIR --out REF
  gpu-cpu-reference.py check --tbc-run BIN --modules DIR --ref REF --case N
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

# (prompt tokens, which module, tolerance)
CASES = ((1, "f32cache", 1e-4), (9, "f32cache", 1e-4), (24, "default", 2e-2), (80, "default", 2e-2))
KERNELS = {1: "GEMV", 9: "8 rows a warp", 24: "tensor cores, a warp a tile", 80: "block-tiled tensor cores"}


def tokens(count, vocab):
    """A fixed prompt: distinct ids spread over the vocabulary."""
    return [(i * 7919 + 13) % vocab for i in range(count)]


def run(cmd):
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {done.returncode}: "
                           f"{(done.stderr or done.stdout).strip()[-400:]}")
    return done.stdout


def logits(tbc_run, module, ids, path):
    run([tbc_run, module, "--random-weights", "--tokens", ",".join(map(str, ids)),
         "--output", path])


def make(a):
    os.makedirs(a.out, exist_ok=True)
    cases = []
    models = sorted(d for d in os.listdir(a.bench)
                    if os.path.isfile(os.path.join(a.bench, d, "config.json")) and not d.endswith("-full"))
    if not models:
        sys.exit(f"gpu-cpu-reference: no model folders in {a.bench}")
    with tempfile.TemporaryDirectory() as tmp:
        for m in models:
            folder = os.path.join(a.bench, m)
            vocab = json.load(open(os.path.join(folder, "config.json")))["vocab_size"]
            cpu = os.path.join(tmp, f"{m}.cpu.tbcm")
            run([a.tbc, "compile", folder, "--target", "cpu", "--dtype", "bf16", "-o", cpu])
            # The CUDA module of the "default" cases is the benchmark's own.
            run([a.tbc, "compile", folder, "--target", "cuda", "--cuda-kv-cache", "f32",
                 "-o", os.path.join(a.bench, f"{m}.f32cache.tbcm")])
            for count, kind, tol in CASES:
                ref = f"{m}.{count}.npy"
                ids = tokens(count, vocab)
                logits(a.tbc_run, cpu, ids, os.path.join(a.out, ref))
                module = f"{m}.f32cache.tbcm" if kind == "f32cache" else f"{m}.tbcm"
                cases.append({"model": m, "tokens": ids, "module": module, "reference": ref,
                              "tolerance": tol, "kernels": KERNELS[count]})
                print(f"  {m}: {count} tokens ({KERNELS[count]}) -> {ref}", flush=True)
    json.dump(cases, open(os.path.join(a.out, "cases.json"), "w"), indent=1)


def check(a):
    import numpy as np
    case = json.load(open(os.path.join(a.ref, "cases.json")))[a.case]
    label = f"{len(case['tokens'])} tokens, {case['kernels']}"
    with tempfile.TemporaryDirectory() as tmp:
        got_path = os.path.join(tmp, "logits.npy")
        try:
            logits(a.tbc_run, os.path.join(a.modules, case["module"]), case["tokens"], got_path)
        except RuntimeError as e:
            print(f"{label}: FAIL: {e}")
            return 1
        got = np.load(got_path)
    ref = np.load(os.path.join(a.ref, case["reference"]))
    if got.shape != ref.shape:
        print(f"{label}: FAIL: logits {got.shape}, CPU {ref.shape}")
        return 1
    err = float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))
    ok = np.isfinite(got).all() and err <= case["tolerance"]
    print(f"{label}: max|d|/max|ref| = {err:.3g} against the CPU path "
          f"({'ok' if ok else 'FAIL'}, within {case['tolerance']:g})")
    return 0 if ok else 1


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    pm = sub.add_parser("make", help="CPU references and the f32-cache CUDA modules (LLVM machine)")
    pm.add_argument("--tbc", required=True)
    pm.add_argument("--tbc-run", required=True)
    pm.add_argument("--bench", required=True, help="gpu_bench.py prepare's output (its modules and folders)")
    pm.add_argument("--out", required=True)
    pc = sub.add_parser("check", help="one case on the GPU machine")
    pc.add_argument("--tbc-run", required=True)
    pc.add_argument("--modules", required=True, help="the unpacked bench modules")
    pc.add_argument("--ref", required=True)
    pc.add_argument("--case", type=int, required=True, help="index into REF/cases.json")
    a = p.parse_args()
    try:
        sys.exit(make(a) if a.cmd == "make" else check(a))
    except RuntimeError as e:
        sys.exit(f"gpu-cpu-reference: {e}")


if __name__ == "__main__":
    main()
