#!/usr/bin/env python3
"""Writes, for every architecture tbc reads, the config.json that
transformers' config class resolves when a file names nothing but the
model's sizes: once at the class's own sizes (<model_type>.json) and once at
other sizes (<model_type>-sized.json: hidden 2048, 32 heads, 3 layers, FFN
4096, vocabulary 1000; Helium 2560 and 40), where defaults derived from the sizes (head_dim =
hidden / heads, key/value heads = heads) part from literal ones.

test/Frontend/config-defaults.test reads each through tbc twice, as written
here and cut down to its sizes, and expects the same model: tbc's readers
default every field as transformers does.

Needs transformers (not a dependency of tbc or CI), e.g.
    ~/venv-ref/bin/python scripts/make_config_defaults.py test/Frontend/Inputs/config-defaults
"""
import json
import os
import sys

import transformers
from transformers import CONFIG_MAPPING

# architecture -> model_type, for every reader in lib/Frontend/HFConfig.cpp.
ARCHITECTURES = {
    "LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral",
    "Qwen2ForCausalLM": "qwen2", "Qwen3ForCausalLM": "qwen3",
    "GemmaForCausalLM": "gemma", "Gemma2ForCausalLM": "gemma2",
    "Gemma3ForCausalLM": "gemma3_text", "Olmo2ForCausalLM": "olmo2",
    "FalconForCausalLM": "falcon", "GraniteForCausalLM": "granite",
    "CohereForCausalLM": "cohere", "Cohere2ForCausalLM": "cohere2",
    "PhiForCausalLM": "phi", "Phi3ForCausalLM": "phi3",
    "StableLmForCausalLM": "stablelm", "ArceeForCausalLM": "arcee",
    "NemotronForCausalLM": "nemotron", "PersimmonForCausalLM": "persimmon",
    "GlmForCausalLM": "glm", "Glm4ForCausalLM": "glm4",
    "SmolLM3ForCausalLM": "smollm3", "Starcoder2ForCausalLM": "starcoder2",
    "GPTNeoXForCausalLM": "gpt_neox", "GPTJForCausalLM": "gptj",
    "GPT2LMHeadModel": "gpt2", "GPTBigCodeForCausalLM": "gpt_bigcode",
    "BloomForCausalLM": "bloom", "MptForCausalLM": "mpt",
    "MinistralForCausalLM": "ministral", "VaultGemmaForCausalLM": "vaultgemma",
    "HeliumForCausalLM": "helium", "SeedOssForCausalLM": "seed_oss",
    "Olmo3ForCausalLM": "olmo3", "Exaone4ForCausalLM": "exaone4",
    "GPTNeoForCausalLM": "gpt_neo", "OlmoForCausalLM": "olmo", "OPTForCausalLM": "opt",
    "HunYuanDenseV1ForCausalLM": "hunyuan_v1_dense", "NanoChatForCausalLM": "nanochat",
    "Ernie4_5ForCausalLM": "ernie4_5",
}

# The sizes tbc requires (each family's spelling); everything else defaults.
SIZES = {"hidden_size": 2048, "n_embd": 2048, "d_model": 2048,
         "num_attention_heads": 32, "n_head": 32, "n_heads": 32, "num_heads": 32,
         "num_hidden_layers": 3, "n_layer": 3, "n_layers": 3, "num_layers": 3,
         "intermediate_size": 4096, "vocab_size": 1000}
# Where the class's literal key/value heads must divide the heads (Helium's 20).
# GPT-Neo: its attention_types names 24 layers unless the config says otherwise.
SIZES_OF = {"helium": dict(SIZES, hidden_size=2560, num_attention_heads=40),
            "gpt_neo": dict(SIZES, num_layers=24)}


def write(path, config, arch):
    d = config.to_dict()
    d["architectures"] = [arch]
    d["transformers_version"] = transformers.__version__
    with open(path, "w") as f:
        json.dump(d, f, indent=2, sort_keys=True, default=str)
        f.write("\n")


def main():
    out = sys.argv[1]
    only = set(sys.argv[2:])
    os.makedirs(out, exist_ok=True)
    for arch, model_type in ARCHITECTURES.items():
        if only and model_type not in only:
            continue
        cls = CONFIG_MAPPING[model_type]
        write(os.path.join(out, model_type + ".json"), cls(), arch)
        sizes = SIZES_OF.get(model_type, SIZES)
        sized = {k: v for k, v in sizes.items() if k in cls().to_dict()}
        write(os.path.join(out, model_type + "-sized.json"), cls(**sized), arch)
        print(model_type)


if __name__ == "__main__":
    main()
