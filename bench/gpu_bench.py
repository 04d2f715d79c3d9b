#!/usr/bin/env python3
"""tbc on the GPU against PyTorch eager, torch.compile and the roofline, in one run.

Two steps, on two machines:

  prepare (an LLVM machine with a tbc build): writes the benchmark's configs
  and compiles its modules (bf16 weights, --target cuda) into OUT
  (scripts/gpu-prepare.sh runs it and packs OUT with the other modules):
    bench/gpu_bench.py prepare --tbc build/bin/tbc --out DIR/bench

  run (the GPU machine: CUDA, PyTorch, transformers; no LLVM, no network;
  scripts/gpu-check.sh runs it on the modules it unpacked):
    bench/gpu_bench.py run --tbc-run build-gpu/bin/tbc-run --modules build-gpu/modules/bench

For Llama-3-8B, Gemma-2-9B and Qwen3-8B layer shapes (one layer, a
4096-word vocabulary so that the head stays out of the way), bf16 weights,
random values, `run` times: the norm+QKV projection and the norm+gated MLP at
decode shape (1 row) and prefill shape (4096 rows), attention prefill at 512,
2048 and 8192 tokens, attention decode over a 4096-position cache, one layer's
prefill of 512 tokens and its decode step; and for the whole 8B-shaped Llama
(32 layers, its real vocabulary) a 512-token prefill and a batch-1 decode step.
tbc's numbers are its kernels' own times (`tbc-run bench --profile`: CUDA events
around each kernel; the kernels are picked by the checkpoint tensors they
read) and, for whole layers and models, wall time from tokens to logits.
PyTorch runs the same shapes through the transformers modules (eager, and
torch.compile of the same callable), on the same GPU, in the same run. The two
ceilings are measured on the spot: device-to-device copy bandwidth and a large
bf16 matmul; each case's roofline floor is max(bytes / bandwidth, FLOPs /
matmul rate), and "% roofline" is that floor over tbc's time. Each case also
names the peer the issue's targets are set against ("target peer"): the plain
bf16 matmul of the same shape for projections, the best SDPA backend for
attention, the copy roofline for decode. On an sm_90 GPU (H100/H200) the
prefill-shape projections are timed once more from a module compiled for
sm_90a alone (rows "(sm_90a wgmma)": the GEMM on wgmma).

Prints a table, writes OUT/gpu-bench.csv and (with matplotlib) OUT/gpu-bench.png.
"""
import argparse, csv, json, math, os, re, shutil, statistics, subprocess, sys, time

MODELS = ["llama-3-8b", "gemma-2-9b", "qwen3-8b"]
FULL = "llama-3-8b"
HEAD_VOCAB = 4096  # the one-layer modules' vocabulary: the head is not what is measured


# ---------------------------------------------------------------- prepare

def shapes(tiny):
    """Sequence lengths of the cases (tiny: a CPU smoke test of this script)."""
    if tiny:
        return dict(layer_prompt=32, prefill_rows=64, attn=[32, 64, 128], decode_kv=64, decode=4)
    return dict(layer_prompt=512, prefill_rows=4096, attn=[512, 2048, 8192], decode_kv=4096,
                decode=16)


def shrink(config, tiny):
    """A config cut to what the benchmark needs (tiny: 1/16 of the widths)."""
    c = dict(config)
    if tiny:
        for key in ("hidden_size", "intermediate_size"):
            c[key] = max(64, c[key] // 16)
        c["num_attention_heads"] = max(2, c["num_attention_heads"] // 8)
        c["num_key_value_heads"] = max(1, c["num_key_value_heads"] // 8)
        c["head_dim"] = max(16, c.get("head_dim") or config["hidden_size"] //
                            config["num_attention_heads"]) // 4
        c["max_position_embeddings"] = 4096
    return c


def prepare(a):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.makedirs(a.out, exist_ok=True)
    jobs = [(m, f"{m}", 1, HEAD_VOCAB) for m in MODELS] + [(FULL, f"{FULL}-full", None, None)]
    for model, name, layers, vocab in jobs:
        config = json.load(open(os.path.join(root, "examples", "models", model, "config.json")))
        c = shrink(config, a.tiny)
        if layers:
            c["num_hidden_layers"] = layers
        elif a.tiny:
            c["num_hidden_layers"] = 2
        if vocab:
            c["vocab_size"] = vocab
        elif a.tiny:
            c["vocab_size"] = 1024
        folder = os.path.join(a.out, name)
        os.makedirs(folder, exist_ok=True)
        json.dump(c, open(os.path.join(folder, "config.json"), "w"), indent=1)
        variants = [("", [], a.tbc)]
        if layers and a.target == "cuda":  # the flash kernel's A/B: split-KV attention
            variants.append((".splitkv", ["--cuda-attention", "split-kv"], a.tbc))
            # The prefill GEMM on wgmma: a module for H100/H200 (sm_90) alone.
            variants.append((".sm90a", ["--cuda-arch", "sm_90a"], a.tbc))
        if layers and a.baseline_tbc:  # the kernels' A/B: an earlier build's modules
            variants.append((".base", [], a.baseline_tbc))
        for suffix, flags, tbc in variants:
            module = os.path.join(a.out, f"{name}{suffix}.tbcm")
            cmd = [tbc, "compile", folder, "--target", a.target, "--dtype", "bf16", *flags,
                   "-o", module]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"gpu_bench prepare: {' '.join(cmd)} failed:\n{r.stderr}")
            print(f"  {module} ({os.path.getsize(module) >> 10} KiB)")
    json.dump({"target": a.target, "tiny": a.tiny}, open(os.path.join(a.out, "bench.json"), "w"))


# ---------------------------------------------------------------- tbc side

PROFILE_LOG = None  # run: OUT/tbc-profiles.txt, tbc-run's whole output
RUN_TIMEOUT_S = 120  # one tbc-run of a one-layer model takes seconds (the 32-layer model: 300)


def tbc_bench(tbc_run, module, prompt, decode, repeat=3, logits="all", profile=True, env=None,
              timeout=RUN_TIMEOUT_S):
    """`tbc-run bench --profile`: wall times (from the unprofiled runs) and per-kernel times
    (ms per forward call); `env`: extra environment variables (TBC_CUDA_GRAPHS=0)."""
    cmd = [tbc_run, "bench", module, "--random-weights", "--prompt", str(prompt),
           "--decode", str(decode), "--repeat", str(repeat), "--logits", logits]
    if profile:
        cmd.append("--profile")
    # A kernel that hangs the GPU costs its run, not the device call's
    # remaining minutes: the killed process's context goes with it.
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})},
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{' '.join(cmd)}: no answer after {timeout} s (killed)")
    if PROFILE_LOG:  # every kernel's time, for reading after the run
        with open(PROFILE_LOG, "a") as log:
            log.write(f"$ {' '.join(os.path.basename(c) for c in cmd)}\n{r.stdout}{r.stderr}\n")
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip() or r.stdout.strip()}")
    out = {"prefill_ms": None, "decode_ms": None, "profile": {}}
    m = re.search(r"prefill\s+(\d+) tokens\s+([\d.]+) ms", r.stdout)
    out["prefill_ms"] = float(m.group(2))
    if (m := re.search(r"decode\s+\d+ tokens\s+([\d.]+) ms/token", r.stdout)):
        out["decode_ms"] = float(m.group(1))
    section = None
    for line in r.stdout.splitlines():
        if (m := re.match(r"\s+(prefill|decode) profile", line)):
            section = out["profile"].setdefault(m.group(1), [])
            continue
        m = re.match(r"\s+(\S+)\s+[\d.]+%\s+([\d.]+) ms\s+(?:[\d.]+ GFLOP/s\s+)?(\d+) calls per forward call"
                     r"(?:\s+reads (.*))?$",
                     line)
        if m and section is not None:
            section.append(dict(name=m.group(1), ms=float(m.group(2)),
                                reads=(m.group(4) or "").split()))
    if profile and not out["profile"].get("prefill"):
        raise RuntimeError(f"{' '.join(cmd)}: no kernel profile in its output")
    return out


def kernels_ms(profile, pick):
    return sum(k["ms"] for k in profile if pick(k))


def reads_any(*names):
    return lambda k: any(r in names or r.startswith(names) for r in k["reads"])


def is_attention(k):
    return "attention" in k["name"]


# ---------------------------------------------------------------- torch side

class Timer:
    def __init__(self, torch, device):
        self.torch, self.device = torch, device

    def __call__(self, fn, reps=20, warmup=3):
        """Median ms of fn() (CUDA events on a GPU)."""
        torch = self.torch
        for _ in range(warmup):
            fn()
        times = []
        for _ in range(reps):
            if self.device == "cuda":
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record()
                fn()
                e.record()
                e.synchronize()
                times.append(s.elapsed_time(e))
            else:
                t0 = time.perf_counter()
                fn()
                times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times)


def try_ms(what, f, notes):
    """f()'s ms, or None with a note (a peer that fails costs one cell, not the run)."""
    try:
        return f()
    except Exception as e:  # noqa: BLE001 -- any peer failure is reported, not fatal
        notes.append(f"{what}: {type(e).__name__}: {str(e).splitlines()[0][:160]}")
        return None


def ceilings(torch, device, timer):
    n = (1 << 30) // 2 if device == "cuda" else (1 << 24)
    src = torch.empty(n, dtype=torch.bfloat16, device=device).uniform_()
    dst = torch.empty_like(src)
    ms = timer(lambda: dst.copy_(src), reps=10)
    bandwidth = 2 * src.numel() * 2 / (ms * 1e-3)  # read + write
    s = 8192 if device == "cuda" else 512
    x = torch.randn(s, s, dtype=torch.bfloat16, device=device)
    y = torch.randn(s, s, dtype=torch.bfloat16, device=device)
    ms = timer(lambda: x @ y, reps=10)
    flops = 2 * s ** 3 / (ms * 1e-3)
    del src, dst, x, y
    return bandwidth, flops


def build_model(torch, folder, device, attn):
    from transformers import AutoConfig, AutoModelForCausalLM
    config = AutoConfig.from_pretrained(folder)
    config._attn_implementation = attn
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16).eval()
    return config, model


def attention_fn(torch, config, layer, hq, hkv, d):
    """The attention each model computes (q, k, v already projected and rotated): SDPA, or
    for Gemma 2 (logit soft-cap, a sliding window on layer 0) the explicit form transformers'
    eager path runs, since SDPA has no soft-cap."""
    F = torch.nn.functional
    scale = (config.query_pre_attn_scalar ** -0.5 if getattr(config, "query_pre_attn_scalar", None)
             else d ** -0.5)
    cap = getattr(config, "attn_logit_softcapping", None)
    window = getattr(config, "sliding_window", None)
    sliding = window and getattr(config, "layer_types", ["sliding_attention"])[0] == "sliding_attention"
    if not cap:
        def sdpa(q, k, v):
            return F.scaled_dot_product_attention(q, k, v, is_causal=q.shape[2] > 1, scale=scale,
                                                  enable_gqa=hq != hkv)
        return sdpa, False

    def capped(q, k, v):
        k = k.repeat_interleave(hq // hkv, dim=1)
        v = v.repeat_interleave(hq // hkv, dim=1)
        s = (q @ k.transpose(-1, -2)) * scale
        s = torch.tanh(s / cap) * cap
        tq, tk = q.shape[2], k.shape[2]
        i = torch.arange(tk - tq, tk, device=q.device)[:, None]
        j = torch.arange(tk, device=q.device)[None, :]
        mask = j <= i
        if sliding:
            mask &= j > i - window
        s = s.masked_fill(~mask, float("-inf"))
        return torch.softmax(s.float(), dim=-1).to(q.dtype) @ v
    return capped, True


def best_sdpa(torch, timer, q, k, v, scale, hq, hkv, notes):
    """The fastest of the SDPA backends this PyTorch has on this GPU (no soft-cap)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    F = torch.nn.functional
    best, name = None, None
    for backend in ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION", "MATH"):
        if not hasattr(SDPBackend, backend):
            continue
        def f(backend=backend):
            with sdpa_kernel(getattr(SDPBackend, backend)):
                return F.scaled_dot_product_attention(q, k, v, is_causal=q.shape[2] > 1,
                                                      scale=scale, enable_gqa=hq != hkv)
        try:
            ms = timer(f, reps=10)
        except Exception:  # noqa: BLE001 -- a backend that refuses this shape
            continue
        if best is None or ms < best:
            best, name = ms, backend.lower()
    if best is None:
        notes.append("no SDPA backend ran")
    return best, name


# ---------------------------------------------------------------- the run

def run(a):
    import torch
    meta = json.load(open(os.path.join(a.modules, "bench.json")))
    sh = shapes(meta["tiny"])
    device = "cuda" if torch.cuda.is_available() and not a.cpu else "cpu"
    timer = Timer(torch, device)
    gpu = torch.cuda.get_device_name() if device == "cuda" else "CPU (smoke test)"
    # sm_90a modules run on sm_90 GPUs alone (H100/H200).
    sm90 = device == "cuda" and torch.cuda.get_device_capability() == (9, 0)
    global PROFILE_LOG
    os.makedirs(a.out, exist_ok=True)
    PROFILE_LOG = os.path.join(a.out, "tbc-profiles.txt")
    open(PROFILE_LOG, "w").close()
    started = time.time()
    compile_on = not a.no_compile
    notes, rows = [], []

    def compiled(fn):
        # Past the budget, no more compiling (minutes for whole models): eager still runs.
        return torch.compile(fn, dynamic=False) if compile_on and not over_budget() else None

    def over_budget():
        return time.time() - started > a.budget_s

    bandwidth, flops_rate = ceilings(torch, device, timer)
    print(f"gpu_bench on {gpu}, {time.strftime('%Y-%m-%d')}; torch {torch.__version__}; "
          f"copy bandwidth {bandwidth / 1e9:.0f} GB/s, bf16 matmul {flops_rate / 1e12:.0f} TFLOP/s "
          f"(measured now)", flush=True)

    def floor_ms(bytes_, flops):
        return max(bytes_ / bandwidth, flops / flops_rate) * 1e3

    def add(model, case, tbc, eager, comp, peer, peer_name, floor):
        rows.append(dict(model=model, case=case, tbc_ms=tbc, eager_ms=eager, compile_ms=comp,
                         peer_ms=peer, peer=peer_name, floor_ms=floor))
        # Rewritten after every case: a run cut off by its time limit keeps what it measured.
        write_csv(a, rows, gpu)
        r = rows[-1]
        fmt = lambda v: f"{v:9.3f}" if v else "      n/a"
        ratio = lambda p: f"{p / tbc:6.2f}x" if p and tbc else "    n/a"
        print(f"  {model:11s} {case:38s} tbc {fmt(tbc)} ms  eager {fmt(eager)} ({ratio(eager)})  "
              f"compile {fmt(comp)} ({ratio(comp)})  {peer_name or '':>14s} {fmt(peer)} "
              f"({ratio(peer)})  roofline {100 * floor / tbc if tbc else 0:5.1f}%", flush=True)
        return r

    for model in a.models:
        if over_budget():
            notes.append(f"{model}: skipped, past the --budget-s of {a.budget_s} s")
            continue
        folder = os.path.join(a.modules, model)
        module = os.path.join(a.modules, f"{model}.tbcm")
        # tbc: four runs of the one-layer module give every per-kernel case.
        s512, s_rows = sh["layer_prompt"], sh["prefill_rows"]
        try:
            # The layer's wall times compare with transformers' on every
            # row's logits: with the last row's only, tbc computes a lone
            # layer's MLP for that row alone (nothing else reads the rest),
            # which transformers does not, and the case would compare an
            # attention block with a whole layer.
            at_layer = tbc_bench(a.tbc_run, module, s512, sh["decode"], logits="all")
            at_rows = tbc_bench(a.tbc_run, module, s_rows, sh["decode"])
            at_attn = {s: tbc_bench(a.tbc_run, module, s, 0, logits="last") for s in sh["attn"]
                       if s not in (s512, s_rows)}
            at_attn[s512], at_attn[s_rows] = at_layer, at_rows
            # The same prefills with split-KV attention (prepared for CUDA
            # only): what the flash kernel gains, in the same run.
            split = os.path.join(a.modules, f"{model}.splitkv.tbcm")
            at_split = ({s: tbc_bench(a.tbc_run, split, s, 0, logits="last") for s in sh["attn"]}
                        if os.path.exists(split) else {})
            # An earlier build's module (prepare --baseline-tbc), its
            # prefill-shape projections timed in the same run: the A/B of
            # a kernel change, rows "... (baseline build)".
            base = os.path.join(a.modules, f"{model}.base.tbcm")
            at_base = tbc_bench(a.tbc_run, base, s_rows, 0) if os.path.exists(base) else None
            # The module for sm_90a alone (wgmma prefill projections), where
            # the GPU is an sm_90 one: rows "... (sm_90a wgmma)".
            wg = os.path.join(a.modules, f"{model}.sm90a.tbcm")
            at_wg = (tbc_bench(a.tbc_run, wg, s_rows, 0)
                     if os.path.exists(wg) and sm90 else None)
            at_base_attn = ({s: tbc_bench(a.tbc_run, base, s, 0, logits="last") for s in sh["attn"]}
                            if at_base else {})
        except RuntimeError as e:
            notes.append(f"{model}: tbc failed: {e}")
            continue
        config, hf = build_model(torch, folder, device, "eager" if model.startswith("gemma") else "sdpa")
        layer = hf.model.layers[0]
        H, I = config.hidden_size, config.intermediate_size
        hq, hkv = config.num_attention_heads, config.num_key_value_heads
        d = getattr(config, "head_dim", None) or H // hq
        qkv_n = (hq + 2 * hkv) * d
        mlp_norm = getattr(layer, "pre_feedforward_layernorm", None) or layer.post_attention_layernorm
        mlp_norm_name = ("pre_feedforward_layernorm" if hasattr(layer, "pre_feedforward_layernorm")
                         else "post_attention_layernorm")
        attn = layer.self_attn

        def qkv(x):
            n = layer.input_layernorm(x)
            return attn.q_proj(n), attn.k_proj(n), attn.v_proj(n)

        def mlp(x):
            return layer.mlp(mlp_norm(x))

        pick_qkv = reads_any("input_layernorm", "self_attn.q_proj", "self_attn.k_proj",
                             "self_attn.v_proj")
        pick_mlp = reads_any(mlp_norm_name, "mlp.")
        with torch.no_grad():
            # Projections, decode shape (1 row) and prefill shape.
            for rows_, prof in ((1, at_layer["profile"].get("decode")),
                                (s_rows, at_rows["profile"]["prefill"])):
                if not prof:
                    continue
                x = torch.randn(1, rows_, H, dtype=torch.bfloat16, device=device)
                for case, fn, pick, n_out, k_in, w in (
                        ("norm+qkv", qkv, pick_qkv, qkv_n, H, H * qkv_n),
                        ("norm+gated mlp", mlp, pick_mlp, I, H, 3 * H * I)):
                    tbc = kernels_ms(prof, pick)
                    eager = try_ms("eager", lambda: timer(lambda: fn(x)), notes)
                    cf = compiled(fn)
                    comp = try_ms(f"compile {case}", lambda: timer(lambda: cf(x)), notes) if cf else None
                    # The plain bf16 matmul of the same shape: [rows, H] x [H, all outputs].
                    wt = torch.randn(w // H, H, dtype=torch.bfloat16, device=device)
                    xm = x.view(rows_, H)
                    plain = timer(lambda: xm @ wt.t())
                    floor = floor_ms(2 * w + 2 * rows_ * (H + w // H), 2 * rows_ * w)
                    add(model, f"{case} M={rows_}", tbc, eager, comp, plain, "plain matmul", floor)
                    if at_base and rows_ == s_rows:
                        add(model, f"{case} M={rows_} (baseline build)",
                            kernels_ms(at_base["profile"]["prefill"], pick), eager, comp, plain,
                            "plain matmul", floor)
                    if at_wg and rows_ == s_rows:
                        add(model, f"{case} M={rows_} (sm_90a wgmma)",
                            kernels_ms(at_wg["profile"]["prefill"], pick), eager, comp, plain,
                            "plain matmul", floor)
                    del wt
            # Attention prefill at each length, decode over a long cache.
            fn_attn, capped = attention_fn(torch, config, layer, hq, hkv, d)
            cf_attn = compiled(fn_attn)
            scale = d ** -0.5
            for s in sh["attn"]:
                prof = at_attn[s]["profile"]["prefill"]
                q = torch.randn(1, hq, s, d, dtype=torch.bfloat16, device=device)
                k = torch.randn(1, hkv, s, d, dtype=torch.bfloat16, device=device)
                v = torch.randn_like(k)
                eager = try_ms("eager attention", lambda: timer(lambda: fn_attn(q, k, v), reps=5), notes)
                comp = (try_ms(f"compile attention {s}", lambda: timer(lambda: cf_attn(q, k, v), reps=5),
                               notes) if cf_attn else None)
                best, name = best_sdpa(torch, timer, q, k, v, scale, hq, hkv, notes)
                flops = 4 * hq * d * s * s / 2  # causal: half the score matrix
                floor = floor_ms(2 * 2 * s * d * (2 * hq + 2 * hkv), flops)
                peer_name = f"sdpa {name}{' no cap' if capped else ''}"
                add(model, f"attention prefill {s}", kernels_ms(prof, is_attention), eager, comp,
                    best, peer_name, floor)
                if s in at_base_attn:
                    add(model, f"attention prefill {s} (baseline build)",
                        kernels_ms(at_base_attn[s]["profile"]["prefill"], is_attention), eager, comp,
                        best, peer_name, floor)
                if s in at_split:
                    add(model, f"attention prefill {s} split-KV",
                        kernels_ms(at_split[s]["profile"]["prefill"], is_attention), eager, comp,
                        best, peer_name, floor)
                del q, k, v
            kv = sh["decode_kv"]
            prof = at_rows["profile"].get("decode") if kv == s_rows else None
            if prof:
                q = torch.randn(1, hq, 1, d, dtype=torch.bfloat16, device=device)
                k = torch.randn(1, hkv, kv, d, dtype=torch.bfloat16, device=device)
                v = torch.randn_like(k)
                eager = try_ms("eager decode attention", lambda: timer(lambda: fn_attn(q, k, v)), notes)
                comp = (try_ms("compile decode attention", lambda: timer(lambda: cf_attn(q, k, v)),
                               notes) if cf_attn else None)
                best, name = best_sdpa(torch, timer, q, k, v, scale, hq, hkv, notes)
                add(model, f"attention decode kv={kv}", kernels_ms(prof, is_attention), eager, comp,
                    best, f"sdpa {name}", floor_ms(2 * 2 * kv * hkv * d, 4 * hq * d * kv))
            # One layer (with the embedding and a 4096-word head), tokens to logits.
            layer_bytes = 2 * (H * qkv_n + hq * d * H + 3 * H * I)
            e_pre, e_dec = model_times(torch, hf, config, device, s512, sh["decode"], timer, None, notes,
                                       keep=0)
            c_pre, c_dec = (model_times(torch, hf, config, device, s512, sh["decode"], timer, torch, notes,
                                        keep=0)
                            if compile_on and not over_budget() else (None, None))
            add(model, f"layer prefill {s512}", at_layer["prefill_ms"], e_pre, c_pre, None, "",
                floor_ms(layer_bytes, 2 * s512 * layer_bytes / 2))
            add(model, f"layer decode kv={s512}", at_layer["decode_ms"], e_dec, c_dec, None, "",
                floor_ms(layer_bytes, 2 * layer_bytes / 2))
        del hf, layer, attn
        if device == "cuda":
            torch.cuda.empty_cache()

    if not a.no_full and not over_budget():
        full_model(a, torch, device, timer, sh, compile_on and time.time() - started < a.budget_s / 2,
                   add, floor_ms, bandwidth, notes)
    elif not a.no_full:
        notes.append(f"{FULL} (32 layers): skipped, past the --budget-s of {a.budget_s} s")

    if compile_on and over_budget():
        notes.append(f"torch.compile left out of the cases after the --budget-s of {a.budget_s} s "
                     "(and of the 32-layer model past half of it)")
    write_outputs(a, rows, notes, gpu)


def model_times(torch, hf, config, device, prompt, decode, timer, compiler, notes, keep=1):
    """transformers' own prefill (the last `keep` rows' logits, 0: all) and greedy decode
    step, ms. Eager runs with the default dynamic cache; with `compiler`, torch.compile of
    the model's forward runs with a StaticCache (what transformers recommends with
    torch.compile: the decode step keeps one shape and compiles once)."""
    what = "compile" if compiler else "eager"
    forward = compiler.compile(hf.forward) if compiler else hf.forward
    ids = torch.randint(0, config.vocab_size, (1, prompt), device=device)

    def new_cache():
        if not compiler:
            return None
        from transformers import StaticCache
        return StaticCache(config=config, max_cache_len=prompt + decode + 1)

    def prefill(cache=None):
        return forward(input_ids=ids, past_key_values=cache, use_cache=True, logits_to_keep=keep,
                       cache_position=torch.arange(prompt, device=device))

    def decode_steps():
        cache = new_cache()
        out = prefill(cache)
        past, tok = out.past_key_values, out.logits[:, -1:].argmax(-1)
        for i in range(decode):
            out = forward(input_ids=tok, past_key_values=past, use_cache=True,
                          cache_position=torch.tensor([prompt + i], device=device))
            past, tok = out.past_key_values, out.logits[:, -1:].argmax(-1)

    with torch.no_grad():
        pre = try_ms(f"{what} prefill", lambda: timer(lambda: prefill(new_cache()), reps=5, warmup=2),
                     notes)
        steps = try_ms(f"{what} decode", lambda: timer(decode_steps, reps=3, warmup=1), notes)
    dec = (steps - pre) / decode if pre is not None and steps is not None else None
    return pre, dec


def full_model(a, torch, device, timer, sh, compile_on, add, floor_ms, bandwidth, notes):
    name = f"{FULL}-full"
    folder, module = os.path.join(a.modules, name), os.path.join(a.modules, f"{name}.tbcm")
    prompt, decode = sh["layer_prompt"], sh["decode"]
    try:
        t = tbc_bench(a.tbc_run, module, prompt, decode, repeat=2, logits="last", timeout=300)
    except RuntimeError as e:
        notes.append(f"{name}: tbc failed: {e}")
        return
    config, hf = build_model(torch, folder, device, "sdpa")
    params = sum(p.numel() for n, p in hf.named_parameters() if "embed_tokens" not in n)
    with torch.no_grad():
        e_pre, e_dec = model_times(torch, hf, config, device, prompt, decode, timer, None, notes)
        c_pre, c_dec = (model_times(torch, hf, config, device, prompt, decode, timer, torch, notes)
                        if compile_on else (None, None))
    layers = config.num_hidden_layers
    add(f"{FULL} x{layers}", f"model prefill {prompt}", t["prefill_ms"], e_pre, c_pre, None, "",
        floor_ms(2 * params, 2 * prompt * params))
    # The decode target: weight bytes / step time against the copy bandwidth.
    copy_ms = 2 * params / bandwidth * 1e3
    add(f"{FULL} x{layers}", "model decode step", t["decode_ms"], e_dec, c_dec, copy_ms,
        "weights/copy bw", floor_ms(2 * params, 2 * params))
    # The same step with its kernels launched one by one instead of as a CUDA
    # graph (lib/Runtime/CudaLaunchGraph.h): what the graph saves. Same prompt:
    # the step's attention reads every cached position (a prompt of 16 here
    # made the H200 run of 2026-11-28 compare unlike steps).
    try:
        u = tbc_bench(a.tbc_run, module, prompt, decode, repeat=2, logits="last", profile=False,
                      env={"TBC_CUDA_GRAPHS": "0"}, timeout=300)
        add(f"{FULL} x{layers}", "decode step, no CUDA graph", u["decode_ms"], e_dec, c_dec,
            copy_ms, "weights/copy bw", floor_ms(2 * params, 2 * params))
    except RuntimeError as e:
        notes.append(f"{name} without CUDA graphs: tbc failed: {e}")
    del hf
    if device == "cuda":
        torch.cuda.empty_cache()


def write_csv(a, rows, gpu):
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, "gpu-bench.csv")
    fields = ["gpu", "date", "model", "case", "tbc_ms", "eager_ms", "compile_ms", "peer", "peer_ms",
              "floor_ms", "tbc_vs_eager", "tbc_vs_compile", "tbc_vs_peer", "pct_roofline"]
    cell = lambda v: f"{v:.4f}" if v else ""
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for r in rows:
            t = r["tbc_ms"]
            ratio = lambda p: f"{p / t:.3f}" if p and t else ""
            w.writerow(dict(gpu=gpu, date=time.strftime("%Y-%m-%d"), model=r["model"], case=r["case"],
                            tbc_ms=cell(t), eager_ms=cell(r["eager_ms"]), compile_ms=cell(r["compile_ms"]),
                            peer=r["peer"], peer_ms=cell(r["peer_ms"]), floor_ms=cell(r["floor_ms"]),
                            tbc_vs_eager=ratio(r["eager_ms"]), tbc_vs_compile=ratio(r["compile_ms"]),
                            tbc_vs_peer=ratio(r["peer_ms"]),
                            pct_roofline=f"{100 * r['floor_ms'] / t:.1f}" if t else ""))
    return path


def write_outputs(a, rows, notes, gpu):
    print(f"wrote {write_csv(a, rows, gpu)}")
    for n in notes:
        print(f"  note: {n}")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("  no matplotlib here: no chart (the CSV has every number)")
        return
    labels = [f"{r['model']}\n{r['case']}" for r in rows]
    series = [("eager", "eager_ms"), ("torch.compile", "compile_ms"), ("target peer", "peer_ms")]
    fig, ax = plt.subplots(figsize=(max(8, 0.55 * len(rows)), 5))
    width = 0.27
    for i, (label, key) in enumerate(series):
        ys = [r[key] / r["tbc_ms"] if r[key] and r["tbc_ms"] else float("nan") for r in rows]
        ax.bar([x + (i - 1) * width for x in range(len(rows))], ys, width, label=f"tbc speed / {label}")
    ax.set_yscale("log")  # ratios from 0.1x to 20x: equal factors, equal heights
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(labels, rotation=70, ha="right", fontsize=7)
    ax.set_ylabel("speed-up of tbc (>1: tbc faster)")
    ax.set_title(f"tbc vs PyTorch, bf16, {gpu}, {time.strftime('%Y-%m-%d')}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    png = os.path.join(a.out, "gpu-bench.png")
    fig.savefig(png, dpi=110)
    print(f"wrote {png}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    pp = sub.add_parser("prepare", help="compile the benchmark's modules (an LLVM machine)")
    pp.add_argument("--tbc", required=True, help="the tbc compiler")
    pp.add_argument("--out", required=True)
    pp.add_argument("--target", default="cuda", help="cuda (default), or cpu for a smoke test")
    pp.add_argument("--tiny", action="store_true", help="1/16-wide models and short sequences (smoke test)")
    pp.add_argument("--baseline-tbc", help="an earlier build's tbc (scripts/build-baseline.sh): its "
                    "one-layer modules too, whose prefill projections and attention prefill `run` "
                    "times beside tbc's (rows '(baseline build)'); the runtime must still load them")
    pr = sub.add_parser("run", help="time tbc and PyTorch (the GPU machine)")
    pr.add_argument("--tbc-run", required=True)
    pr.add_argument("--modules", required=True, help="what `prepare` wrote")
    pr.add_argument("--models", type=lambda s: s.split(","), default=MODELS)
    pr.add_argument("--out", default="bench/out")
    pr.add_argument("--no-compile", action="store_true", help="leave torch.compile out")
    pr.add_argument("--no-full", action="store_true", help="leave the 32-layer model out")
    pr.add_argument("--cpu", action="store_true", help="PyTorch on the CPU (a smoke test)")
    pr.add_argument("--budget-s", type=float, default=480,
                    help="start no new model past this many seconds (default 480)")
    a = p.parse_args()
    prepare(a) if a.command == "prepare" else run(a)


if __name__ == "__main__":
    main()
