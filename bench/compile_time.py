#!/usr/bin/env python3
"""Compile time of every example model for CUDA or the CPU, stage by stage.

Runs `tbc compile MODEL --target T --dtype D -o X.tbcm --mlir-timing` for
every example model (Hugging Face configs and native specs), several times
each, and prints the median wall time of the whole compile and of each
top-level stage. For CUDA (the default): f32 and bf16 (the default
architectures, sm_80 and sm_90) and bf16 for sm_90a alone (`--cuda-arch
sm_90a`, H100/H200: the prefill GEMM on wgmma); stages frontend, fuse, lower
to gpu, lower to nvvm, lower to ptx, output. For `--target cpu`: f32 and
bf16 weights for this machine's CPU; stages frontend, fuse, lower to linalg,
lower to llvm, output (LLVM's optimiser and code generator, and the link).
Next to each: the numbers recorded in bench/compile_times.json by an earlier
run (ratio = now / then; the host is named, since only numbers from the same
kind of host compare), and with `--against OTHER_TBC` another build's time
of the same compile in the same run, the two alternating (ratio = this
build / that one: what says something about the code on a host whose speed
moves). Needs only a tbc build: no GPU, no PyTorch.

  bench/compile_time.py [--target cuda|cpu] [--tbc build/bin/tbc] [--runs 5]
                        [--against /tmp/tbc-base/bin/tbc] [--models NAME,...]
                        [--update]
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
    """The CPU's model name, family and model (KVM guests often show only a
    brand), widest vector extension and core count."""
    cpu = platform.processor() or platform.machine()
    info = {}
    try:
        for line in open("/proc/cpuinfo"):
            key, _, value = line.partition(":")
            key = key.strip()
            if key in ("model name", "cpu family", "model", "flags") and key not in info:
                info[key] = value.strip()
            if not line.strip():
                break
    except OSError:
        pass
    cpu = info.get("model name", cpu)
    if "cpu family" in info and "model" in info:
        cpu += f" (family {info['cpu family']} model {info['model']})"
    flags = info.get("flags", "").split()
    isa = "avx512f" if "avx512f" in flags else "avx2" if "avx2" in flags else ""
    return f"{cpu}, {isa + ', ' if isa else ''}{os.cpu_count()} cores"


# Per target: (dtype, --cuda-arch or None for the default), the rows of a
# model, and the stages shown.
CONFIGS = {"cuda": [("f32", None), ("bf16", None), ("bf16", "sm_90a")],
           "cpu": [("f32", None), ("bf16", None)]}
STAGES = {"cuda": ["frontend", "fuse", "lower to gpu", "lower to nvvm", "lower to ptx", "output"],
          "cpu": ["frontend", "fuse", "lower to linalg", "lower to llvm", "output"]}


def compile_once(tbc, target, model, dtype, arch, out):
    t0 = time.perf_counter()
    r = subprocess.run([tbc, "compile", model, "--target", target, "--dtype", dtype, "-o", out,
                        "--mlir-timing", "--mlir-timing-display=tree"] +
                       (["--cuda-arch", arch] if arch else []),
                       capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"compile_time: {tbc}: {model} ({target} {dtype}{' ' + arch if arch else ''}) "
                 f"failed:\n{r.stderr}")
    stages = {}
    for line in r.stderr.splitlines():
        m = STAGE.match(line)
        if m and not m.group(2).startswith(" "):
            stages[m.group(2)] = stages.get(m.group(2), 0.0) + float(m.group(1))
    return wall, stages


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tbc", default=os.path.join(ROOT, "build", "bin", "tbc"))
    p.add_argument("--target", choices=sorted(CONFIGS), default="cuda")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--against", metavar="OTHER_TBC",
                   help="another build's tbc, timed on the same compiles in the same run")
    p.add_argument("--models", metavar="NAME,...",
                   help="only the example models whose names contain one of these")
    p.add_argument("--update", action="store_true", help="record these numbers as the baseline")
    a = p.parse_args()
    old = json.load(open(BASELINE)) if os.path.exists(BASELINE) else {}
    # CUDA's rows keep their names from before the CPU had rows of its own.
    prefix = "" if a.target == "cuda" else a.target + " "
    this_host = host()
    now = dict(old)
    now.update({prefix + "host": this_host, prefix + "runs": a.runs,
                "models": dict(old.get("models", {}))})
    print(f"tbc compile --target {a.target}, median of {a.runs} runs, on {this_host}")
    # The baseline's date and host, per target (CUDA's under the plain keys).
    if prefix + "date" in old:
        print(f"baseline: {old.get(prefix + 'date', '?')} on {old.get(prefix + 'host', '?')}")
    if a.against:
        print(f"against: {a.against}, alternating with this build's runs")
    cols = STAGES[a.target]
    print(f"{'model':44} {'dtype':11} {'total s':>8} {'vs base':>8}" +
          (f" {'against s':>9} {'ratio':>6}" if a.against else "") + "  " +
          "  ".join(f"{c:>15}" for c in cols))
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "m.tbcm")
        wanted = a.models.split(",") if a.models else None
        for name, path in models():
            if wanted and not any(w in name for w in wanted):
                continue
            for dtype, arch in CONFIGS[a.target]:
                walls, others, stages = [], [], {}
                for _ in range(a.runs):
                    wall, s = compile_once(a.tbc, a.target, path, dtype, arch, out)
                    walls.append(wall)
                    for k, v in s.items():
                        stages.setdefault(k, []).append(v)
                    if a.against:
                        others.append(compile_once(a.against, a.target, path, dtype, arch, out)[0])
                label = f"{dtype} {arch}" if arch else dtype
                key = f"{name} {prefix}{label}"
                entry = {"total": statistics.median(walls),
                         "stages": {k: statistics.median(v) for k, v in stages.items()},
                         "host": this_host, "date": time.strftime("%Y-%m-%d")}
                now["models"][key] = entry
                before = old.get("models", {}).get(key, {}).get("total")
                ratio = f"{entry['total'] / before:8.2f}" if before else f"{'-':>8}"
                against = ""
                if a.against:
                    other = statistics.median(others)
                    against = f" {other:9.3f} {entry['total'] / other:6.2f}"
                print(f"{name:44} {label:11} {entry['total']:8.3f} {ratio}{against}  " +
                      "  ".join(f"{entry['stages'].get(c, 0.0):15.4f}" for c in cols), flush=True)
    if a.update:
        now[prefix + "date"] = time.strftime("%Y-%m-%d")
        json.dump(now, open(BASELINE, "w"), indent=1)
        print(f"recorded {BASELINE}")


if __name__ == "__main__":
    main()
