//===- HFParallel.cpp - families built on parallel blocks -----------------===//
//
// GPT-NeoX, GPT-J, Phi-1/2, Falcon and Cohere (1, 2): attention and MLP side by
// side on one or two norms, fused or separate QKV, GPT-J-style or NeoX RoPE.
//
//===----------------------------------------------------------------------===//

#include "HFReaders.h"

using namespace tbc;
using namespace tbc::hf;

namespace {
using L = SpecLimits;
} // namespace

void hf::readGPTNeoX(JsonFields &f, ModelSpec &s) {
  if (!readSizes(f, s, "hidden_size", "num_hidden_layers", "num_attention_heads"))
    return;
  s.ffnSize = f.reqInt("intermediate_size", 1, L::kMaxFfn);
  s.maxPositions = f.getInt("max_position_embeddings", 2048, 0, L::kMaxPositions);
  if (!f.ok())
    return;
  s.norm = {NormType::LayerNorm, f.getNumber("layer_norm_eps", 1e-5), 0.0,
            true};
  s.parallelBlock = f.getBool("use_parallel_residual", true);
  s.ffnKind = FfnKind::Mlp;
  s.activation = activationFromHF(f, "hidden_act", "gelu");
  s.qkvBias = s.oBias = f.getBool("attention_bias", true);
  s.ffnBias = s.downBias = true;
  s.tiedEmbeddings = f.getBool("tie_word_embeddings", false);
  s.qkvLayout = QkvLayout::FusedPerHead;
  s.names = {};
  s.names.embed = "gpt_neox.embed_in.weight";
  s.names.layerPrefix = "gpt_neox.layers.{i}.";
  s.names.finalNorm = "gpt_neox.final_layer_norm";
  s.names.lmHead = "embed_out.weight";
  s.names.attnPreNorm = "input_layernorm";
  s.names.ffnPreNorm = "post_attention_layernorm";
  s.names.qkv = "attention.query_key_value";
  s.names.o = "attention.dense";
  s.names.up = "mlp.dense_h_to_4h";
  s.names.down = "mlp.dense_4h_to_h";
  layerWindows(f, s, 0, [](int64_t) { return false; });
  double theta = f.optPositive("rotary_emb_base").value_or(10000.0);
  double pct = f.getNumber("rotary_pct", 0.25);
  if (f.ok() && !(pct > 0 && pct <= 1))
    f.fail("rotary_pct", "must be in (0, 1]");
  readRope(f, s, theta, pct);
}

/// GPT-J: the parallel block on one LayerNorm, unbiased attention, a biased
/// GELU-tanh MLP and LM head, GPT-J-style (interleaved pairs) RoPE on the
/// first rotary_dim dims of each head, base 10000.
void hf::readGPTJ(JsonFields &f, ModelSpec &s) {
  if (!readSizes(f, s, "n_embd", "n_layer", "n_head"))
    return;
  // The size of transformers' sin/cos table: positions past it fail there.
  s.maxPositions = f.getInt("n_positions", 2048, 1, L::kMaxPositions);
  s.ffnSize = f.getInt("n_inner", 4 * s.hiddenSize, 1, L::kMaxFfn);
  // rotary_dim defaults to 64; set to null, transformers builds a table of
  // n_embd dims and multiplies each head of head_dim by it: not a model
  // that runs.
  if (f.ok() && !f.absent("rotary_dim") && !f.has("rotary_dim"))
    f.fail("rotary_dim", "GPT-J without rotary_dim is not supported (transformers "
                         "then rotates each head by a table of n_embd dims)");
  int64_t rotaryDim = f.getInt("rotary_dim", 64, 1, L::kMaxHeadDim);
  if (!f.ok())
    return;
  s.norm = {NormType::LayerNorm, f.getNumber("layer_norm_epsilon", 1e-5), 0.0, true};
  s.ffnKind = FfnKind::Mlp;
  s.activation = activationFromHF(f, "activation_function", "gelu_new");
  s.ffnBias = s.downBias = s.lmHeadBias = true;
  s.tiedEmbeddings = f.getBool("tie_word_embeddings", false);
  s.names = {};
  s.names.embed = "transformer.wte.weight";
  s.names.layerPrefix = "transformer.h.{i}.";
  s.names.finalNorm = "transformer.ln_f";
  s.names.lmHead = "lm_head.weight";
  s.names.lmHeadBias = "lm_head.bias";
  s.names.attnPreNorm = "ln_1";
  s.names.q = "attn.q_proj";
  s.names.k = "attn.k_proj";
  s.names.v = "attn.v_proj";
  s.names.o = "attn.out_proj";
  s.names.up = "mlp.fc_in";
  s.names.down = "mlp.fc_out";
  shareParallelNorm(s);
  layerWindows(f, s, 0, [](int64_t) { return false; });
  RopeSpec rope;
  rope.gptjStyle = true;
  rope.rotaryDim = rotaryDim;
  for (LayerVariant &l : s.layers)
    l.rope = rope;
}

/// Phi-1, Phi-1.5 and Phi-2: LayerNorm, the parallel block on one norm,
/// biases on every projection and on the LM head, a GELU-tanh MLP, partial
/// NeoX RoPE (half the head by default); with qk_layernorm a LayerNorm
/// (gain and bias) of each query and key head, one for all heads.
void hf::readPhi(JsonFields &f, ModelSpec &s) {
  readLlamaCommon(f, s, {2048});
  if (!f.ok())
    return;
  s.norm = {NormType::LayerNorm, f.getNumber("layer_norm_eps", 1e-5), 0.0, true};
  if (f.getBool("qk_layernorm", false)) {
    s.qkNorm = QKNormKind::PerHead;
    s.names.qNorm = "self_attn.q_layernorm";
    s.names.kNorm = "self_attn.k_layernorm";
  }
  s.ffnKind = FfnKind::Mlp;
  s.activation = activationFromHF(f, "hidden_act", "gelu_new");
  s.qkvBias = s.oBias = s.ffnBias = s.downBias = true;
  s.lmHeadBias = true;
  s.names.o = "self_attn.dense";
  s.names.gate = "";
  s.names.up = "mlp.fc1";
  s.names.down = "mlp.fc2";
  s.names.finalNorm = "model.final_layernorm";
  s.names.lmHeadBias = "lm_head.bias";
  shareParallelNorm(s);
  layerWindows(f, s, 0, [](int64_t) { return false; });
  readRope(f, s, 10000.0, 0.5);
}

/// Falcon: LayerNorms with biases, GELU MLPs, NeoX RoPE, one fused
/// query_key_value in each of its three layouts: Falcon-7B's multi-query
/// [q heads; k; v] rows, per-head [q k v] without multi_query, and the new
/// decoder's (40B, 180B, Falcon 2) per key/value group [q..., k, v]. Blocks
/// are serial, parallel on one norm (7B, Falcon 2) or parallel on two
/// (ln_attn, ln_mlp: the new decoder's default).
void hf::readFalcon(JsonFields &f, ModelSpec &s) {
  auto either = [&](const char *key, const char *legacy) {
    return f.has(key) || !f.has(legacy) ? key : legacy;
  };
  if (!readSizes(f, s, either("hidden_size", "n_embed"), either("num_hidden_layers", "n_layer"),
                 either("num_attention_heads", "n_head")))
    return;
  s.maxPositions = f.getInt("max_position_embeddings", 2048, 0, L::kMaxPositions);
  if (f.ok() && f.getBool("alibi", false))
    f.fail("alibi", "Falcon with ALiBi (Falcon-RW) is not supported");
  if (!f.ok())
    return;
  s.ffnSize = f.getInt("ffn_hidden_size", 4 * s.hiddenSize, 1, L::kMaxFfn);
  bool newDecoder = f.getBool("new_decoder_architecture", false);
  bool parallel = f.getBool("parallel_attn", true);
  s.numKvHeads = newDecoder ? f.getInt("num_kv_heads", s.numHeads, 1, L::kMaxHeads)
                 : f.getBool("multi_query", true) ? 1
                                                  : s.numHeads;
  s.qkvLayout = newDecoder || s.numKvHeads == s.numHeads ? QkvLayout::FusedPerHead
                                                         : QkvLayout::FusedRows;
  s.norm = {NormType::LayerNorm, f.getNumber("layer_norm_epsilon", 1e-5), 0.0, true};
  s.ffnKind = FfnKind::Mlp;
  s.activation = activationFromHF(f, "activation", "gelu");
  s.qkvBias = s.oBias = s.ffnBias = s.downBias = f.getBool("bias", false);
  s.tiedEmbeddings = f.getBool("tie_word_embeddings", true);
  s.names = {};
  s.names.embed = "transformer.word_embeddings.weight";
  s.names.layerPrefix = "transformer.h.{i}.";
  s.names.finalNorm = "transformer.ln_f";
  s.names.lmHead = "lm_head.weight";
  s.names.qkv = "self_attention.query_key_value";
  s.names.o = "self_attention.dense";
  s.names.up = "mlp.dense_h_to_4h";
  s.names.down = "mlp.dense_4h_to_h";
  int64_t norms = newDecoder ? f.getInt("num_ln_in_parallel_attn", 2, 1, 2) : 1;
  if (f.ok() && newDecoder && norms == 1 && !parallel)
    f.fail("parallel_attn", "a new-decoder Falcon with one norm must be parallel "
                            "(transformers has no MLP input otherwise)");
  if (newDecoder && norms == 2) {
    s.parallelBlock = true;
    s.names.attnPreNorm = "ln_attn";
    s.names.ffnPreNorm = "ln_mlp";
  } else {
    s.names.attnPreNorm = "input_layernorm";
    s.names.ffnPreNorm = "post_attention_layernorm";
    if (parallel)
      shareParallelNorm(s);
  }
  layerWindows(f, s, 0, [](int64_t) { return false; });
  readRope(f, s, 10000.0);
}

/// Cohere (Command R): the parallel block on one bias-free LayerNorm,
/// GPT-J-style (interleaved pairs) RoPE, SwiGLU, tied embeddings, logits
/// multiplied by logit_scale; with use_qk_norm (Command R+) a bias-free
/// LayerNorm of each query and key head, each head its own gain
/// (q_norm.weight [heads, head_dim]).
void hf::readCohere(JsonFields &f, ModelSpec &s) {
  readCohereBlock(f, s);
  if (!f.ok())
    return;
  if (f.getBool("use_qk_norm", false)) {
    s.qkNorm = QKNormKind::PerHeadStacked;
    s.names.qNorm = "self_attn.q_norm";
    s.names.kNorm = "self_attn.k_norm";
  }
  layerWindows(f, s, 0, [](int64_t) { return false; });
  readCohereRope(f, s, 500000.0);
}

/// Cohere 2 (Command R7B, Command A): Cohere's block, and sliding-window
/// layers (three in four by default: sliding_window_pattern, or
/// layer_types) that alone rotate their queries and keys: the global
/// layers have no positions (NoPE).
void hf::readCohere2(JsonFields &f, ModelSpec &s) {
  readCohereBlock(f, s);
  if (!f.ok())
    return;
  // transformers derives the head dim from the hidden size, whatever the
  // config says.
  if (s.hiddenSize % s.numHeads != 0) {
    f.fail("num_attention_heads", "hidden_size " + std::to_string(s.hiddenSize) +
                                      " is not divisible by num_attention_heads " +
                                      std::to_string(s.numHeads));
    return;
  }
  s.headDim = s.hiddenSize / s.numHeads;
  int64_t window = slidingWindow(f, 4096);
  int64_t pattern = f.getInt("sliding_window_pattern", 4, 1, L::kMaxLayers);
  layerWindows(f, s, window, [&](int64_t i) { return (i + 1) % pattern != 0; });
  if (!f.ok())
    return;
  for (LayerVariant &l : s.layers)
    l.noRope = l.window == 0;
  readCohereRope(f, s, 10000.0);
}

/// What Cohere and Cohere 2 share: the parallel block on one bias-free
/// LayerNorm, tied embeddings, the logit scale.
void hf::readCohereBlock(JsonFields &f, ModelSpec &s) {
  readLlamaCommon(f, s, {8192});
  if (!f.ok())
    return;
  s.norm = {NormType::LayerNorm, f.getNumber("layer_norm_eps", 1e-5), 0.0, false};
  s.tiedEmbeddings = f.getBool("tie_word_embeddings", true);
  s.qkvBias = s.oBias = f.getBool("attention_bias", false);
  s.logitScale = f.getNumber("logit_scale", 0.0625);
  shareParallelNorm(s);
}

/// Cohere's RoPE: interleaved pairs (GPT-J's style) over whole heads;
/// `classTheta`: the config class's base (Cohere's 500000, Cohere 2's 10000).
void hf::readCohereRope(JsonFields &f, ModelSpec &s, double classTheta) {
  readRope(f, s, classTheta);
  for (LayerVariant &l : s.layers)
    l.rope.gptjStyle = true;
}
