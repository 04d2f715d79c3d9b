#!/usr/bin/env python3
"""Builds the conformance fixtures: tiny random-weight Hugging Face models of
every supported architecture, a token sequence, and transformers' float32
logits for it (prefill), plus 4 greedy decode steps through the KV cache.

Needs torch + transformers (not a dependency of tbc or CI): run it in a venv
outside the repository, e.g.
    python3 -m venv ~/venv-ref && ~/venv-ref/bin/pip install torch transformers
    ~/venv-ref/bin/python scripts/make_fixtures.py test/fixtures
Each fixture folder holds config.json, model.safetensors, tokens.txt,
logits.npy [seq, vocab], generated.txt (4 ids) and decode_logits.npy [4, vocab].

    ~/venv-ref/bin/python scripts/make_fixtures.py --bf16 test/fixtures test/fixtures-bf16
makes the bf16-weight fixtures from the committed ones: each model's weights
rounded to bf16 and saved as a BF16 checkpoint, with transformers' logits
computed in float32 on those weights (the rounding is the checkpoint's, so a
bf16-weight module must match them as tightly as an f32 one matches f32).
"""
import json
import os
import sys

import numpy as np
import torch
from safetensors.torch import load_file, save_file
import transformers
from transformers import AutoConfig, AutoModelForCausalLM

VOCAB, HIDDEN, INTER, SEQ = 96, 64, 128, 12

COMMON = dict(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=INTER,
              num_attention_heads=4, max_position_embeddings=64,
              tie_word_embeddings=False)

LONGROPE_SHORT = [1.0, 1.1, 1.3, 1.6, 2.0, 2.5, 3.0, 4.0]
LONGROPE_LONG = [1.0, 1.5, 2.5, 4.0, 6.0, 9.0, 12.0, 16.0]

FIXTURES = {
    "llama": dict(model_type="llama", num_hidden_layers=2, num_key_value_heads=2,
                  rms_norm_eps=1e-5, rope_theta=10000.0,
                  rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                                    high_freq_factor=4.0,
                                    original_max_position_embeddings=16)),
    "llama-bias-linear-rope": dict(model_type="llama", num_hidden_layers=2,
                                   num_key_value_heads=1, attention_bias=True, mlp_bias=True,
                                   rope_scaling=dict(rope_type="linear", factor=2.0),
                                   tie_word_embeddings=True),
    "mistral": dict(model_type="mistral", num_hidden_layers=2, num_key_value_heads=2,
                    sliding_window=5),
    "qwen2": dict(model_type="qwen2", num_hidden_layers=2, num_key_value_heads=2),
    # Sizes that fill no tile: a vocabulary and an FFN width not divisible
    # by 4 (one-column matmul tiles) and an FFN width not divisible by 16
    # (the down projection's reduction takes the generic loop nest).
    "qwen2-odd-sizes": dict(model_type="qwen2", num_hidden_layers=2, num_key_value_heads=2,
                            vocab_size=101, intermediate_size=90),
    "qwen3": dict(model_type="qwen3", num_hidden_layers=2, num_key_value_heads=2,
                  head_dim=32),
    "gemma2": dict(model_type="gemma2", num_hidden_layers=3, num_key_value_heads=2,
                   head_dim=16, query_pre_attn_scalar=24, attn_logit_softcapping=5.0,
                   final_logit_softcapping=3.0, sliding_window=5,
                   hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True),
    "gemma3": dict(model_type="gemma3_text", num_hidden_layers=3, num_key_value_heads=1,
                   head_dim=16, query_pre_attn_scalar=16, sliding_window=5,
                   layer_types=["sliding_attention", "full_attention", "sliding_attention"],
                   rope_theta=1000000.0, rope_local_base_freq=10000.0,
                   rope_scaling=dict(rope_type="linear", factor=2.0),
                   hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True),
    # Prompts long enough for the CUDA flash attention kernel (16 rows or
    # more; 64 query rows a block, 32 positions a key tile): 80 tokens make a
    # second, partly filled block and key tile. Sliding window and soft-cap
    # (Gemma 2), grouped heads of 32 dims with QK-norm (Qwen3).
    "gemma2-long": dict(model_type="gemma2", num_hidden_layers=2, num_key_value_heads=2,
                        head_dim=16, query_pre_attn_scalar=24, attn_logit_softcapping=5.0,
                        final_logit_softcapping=3.0, sliding_window=24,
                        hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True,
                        max_position_embeddings=128, seq=80),
    "qwen3-long": dict(model_type="qwen3", num_hidden_layers=2, num_key_value_heads=2,
                       head_dim=32, max_position_embeddings=128, seq=80),
    # Llama-3-8B's head dim (128) and 2:1 grouped heads, 80 tokens: the CUDA
    # split-KV kernel's contiguous lanes (4 dims a lane, one vector load per
    # key and value) and the flash kernel at its largest head dim.
    "llama-hd128-long": dict(model_type="llama", num_hidden_layers=2, num_attention_heads=2,
                             num_key_value_heads=1, head_dim=128, max_position_embeddings=128,
                             seq=80),
    # StableLM 2 12B's head dim (160: one whole 128-wide walk of the flash
    # kernel and one partial) and its per-head QK LayerNorms, 80 tokens.
    "stablelm-hd160-long": dict(model_type="stablelm", num_hidden_layers=1, hidden_size=320,
                                num_attention_heads=2, num_key_value_heads=1, qk_layernorm=True,
                                max_position_embeddings=128, seq=80),
    # Gemma-2-9B's head dim (256) with its soft-cap and local/global
    # layers, 80 tokens: the flash kernel's two walks, one per half of the
    # output dims.
    "gemma2-hd256-long": dict(model_type="gemma2", num_hidden_layers=2, num_attention_heads=2,
                              num_key_value_heads=1, head_dim=256, query_pre_attn_scalar=256,
                              attn_logit_softcapping=50.0, final_logit_softcapping=30.0,
                              sliding_window=24, hidden_activation="gelu_pytorch_tanh",
                              tie_word_embeddings=True, max_position_embeddings=128, seq=80),
    "olmo2": dict(model_type="olmo2", num_hidden_layers=2, num_key_value_heads=2),
    "phi3": dict(model_type="phi3", num_hidden_layers=2, num_key_value_heads=4, pad_token_id=0,
                 bos_token_id=1, eos_token_id=2,
                 partial_rotary_factor=0.5, sliding_window=6),
    # LongRoPE switches from the short to the long factors once a sequence
    # passes original_max_position_embeddings: at 16 the 12-token prompt and
    # all 4 decode steps use the short ones, at 8 the long ones. (Crossing
    # the switch while decoding is left out: Phi-3's generate() then drops
    # its cache and re-prefills the whole sequence, which tbc's sessions do
    # not do; see docs/spec.md.)
    "phi3-longrope-short": dict(model_type="phi3", num_hidden_layers=2, num_key_value_heads=2,
                                pad_token_id=0, bos_token_id=1, eos_token_id=2,
                                original_max_position_embeddings=16,
                                rope_scaling=dict(type="longrope", short_factor=LONGROPE_SHORT,
                                                  long_factor=LONGROPE_LONG)),
    "phi3-longrope-long": dict(model_type="phi3", num_hidden_layers=2, num_key_value_heads=2,
                               pad_token_id=0, bos_token_id=1, eos_token_id=2,
                               original_max_position_embeddings=8,
                               rope_scaling=dict(type="longrope", short_factor=LONGROPE_SHORT,
                                                 long_factor=LONGROPE_LONG)),
    # YaRN as Qwen2.5 ships it (factor 4); 2048 original positions put the
    # ramp inside the 8 frequencies of head_dim 16.
    "qwen2-yarn": dict(model_type="qwen2", num_hidden_layers=2, num_key_value_heads=2,
                       rope_scaling=dict(type="yarn", factor=4.0,
                                         original_max_position_embeddings=2048)),
    # Dynamic NTK past max_position_embeddings = 13: the prompt and the
    # first decode step keep the base, the later steps grow it.
    "llama-dynamic": dict(model_type="llama", num_hidden_layers=2, num_key_value_heads=2,
                          max_position_embeddings=13,
                          rope_scaling=dict(rope_type="dynamic", factor=2.0)),
    "gpt_neox": dict(model_type="gpt_neox", num_hidden_layers=2, rotary_pct=0.25,
                     use_parallel_residual=True, hidden_act="gelu"),
    "gpt_neox-serial": dict(model_type="gpt_neox", num_hidden_layers=2, rotary_pct=0.5,
                            use_parallel_residual=False, hidden_act="gelu"),
    "gpt2": dict(model_type="gpt2", n_layer=2, n_embd=HIDDEN, n_head=4, n_positions=64,
                 n_inner=INTER, vocab_size=VOCAB, activation_function="gelu_new"),
    # GPT-2's [in, out] Conv1D weights on CUDA's tensor cores (transposed at
    # bind time): 80 tokens reach the block-tiled projection (64 rows and up).
    "gpt2-long": dict(model_type="gpt2", n_layer=2, n_embd=HIDDEN, n_head=4, n_positions=128,
                      n_inner=INTER, vocab_size=VOCAB, activation_function="gelu_new", seq=80),
    # GPT-BigCode (StarCoder 1, SantaCoder): GPT-2's block on nn.Linear
    # weights with multi-query attention (c_attn rows [q heads; k; v]).
    "gpt_bigcode": dict(model_type="gpt_bigcode", n_layer=2, n_embd=HIDDEN, n_head=4,
                        n_positions=64, n_inner=INTER, vocab_size=VOCAB, multi_query=True,
                        bos_token_id=1, eos_token_id=2),
    # GPT-Neo: GPT-2's block on nn.Linear weights, unscaled attention logits,
    # a global and a local layer (the last window_size positions).
    "gpt_neo": dict(model_type="gpt_neo", num_layers=2, hidden_size=HIDDEN, num_heads=4,
                    intermediate_size=INTER, vocab_size=VOCAB, max_position_embeddings=64,
                    attention_types=[[["global", "local"], 1]], window_size=5,
                    bos_token_id=1, eos_token_id=2),
    # OPT: learned positions from row 2 of their table, pre-norm LayerNorms,
    # biases everywhere, a ReLU MLP, tied embeddings.
    "opt": dict(model_type="opt", num_hidden_layers=2, hidden_size=HIDDEN, num_attention_heads=4,
                ffn_dim=INTER, vocab_size=VOCAB, max_position_embeddings=64,
                word_embed_proj_dim=HIDDEN, pad_token_id=1, bos_token_id=2, eos_token_id=2),
    # ALiBi with 6 heads: both families' rules for a head count that is not
    # a power of two (BLOOM's extra slopes, MPT's odd-then-even order).
    "bloom": dict(model_type="bloom", n_layer=2, hidden_size=192, n_head=6, vocab_size=VOCAB),
    "mpt": dict(model_type="mpt", n_layers=2, d_model=96, n_heads=6, max_seq_len=64, vocab_size=VOCAB,
                attn_config=dict(clip_qkv=1.5, alibi_bias_max=8)),
    # Gemma (1): pre-norm with (1 + w) gains, scaled embeddings, one key/value
    # head (Gemma-2B's MQA), a head dim that is not hidden / heads, and the
    # original releases' legacy hidden_act "gelu" (the tanh approximation).
    "gemma": dict(model_type="gemma", num_hidden_layers=2, num_key_value_heads=1, head_dim=32,
                  hidden_act="gelu", tie_word_embeddings=True),
    # Phi-2's block: one LayerNorm feeding attention and MLP in parallel,
    # biases everywhere including the LM head, rotary dims int(16 * 0.4) = 6.
    "phi": dict(model_type="phi", num_hidden_layers=2, num_key_value_heads=2,
                partial_rotary_factor=0.4, hidden_act="gelu_new"),
    # GPT-J: the same shared-norm parallel block, unbiased attention,
    # interleaved-pair RoPE on the first 8 of 16 dims, a biased LM head.
    "gptj": dict(model_type="gptj", n_layer=2, n_embd=HIDDEN, n_head=4, n_positions=64,
                 n_inner=INTER, vocab_size=VOCAB, rotary_dim=8, tie_word_embeddings=False,
                 bos_token_id=1, eos_token_id=2),
    # StarCoder2: LayerNorm, GQA, biased projections, a GELU-tanh MLP, one
    # sliding window for all layers, tied embeddings.
    "starcoder2": dict(model_type="starcoder2", num_hidden_layers=2, num_key_value_heads=2,
                       sliding_window=5, use_bias=True, tie_word_embeddings=True),
    # StableLM 2 in its parallel form: SwiGLU on the attention's LayerNorm,
    # q/k/v biases, a quarter of each head rotated.
    "stablelm": dict(model_type="stablelm", num_hidden_layers=2, num_key_value_heads=2,
                     use_qkv_bias=True, use_parallel_residual=True),
    # StableLM 2 12B's attention: a bias-free LayerNorm of each query and
    # key head, each head its own gain (q_layernorm.norms.{h}), before the
    # partial RoPE; GQA, the parallel block on one norm.
    "stablelm-qk-norm": dict(model_type="stablelm", num_hidden_layers=2, num_key_value_heads=2,
                             qk_layernorm=True, use_parallel_residual=True),
    # Phi with qk_layernorm: one LayerNorm (gain and bias) for every query
    # and key head.
    "phi-qk-norm": dict(model_type="phi", num_hidden_layers=2, num_key_value_heads=2,
                        partial_rotary_factor=0.5, hidden_act="gelu_new", qk_layernorm=True),
    # Nemotron: LayerNorm1P (a biased LayerNorm whose gain is 1 + weight),
    # a squared-ReLU MLP without a gate, NeoX RoPE on half of each head.
    "nemotron": dict(model_type="nemotron", num_hidden_layers=2, num_key_value_heads=2,
                     partial_rotary_factor=0.5, tie_word_embeddings=False),
    # Persimmon: a serial block on biased LayerNorms, GPT-NeoX's per-head
    # query_key_value, one LayerNorm (gain and bias) for every query head
    # and one for every key head, NeoX RoPE on half of each head, a biased
    # squared-ReLU MLP.
    "persimmon": dict(model_type="persimmon", num_hidden_layers=2, partial_rotary_factor=0.5,
                      qk_layernorm=True, rope_theta=25000.0),
    # GLM (GLM-4-9B): q/k/v biases, one gate_up_proj, interleaved-pair RoPE
    # on half of each head; GLM-4 (0414) adds a norm after each sub-layer.
    "glm": dict(model_type="glm", num_hidden_layers=2, num_key_value_heads=2, head_dim=16,
                rms_norm_eps=1e-5, pad_token_id=0),
    "glm4": dict(model_type="glm4", num_hidden_layers=2, num_key_value_heads=2, head_dim=16,
                 rms_norm_eps=1e-5, pad_token_id=0),
    # Helium: Llama with interleaved-pair RoPE over whole heads, q/k/v and
    # MLP biases but no o_proj bias.
    "helium": dict(model_type="helium", num_hidden_layers=2, num_key_value_heads=2, head_dim=16,
                   attention_bias=True, mlp_bias=True, pad_token_id=0),
    # Seed-OSS: q/k/v biases without an o_proj bias (attention_out_bias).
    "seed_oss": dict(model_type="seed_oss", num_hidden_layers=2, num_key_value_heads=2,
                     head_dim=16, attention_bias=True, attention_out_bias=False, pad_token_id=0),
    # Ministral: Mistral's block with a window on the layers layer_types says.
    "ministral": dict(model_type="ministral", num_hidden_layers=2, num_key_value_heads=2, head_dim=16,
                      sliding_window=5, layer_types=["sliding_attention", "full_attention"]),
    # VaultGemma: Gemma 2 without the norms after each sub-layer.
    "vaultgemma": dict(model_type="vaultgemma", num_hidden_layers=3, num_key_value_heads=2,
                       head_dim=16, query_pre_attn_scalar=24, attn_logit_softcapping=5.0,
                       final_logit_softcapping=3.0, sliding_window=5,
                       hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True),
    # OLMo (1): LayerNorms without a learned gain or bias (no tensors in the
    # checkpoint), q, k and v clamped (clip_qkv, as OLMo-7B-0424).
    "olmo": dict(model_type="olmo", num_hidden_layers=2, num_key_value_heads=2, clip_qkv=0.5),
    # OLMo 3: OLMo 2's post-sub-layer norms and whole-projection QK-norms,
    # a sliding and a global layer, YaRN on the global one only.
    "olmo3": dict(model_type="olmo3", num_hidden_layers=2, num_key_value_heads=2, sliding_window=5,
                  layer_types=["sliding_attention", "full_attention"],
                  rope_scaling=dict(rope_type="yarn", factor=4.0,
                                    original_max_position_embeddings=16)),
    # EXAONE 4: the same post-sub-layer norms with per-head QK-norms; the
    # sliding layer rotates, the global one has no positions.
    "exaone4": dict(model_type="exaone4", num_hidden_layers=2, num_key_value_heads=2,
                    sliding_window=5, sliding_window_pattern=2),
    # ERNIE 4.5: interleaved-pair RoPE over whole heads, biases on every
    # projection (use_bias), tied embeddings.
    "ernie4_5": dict(model_type="ernie4_5", num_hidden_layers=2, num_key_value_heads=2,
                     head_dim=16, use_bias=True),
    # HunYuan dense: per-head QK RMSNorms after RoPE, NTK-alpha RoPE (a
    # "dynamic" scaling with an alpha: a larger base, whatever the length).
    "hunyuan-dense": dict(model_type="hunyuan_v1_dense", num_hidden_layers=2,
                          num_key_value_heads=2, head_dim=16, attention_bias=True,
                          rope_scaling=dict(type="dynamic", alpha=1000.0, factor=1.0)),
    # NanoChat: no learned norm gains (the embeddings normed too), per-head
    # QK RMSNorms after a RoPE turning the other way, squared-ReLU MLP,
    # soft-capped logits.
    "nanochat": dict(model_type="nanochat", num_hidden_layers=2, num_key_value_heads=2,
                     final_logit_softcapping=3.0),
    # Arcee (AFM): Llama's RMSNorm and attention, a squared-ReLU MLP
    # (up_proj, down_proj), no gate.
    "arcee": dict(model_type="arcee", num_hidden_layers=2, num_key_value_heads=2),
    # SmolLM3: Llama with a NoPE layer (no_rope_layers: every second layer
    # here, every fourth by default) that also takes the sliding window.
    "smollm3": dict(model_type="smollm3", num_hidden_layers=2, num_key_value_heads=2,
                    no_rope_layer_interval=2, use_sliding_window=True, sliding_window=5,
                    pad_token_id=0, bos_token_id=1, eos_token_id=2),
    # Granite 3: Llama with an embedding multiplier, an attention scale in
    # place of head_dim^-0.5, each sub-layer's output scaled before its
    # residual add, and the logits divided by logits_scaling.
    "granite": dict(model_type="granite", num_hidden_layers=2, num_key_value_heads=2,
                    embedding_multiplier=3.0, attention_multiplier=0.2,
                    residual_multiplier=0.22, logits_scaling=4.0, tie_word_embeddings=True),
    # Cohere (Command R): the parallel block on one bias-free LayerNorm,
    # interleaved-pair RoPE over whole heads, SwiGLU, tied embeddings,
    # logits times logit_scale.
    "cohere": dict(model_type="cohere", num_hidden_layers=2, num_key_value_heads=2,
                   logit_scale=0.25, tie_word_embeddings=True, pad_token_id=0,
                   bos_token_id=1, eos_token_id=2),
    # Command R+'s attention: use_qk_norm, a bias-free LayerNorm of each
    # query and key head with a gain each (q_norm.weight [heads, head_dim]).
    "cohere-qk-norm": dict(model_type="cohere", num_hidden_layers=2, num_key_value_heads=2,
                           use_qk_norm=True, logit_scale=0.25, tie_word_embeddings=True,
                           pad_token_id=0, bos_token_id=1, eos_token_id=2),
    # Cohere 2 (Command R7B, Command A): Cohere's parallel block, sliding
    # layers with interleaved-pair RoPE and global layers without positions
    # (NoPE); one of each here (three sliding in four by default).
    "cohere2": dict(model_type="cohere2", num_hidden_layers=2, num_key_value_heads=2,
                    sliding_window=5, sliding_window_pattern=2, logit_scale=0.25,
                    tie_word_embeddings=True, pad_token_id=0, bos_token_id=1, eos_token_id=2),
    # Falcon-7B's block: multi-query [q heads; k; v] rows, one LayerNorm
    # for both parallel branches, exact GELU, no biases, tied embeddings.
    "falcon": dict(model_type="falcon", num_hidden_layers=2, multi_query=True,
                   parallel_attn=True, bias=False, ffn_hidden_size=INTER),
    # Falcon's new decoder (40B, 180B): query_key_value grouped per
    # key/value head ([q q k v] for 4 heads on 2), two LayerNorms (ln_attn,
    # ln_mlp) for the parallel branches, biases.
    "falcon-new": dict(model_type="falcon", num_hidden_layers=2, new_decoder_architecture=True,
                       num_kv_heads=2, bias=True, ffn_hidden_size=INTER),
}
# Their own field names: COMMON's would collide with them.
OWN_FIELDS = ("gpt2", "gpt_bigcode", "bloom", "mpt", "gptj", "gpt_neo", "opt")


def randomize(model, gemma):
    """Weights large enough that every op matters (HF's 0.02 init makes the
    logits nearly uniform)."""
    g = torch.Generator().manual_seed(1234)
    with torch.no_grad():
        for name, p in model.named_parameters():
            # Cohere's per-head QK-norm gains are [heads, head_dim]: gains.
            if p.ndim >= 2 and not name.endswith(("q_norm.weight", "k_norm.weight")):
                fan_in = p.shape[0] if "c_attn" in name or "c_proj" in name or "c_fc" in name else p.shape[-1]
                std = 1.0 if "embed" in name or "wte" in name or "wpe" in name else fan_in ** -0.5
                p.copy_(torch.randn(p.shape, generator=g) * std)
            else:
                is_gain = "norm" in name or "ln_" in name or "layernorm" in name
                base = 1.0 if is_gain and not gemma and name.endswith("weight") else 0.0
                p.copy_(base + 0.1 * torch.randn(p.shape, generator=g))


def save_reference(model, tokens, path):
    """logits.npy, decode_logits.npy, tokens.txt and generated.txt of `model`."""
    seq = tokens.shape[1]
    with torch.no_grad():
        logits = model(tokens).logits[0].float().numpy()
        # Every prompt token is attended: without a mask generate() would
        # mask the ids equal to pad_token_id (0 is one of the random ids of
        # an 80-token prompt).
        out = model.generate(tokens, attention_mask=torch.ones_like(tokens), max_new_tokens=4,
                             do_sample=False, output_logits=True, return_dict_in_generate=True,
                             pad_token_id=0)
    generated = out.sequences[0, seq:].tolist()
    decode_logits = torch.stack([l[0] for l in out.logits]).float().numpy()
    np.save(os.path.join(path, "logits.npy"), logits.astype(np.float32))
    np.save(os.path.join(path, "decode_logits.npy"), decode_logits.astype(np.float32))
    with open(os.path.join(path, "tokens.txt"), "w") as f:
        f.write(",".join(str(t) for t in tokens[0].tolist()) + "\n")
    with open(os.path.join(path, "generated.txt"), "w") as f:
        f.write(",".join(str(t) for t in generated) + "\n")
    return generated


def build_bf16(src, dst):
    """The fixture at `src` with its weights rounded to bf16: a BF16
    checkpoint at `dst` and the float32 logits of transformers on it."""
    os.makedirs(dst, exist_ok=True)
    tensors = load_file(os.path.join(src, "model.safetensors"))
    save_file({k: v.to(torch.bfloat16) if v.is_floating_point() else v for k, v in tensors.items()},
              os.path.join(dst, "model.safetensors"), metadata={"format": "pt"})
    # The config is the f32 fixture's (only the checkpoint's dtype differs).
    with open(os.path.join(src, "config.json")) as f:
        config = f.read()
    with open(os.path.join(dst, "config.json"), "w") as f:
        f.write(config)
    # Loaded as float32: the bf16 values widen exactly, and the buffers
    # transformers computes itself (RoPE's inverse frequencies) stay f32.
    model = AutoModelForCausalLM.from_pretrained(dst, attn_implementation="eager",
                                                 dtype=torch.float32)
    model.eval()
    with open(os.path.join(src, "tokens.txt")) as f:
        tokens = torch.tensor([[int(t) for t in f.read().strip().split(",")]])
    generated = save_reference(model, tokens, dst)
    print(f"{os.path.basename(dst)}: bf16 weights, generated {generated}")


def build(name, spec, out_dir):
    spec = dict(spec)
    model_type = spec.pop("model_type")
    seq = spec.pop("seq", SEQ)
    kwargs = dict(COMMON) if model_type not in OWN_FIELDS else {}
    kwargs.update(spec)
    config = AutoConfig.for_model(model_type, **kwargs)
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    randomize(model, gemma=model_type.startswith("gemma"))
    model.eval()
    path = os.path.join(out_dir, name)
    os.makedirs(path, exist_ok=True)
    model.save_pretrained(path, safe_serialization=True)
    for extra in ("generation_config.json",):
        if os.path.exists(os.path.join(path, extra)):
            os.remove(os.path.join(path, extra))
    tokens = torch.randint(0, config.vocab_size, (1, seq), generator=torch.Generator().manual_seed(7))
    generated = save_reference(model, tokens, path)
    arch = json.load(open(os.path.join(path, "config.json")))["architectures"][0]
    print(f"{name}: {arch}, {sum(p.numel() for p in model.parameters())} params, "
          f"generated {generated}")


# Native-spec models no Hugging Face decoder implements, with a reference
# written here in PyTorch from the spec's definition (docs/spec.md).
NATIVE_FIXTURES = {
    # T5's learned relative-position bias in a pre-norm decoder: 8 causal
    # buckets (4 exact distances, then logarithmic up to 12, beyond which
    # distances share the last bucket: the 12 + 4 positions reach it), one
    # table shared by all layers, T5's unscaled logits.
    "t5-bias": dict(relative=dict(num_buckets=8, max_distance=12, bidirectional=False,
                                  per_layer=False), scale=1.0),
    # One table per layer, buckets of the bidirectional rule (a causal
    # decoder only ever sees its lower half).
    "t5-bias-per-layer": dict(relative=dict(num_buckets=16, max_distance=10,
                                            bidirectional=True, per_layer=True), scale=0.25),
}


class RelativeBiasDecoder(torch.nn.Module):
    """The native spec's pre-norm RMSNorm / SwiGLU decoder with T5's
    relative-position bias added to the logits (no RoPE): logits of head h
    for a query at p and a key at j <= p are scale * q.k + table[bucket(j -
    p), h], bucket() being transformers' own T5 function."""

    def __init__(self, layers, heads, relative, scale):
        super().__init__()
        from transformers.models.t5.modeling_t5 import T5Attention
        self.bucket = T5Attention._relative_position_bucket
        self.heads, self.scale, self.rel = heads, scale, relative
        n = torch.nn
        self.embed = n.Embedding(VOCAB, HIDDEN)
        self.layers = n.ModuleList()
        for _ in range(layers):
            layer = n.ModuleDict(dict(
                input_layernorm=n.RMSNorm(HIDDEN, eps=1e-5),
                q_proj=n.Linear(HIDDEN, HIDDEN, bias=False), k_proj=n.Linear(HIDDEN, HIDDEN, bias=False),
                v_proj=n.Linear(HIDDEN, HIDDEN, bias=False), o_proj=n.Linear(HIDDEN, HIDDEN, bias=False),
                post_attention_layernorm=n.RMSNorm(HIDDEN, eps=1e-5),
                gate_proj=n.Linear(HIDDEN, INTER, bias=False), up_proj=n.Linear(HIDDEN, INTER, bias=False),
                down_proj=n.Linear(INTER, HIDDEN, bias=False)))
            if relative["per_layer"]:
                layer["relative_attention_bias"] = n.Embedding(relative["num_buckets"], heads)
            self.layers.append(layer)
        if not relative["per_layer"]:
            self.relative_attention_bias = n.Embedding(relative["num_buckets"], heads)
        self.norm = n.RMSNorm(HIDDEN, eps=1e-5)
        self.lm_head = n.Linear(HIDDEN, VOCAB, bias=False)

    def forward(self, ids):
        T, H, D = ids.shape[1], self.heads, HIDDEN // self.heads
        pos = torch.arange(T)
        buckets = self.bucket(pos[None, :] - pos[:, None], bidirectional=self.rel["bidirectional"],
                              num_buckets=self.rel["num_buckets"],
                              max_distance=self.rel["max_distance"])  # [query, key]
        mask = torch.full((T, T), float("-inf")).triu(1)
        x = self.embed(ids)
        for layer in self.layers:
            table = layer["relative_attention_bias"] if self.rel["per_layer"] else self.relative_attention_bias
            bias = table(buckets).permute(2, 0, 1)  # [heads, query, key]
            h = layer["input_layernorm"](x)
            q, k, v = (layer[n](h).view(1, T, H, D).transpose(1, 2) for n in ("q_proj", "k_proj", "v_proj"))
            scores = q @ k.transpose(-1, -2) * self.scale + bias + mask
            a = (scores.float().softmax(-1) @ v).transpose(1, 2).reshape(1, T, HIDDEN)
            x = x + layer["o_proj"](a)
            h = layer["post_attention_layernorm"](x)
            x = x + layer["down_proj"](torch.nn.functional.silu(layer["gate_proj"](h)) * layer["up_proj"](h))
        return self.lm_head(self.norm(x))


def build_native(name, spec, out_dir):
    """A native-spec fixture: config.json holds the spec, the checkpoint uses
    the spec's tensor names, the logits come from RelativeBiasDecoder (decode
    steps by recomputing the growing sequence: the reference has no cache)."""
    torch.manual_seed(0)
    layers, heads = 2, 4
    model = RelativeBiasDecoder(layers, heads, spec["relative"], spec["scale"])
    randomize(model, gemma=False)
    with torch.no_grad():  # biases large enough to move the softmax
        for n_, p in model.named_parameters():
            if "relative_attention_bias" in n_:
                p.copy_(torch.randn(p.shape, generator=torch.Generator().manual_seed(5)) * 2.0)
    model.eval()
    path = os.path.join(out_dir, name)
    os.makedirs(path, exist_ok=True)
    config = {"tbc_spec": 1, "name": f"{name}: T5 relative-position bias (make_fixtures.py)",
              "vocab_size": VOCAB, "hidden_size": HIDDEN, "num_layers": layers,
              "norm": {"kind": "rms", "placement": "pre", "eps": 1e-5},
              "attention": {"heads": heads, "scale": spec["scale"]},
              "ffn": {"kind": "glu", "activation": "silu", "d_ff": INTER},
              "positions": dict(kind="relative", **spec["relative"])}
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    names = {"embed.weight": "model.embed_tokens.weight", "norm.weight": "model.norm.weight",
             "lm_head.weight": "lm_head.weight",
             "relative_attention_bias.weight": "model.relative_attention_bias.weight"}
    tensors = {}
    for key, value in model.state_dict().items():
        if key.startswith("layers."):
            _, i, rest = key.split(".", 2)
            sub = {"input_layernorm": "", "post_attention_layernorm": "", "relative_attention_bias": "self_attn.",
                   "q_proj": "self_attn.", "k_proj": "self_attn.", "v_proj": "self_attn.",
                   "o_proj": "self_attn.", "gate_proj": "mlp.", "up_proj": "mlp.", "down_proj": "mlp."}
            tensors[f"model.layers.{i}.{sub[rest.split('.')[0]]}{rest}"] = value.contiguous()
        else:
            tensors[names[key]] = value.contiguous()
    save_file(tensors, os.path.join(path, "model.safetensors"), metadata={"format": "pt"})
    tokens = torch.randint(0, VOCAB, (1, SEQ), generator=torch.Generator().manual_seed(7))
    with torch.no_grad():
        logits = model(tokens)[0]
        seq, generated, decode_logits = tokens, [], []
        for _ in range(4):  # as generate(output_logits=True): the logits each token came from
            last = model(seq)[0, -1]
            decode_logits.append(last)
            generated.append(int(last.argmax()))
            seq = torch.cat([seq, torch.tensor([[generated[-1]]])], dim=1)
    np.save(os.path.join(path, "logits.npy"), logits.numpy().astype(np.float32))
    np.save(os.path.join(path, "decode_logits.npy"), torch.stack(decode_logits).numpy().astype(np.float32))
    with open(os.path.join(path, "tokens.txt"), "w") as f:
        f.write(",".join(str(t) for t in tokens[0].tolist()) + "\n")
    with open(os.path.join(path, "generated.txt"), "w") as f:
        f.write(",".join(str(t) for t in generated) + "\n")
    print(f"{name}: native spec, generated {generated}")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--bf16":
        src_dir, out_dir = sys.argv[2], sys.argv[3]
        only = sys.argv[4:]
        for name in sorted(os.listdir(src_dir)):
            if name in NATIVE_FIXTURES:  # no transformers model to load them
                continue
            if os.path.isdir(os.path.join(src_dir, name)) and (not only or name in only):
                build_bf16(os.path.join(src_dir, name), os.path.join(out_dir, name))
        return
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "test/fixtures"
    only = sys.argv[2:]
    print(f"torch {torch.__version__}, transformers {transformers.__version__}")
    for name, spec in FIXTURES.items():
        if not only or name in only:
            build(name, spec, out_dir)
    for name, spec in NATIVE_FIXTURES.items():
        if not only or name in only:
            build_native(name, spec, out_dir)


if __name__ == "__main__":
    main()
