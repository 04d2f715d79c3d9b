#!/usr/bin/env python3
"""A/B of tbc's CPU kernel choices on this CPU, in interleaved rounds.

tbc picks per target CPU how many weight panels a decode projection reads
side by side and how far ahead it prefetches them (CpuBackend.cpp; measured
on Zen 3, 4 and 5, a Sapphire Rapids and an Emerald Rapids). On another CPU,
this times the choices against each other: the same random Llama-shaped model as
scripts/bench_cpu.py (hidden 1024, 2048 or 4096), one module per variant
(`tbc compile --cpu-decode-streams S --cpu-decode-prefetch B`), each in its
own warm process through the C API, then rounds in which every variant
decodes --steps tokens after a --prompt-token prompt (whose prefill is
timed too: with last-position logits its last layer's FFN and the LM head
run one row, on the decode tile), one after the other, with a bandwidth
probe (torch.sum) per round. The host's bandwidth moves from
minute to minute on a VM, so compare within a round: it prints each
variant's median tok/s, its rounds, and its median ratio to the first
variant round by round.

    ~/venv-ref/bin/python bench/cpu_decode_ab.py --hidden 1024 --dtype bf16 \\
        --variants default,4/0,1/4096,2/0 --peers eager --rounds 9

A variant is `default` (the CPU's own choice), STREAMS/PREFETCH (1, 2 or
4 panels; bytes ahead, 0 for none) or attention=rows|tiles (how a prompt
attends: `tbc compile --cpu-prompt-attention`; time it with a long --prompt):

    ~/venv-ref/bin/python bench/cpu_decode_ab.py --hidden 1024 --dtype f32 \\
        --variants default,attention=rows --prompt 512 --steps 16 --rounds 9

--peers adds engines of bench_cpu.py (eager, compile, llama.cpp),
--baseline-build DIR an earlier build's tbc.
Needs the venv of scripts/bench_cpu.py and a tbc build.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import bench_cpu  # noqa: E402  (the models, engines and probes of the CPU benchmark)


def variant_flags(variant):
    if variant == "default":
        return []
    if variant.startswith("attention="):
        return ["--cpu-prompt-attention", variant.split("=", 1)[1]]
    try:
        streams, prefetch = (int(x) for x in variant.split("/"))
    except ValueError:
        sys.exit(f"cpu_decode_ab: variant '{variant}' is not 'default', STREAMS/PREFETCH "
                 "or attention=rows|tiles")
    return ["--cpu-decode-streams", str(streams), "--cpu-decode-prefetch", str(prefetch)]


def compile_module(tbc, folder, dtype, flags, path):
    run = subprocess.run([tbc, "compile", folder, "--dtype", dtype, "-o", path] + flags,
                         stderr=subprocess.PIPE, text=True)
    if run.returncode != 0:
        sys.exit(f"cpu_decode_ab: {' '.join(flags) or 'default'}: {run.stderr.strip()}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hidden", type=int, choices=sorted(bench_cpu.SIZES), default=1024)
    p.add_argument("--dtype", choices=["f32", "bf16"], default="bf16")
    p.add_argument("--variants", default="default,1/0,2/0,4/0")
    p.add_argument("--peers", default="", help="engines of bench_cpu.py: eager, compile, llama.cpp")
    p.add_argument("--baseline-build", metavar="DIR", help="adds the earlier build's tbc (tbc-base)")
    p.add_argument("--cpu", default="host",
                   help="tbc compile --cpu of every module (e.g. znver3: AVX2 code on this host)")
    p.add_argument("--cpu-features", default="", help="tbc compile --cpu-features of every module")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--steps", type=int, default=64, help="decode steps a round")
    p.add_argument("--prompt", type=int, default=64, help="prompt tokens before them")
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--build", default=os.path.join(bench_cpu.ROOT, "build"))
    a = p.parse_args()
    variants = a.variants.split(",")
    flags = [variant_flags(v) for v in variants]  # refuses a malformed one before any work
    target = bench_cpu.target_flags(a.cpu, a.cpu_features)
    peers = [e for e in a.peers.split(",") if e]
    for e in peers:
        if e not in ("eager", "compile", "llama.cpp"):
            p.error(f"--peers: unknown engine '{e}'")
    os.environ.update(bench_cpu.HUGE_PAGES_ENV)
    import numpy as np

    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, "model")
        config = bench_cpu.make_model(a.hidden, a.dtype, folder)
        spec = dict(weights=folder, dtype=a.dtype, threads=a.threads, compile=False,
                    llama_path=None, huge_pages=True, gguf=os.path.join(tmp, "m.gguf"))
        if "llama.cpp" in peers:
            bench_cpu.write_gguf(folder, config, a.dtype, spec["gguf"])
        # Every module first: a variant the compiler refuses stops the run
        # before any engine process starts.
        tbc_engines = []  # (name, engine, module, build)
        for i, (v, f) in enumerate(zip(variants, flags)):
            path = os.path.join(tmp, f"{i}.tbcm")
            compile_module(os.path.join(a.build, "bin", "tbc"), folder, a.dtype, target + f, path)
            tbc_engines.append((v, "tbc", path, a.build))
        if a.baseline_build:
            path = os.path.join(tmp, "base.tbcm")
            compile_module(os.path.join(a.baseline_build, "bin", "tbc"), folder, a.dtype, target, path)
            tbc_engines.append(("tbc-base", "tbc-base", path, a.baseline_build))
        procs = [(name, bench_cpu.Process(engine, dict(
                     spec, module=path, libtbc=os.path.join(build, "lib", "libtbc.so"))))
                 for name, engine, path, build in tbc_engines]
        for e in peers:
            procs.append((e, bench_cpu.Process(e, dict(spec, compile=e == "compile"))))
        procs = [(name, proc) for name, proc in procs if proc.ok]

        print(f"hidden {a.hidden}, {a.dtype} weights, tbc {' '.join(target)}, "
              f"{a.steps} decode steps a round, "
              f"{a.rounds} rounds after a warm-up, {a.threads} threads", flush=True)
        by_prompt, speeds, probes, _ = bench_cpu.timed_rounds(
            procs, a.rounds, [a.prompt], lambda P: a.steps, np.random.default_rng(0),
            bench_cpu.BandwidthProbe(a.threads), 0.2)
        prefills = {name: by_prompt[(name, a.prompt)] for name, _ in procs}
        for _, proc in procs:
            proc.close()

    first = variants[0]
    print(f"bandwidth probes {min(probes):.1f}-{max(probes):.1f} GB/s, median "
          f"{statistics.median(probes):.1f}")
    for what, table in ((f"decode {a.steps}", speeds), (f"prefill {a.prompt}", prefills)):
        print(f" {what}:")
        for name, v in table.items():
            if not v:
                print(f"  {name:14s} failed")
                continue
            ratio = statistics.median(x / y for x, y in zip(v, table[first]))
            print(f"  {name:14s} {statistics.median(v):8.1f} tok/s  x{ratio:.3f} {first} round by round"
                  f"  [{' '.join(f'{x:.1f}' for x in v)}]")


if __name__ == "__main__":
    main()
