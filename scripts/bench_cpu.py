#!/usr/bin/env python3
"""CPU benchmark: tbc against llama.cpp, PyTorch eager and torch.compile, in
one run on this machine, same random Llama-shaped model, same threads.

Each engine runs warm in its own process (tbc through its C API, build/lib/
libtbc.so, via ctypes; llama.cpp through llama-cpp-python on GGUF files
written here with the `gguf` package; transformers' LlamaForCausalLM for
torch). Rounds are interleaved (round 1: every engine, round 2: every
engine, ...) and medians reported, so drift of the host hits all alike. Per
model and weight precision it times a prefill of each prompt length and a
greedy decode of --decode tokens after a 64-token prompt, prints tokens/s,
ratios, the decode's share of the bandwidth roofline (weight bytes per
token against a read bandwidth measured in the same run) and the prefill's
GFLOP/s; the host's CPU model and vector extensions head the output.

Before timing, llama.cpp's f32 GGUF logits are checked against transformers
(and tbc's against transformers), so the engines run the same model.

Every engine's weights go on 2 MiB pages where the kernel grants them
(--pages huge, the default; tbc does it by itself, the peers are given the
knobs they have) and each engine's share on them is printed: on 4 KiB pages
a decode stream runs up to a third slower on some hosts, and the comparison
would be of page sizes, not kernels.

Engine `tbc-dot` (bf16 weights, on a CPU with AVX512-BF16) is tbc compiled
with --cpu-dot bf16: activations rounded to bf16 and multiplied by vdpbf16ps,
as llama.cpp's bf16 GGUF path does; `tbc` keeps f32 activations. Engine
`tbc-amx` (bf16 weights, on a CPU with AMX: Sapphire Rapids and later) is tbc
compiled with --cpu-dot amx: the same rounding, prompts multiplied on AMX
tiles (tdpbf16ps), decode on vdpbf16ps. Engine `tbc-amxf` (not run unless
named in --engines) is --cpu-dot amx-f32: `tbc`'s f32 arithmetic on the
tiles, each activation as three bf16 terms.

Engine `tbc-f32` (bf16 models) is tbc compiled with --dtype f32 from the same
bf16 checkpoint (its weights widened to f32 at bind time: the same products
as `tbc`, twice the bytes per token), timed in the same rounds as `tbc`, so
that "bf16 decode / f32 decode" compares two streams the host's moving
bandwidth hit alike (separate f32 and bf16 models run minutes apart).

Engine `tbc-base` (--baseline-build DIR) is tbc as an earlier commit built it
(scripts/build-baseline.sh REV DIR): its modules compiled by that build's
`tbc` with the same flags, run through that build's libtbc.so, timed in the
same interleaved rounds; `tbc / tbc-base` then says whether this commit is
slower than that one on this host (the way to check "no slower than before"
on a host a session rarely has, such as one with AVX-512).

Needs (a venv outside the repository, not a dependency of tbc):
    python3 -m venv ~/venv-ref
    ~/venv-ref/bin/pip install torch transformers safetensors numpy gguf llama-cpp-python
    ~/venv-ref/bin/python scripts/bench_cpu.py            # all sizes, f32 and bf16
    ~/venv-ref/bin/python scripts/bench_cpu.py --sizes 1024 --dtypes f32 --rounds 3
tbc must be built (scripts/test.sh or cmake + ninja).
"""
import argparse
import ctypes
import multiprocessing as mp
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
# hidden -> (layers, intermediate): Llama-3-1B/3B/8B-like widths, layers
# kept few so that a whole run stays within minutes on 2 cores.
SIZES = {1024: (4, 2816), 2048: (2, 5632), 4096: (1, 14336)}
VOCAB = 8192
ROPE_THETA = 500000.0


# PyTorch limited to AVX2 on an AVX-512 host: ATen's kernels dispatch to
# their AVX2 builds, oneDNN (bf16 matmuls, AMX or AVX512-BF16 otherwise) and
# MKL (f32 sgemm) to their AVX2 code paths.
AVX2_ONLY_ENV = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2",
                 "MKL_ENABLE_INSTRUCTIONS": "AVX2"}

# Every engine's weights on 2 MiB pages where the kernel grants them
# (transparent huge pages `madvise` or `always`): on 4 KiB pages a decode
# stream runs up to a third slower on some hosts (TLB misses, the prefetcher
# stopping at every page), and the read-bandwidth probe too. tbc asks for
# them itself (include/tbc/Runtime/HugePageAllocator.h); PyTorch's CPU
# allocator does with THP_MEM_ALLOC_ENABLE=1; glibc's malloc, which holds
# llama.cpp's buffers, with glibc.malloc.hugetlb=1, llama.cpp then loading
# the GGUF into memory (use_mmap=False) instead of mapping the file, whose
# page-cache pages stay 4 KiB. Each engine's share on them is printed.
HUGE_PAGES_ENV = {"THP_MEM_ALLOC_ENABLE": "1", "GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}


def huge_page_mb():
    """MB of this process's memory on transparent huge pages (AnonHugePages)."""
    try:
        with open("/proc/self/smaps_rollup") as f:
            for line in f:
                if line.startswith("AnonHugePages:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def host_cpu():
    model, flags = "unknown", set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name") and model == "unknown":
                model = line.split(":", 1)[1].strip()
            elif line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
    ext = [e for e in ("avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512_bf16", "avx512_vnni",
                       "amx_tile", "amx_bf16") if e in flags]
    return model, ext


def make_model(hidden, dtype, folder):
    """A random LlamaForCausalLM saved as safetensors (bf16: rounded)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    layers, inter = SIZES[hidden]
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=hidden, intermediate_size=inter,
                         num_hidden_layers=layers, num_attention_heads=hidden // 64,
                         num_key_value_heads=max(1, hidden // 512), max_position_embeddings=4096,
                         rms_norm_eps=1e-5, rope_theta=ROPE_THETA, tie_word_embeddings=False)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():  # weights that keep activations O(1)
        for name, p in model.named_parameters():
            if p.ndim == 2:
                std = 1.0 if "embed" in name else p.shape[1] ** -0.5
                p.normal_(0.0, std)
            else:
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
            if dtype == "bf16":
                p.copy_(p.to(torch.bfloat16).float())
    save = model if dtype == "f32" else model.to(torch.bfloat16)
    save.save_pretrained(folder, safe_serialization=True)
    return config


def write_gguf(folder, config, dtype, path):
    """The same model as a llama.cpp GGUF (f32 or bf16 matrices, f32 norms).
    Q and K rows are permuted from Hugging Face's rotate-half layout to
    GGML's interleaved rotary pairs, as llama.cpp's own converter does."""
    import gguf
    import torch
    from safetensors.torch import load_file
    tensors = load_file(os.path.join(folder, "model.safetensors"))
    hd = config.hidden_size // config.num_attention_heads
    w = gguf.GGUFWriter(path, "llama")
    w.add_name("tbc-bench")
    w.add_context_length(config.max_position_embeddings)
    w.add_embedding_length(config.hidden_size)
    w.add_block_count(config.num_hidden_layers)
    w.add_feed_forward_length(config.intermediate_size)
    w.add_head_count(config.num_attention_heads)
    w.add_head_count_kv(config.num_key_value_heads)
    w.add_rope_freq_base(ROPE_THETA)
    w.add_layer_norm_rms_eps(config.rms_norm_eps)
    w.add_rope_dimension_count(hd)
    w.add_file_type(gguf.LlamaFileType.ALL_F32 if dtype == "f32" else gguf.LlamaFileType.MOSTLY_BF16)
    w.add_tokenizer_model("llama")
    w.add_token_list(["<unk>", "<s>", "</s>"] + [f"t{i}" for i in range(3, config.vocab_size)])
    w.add_token_scores([0.0] * config.vocab_size)
    w.add_token_types([2, 3, 3] + [1] * (config.vocab_size - 3))
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)

    def permute(t, heads):
        return t.reshape(heads, 2, t.shape[0] // heads // 2, *t.shape[1:]).swapaxes(1, 2).reshape(t.shape)

    names = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}
    per_layer = {"input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q",
                 "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
                 "self_attn.o_proj": "attn_output", "post_attention_layernorm": "ffn_norm",
                 "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}
    for name, t in tensors.items():
        m = re.match(r"model\.layers\.(\d+)\.(.*)\.weight$", name)
        target = names.get(name) or f"blk.{m.group(1)}.{per_layer[m.group(2)]}.weight"
        t = t.float()
        if target.endswith("attn_q.weight"):
            t = permute(t, config.num_attention_heads)
        elif target.endswith("attn_k.weight"):
            t = permute(t, config.num_key_value_heads)
        data = t.numpy()
        if dtype == "bf16" and data.ndim == 2:
            w.add_tensor(target, gguf.quants.quantize(data, gguf.GGMLQuantizationType.BF16),
                         raw_dtype=gguf.GGMLQuantizationType.BF16)
        else:
            w.add_tensor(target, data)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


# ---------------------------------------------------------------- engines
# Each engine: load(spec) once in its own process, then logits(tokens) for a
# prefill, and step(token) for one decode step; both return the last
# position's logits (numpy, vocab floats).

class TbcEngine:
    def __init__(self, spec):
        lib = ctypes.CDLL(spec["libtbc"])
        vp, err = ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p)
        lib.tbc_module_load.restype = vp
        lib.tbc_module_load.argtypes = [ctypes.c_char_p, err]
        lib.tbc_module_bind_weights.argtypes = [vp, ctypes.c_char_p, err]
        lib.tbc_module_vocab_size.restype = ctypes.c_int64
        lib.tbc_module_vocab_size.argtypes = [vp]
        lib.tbc_session_create.restype = vp
        lib.tbc_session_create.argtypes = [vp, ctypes.c_int64, err]
        # The last position's logits only, as llama.cpp (logits_all off)
        # and generation compute them.
        lib.tbc_session_forward_last.argtypes = [vp, ctypes.POINTER(ctypes.c_int32),
                                                 ctypes.c_int64, ctypes.POINTER(ctypes.c_float), err]
        lib.tbc_session_free.argtypes = [vp]
        self.lib, self.error = lib, ctypes.c_char_p()
        self.module = lib.tbc_module_load(spec["module"].encode(), ctypes.byref(self.error))
        self.check(self.module)
        self.check(lib.tbc_module_bind_weights(self.module, spec["weights"].encode(),
                                               ctypes.byref(self.error)) != 0)
        self.vocab = lib.tbc_module_vocab_size(self.module)
        self.session = None

    def check(self, ok):
        if not ok:
            raise RuntimeError("tbc: " + (self.error.value or b"?").decode())

    def _forward(self, tokens):
        ids = (ctypes.c_int32 * len(tokens))(*tokens)
        out = np.empty(self.vocab, np.float32)
        self.check(self.lib.tbc_session_forward_last(
            self.session, ids, len(tokens), out.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
            ctypes.byref(self.error)) != 0)
        return out

    def logits(self, tokens):
        if self.session:
            self.lib.tbc_session_free(self.session)
        self.session = self.lib.tbc_session_create(self.module, 4096, ctypes.byref(self.error))
        self.check(self.session)
        return self._forward(tokens)

    def step(self, token):
        return self._forward([token])


class LlamaCppEngine:
    def __init__(self, spec):
        if spec.get("llama_path"):  # another build of llama-cpp-python
            sys.path.insert(0, spec["llama_path"])
        import llama_cpp
        self.llama_cpp = llama_cpp
        self.llm = llama_cpp.Llama(model_path=spec["gguf"], n_ctx=2048, n_batch=512, n_ubatch=512,
                         n_threads=spec["threads"], n_threads_batch=spec["threads"],
                         logits_all=False, verbose=False, use_mmap=not spec["huge_pages"])

    def last(self):
        # The last token's logits from llama.cpp itself: with logits_all off,
        # llama-cpp-python 0.3 leaves its own `scores` at zero.
        ptr = self.llama_cpp.llama_get_logits_ith(self.llm._ctx.ctx, -1)
        return np.ctypeslib.as_array(ptr, shape=(self.llm.n_vocab(),)).copy()

    def logits(self, tokens):
        self.llm.reset()
        self.llm.eval(tokens)
        return self.last()

    def step(self, token):
        self.llm.eval([token])
        return self.last()


class TorchEngine:
    def __init__(self, spec):
        import torch
        from transformers import LlamaForCausalLM
        torch.set_num_threads(spec["threads"])
        self.torch = torch
        dtype = torch.float32 if spec["dtype"] == "f32" else torch.bfloat16
        self.model = LlamaForCausalLM.from_pretrained(spec["weights"], dtype=dtype).eval()
        if spec["huge_pages"]:
            # from_pretrained may leave parameters on the safetensors file's
            # mapping (4 KiB page-cache pages): copies come from PyTorch's
            # allocator, on 2 MiB pages with THP_MEM_ALLOC_ENABLE=1.
            with torch.no_grad():
                for t in list(self.model.parameters()) + list(self.model.buffers()):
                    t.data = t.data.clone()
        if spec["compile"]:
            self.model.forward = torch.compile(self.model.forward, dynamic=True)
        self.past = None

    def _run(self, tokens, past):
        with self.torch.inference_mode():
            out = self.model(self.torch.tensor([tokens]), past_key_values=past, use_cache=True,
                             logits_to_keep=1)
        self.past = out.past_key_values
        return out.logits[0, -1].float().numpy()

    def logits(self, tokens):
        return self._run(tokens, None)

    def step(self, token):
        return self._run([token], self.past)


ENGINES = {"tbc": TbcEngine, "tbc-dot": TbcEngine, "tbc-amx": TbcEngine, "tbc-amxf": TbcEngine, "tbc-f32": TbcEngine, "tbc-base": TbcEngine, "llama.cpp": LlamaCppEngine,
           "eager": TorchEngine, "compile": TorchEngine}


def worker(name, spec, conn):
    os.environ.setdefault("OMP_NUM_THREADS", str(spec["threads"]))
    try:
        engine = ENGINES[name](spec)
        conn.send(("ready", huge_page_mb()))
        while True:
            cmd, arg = conn.recv()
            if cmd == "quit":
                return
            if cmd == "logits":  # prefill logits of a prompt, for the checks
                conn.send(("ok", engine.logits(arg)))
            elif cmd == "time":  # (prompt, decode): seconds of each
                prompt, decode = arg
                t0 = time.perf_counter()
                last = engine.logits(prompt)
                prefill = time.perf_counter() - t0
                t0 = time.perf_counter()
                for _ in range(decode):
                    last = engine.step(int(np.argmax(last)))
                conn.send(("ok", (prefill, time.perf_counter() - t0)))
    except Exception as e:  # reported to the parent, which goes on without it
        conn.send(("error", f"{type(e).__name__}: {e}"))


class Process:
    def __init__(self, name, spec):
        self.name = name
        self.conn, child = mp.Pipe()
        self.proc = mp.get_context("spawn").Process(target=worker, args=(name, spec, child))
        self.proc.start()
        self.huge_mb = self.recv()  # MB on 2 MiB pages once loaded
        self.ok = self.huge_mb is not None

    def recv(self):
        status, value = self.conn.recv()
        if status == "error":
            print(f"  {self.name}: {value}", file=sys.stderr)
            return None
        return value

    def ask(self, cmd, arg):
        if not self.ok:
            return None
        self.conn.send((cmd, arg))
        value = self.recv()
        self.ok = value is not None
        return value

    def close(self):
        if self.proc.is_alive():
            try:
                self.conn.send(("quit", None))
            except OSError:
                pass
            self.proc.join(5)
            if self.proc.is_alive():
                self.proc.kill()


class BandwidthProbe:
    """GB/s of a multi-threaded read of 1 GiB (torch.sum), the best of a few
    reads; `huge`: whether the tensor is on 2 MiB pages. Measured once for
    the host line and again in every timed round: a VM's bandwidth moves with
    its neighbours within a run, and a decode's share of the roofline
    compares with the probes taken between its own timed calls."""

    def __init__(self, threads):
        import torch
        torch.set_num_threads(threads)
        before = huge_page_mb()
        self.a = torch.ones(2**28, dtype=torch.float32)
        self.huge = huge_page_mb() - before >= 512

    def measure(self, reads):
        best = 0.0
        for _ in range(reads):
            t0 = time.perf_counter()
            self.a.sum()
            best = max(best, self.a.numel() * 4 / (time.perf_counter() - t0) / 1e9)
        return best


def matmul_gflops(threads):
    """GFLOP/s of a 4096^3 f32 torch matmul (oneDNN/MKL sgemm), best of 3:
    the host's attainable FMA throughput, measured rather than computed
    from a clock that a VM does not report."""
    import torch
    torch.set_num_threads(threads)
    a, b = torch.randn(4096, 4096), torch.randn(4096, 4096)
    a @ b
    best = 0.0
    for _ in range(3):
        t0 = time.perf_counter()
        a @ b
        best = max(best, 2 * 4096**3 / (time.perf_counter() - t0) / 1e9)
    return best


FMA_PROBE = r"""
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#ifdef __AVX512F__
typedef __m512 V;
#define FMA _mm512_fmadd_ps
#define SET1 _mm512_set1_ps
#define LANES 16
static float sum(V v) { return _mm512_reduce_add_ps(v); }
#else
typedef __m256 V;
#define FMA _mm256_fmadd_ps
#define SET1 _mm256_set1_ps
#define LANES 8
static float sum(V v) { float f[8]; _mm256_storeu_ps(f, v); return f[0] + f[7]; }
#endif
#define ITERS 50000000L
static void *run(void *out) {
  /* 12 independent chains in registers (16 would spill ymm): enough to
     cover 2 FMA pipes x 4-5 cycles of latency. */
  V a[12], x = SET1(0.999999f), y = SET1(1e-7f);
  for (int i = 0; i < 12; ++i) a[i] = SET1((float)i);
  for (long n = 0; n < ITERS; ++n)
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) a[i] = FMA(a[i], x, y);
  float s = 0;
  for (int i = 0; i < 12; ++i) s += sum(a[i]);
  *(float *)out = s;
  return 0;
}
int main(int argc, char **argv) {
  int threads = atoi(argv[1]);
  pthread_t t[256];
  float out[256];
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 0; i < threads; ++i) pthread_create(&t[i], 0, run, &out[i]);
  for (int i = 0; i < threads; ++i) pthread_join(t[i], 0);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double s = (t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec);
  printf("%f %f\n", 2.0 * LANES * 12 * ITERS * threads / s / 1e9, out[0]);
  return 0;
}
"""


class FmaProbe:
    """GFLOP/s of 12 independent FMA chains per thread on every thread, in
    ymm (AVX2) or zmm (AVX-512) registers: the host's FMA peak, measured
    (a VM reports no usable clock to compute it from), the best of a few
    runs. Like the bandwidth probe, measured for the host line and again in
    every timed round. `ok` is false without a C compiler."""

    def __init__(self, threads, avx512):
        self.threads = threads
        self.tmp = tempfile.TemporaryDirectory()
        src, self.exe = os.path.join(self.tmp.name, "fma.c"), os.path.join(self.tmp.name, "fma")
        with open(src, "w") as f:
            f.write(FMA_PROBE)
        flags = ["-mavx512f"] if avx512 else ["-mavx2", "-mfma"]
        self.ok = subprocess.run(["cc", "-O2", *flags, src, "-o", self.exe, "-lpthread"],
                                 capture_output=True).returncode == 0

    def measure(self, runs):
        if not self.ok:
            return None
        best = 0.0
        for _ in range(runs):
            out = subprocess.run([self.exe, str(self.threads)], capture_output=True, text=True).stdout
            best = max(best, float(out.split()[0]))
        return best


def target_flags(cpu, cpu_features):
    """`tbc compile`'s flags for the CPU a module is built for."""
    return ["--cpu", cpu] + (["--cpu-features", cpu_features] if cpu_features else [])


def timed_rounds(procs, rounds, prompts, decode, rng, probe, settle_s, fma_probe=None):
    """One warm-up round (torch.compile compiles there), then `rounds` timed
    rounds: each a bandwidth probe (and an FMA probe where it runs), then for
    every prompt length P a fresh random prompt that every engine of `procs`
    ((name, Process) pairs) prefills and decodes `decode(P)` steps of in
    turn, `settle_s` apart (the previous engine's spinning workers settle).
    The turn order rotates by one engine each round, so that no engine is
    always the one right after the probes (which flush the caches and, on
    some VMs, leave the next run measurably slower or faster).
    Returns prefill tok/s by (name, P), decode tok/s by name (for the P
    with decode steps), and the probes' GB/s and GFLOP/s, each a list with
    one value per timed round."""
    prefill = {(name, P): [] for name, _ in procs for P in prompts}
    decodes = {name: [] for name, _ in procs}
    probes, fma_probes = [], []
    for r in range(rounds + 1):
        if r > 0:
            time.sleep(settle_s)
            probes.append(probe.measure(3))
            if fma_probe is not None and fma_probe.ok:
                fma_probes.append(fma_probe.measure(1))
        turn = r % max(len(procs), 1)
        order = procs[turn:] + procs[:turn]
        for P in prompts:
            prompt = rng.integers(3, VOCAB, P).tolist()
            steps = decode(P)
            for name, proc in order:
                time.sleep(settle_s)
                t = proc.ask("time", (prompt, steps))
                if t and r > 0:
                    prefill[(name, P)].append(P / t[0])
                    if steps:
                        decodes[name].append(steps / t[1])
    return prefill, decodes, probes, fma_probes


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="1024,2048,4096", help="hidden sizes (of 1024, 2048, 4096)")
    p.add_argument("--dtypes", default="f32,bf16", help="weight precisions: f32, bf16")
    p.add_argument("--prompts", default="64,512", help="prefill lengths")
    # 128 steps: 32 of hidden 1024's ~4 ms bf16 steps were 0.13 s, short enough for one stall
    # on a shared VM to move the cell by a third (bench/NOTES.md 2026-12-03, session 32).
    p.add_argument("--decode", type=int, default=128, help="decode steps after a 64-token prompt")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--engines", default="tbc,tbc-f32,tbc-dot,tbc-amx,llama.cpp,eager,compile",
                   help="tbc-dot: tbc --cpu-dot bf16 (bf16 weights, AVX512-BF16 only); "
                   "tbc-amx: tbc --cpu-dot amx (bf16 weights, AMX only); "
                   "tbc-amxf: tbc --cpu-dot amx-f32 (likewise; f32 arithmetic); "
                   "tbc-f32: tbc --dtype f32 of the bf16 checkpoint (bf16 models only)")
    p.add_argument("--cpu", default="host", help="tbc compile --cpu (e.g. znver3 for AVX2 code)")
    p.add_argument("--cpu-features", default="",
                   help="tbc compile --cpu-features (e.g. -avx512f: AVX2 code tuned for the host)")
    p.add_argument("--isa", choices=["host", "avx2"], default="host",
                   help="avx2: every engine limited to AVX2+FMA on an AVX-512 host, the stand-in "
                   "for an AVX2-only CPU: tbc --cpu znver3 (unless --cpu says otherwise: Zen 3's code, its "
                   "decode prefetch included; --cpu host --cpu-features=-avx512f keeps the host's), PyTorch "
                   "through ATEN_CPU_CAPABILITY=avx2, ONEDNN_MAX_CPU_ISA=AVX2 and "
                   "MKL_ENABLE_INSTRUCTIONS=AVX2 (checked: torch must report AVX2), llama.cpp "
                   "from an AVX2-only build named by --llama-path")
    p.add_argument("--llama-path", help="import llama_cpp from this folder (e.g. a build for "
                   "AVX2 only: pip install --target DIR llama-cpp-python with CMAKE_ARGS="
                   "'-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF')")
    p.add_argument("--settle-ms", type=float, default=200.0,
                   help="pause before each timed call, so that the previous engine's worker "
                   "threads (OpenMP spin-waits in PyTorch and llama.cpp) are idle when the next "
                   "one starts (default 200)")
    p.add_argument("--pages", choices=["huge", "default"], default="huge",
                   help="huge (default): every engine's memory on 2 MiB pages where the kernel "
                   "grants them (PyTorch through THP_MEM_ALLOC_ENABLE=1, llama.cpp through "
                   "GLIBC_TUNABLES=glibc.malloc.hugetlb=1 and use_mmap=False, tbc by itself); "
                   "default: the peers as they come (tbc still asks for huge pages)")
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--baseline-build", metavar="DIR",
                   help="a build of an earlier commit (scripts/build-baseline.sh REV DIR): adds "
                   "the engine tbc-base, compiled by DIR/bin/tbc and run through DIR/lib/libtbc.so, "
                   "and the ratios tbc / tbc-base")
    p.add_argument("--csv", help="also write the medians here")
    a = p.parse_args()
    all_engines = a.engines.split(",")
    if a.baseline_build:
        for tool in ("bin/tbc", "lib/libtbc.so"):
            if not os.path.exists(os.path.join(a.baseline_build, tool)):
                p.error(f"--baseline-build: no {tool} in {a.baseline_build}")
        if "tbc-base" not in all_engines:
            all_engines.insert(all_engines.index("tbc") + 1 if "tbc" in all_engines else 0, "tbc-base")
    elif "tbc-base" in all_engines:
        p.error("engine tbc-base needs --baseline-build DIR")
    if a.pages == "huge":
        # Before torch allocates here (the bandwidth probe) and before the
        # workers start (glibc reads its tunables at a process's start).
        os.environ.update(HUGE_PAGES_ENV)
    if a.isa == "avx2":
        # Before torch is imported here or in a worker (spawned workers
        # inherit the environment): its dispatch, oneDNN and MKL read these
        # once, when loaded.
        os.environ.update(AVX2_ONLY_ENV)
        if a.cpu == "host":
            a.cpu = "znver3"
        if "llama.cpp" in a.engines.split(",") and not a.llama_path:
            p.error("--isa avx2 needs --llama-path: an AVX2-only build of llama-cpp-python")
    import torch
    import transformers

    model_name, ext = host_cpu()
    prompts = [int(x) for x in a.prompts.split(",")]
    probe = BandwidthProbe(a.threads)
    bandwidth, bandwidth_huge = probe.measure(5), probe.huge
    peak = matmul_gflops(a.threads)
    # tbc's kernels use zmm only when built for a host with AVX-512.
    avx512 = "avx512f" in ext and a.cpu == "host"
    torch_isa = torch.backends.cpu.get_cpu_capability()
    if a.isa == "avx2" and torch_isa != "AVX2":
        sys.exit(f"--isa avx2: torch reports {torch_isa}, not AVX2")
    fma_probe = FmaProbe(a.threads, avx512)
    fma = fma_probe.measure(3)
    print(f"host: {model_name}, {os.cpu_count()} cores, {' '.join(ext)}; {a.threads} threads; "
          f"read bandwidth {bandwidth:.1f} GB/s (torch.sum of 1 GiB, best of 5, "
          f"{'2 MiB' if bandwidth_huge else '4 KiB'} pages); "
          f"f32 matmul {peak:.0f} GFLOP/s (torch, 4096^3, best of 3); "
          + (f"FMA peak {fma:.0f} GFLOP/s ({'zmm' if avx512 else 'ymm'}, 12 chains per thread)"
             if fma else "FMA peak: no C compiler"))
    versions = (f"torch {torch.__version__} ({torch_isa}"
                + (", " + " ".join(f"{k}={v}" for k, v in AVX2_ONLY_ENV.items()) if a.isa == "avx2" else "")
                + f"), transformers {transformers.__version__}")
    if "llama.cpp" in all_engines:
        if a.llama_path:
            sys.path.insert(0, a.llama_path)
        import llama_cpp
        versions += f", llama-cpp-python {llama_cpp.__version__}"
        info = llama_cpp.llama_print_system_info().decode()
        versions += f" ({a.llama_path or 'default build'}: {info.strip()})"
    if a.baseline_build:
        stamp = os.path.join(a.baseline_build, "REVISION")  # written by build-baseline.sh
        rev = open(stamp).read().strip() if os.path.exists(stamp) else "revision unknown"
        versions += f", tbc-base {rev} ({a.baseline_build})"
    print(versions + f"; tbc --cpu {a.cpu}"
          + (f" --cpu-features={a.cpu_features}" if a.cpu_features else "")
          + f"; {a.rounds} interleaved rounds, medians, "
          f"{a.settle_ms:g} ms settle before each timed call")
    rows = []
    rng = np.random.default_rng(1)
    for hidden in [int(x) for x in a.sizes.split(",")]:
        for dtype in a.dtypes.split(","):
            # tbc-dot only where it compiles: bf16 weights and a CPU with
            # AVX512-BF16 (the host's, or --cpu's).
            dot_cpu = "avx512_bf16" in ext if a.cpu == "host" else a.cpu in ("znver4", "znver5", "sapphirerapids", "graniterapids")
            # tbc-amx likewise: bf16 weights and a CPU with AMX-BF16.
            amx_cpu = "amx_bf16" in ext if a.cpu == "host" else a.cpu in ("sapphirerapids", "emeraldrapids", "graniterapids")
            engines = [e for e in all_engines if e != "tbc-dot" or (dtype == "bf16" and dot_cpu)]
            engines = [e for e in engines
                       if e not in ("tbc-amx", "tbc-amxf") or (dtype == "bf16" and amx_cpu)]
            engines = [e for e in engines if e != "tbc-f32" or dtype == "bf16"]
            with tempfile.TemporaryDirectory() as tmp:
                folder = os.path.join(tmp, "hf")
                config = make_model(hidden, dtype, folder)
                module = os.path.join(tmp, "m.tbcm")
                module_dot = os.path.join(tmp, "dot.tbcm")
                module_amx = os.path.join(tmp, "amx.tbcm")
                module_amxf = os.path.join(tmp, "amxf.tbcm")
                module_base = os.path.join(tmp, "base.tbcm")
                module_f32 = os.path.join(tmp, "f32.tbcm")
                builds = {"tbc": (module, a.build, []), "tbc-dot": (module_dot, a.build, ["--cpu-dot", "bf16"]),
                          "tbc-amx": (module_amx, a.build, ["--cpu-dot", "amx"]),
                          "tbc-amxf": (module_amxf, a.build, ["--cpu-dot", "amx-f32"]),
                          "tbc-base": (module_base, a.baseline_build, []),
                          "tbc-f32": (module_f32, a.build, [])}
                for e in engines:
                    if e not in builds:
                        continue
                    path, build, extra = builds[e]
                    subprocess.run([os.path.join(build, "bin", "tbc"), "compile", folder,
                                    "--dtype", "f32" if e == "tbc-f32" else dtype,
                                    "-o", path] + target_flags(a.cpu, a.cpu_features) + extra,
                                   check=True, stderr=subprocess.DEVNULL)
                spec = dict(weights=folder, dtype=dtype, threads=a.threads,
                            gguf=os.path.join(tmp, "m.gguf"), compile=False,
                            llama_path=a.llama_path, huge_pages=a.pages == "huge")
                if "llama.cpp" in engines:
                    write_gguf(folder, config, dtype, spec["gguf"])

                def engine_spec(e):
                    """The spec with what engine `e` alone reads: a tbc
                    engine's module and the build's libtbc.so."""
                    if e not in builds:
                        return dict(spec, compile=e == "compile")
                    path, build, _ = builds[e]
                    return dict(spec, module=path, libtbc=os.path.join(build, "lib", "libtbc.so"))
                procs = [Process(e, engine_spec(e)) for e in engines]
                params = sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder)
                             if f.endswith(".safetensors")) / (2 if dtype == "bf16" else 4)
                weight_bytes = (params - VOCAB * hidden) * (2 if dtype == "bf16" else 4)
                # FLOPs a prefill of P tokens needs when only the last
                # position's logits are wanted (what every engine here does):
                # all layers but the last in full, the last layer's QKV for
                # every token, its output projection, FFN and the LM head for
                # the last token only.
                kv = config.num_key_value_heads * (hidden // config.num_attention_heads)
                qkv = hidden * (hidden + 2 * kv)
                rest = hidden * hidden + 3 * hidden * config.intermediate_size
                layers = config.num_hidden_layers

                def prefill_flops(P):
                    return 2 * ((layers - 1) * P * (qkv + rest) + P * qkv + rest + VOCAB * hidden)
                print(f"\n== hidden {hidden}, {config.num_hidden_layers} layers, {dtype} weights, "
                      f"{params / 1e6:.0f} M params")
                print("  on 2 MiB pages once loaded: " + ", ".join(
                    f"{proc.name} {proc.huge_mb:.0f} MB" for proc in procs if proc.ok))

                # Same model: prefill logits against eager transformers.
                check = rng.integers(3, VOCAB, 16).tolist()
                ref = procs[engines.index("eager")].ask("logits", check) if "eager" in engines else None
                for proc in procs:
                    got = proc.ask("logits", check)
                    if ref is not None and got is not None and proc.name != "eager":
                        d = np.abs(got - ref).max() / np.abs(ref).max()
                        print(f"  {proc.name:9s} last-position logits vs transformers: max|d|/max|ref| = {d:.1e}")

                times, decodes, probes, fma_probes = timed_rounds(
                    [(proc.name, proc) for proc in procs], a.rounds, prompts,
                    lambda P: a.decode if P == 64 else 0, rng, probe, a.settle_ms / 1e3, fma_probe)
                for proc in procs:
                    proc.close()

            med = lambda v: statistics.median(v) if v else float("nan")
            base = {e: med(decodes[e]) for e in engines}
            for P in prompts:
                line = f"  prefill {P:4d}:"
                for e in engines:
                    line += f"  {e} {med(times[(e, P)]):7.1f}"
                print(line + "  tok/s")
            print("  decode  64+%d:" % a.decode + "".join(f"  {e} {base[e]:7.1f}" for e in engines) + "  tok/s")
            # Weight bytes a decoded token streams: tbc-f32 reads the bf16
            # model's weights widened to f32.
            engine_bytes = {e: weight_bytes * (2 if e == "tbc-f32" else 1) for e in engines}
            round_bandwidth = med(probes)
            roof = round_bandwidth * 1e9 / weight_bytes
            print(f"  roofline decode {roof:.1f} tok/s ({weight_bytes / 1e6:.0f} MB of weights per token "
                  f"at {round_bandwidth:.1f} GB/s, the median of this model's rounds' probes, "
                  f"{min(probes, default=float('nan')):.1f}-{max(probes, default=float('nan')):.1f}); "
                  "weights streamed while decoding: "
                  + ", ".join(f"{e} {base[e] * engine_bytes[e] / 1e9:.1f} GB/s" for e in engines))
            if "tbc" in engines and "tbc-f32" in engines:
                # Round by round: each round's two decodes ran seconds apart.
                pairs = [x / y for x, y in zip(decodes["tbc"], decodes["tbc-f32"])]
                print(f"  bf16 / f32 weights, tbc decode in the same rounds: {base['tbc'] / base['tbc-f32']:.2f}"
                      f" (round by round: median {med(pairs):.2f}, {min(pairs, default=float('nan')):.2f}-"
                      f"{max(pairs, default=float('nan')):.2f}); tbc-f32 decode at "
                      f"{100 * base['tbc-f32'] * engine_bytes['tbc-f32'] / (round_bandwidth * 1e9):.0f}% "
                      "of the roofline (twice the bytes)")
            ours = [e for e in engines if e in ("tbc", "tbc-dot", "tbc-amx", "tbc-amxf")]
            for t in ours:
                for peer in engines:
                    if peer == t or (peer in ours and t == "tbc"):
                        continue
                    ratios = [f"prefill {P}: {med(times[(t, P)]) / med(times[(peer, P)]):.2f}"
                              for P in prompts]
                    print(f"  {t} / {peer:9s}: " + ", ".join(ratios) +
                          f", decode: {base[t] / base[peer]:.2f}")
            round_fma = med(fma_probes) if fma_probes else None
            if round_fma:
                print(f"  FMA peak {round_fma:.0f} GFLOP/s, the median of this model's rounds' probes, "
                      f"{min(fma_probes):.0f}-{max(fma_probes):.0f}")
            for t in ours:
                def gflops(P):
                    return med(times[(t, P)]) / P * prefill_flops(P) / 1e9
                print(f"  {t} decode at {100 * base[t] / roof:.0f}% of the roofline; prefill "
                      + ", ".join(f"{P}: {gflops(P):.0f} GFLOP/s ({100 * gflops(P) / peak:.0f}% of "
                                  f"torch's f32 matmul" +
                                  (f", {100 * gflops(P) / round_fma:.0f}% of the FMA peak)" if round_fma else ")")
                                  for P in prompts))
            for e in engines:
                rows.append([hidden, dtype, e] + [med(times[(e, P)]) for P in prompts] + [base[e]])
    if a.csv:
        with open(a.csv, "w") as f:
            f.write("hidden,dtype,engine," + ",".join(f"prefill{P}" for P in prompts) + ",decode\n")
            for r in rows:
                f.write(",".join(str(x) for x in r) + "\n")


if __name__ == "__main__":
    main()
