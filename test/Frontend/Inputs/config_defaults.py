#!/usr/bin/env python3
"""For each config in DIR (transformers' resolved defaults, written by
scripts/make_config_defaults.py), reads it through `tbc inspect` and
`tbc compile --emit tbc` twice, as written and cut down to its sizes, and
prints "<file>: same" or the first lines where the two models differ.
Exits non-zero on any difference, on a config tbc refuses, and when an
architecture tbc supports has no config in DIR.

    config_defaults.py TBC DIR WORKDIR
"""
import json
import os
import re
import subprocess
import sys

# The sizes tbc requires (each family's spelling); make_config_defaults.py's.
SIZES = {"architectures", "model_type", "hidden_size", "n_embd", "d_model",
         "num_attention_heads", "n_head", "n_heads", "num_heads", "num_hidden_layers",
         "n_layer", "n_layers", "num_layers", "intermediate_size", "vocab_size"}


def model_of(tbc, path):
    """What tbc makes of a config: the inspect report and the tbc IR."""
    out = []
    for args in (["inspect", path], ["compile", path, "--emit", "tbc"]):
        r = subprocess.run([tbc] + args, capture_output=True, text=True)
        if r.returncode != 0:
            return None, r.stderr.strip()
        out.append(r.stdout)
    return "".join(out), ""


def supported(tbc, work):
    probe = os.path.join(work, "probe.json")
    with open(probe, "w") as f:
        json.dump({"architectures": ["NoSuchForCausalLM"]}, f)
    r = subprocess.run([tbc, "inspect", probe], capture_output=True, text=True)
    m = re.search(r"\(supported: ([^)]*)\)", r.stderr)
    return set(m.group(1).split(", ")) if m else set()


def main():
    tbc, folder, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    failed = False
    covered = set()
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name)) as f:
            full = json.load(f)
        covered.add(full["architectures"][0])
        sizes = {k: v for k, v in full.items() if k in SIZES}
        cut = os.path.join(work, name)
        with open(cut, "w") as f:
            json.dump(sizes, f, indent=1)
        a, err_a = model_of(tbc, os.path.join(folder, name))
        b, err_b = model_of(tbc, cut)
        if a is None or b is None:
            print(f"{name}: refused: {err_a or err_b}")
            failed = True
        elif a != b:
            diff = [(x, y) for x, y in zip(a.splitlines(), b.splitlines()) if x != y]
            print(f"{name}: differs from its sizes alone")
            for x, y in diff[:4]:
                print(f"  as written: {x.strip()}\n  sizes only: {y.strip()}")
            failed = True
        else:
            print(f"{name}: same")
    for arch in sorted(supported(tbc, work) - covered):
        # MPTForCausalLM is the original upload's spelling of MptForCausalLM.
        if arch != "MPTForCausalLM":
            print(f"{arch}: no config in {folder}")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
