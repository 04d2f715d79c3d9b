"""tbc from Python: compile a model, load the module, run and generate.

    import tbc
    module = tbc.Module.load(tbc.compile("path/to/hf-model", output="m.tbcm"))
    module.bind("path/to/hf-model")
    print(module.generate([1, 2, 3], max_new_tokens=16))

Token ids may be lists, NumPy arrays, or anything NumPy can take (objects
with __array__ or DLPack, such as torch tensors); logits come back as
float32 NumPy arrays that own the runtime's memory (no copy). Errors are
tbc.Error (a RuntimeError) carrying the runtime's or the compiler's message.
"""
import json
import os
import subprocess
import tempfile

import numpy as np

from . import _tbc
from ._paths import TBC_BIN

Error = _tbc.Error
Session = _tbc.Session

__all__ = ["compile", "Module", "Session", "Error"]


def _ids(x):
    """Token ids as a 1-D int32 array, from a list, an array or a tensor."""
    if not isinstance(x, np.ndarray) and hasattr(x, "__dlpack__") and not hasattr(x, "__array__"):
        x = np.from_dlpack(x)
    a = np.asarray(x)
    if a.dtype.kind not in "iu":
        raise Error(f"token ids must be integers, not {a.dtype}")
    return np.ascontiguousarray(a.reshape(-1) if a.ndim == 2 and a.shape[0] == 1 else a,
                                dtype=np.int32)


def compile(path, target="cpu", dtype=None, fuse=True, output=None, cpu=None, taps=None,
            cpu_dot=None):
    """Compiles a model description (a Hugging Face folder, a config.json, a
    native spec or tbc IR) with the `tbc` compiler of this build. Returns the
    module's path (`output`), or its bytes when no output is given. `taps`
    ("layers" or "all") compiles in tensor taps (Session.set_tapping).
    `dtype` ("f32", "bf16" or "f16") is how weights are stored; by default
    the target's (f32 on the CPU, bf16 on CUDA).
    `cpu_dot="bf16"` (with dtype="bf16", on a CPU with AVX512-BF16) rounds
    the projections' activations to bf16 for vdpbf16ps (`--cpu-dot`);
    `cpu_dot="amx"` (a CPU with AMX) the same, prompts (projections and
    attention) on AMX tiles; `cpu_dot="amx-f32"` the tiles with f32
    activations exactly (three bf16 terms each), the default's arithmetic."""
    tool = os.environ.get("TBC_BIN", TBC_BIN)
    if not os.access(tool, os.X_OK):
        raise Error(f"the tbc compiler is not at {tool} (set TBC_BIN)")
    with tempfile.TemporaryDirectory() as tmp:
        out = output or os.path.join(tmp, "module.tbcm")
        cmd = [tool, "compile", os.fspath(path), "--target", target, "-o", os.fspath(out)]
        if dtype:
            cmd += ["--dtype", dtype]
        if not fuse:
            cmd.append("--no-fuse")
        if cpu:
            cmd += ["--cpu", cpu]
        if taps:
            cmd += ["--taps", taps]
        if cpu_dot:
            cmd += ["--cpu-dot", cpu_dot]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            message = run.stderr.strip().removeprefix("tbc compile: error: ")
            raise Error(message or f"tbc compile exited with {run.returncode}")
        if output:
            return os.fspath(output)
        with open(out, "rb") as f:
            return f.read()


def stop_tokens(folder):
    """eos_token_id of a Hugging Face folder (generation_config.json, else
    config.json) as a list; empty when neither names one."""
    for name in ("generation_config.json", "config.json"):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            with open(path) as f:
                eos = json.load(f).get("eos_token_id")
            if eos is not None:
                return list(eos) if isinstance(eos, list) else [eos]
    return []


class Module:
    """A compiled module (.tbcm) and its bound weights."""

    def __init__(self, native, path=None):
        self._m = native
        self.path = path
        self._stop = []

    @classmethod
    def load(cls, path):
        """Loads a module file, or the bytes tbc.compile returned."""
        if isinstance(path, (bytes, bytearray)):
            with tempfile.NamedTemporaryFile(suffix=".tbcm") as f:
                f.write(path)
                f.flush()
                return cls(_tbc.Module.load(f.name))
        return cls(_tbc.Module.load(os.fspath(path)), os.fspath(path))

    def bind(self, weights):
        """Binds a checkpoint (folder, .safetensors or sharded index); a
        folder's eos_token_id become generate()'s default stop tokens."""
        self._m.bind(os.fspath(weights))
        folder = weights if os.path.isdir(weights) else os.path.dirname(os.fspath(weights))
        self._stop = stop_tokens(folder)
        return self

    def bind_random(self, seed=0):
        self._m.bind_random(seed)
        return self

    @property
    def vocab_size(self):
        return self._m.vocab_size

    @property
    def architecture(self):
        return self._m.architecture

    @property
    def tap_names(self):
        """The tensor taps compiled in (tbc.compile(taps=...)): Hugging Face
        module paths in the order the schedule writes them."""
        return self._m.tap_names

    def session(self, capacity=0):
        """A new sequence with its own KV cache (capacity 0: the model's maximum)."""
        return _Session(self._m.session(capacity))

    def forward(self, ids):
        """Logits [len(ids), vocab] of one sequence in a fresh session."""
        return self.session().forward(ids)

    def generate(self, ids, max_new_tokens=32, temperature=0.0, top_k=0, top_p=1.0,
                 repetition_penalty=1.0, seed=0, stop_tokens=None, capacity=0):
        """Continues a prompt (ids) or a list of prompts, batched, greedy unless
        temperature > 0 (then as transformers' generate(): repetition penalty,
        temperature, top-k, top-p; each prompt draws from `seed` wherever it
        stands in the batch). Stops at
        max_new_tokens or a stop token (default: the bound folder's
        eos_token_id), which is kept. Returns the new ids: a list, or a list
        of lists for a list of prompts."""
        batched = isinstance(ids, (list, tuple)) and len(ids) > 0 and not np.isscalar(ids[0])
        prompts = [_ids(p).tolist() for p in (ids if batched else [ids])]
        stop = self._stop if stop_tokens is None else list(stop_tokens)
        out = self._m._generate(prompts, max_new_tokens, temperature, top_k, top_p,
                                repetition_penalty, seed, stop, capacity)
        return out if batched else out[0]


class _Session:
    """One sequence: forward(ids) runs them after everything seen so far."""

    def __init__(self, native):
        self._s = native

    def forward(self, ids, last=False):
        """float32 logits [len(ids), vocab] ([1, vocab] with last=True)."""
        return self._s.forward(_ids(ids), last)

    @property
    def position(self):
        return self._s.position

    @property
    def capacity(self):
        return self._s.capacity

    def reset(self):
        self._s.reset()

    def set_tapping(self, on=True):
        """Copy the module's taps out as each forward runs (every row is then
        computed, even with last=True)."""
        self._s.set_tapping(on)

    def taps(self):
        """The last forward call's taps: {module path: float32 [tokens, width]}."""
        return self._s.taps()
