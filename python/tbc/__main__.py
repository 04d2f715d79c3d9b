"""python -m tbc generate MODEL_DIR --prompt "text" [--max-new-tokens N]
[--temperature T --top-k K --top-p P --seed S] [--dtype f32|bf16|f16]

Compiles the Hugging Face folder (cached beside nothing: a temporary module),
binds its weights, tokenizes the prompt with the folder's tokenizer
(transformers or tokenizers, whichever is installed) and prints the text."""
import argparse
import os
import sys
import tempfile

import tbc


def tokenizer_for(folder):
    try:
        from transformers import AutoTokenizer
        tok = AutoTokenizer.from_pretrained(folder)
        return (lambda text: tok(text)["input_ids"]), (lambda ids: tok.decode(ids))
    except ImportError:
        pass
    try:
        from tokenizers import Tokenizer
    except ImportError:
        sys.exit("tbc: turning text into tokens needs a tokenizer library: "
                 "pip install tokenizers (or transformers)")
    path = os.path.join(folder, "tokenizer.json")
    if not os.path.isfile(path):
        sys.exit(f"tbc: {folder} has no tokenizer.json")
    tok = Tokenizer.from_file(path)
    return (lambda text: tok.encode(text).ids), (lambda ids: tok.decode(ids))


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m tbc", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate", help="continue a text prompt")
    g.add_argument("model", help="a Hugging Face folder (config.json, safetensors, tokenizer)")
    g.add_argument("--prompt", required=True)
    g.add_argument("--max-new-tokens", type=int, default=32)
    g.add_argument("--temperature", type=float, default=0.0)
    g.add_argument("--top-k", type=int, default=0)
    g.add_argument("--top-p", type=float, default=1.0)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--dtype", default="f32", choices=["f32", "bf16", "f16"])
    a = p.parse_args(argv)
    encode, decode = tokenizer_for(a.model)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = tbc.compile(a.model, dtype=a.dtype, output=os.path.join(tmp, "m.tbcm"))
            module = tbc.Module.load(path).bind(a.model)
        ids = encode(a.prompt)
        new = module.generate(ids, max_new_tokens=a.max_new_tokens, temperature=a.temperature,
                              top_k=a.top_k, top_p=a.top_p, seed=a.seed)
    except tbc.Error as e:
        sys.exit(f"tbc: error: {e}")
    print(decode(list(ids) + list(new)))


if __name__ == "__main__":
    main()
