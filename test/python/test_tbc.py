"""The `tbc` Python package against the CLI and the fixtures (run by
python-package.test with the interpreter the package was built for)."""
import os
import subprocess
import sys

import numpy as np
import pytest

import tbc

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
LLAMA = os.path.join(SRC, "test", "fixtures", "llama")
MISTRAL = os.path.join(SRC, "test", "fixtures", "mistral")


def read_ids(path):
    with open(path) as f:
        return [int(t) for t in f.read().strip().split(",")]


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    path = tbc.compile(LLAMA, output=str(tmp_path_factory.mktemp("m") / "llama.tbcm"))
    return path


def test_compile_matches_the_cli(llama, tmp_path):
    """tbc.compile's module gives the CLI's logits, bit for bit."""
    tokens = read_ids(os.path.join(LLAMA, "tokens.txt"))
    module = tbc.Module.load(llama).bind(LLAMA)
    logits = module.forward(tokens)
    assert logits.dtype == np.float32 and logits.shape == (len(tokens), module.vocab_size)
    cli = tmp_path / "cli.npy"
    subprocess.run([tbc._paths.TBC_BIN, "run", llama, "--weights", LLAMA, "--tokens",
                    ",".join(map(str, tokens)), "--output", str(cli)], check=True,
                   capture_output=True)
    assert np.array_equal(np.load(cli), logits)
    reference = np.load(os.path.join(LLAMA, "logits.npy"))
    assert np.abs(logits - reference).max() / np.abs(reference).max() < 1e-4


def test_compile_to_bytes_and_load():
    module = tbc.Module.load(tbc.compile(LLAMA))
    assert module.architecture == "LlamaForCausalLM" and module.vocab_size == 96


def test_sessions_and_array_inputs(llama):
    module = tbc.Module.load(llama).bind(LLAMA)
    tokens = read_ids(os.path.join(LLAMA, "tokens.txt"))
    full = module.forward(np.array(tokens, dtype=np.int64))
    s = module.session()
    s.forward(tokens[:5])
    last = s.forward(np.array(tokens[5:], dtype=np.int32), last=True)
    assert s.position == len(tokens) and last.shape == (1, module.vocab_size)
    assert np.abs(last[0] - full[-1]).max() <= 1e-5 * np.abs(full[-1]).max()
    # A [1, T] batch dimension is accepted; so is anything with __array__.
    class Ids:
        def __array__(self, dtype=None, copy=None):
            return np.array([tokens], dtype=np.int32)
    assert np.array_equal(module.forward(Ids()), full)
    try:
        import torch  # noqa: F401  (optional: DLPack and __array__ of a tensor)
    except ImportError:
        return
    assert np.array_equal(module.forward(torch.tensor(tokens)), full)


def test_taps(tmp_path):
    """A module compiled with taps hands each call's values out by module path;
    the fused module's layer outputs equal the unfused one's."""
    tokens = read_ids(os.path.join(LLAMA, "tokens.txt"))
    taps = {}
    for fuse in (True, False):
        path = tbc.compile(LLAMA, taps="all", fuse=fuse, output=str(tmp_path / f"t{fuse}.tbcm"))
        module = tbc.Module.load(path).bind(LLAMA)
        assert "model.layers.1" in module.tap_names
        s = module.session()
        s.set_tapping(True)
        logits = s.forward(tokens)
        taps[fuse] = s.taps()
        assert taps[fuse]["model.layers.0"].shape == (len(tokens), 64)
        assert np.array_equal(taps[fuse]["lm_head"], logits)
    assert "model.layers.0.input_layernorm" in taps[False]
    assert "model.layers.0.input_layernorm" not in taps[True]  # fused into the projections
    for name in ("model.layers.0", "model.layers.1", "model.layers.1.mlp.down_proj"):
        ref = taps[False][name]
        assert np.abs(taps[True][name] - ref).max() <= 1e-5 * np.abs(ref).max()
    plain = tbc.Module.load(tbc.compile(LLAMA, output=str(tmp_path / "plain.tbcm")))
    assert plain.tap_names == []


def test_generate_greedy_and_batched(llama):
    module = tbc.Module.load(llama).bind(LLAMA)
    tokens = read_ids(os.path.join(LLAMA, "tokens.txt"))
    want = read_ids(os.path.join(LLAMA, "generated.txt"))
    assert module.generate(tokens, max_new_tokens=4) == want
    # A batch of prompts of different lengths: each as if alone.
    prompts = [tokens, tokens[:3], [7]]
    alone = [module.generate(p, max_new_tokens=5, stop_tokens=[]) for p in prompts]
    assert module.generate(prompts, max_new_tokens=5, stop_tokens=[]) == alone
    # Sampling: a seed reproduces; top-k 1 is greedy.
    a = module.generate(tokens, max_new_tokens=6, temperature=0.9, seed=3, stop_tokens=[])
    assert a == module.generate(tokens, max_new_tokens=6, temperature=0.9, seed=3, stop_tokens=[])
    assert module.generate(tokens, max_new_tokens=4, temperature=4, top_k=1) == want
    # ... and across batch positions: a prompt samples the same continuation
    # alone, first or last in a batch.
    batch = module.generate([[7], tokens, tokens[:3], tokens], max_new_tokens=6, temperature=0.9,
                            seed=3, stop_tokens=[])
    assert batch[1] == a and batch[3] == a


def test_stop_tokens_from_the_folder():
    module = tbc.Module.load(tbc.compile(MISTRAL)).bind(MISTRAL)
    tokens = read_ids(os.path.join(MISTRAL, "tokens.txt"))
    assert module.generate(tokens, max_new_tokens=4) == read_ids(os.path.join(MISTRAL, "generated.txt"))
    assert len(module.generate(tokens, max_new_tokens=4, stop_tokens=[])) == 4


def test_errors_raise(llama, tmp_path):
    with pytest.raises(tbc.Error, match="nonexistent"):
        tbc.Module.load(str(tmp_path / "nonexistent.tbcm"))
    with pytest.raises(tbc.Error, match="no-model: unknown model description"):
        tbc.compile(str(tmp_path / "no-model"))
    with pytest.raises(tbc.Error, match="--cpu-dot bf16 multiplies bf16 weights"):
        tbc.compile(LLAMA, cpu_dot="bf16")
    with pytest.raises(tbc.Error, match="--cpu-dot amx multiplies bf16 weights"):
        tbc.compile(LLAMA, cpu_dot="amx")
    module = tbc.Module.load(llama)
    with pytest.raises(tbc.Error, match="no weights are bound"):
        module.forward([1, 2])
    with pytest.raises(tbc.Error):
        module.bind(str(tmp_path / "none"))
    module.bind(LLAMA)
    with pytest.raises(tbc.Error, match="outside the vocabulary"):
        module.forward([1, 1000])
    with pytest.raises(tbc.Error, match="top-p"):
        module.generate([1], top_p=0)
    with pytest.raises(tbc.Error, match="integers"):
        module.forward(np.array([1.5]))


def test_generate_text_needs_a_tokenizer():
    """python -m tbc generate: without tokenizers/transformers it says what to
    install and exits non-zero; with one, the fixture (no tokenizer files)
    is refused by the tokenizer library, not by a crash in tbc."""
    import importlib.util
    have = any(importlib.util.find_spec(m) for m in ("transformers", "tokenizers"))
    run = subprocess.run([sys.executable, "-m", "tbc", "generate", LLAMA, "--prompt", "hi"],
                         capture_output=True, text=True)
    assert run.returncode != 0
    if not have:
        assert "pip install tokenizers" in run.stderr
