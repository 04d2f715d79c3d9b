#!/usr/bin/env python3
"""Compile time of every example model for CUDA, stage by stage.

Runs `tbc compile MODEL --target cuda --dtype D -o X.tbcm --mlir-timing` for
every example model (Hugging Face configs and native specs) in f32 and bf16
(the default architectures, sm_80 and sm_90) and in bf16 for sm_90a alone
(`--cuda-arch sm_90a`, H100/H200: the prefill GEMM on wgmma), several times
each, and prints the median wall time of the whole compile and
of each top-level stage (frontend, fuse, outline kernels, lower to gpu, lower
to nvvm, lower to ptx, output), next to the numbers recorded in
bench/compile_times.json by an earlier run (ratio = now / then; the host is
named, since only numbers from the same kind of host compare). Needs only a
tbc build: no GPU, no PyTorch.

  bench/compile_time.py [--tbc build/bin/tbc] [--runs 5] [--update]
"""
import argparse, json, os, platform, re, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASELINE = os.path.join(ROOT, "bench", "compile_times.json")
# A stage's line: its wall time, or with threads its user time and then its
# wall time ("0.1361 (  9.9%)    0.0598 (  5.1%)  lower to gpu").
STAGE = re.compile(r"^\s+(?:[\d.]+ \(\s*[\d.]+%\)\s+)?([\d.]+) \(\s*[\d.]+%\)  (\S.*)$")


def models():
    base = os.path.join(ROOT, "examples", "models")
    for name in sorted(os.listdir(base)):
        path = os.path.join(base, name)
        if os.path.isfile(os.path.join(path, "config.json")):
            yield name, path
    for spec in sorted(os.listdir(os.path.join(base, "specs"))):
        yield "specs/" + spec[:-5], os.path.join(base, "specs", spec)


def host():
    cpu = platform.processor() or platform.machine()
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores"


# (dtype, --cuda-arch or None for the default): the rows of a model.
CONFIGS = [("f32", None), ("bf16", None), ("bf16", "sm_90a")]


def compile_once(tbc, model, dtype, arch, out):
    t0 = time.perf_counter()
    r = subprocess.run([tbc, "compile", model, "--target", "cuda", "--dtype", dtype, "-o", out,
                        "--mlir-timing", "--mlir-timing-display=tree"] +
                       (["--cuda-arch", arch] if arch else []),
                       capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"compile_time: {model} ({dtype}{' ' + arch if arch else ''}) failed:\n{r.stderr}")
    stages = {}
    for line in r.stderr.splitlines():
        m = STAGE.match(line)
        if m and not m.group(2).startswith(" "):
            stages[m.group(2)] = stages.get(m.group(2), 0.0) + float(m.group(1))
    return wall, stages


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tbc", default=os.path.join(ROOT, "build", "bin", "tbc"))
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--update", action="store_true", help="record these numbers as the baseline")
    a = p.parse_args()
    old = json.load(open(BASELINE)) if os.path.exists(BASELINE) else {}
    now = {"host": host(), "runs": a.runs, "models": {}}
    print(f"tbc compile --target cuda, median of {a.runs} runs, on {now['host']}")
    if old:
        print(f"baseline: {old.get('date', '?')} on {old.get('host', '?')}")
    cols = ["frontend", "fuse", "lower to gpu", "lower to nvvm", "lower to ptx", "output"]
    print(f"{'model':44} {'dtype':11} {'total s':>8} {'vs base':>8}  " +
          "  ".join(f"{c:>13}" for c in cols))
    with tempfile.TemporaryDirectory() as d:
        for name, path in models():
            for dtype, arch in CONFIGS:
                walls, stages = [], {}
                for _ in range(a.runs):
                    wall, s = compile_once(a.tbc, path, dtype, arch, os.path.join(d, "m.tbcm"))
                    walls.append(wall)
                    for k, v in s.items():
                        stages.setdefault(k, []).append(v)
                label = f"{dtype} {arch}" if arch else dtype
                key = f"{name} {label}"
                entry = {"total": statistics.median(walls),
                         "stages": {k: statistics.median(v) for k, v in stages.items()}}
                now["models"][key] = entry
                before = old.get("models", {}).get(key, {}).get("total")
                ratio = f"{entry['total'] / before:8.2f}" if before else f"{'-':>8}"
                print(f"{name:44} {label:11} {entry['total']:8.3f} {ratio}  " +
                      "  ".join(f"{entry['stages'].get(c, 0.0):13.4f}" for c in cols))
    if a.update:
        now["date"] = time.strftime("%Y-%m-%d")
        json.dump(now, open(BASELINE, "w"), indent=1)
        print(f"recorded {BASELINE}")


if __name__ == "__main__":
    main()
