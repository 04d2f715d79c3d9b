//===- HFConfig.cpp - Hugging Face config.json -> ModelSpec ---------------===//
//
// One function per family of `architectures`; the quirks of each follow
// transformers' modeling_<arch>.py (see ../shared/docs/ARCHITECTURES.md).
//
//===----------------------------------------------------------------------===//

#include "JsonFields.h"
#include "RopeScalingFields.h"
#include "tbc/Frontend/ModelReaders.h"

#include "tbc/Dialect/PositionBias.h"

#include <cmath>
#include <functional>
#include <map>

using namespace tbc;

namespace {
using L = SpecLimits;

/// Maps transformers' activation names onto tbc::Activation keywords.
std::string activationFromHF(JsonFields &f, const std::string &key,
                             const std::string &dflt) {
  std::string act = f.getString(key, dflt);
  static const std::map<std::string, std::string> known = {
      {"silu", "silu"},           {"swish", "silu"},
      {"gelu", "gelu"},           {"gelu_new", "gelu_tanh"},
      {"gelu_pytorch_tanh", "gelu_tanh"},
      {"relu", "relu"},           {"sigmoid", "sigmoid"}};
  auto it = known.find(act);
  if (it != known.end())
    return it->second;
  f.fail(key, "unsupported activation '" + act +
                  "' (supported: silu, swish, gelu, gelu_new, "
                  "gelu_pytorch_tanh, relu, sigmoid)");
  return dflt;
}

/// Per-layer attention kinds from `layer_types` when present, else from
/// `isSliding(i)`.
void layerWindows(JsonFields &f, ModelSpec &spec, int64_t window,
                  const std::function<bool(int64_t)> &isSliding) {
  spec.layers.assign(spec.numLayers, LayerVariant{});
  const json::Value *types = f.raw("layer_types");
  if (types) {
    if (!types->isArray() ||
        int64_t(types->elements().size()) != spec.numLayers) {
      f.fail("layer_types", "expected an array of " +
                                std::to_string(spec.numLayers) +
                                " strings (one per layer)");
      return;
    }
  }
  for (int64_t i = 0; i < spec.numLayers; ++i) {
    bool sliding = isSliding(i);
    if (types) {
      const json::Value &t = types->elements()[i];
      if (!t.isString() || (t.asString() != "sliding_attention" &&
                            t.asString() != "full_attention")) {
        f.fail("layer_types", "entry " + std::to_string(i) +
                                  " must be \"sliding_attention\" or "
                                  "\"full_attention\"");
        return;
      }
      sliding = t.asString() == "sliding_attention";
    }
    if (sliding && window <= 0) {
      f.fail("sliding_window",
             "layer " + std::to_string(i) +
                 " uses sliding attention but no sliding_window is set");
      return;
    }
    spec.layers[i].window = sliding ? window : 0;
  }
}


/// Fields every Llama-like config shares (Llama, Mistral, Qwen2/3, Phi-3,
/// OLMo 2, Gemma 2/3).
void readLlamaCommon(JsonFields &f, ModelSpec &s) {
  s.vocabSize = f.reqInt("vocab_size", 1, L::kMaxVocab);
  s.hiddenSize = f.reqInt("hidden_size", 1, L::kMaxHidden);
  s.numLayers = f.reqInt("num_hidden_layers", 1, L::kMaxLayers);
  s.numHeads = f.reqInt("num_attention_heads", 1, L::kMaxHeads);
  s.numKvHeads = f.getInt("num_key_value_heads", s.numHeads, 1, L::kMaxHeads);
  s.ffnSize = f.reqInt("intermediate_size", 1, L::kMaxFfn);
  s.maxPositions = f.getInt("max_position_embeddings", 0, 0, L::kMaxPositions);
  if (!f.ok())
    return;
  if (f.has("head_dim")) {
    s.headDim = f.reqInt("head_dim", 1, L::kMaxHeadDim);
  } else if (s.hiddenSize % s.numHeads != 0) {
    f.fail("num_attention_heads",
           "hidden_size " + std::to_string(s.hiddenSize) +
               " is not divisible by num_attention_heads " +
               std::to_string(s.numHeads) + " (and no head_dim is given)");
  } else {
    s.headDim = s.hiddenSize / s.numHeads;
  }
  s.norm.kind = NormType::RMSNorm;
  s.norm.eps = f.getNumber("rms_norm_eps", 1e-6);
  s.tiedEmbeddings = f.getBool("tie_word_embeddings", false);
  s.ffnKind = FfnKind::Glu;
  s.activation = activationFromHF(f, "hidden_act", "silu");
  s.names.embed = "model.embed_tokens.weight";
  s.names.layerPrefix = "model.layers.{i}.";
  s.names.finalNorm = "model.norm";
  s.names.lmHead = "lm_head.weight";
  s.names.attnPreNorm = "input_layernorm";
  s.names.ffnPreNorm = "post_attention_layernorm";
  s.names.q = "self_attn.q_proj";
  s.names.k = "self_attn.k_proj";
  s.names.v = "self_attn.v_proj";
  s.names.o = "self_attn.o_proj";
  s.names.gate = "mlp.gate_proj";
  s.names.up = "mlp.up_proj";
  s.names.down = "mlp.down_proj";
}

/// One set of RoPE parameters: `thetaAndPartial` holds rope_theta and
/// partial_rotary_factor, `scaling` the scaling fields (the same object in
/// transformers 5's rope_parameters; the top level and rope_scaling in 4).
RopeSpec ropeFrom(JsonFields &thetaAndPartial, JsonFields *scaling, const ModelSpec &s,
                  double defaultTheta, double defaultPartial, RopeScalingContext c) {
  RopeSpec rope;
  JsonFields &r = thetaAndPartial;
  rope.theta = r.optPositive("rope_theta").value_or(defaultTheta);
  double partial = r.getNumber("partial_rotary_factor", defaultPartial);
  if (!(partial > 0 && partial <= 1)) {
    // Never converted: a factor like 1e38 would overflow the rotary dims.
    if (r.ok())
      r.fail("partial_rotary_factor", "must be in (0, 1]");
    return rope;
  }
  rope.rotaryDim = int64_t(double(s.headDim) * partial);
  c.rotaryDim = rope.rotaryDim;
  if (scaling && r.ok())
    rope.scaling = readRopeScaling(*scaling, c);
  return rope;
}

/// RoPE of every layer. transformers 5 writes `rope_parameters` (one object,
/// or one per layer type: `full_attention` / `sliding_attention`);
/// transformers 4 writes top-level `rope_theta`, `rope_scaling` and
/// `partial_rotary_factor`. Returns true when per-type parameters were read.
/// `phi3`: 'su' and 'yarn' scalings are Phi-3's names for longrope.
bool readRope(JsonFields &f, ModelSpec &s, double defaultTheta,
              double defaultPartial = 1.0, bool phi3 = false) {
  defaultPartial = f.getNumber("partial_rotary_factor", defaultPartial);
  RopeScalingContext c;
  c.maxPositions = s.maxPositions;
  c.phi3 = phi3;
  // A top-level original length wins over the scaling object's, except in
  // per-layer-type parameters (as transformers' standardize_rope_params).
  RopeScalingContext perType = c;
  c.originalMaxPosition =
      f.optInt("original_max_position_embeddings", 1, L::kMaxPositions);
  if (phi3 && !c.originalMaxPosition)
    c.originalMaxPosition = 4096; // Phi3Config's default
  auto all = [&](const RopeSpec &rope) {
    for (LayerVariant &l : s.layers)
      l.rope = rope;
    extendPositionsForDynamicRope(s);
  };
  if (const json::Value *rp = f.getObject("rope_parameters")) {
    JsonFields r = f.nested(*rp, "rope_parameters");
    const json::Value *full = r.getObject("full_attention");
    const json::Value *sliding = r.getObject("sliding_attention");
    if (full || sliding) {
      std::optional<RopeSpec> fullRope, slidingRope;
      if (full) {
        JsonFields fr = r.nested(*full, "full_attention");
        fullRope = ropeFrom(fr, &fr, s, defaultTheta, defaultPartial, perType);
      }
      if (sliding) {
        JsonFields sr = r.nested(*sliding, "sliding_attention");
        slidingRope = ropeFrom(sr, &sr, s, defaultTheta, defaultPartial, perType);
      }
      for (LayerVariant &l : s.layers)
        l.rope = (l.window > 0 && slidingRope) || !fullRope ? *slidingRope
                                                             : *fullRope;
      extendPositionsForDynamicRope(s);
      return true;
    }
    all(ropeFrom(r, &r, s, defaultTheta, defaultPartial, c));
    return false;
  }
  std::optional<JsonFields> scaling;
  if (const json::Value *rs = f.getObject("rope_scaling"))
    scaling.emplace(f.nested(*rs, "rope_scaling"));
  all(ropeFrom(f, scaling ? &*scaling : nullptr, s, defaultTheta, defaultPartial, c));
  return false;
}

int64_t slidingWindow(JsonFields &f) {
  return f.getInt("sliding_window", 0, 0, L::kMaxPositions);
}

void readLlama(JsonFields &f, ModelSpec &s) {
  readLlamaCommon(f, s);
  bool attnBias = f.getBool("attention_bias", false);
  bool mlpBias = f.getBool("mlp_bias", false);
  s.qkvBias = s.oBias = attnBias;
  s.ffnBias = s.downBias = mlpBias;
  layerWindows(f, s, 0, [](int64_t) { return false; });
  readRope(f, s, 10000.0);
}

void readMistral(JsonFields &f, ModelSpec &s) {
  readLlamaCommon(f, s);
  int64_t window = slidingWindow(f);
  layerWindows(f, s, window, [&](int64_t) { return window > 0; });
  readRope(f, s, 10000.0);
}

void readQwen2(JsonFields &f, ModelSpec &s) {
  readLlamaCommon(f, s);
  s.qkvBias = true;
  bool useSliding = f.getBool("use_sliding_window", false);
  int64_t window = useSliding ? slidingWindow(f) : 0;
  int64_t maxWindowLayers = f.getInt("max_window_layers", 0, 0, L::kMaxLayers);
  layerWindows(f, s, window, [&](int64_t i) {
    return window > 0 && i >= maxWindowLayers;
  });
  readRope(f, s, 10000.0);
}

void readQwen3(JsonFields &f, ModelSpec &s) {
  readQwen2(f, s);
  s.qkvBias = s.oBias = f.getBool("attention_bias", false);
  s.qkNorm = QKNormKind::PerHead;
  s.names.qNorm = "self_attn.q_norm";
  s.names.kNorm = "self_attn.k_norm";
}

void readPhi3(JsonFields &f, ModelSpec &s) {
  readLlamaCommon(f, s);
  s.qkvLayout = QkvLayout::FusedRows;
  s.fusedGateUp = true;
  s.names.qkv = "self_attn.qkv_proj";
  s.names.gateUp = "mlp.gate_up_proj";
  s.names.q = s.names.k = s.names.v = s.names.gate = s.names.up = "";
  s.qkvBias = s.oBias = f.getBool("attention_bias", false);
  int64_t window = slidingWindow(f);
  layerWindows(f, s, window, [&](int64_t) { return window > 0; });
  if (!f.has("max_position_embeddings"))
    s.maxPositions = 4096; // Phi3Config's default
  readRope(f, s, 10000.0, 1.0, /*phi3=*/true);
}

void readOlmo2(JsonFields &f, ModelSpec &s) {
  readLlamaCommon(f, s);
  s.placement = NormPlacement::BranchPost;
  s.names.attnPreNorm = s.names.ffnPreNorm = "";
  s.names.attnPostNorm = "post_attention_layernorm";
  s.names.ffnPostNorm = "post_feedforward_layernorm";
  s.qkNorm = QKNormKind::Full;
  s.names.qNorm = "self_attn.q_norm";
  s.names.kNorm = "self_attn.k_norm";
  s.qkvBias = s.oBias = f.getBool("attention_bias", false);
  layerWindows(f, s, 0, [](int64_t) { return false; });
  readRope(f, s, 10000.0);
}

/// Gemma 2 and Gemma 3 text: sandwich norms with (1 + w), scaled
/// embeddings, query_pre_attn_scalar, GeGLU-tanh, alternating windows.
void readGemma(JsonFields &f, ModelSpec &s, bool gemma3) {
  readLlamaCommon(f, s);
  s.activation = activationFromHF(
      f, f.has("hidden_activation") ? "hidden_activation" : "hidden_act",
      "gelu_tanh");
  s.placement = NormPlacement::Sandwich;
  s.norm.gainOffset = 1.0;
  s.tiedEmbeddings = f.getBool("tie_word_embeddings", true);
  s.embeddingScale = std::sqrt(double(s.hiddenSize));
  s.names.ffnPreNorm = "pre_feedforward_layernorm";
  s.names.attnPostNorm = "post_attention_layernorm";
  s.names.ffnPostNorm = "post_feedforward_layernorm";
  double qpa = f.optPositive("query_pre_attn_scalar")
                   .value_or(double(s.headDim));
  s.attnScale = 1.0 / std::sqrt(qpa);
  s.attnSoftcap = f.optPositive("attn_logit_softcapping");
  s.finalSoftcap = f.optPositive("final_logit_softcapping");
  int64_t window = slidingWindow(f);
  if (!gemma3) {
    layerWindows(f, s, window, [](int64_t i) { return (i + 1) % 2 != 0; });
    readRope(f, s, 10000.0);
    return;
  }
  s.qkNorm = QKNormKind::PerHead;
  s.names.qNorm = "self_attn.q_norm";
  s.names.kNorm = "self_attn.k_norm";
  int64_t pattern = f.getInt("sliding_window_pattern", 6, 1, L::kMaxLayers);
  layerWindows(f, s, window,
               [&](int64_t i) { return (i + 1) % pattern != 0; });
  if (readRope(f, s, 1000000.0))
    return; // transformers 5: per-layer-type rope_parameters
  // Local layers use their own base and no scaling.
  double localTheta = f.optPositive("rope_local_base_freq").value_or(10000.0);
  for (LayerVariant &l : s.layers)
    if (l.window > 0) {
      l.rope.theta = localTheta;
      l.rope.scaling = {};
    }
}

void readGPTNeoX(JsonFields &f, ModelSpec &s) {
  s.vocabSize = f.reqInt("vocab_size", 1, L::kMaxVocab);
  s.hiddenSize = f.reqInt("hidden_size", 1, L::kMaxHidden);
  s.numLayers = f.reqInt("num_hidden_layers", 1, L::kMaxLayers);
  s.numHeads = f.reqInt("num_attention_heads", 1, L::kMaxHeads);
  s.numKvHeads = s.numHeads;
  s.ffnSize = f.reqInt("intermediate_size", 1, L::kMaxFfn);
  s.maxPositions = f.getInt("max_position_embeddings", 0, 0, L::kMaxPositions);
  if (f.ok() && s.hiddenSize % s.numHeads != 0)
    f.fail("num_attention_heads",
           "hidden_size " + std::to_string(s.hiddenSize) +
               " is not divisible by num_attention_heads " +
               std::to_string(s.numHeads));
  if (!f.ok())
    return;
  s.headDim = s.hiddenSize / s.numHeads;
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

/// Gemma (1): Llama's pre-norm block with Gemma's (1 + w) RMSNorm gain,
/// embeddings scaled by sqrt(hidden), GeGLU and tied embeddings.
void readGemma1(JsonFields &f, ModelSpec &s) {
  readLlamaCommon(f, s);
  // GemmaConfig takes the legacy "gelu" of the original releases for the
  // tanh approximation they were trained with (their hidden_activation is
  // not read by transformers 5).
  s.activation = f.getString("hidden_act", "") == "gelu"
                     ? "gelu_tanh"
                     : activationFromHF(f, "hidden_act", "gelu_pytorch_tanh");
  if (f.ok() && f.getBool("use_bidirectional_attention", false))
    f.fail("use_bidirectional_attention",
           "bidirectional attention (an encoder) is not supported");
  s.norm.gainOffset = 1.0;
  s.tiedEmbeddings = f.getBool("tie_word_embeddings", true);
  s.embeddingScale = std::sqrt(double(s.hiddenSize));
  s.qkvBias = s.oBias = f.getBool("attention_bias", false);
  layerWindows(f, s, 0, [](int64_t) { return false; });
  readRope(f, s, 10000.0);
}

/// The parallel block of GPT-J, Phi-1/2 and StableLM: both branches read
/// the layer's one LayerNorm, x + attn(n x) + ffn(n x).
void shareParallelNorm(ModelSpec &s) {
  s.parallelBlock = s.sharedParallelNorm = true;
  s.names.ffnPreNorm = "";
}

/// Falcon: LayerNorms with biases, GELU MLPs, NeoX RoPE, one fused
/// query_key_value in each of its three layouts: Falcon-7B's multi-query
/// [q heads; k; v] rows, per-head [q k v] without multi_query, and the new
/// decoder's (40B, 180B, Falcon 2) per key/value group [q..., k, v]. Blocks
/// are serial, parallel on one norm (7B, Falcon 2) or parallel on two
/// (ln_attn, ln_mlp: the new decoder's default).
void readFalcon(JsonFields &f, ModelSpec &s) {
  auto either = [&](const char *key, const char *legacy) {
    return f.has(key) || !f.has(legacy) ? key : legacy;
  };
  s.vocabSize = f.reqInt("vocab_size", 1, L::kMaxVocab);
  const char *hiddenKey = either("hidden_size", "n_embed");
  const char *headsKey = either("num_attention_heads", "n_head");
  s.hiddenSize = f.reqInt(hiddenKey, 1, L::kMaxHidden);
  s.numLayers = f.reqInt(either("num_hidden_layers", "n_layer"), 1, L::kMaxLayers);
  s.numHeads = f.reqInt(headsKey, 1, L::kMaxHeads);
  s.maxPositions = f.getInt("max_position_embeddings", 2048, 0, L::kMaxPositions);
  if (f.ok() && s.hiddenSize % s.numHeads != 0)
    f.fail(headsKey, std::string(hiddenKey) + " " + std::to_string(s.hiddenSize) +
                         " is not divisible by " + headsKey + " " + std::to_string(s.numHeads));
  if (f.ok() && f.getBool("alibi", false))
    f.fail("alibi", "Falcon with ALiBi (Falcon-RW) is not supported");
  if (!f.ok())
    return;
  s.headDim = s.hiddenSize / s.numHeads;
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

/// Granite (3.x): Llama with four multipliers: embeddings, attention logits
/// (in place of head_dim^-0.5), each sub-layer's output before its residual
/// add, and the logits (divided by logits_scaling).
void readGranite(JsonFields &f, ModelSpec &s) {
  readLlama(f, s);
  if (!f.ok())
    return;
  s.embeddingScale = f.getNumber("embedding_multiplier", 1.0);
  s.attnScale = f.getNumber("attention_multiplier", 1.0);
  s.residualScale = f.getNumber("residual_multiplier", 1.0);
  double logitsScaling = f.getNumber("logits_scaling", 1.0);
  s.logitScale = 1.0 / logitsScaling;
  for (auto [key, v] : {std::pair{"attention_multiplier", s.attnScale},
                        std::pair{"logits_scaling", logitsScaling}})
    if (f.ok() && !(v > 0 && std::isfinite(v)))
      f.fail(key, "must be positive and finite, got " + json::formatNumber(v));
}

/// Cohere (Command R): the parallel block on one bias-free LayerNorm,
/// GPT-J-style (interleaved pairs) RoPE, SwiGLU, tied embeddings, logits
/// multiplied by logit_scale.
void readCohere(JsonFields &f, ModelSpec &s) {
  readLlamaCommon(f, s);
  if (f.ok() && f.getBool("use_qk_norm", false))
    f.fail("use_qk_norm", "Cohere's per-head LayerNorms of queries and keys "
                          "(a weight per head) are not supported");
  if (!f.ok())
    return;
  s.norm = {NormType::LayerNorm, f.getNumber("layer_norm_eps", 1e-5), 0.0, false};
  s.tiedEmbeddings = f.getBool("tie_word_embeddings", true);
  s.qkvBias = s.oBias = f.getBool("attention_bias", false);
  s.logitScale = f.getNumber("logit_scale", 0.0625);
  shareParallelNorm(s);
  layerWindows(f, s, 0, [](int64_t) { return false; });
  readRope(f, s, 10000.0);
  for (LayerVariant &l : s.layers)
    l.rope.gptjStyle = true;
}

/// Phi-1, Phi-1.5 and Phi-2: LayerNorm, the parallel block on one norm,
/// biases on every projection and on the LM head, a GELU-tanh MLP, partial
/// NeoX RoPE (half the head by default).
void readPhi(JsonFields &f, ModelSpec &s) {
  readLlamaCommon(f, s);
  if (f.ok() && f.getBool("qk_layernorm", false))
    f.fail("qk_layernorm", "Phi's LayerNorm of queries and keys is not supported");
  if (!f.ok())
    return;
  s.norm = {NormType::LayerNorm, f.getNumber("layer_norm_eps", 1e-5), 0.0, true};
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

/// GPT-J: the parallel block on one LayerNorm, unbiased attention, a biased
/// GELU-tanh MLP and LM head, GPT-J-style (interleaved pairs) RoPE on the
/// first rotary_dim dims of each head, base 10000.
void readGPTJ(JsonFields &f, ModelSpec &s) {
  s.vocabSize = f.reqInt("vocab_size", 1, L::kMaxVocab);
  s.hiddenSize = f.reqInt("n_embd", 1, L::kMaxHidden);
  s.numLayers = f.reqInt("n_layer", 1, L::kMaxLayers);
  s.numHeads = f.reqInt("n_head", 1, L::kMaxHeads);
  s.numKvHeads = s.numHeads;
  // The size of transformers' sin/cos table: positions past it fail there.
  s.maxPositions = f.reqInt("n_positions", 1, L::kMaxPositions);
  s.ffnSize = f.getInt("n_inner", 4 * s.hiddenSize, 1, L::kMaxFfn);
  if (f.ok() && s.hiddenSize % s.numHeads != 0)
    f.fail("n_head", "n_embd " + std::to_string(s.hiddenSize) +
                         " is not divisible by n_head " + std::to_string(s.numHeads));
  // Without rotary_dim transformers builds a table of n_embd dims and
  // multiplies each head of head_dim by it: not a model that runs.
  if (f.ok() && !f.has("rotary_dim"))
    f.fail("rotary_dim", "GPT-J without rotary_dim is not supported (transformers "
                         "then rotates each head by a table of n_embd dims)");
  int64_t rotaryDim = f.getInt("rotary_dim", 0, 1, L::kMaxHeadDim);
  if (!f.ok())
    return;
  s.headDim = s.hiddenSize / s.numHeads;
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

/// StarCoder2: LayerNorm, GQA, a GELU-tanh MLP, biases on every projection
/// (use_bias), one sliding window for every layer, tied embeddings.
void readStarcoder2(JsonFields &f, ModelSpec &s) {
  readLlamaCommon(f, s);
  if (!f.ok())
    return;
  s.norm = {NormType::LayerNorm, f.getNumber("norm_epsilon", 1e-5), 0.0, true};
  s.ffnKind = FfnKind::Mlp;
  s.activation = activationFromHF(f, "hidden_act", "gelu_pytorch_tanh");
  s.qkvBias = s.oBias = s.ffnBias = s.downBias = f.getBool("use_bias", true);
  s.tiedEmbeddings = f.getBool("tie_word_embeddings", true);
  s.names.gate = "";
  s.names.up = "mlp.c_fc";
  s.names.down = "mlp.c_proj";
  int64_t window = slidingWindow(f);
  layerWindows(f, s, window, [&](int64_t) { return window > 0; });
  readRope(f, s, 10000.0);
}

/// StableLM (2): LayerNorm, SwiGLU, optional q/k/v biases, partial NeoX
/// RoPE (a quarter of the head by default), serial or parallel on one norm.
void readStableLm(JsonFields &f, ModelSpec &s) {
  readLlamaCommon(f, s);
  if (f.ok() && f.getBool("qk_layernorm", false))
    f.fail("qk_layernorm", "StableLM's per-head LayerNorms of queries and keys "
                           "(a weight per head) are not supported");
  if (!f.ok())
    return;
  s.norm = {NormType::LayerNorm, f.getNumber("layer_norm_eps", 1e-5), 0.0, true};
  s.qkvBias = f.getBool("use_qkv_bias", false);
  if (f.getBool("use_parallel_residual", false))
    shareParallelNorm(s);
  layerWindows(f, s, 0, [](int64_t) { return false; });
  readRope(f, s, 10000.0, 0.25);
}

void readGPT2(JsonFields &f, ModelSpec &s) {
  s.vocabSize = f.reqInt("vocab_size", 1, L::kMaxVocab);
  s.hiddenSize = f.reqInt("n_embd", 1, L::kMaxHidden);
  s.numLayers = f.reqInt("n_layer", 1, L::kMaxLayers);
  s.numHeads = f.reqInt("n_head", 1, L::kMaxHeads);
  s.numKvHeads = s.numHeads;
  s.maxPositions = f.reqInt("n_positions", 1, L::kMaxPositions);
  s.ffnSize = f.getInt("n_inner", 4 * s.hiddenSize, 1, L::kMaxFfn);
  if (f.ok() && s.hiddenSize % s.numHeads != 0)
    f.fail("n_head", "n_embd " + std::to_string(s.hiddenSize) +
                         " is not divisible by n_head " +
                         std::to_string(s.numHeads));
  if (f.ok() && f.getBool("scale_attn_by_inverse_layer_idx", false))
    f.fail("scale_attn_by_inverse_layer_idx", "is not supported");
  if (f.ok() && !f.getBool("scale_attn_weights", true))
    f.fail("scale_attn_weights", "unscaled attention is not supported");
  if (!f.ok())
    return;
  s.headDim = s.hiddenSize / s.numHeads;
  s.norm = {NormType::LayerNorm, f.getNumber("layer_norm_epsilon", 1e-5), 0.0,
            true};
  s.ffnKind = FfnKind::Mlp;
  s.activation = activationFromHF(f, "activation_function", "gelu_tanh");
  s.qkvBias = s.oBias = s.ffnBias = s.downBias = true;
  s.positions = PositionKind::Learned;
  s.tiedEmbeddings = f.getBool("tie_word_embeddings", true);
  s.qkvLayout = QkvLayout::FusedInOut;
  s.weightsInOut = true;
  // save_pretrained's names; the weight binder also accepts them without
  // the "transformer." prefix (the original upload).
  s.names = {};
  s.names.embed = "transformer.wte.weight";
  s.names.positionEmbed = "transformer.wpe.weight";
  s.names.layerPrefix = "transformer.h.{i}.";
  s.names.finalNorm = "transformer.ln_f";
  s.names.lmHead = "lm_head.weight";
  s.names.attnPreNorm = "ln_1";
  s.names.ffnPreNorm = "ln_2";
  s.names.qkv = "attn.c_attn";
  s.names.o = "attn.c_proj";
  s.names.up = "mlp.c_fc";
  s.names.down = "mlp.c_proj";
  layerWindows(f, s, 0, [](int64_t) { return false; });
}

/// Fields BLOOM and MPT share: one [q; k; v] projection per layer, all
/// heads sharing keys and values (no GQA), ALiBi, LayerNorm, a plain GELU MLP
/// of 4 x hidden, tied embeddings.
void readAlibiCommon(JsonFields &f, ModelSpec &s, const char *hiddenKey,
                     const char *layersKey, const char *headsKey) {
  s.vocabSize = f.reqInt("vocab_size", 1, L::kMaxVocab);
  s.hiddenSize = f.reqInt(hiddenKey, 1, L::kMaxHidden);
  s.numLayers = f.reqInt(layersKey, 1, L::kMaxLayers);
  s.numHeads = f.reqInt(headsKey, 1, L::kMaxHeads);
  if (f.ok() && s.hiddenSize % s.numHeads != 0)
    f.fail(headsKey, std::string(hiddenKey) + " " + std::to_string(s.hiddenSize) +
                         " is not divisible by " + headsKey + " " +
                         std::to_string(s.numHeads));
  if (!f.ok())
    return;
  s.numKvHeads = s.numHeads;
  s.headDim = s.hiddenSize / s.numHeads;
  s.ffnSize = 4 * s.hiddenSize;
  s.ffnKind = FfnKind::Mlp;
  s.positions = PositionKind::Alibi;
  s.tiedEmbeddings = f.getBool("tie_word_embeddings", true);
  s.names = {};
  s.names.lmHead = "lm_head.weight";
  layerWindows(f, s, 0, [](int64_t) { return false; });
}

/// BLOOM: per-head interleaved query_key_value, biases everywhere, a
/// LayerNorm right after the embeddings, tanh GELU, the paper's slopes.
void readBloom(JsonFields &f, ModelSpec &s) {
  readAlibiCommon(f, s, f.has("n_embed") ? "n_embed" : "hidden_size", "n_layer",
                  "n_head");
  if (!f.ok())
    return;
  if (f.getBool("apply_residual_connection_post_layernorm", false)) {
    f.fail("apply_residual_connection_post_layernorm",
           "residuals taken after the norm are not supported");
    return;
  }
  s.norm = {NormType::LayerNorm, f.getNumber("layer_norm_epsilon", 1e-5), 0.0,
            true};
  s.activation = "gelu_tanh";
  s.qkvBias = s.oBias = s.ffnBias = s.downBias = true;
  s.qkvLayout = QkvLayout::FusedPerHead;
  s.alibiSlopes = bloomAlibiSlopes(s.numHeads);
  s.names.embed = "transformer.word_embeddings.weight";
  s.names.embedNorm = "transformer.word_embeddings_layernorm";
  s.names.layerPrefix = "transformer.h.{i}.";
  s.names.finalNorm = "transformer.ln_f";
  s.names.attnPreNorm = "input_layernorm";
  s.names.ffnPreNorm = "post_attention_layernorm";
  s.names.qkv = "self_attention.query_key_value";
  s.names.o = "self_attention.dense";
  s.names.up = "mlp.dense_h_to_4h";
  s.names.down = "mlp.dense_4h_to_h";
}

/// MPT as transformers' MptForCausalLM runs it: no biases and bias-free
/// LayerNorms (whatever `no_bias` says), exact GELU, ALiBi with MPT's own
/// slope order, an optional clamp of the fused QKV output (clip_qkv), and
/// `attn_config.softmax_scale`. Options transformers does not implement are
/// refused rather than silently ignored.
void readMpt(JsonFields &f, ModelSpec &s) {
  readAlibiCommon(f, s, "d_model", "n_layers", "n_heads");
  if (!f.ok())
    return;
  if (f.getInt("expansion_ratio", 4, 1, 64) != 4)
    f.fail("expansion_ratio", "only 4 is supported (transformers' MPT builds "
                              "a 4 x d_model MLP whatever it says)");
  if (f.ok() && !f.getBool("no_bias", true))
    f.fail("no_bias", "MPT with biases is not supported (transformers' MPT "
                      "has none)");
  if (f.ok() && f.has("logit_scale"))
    f.fail("logit_scale", "is not supported (transformers' MPT ignores it)");
  double maxBias = 8.0;
  if (const json::Value *ac = f.getObject("attn_config")) {
    JsonFields a = f.nested(*ac, "attn_config");
    for (const char *unsupported : {"prefix_lm", "qk_ln", "attn_uses_sequence_id"})
      if (a.ok() && a.getBool(unsupported, false))
        a.fail(unsupported, "is not supported");
    if (a.ok() && !a.getBool("alibi", true))
      a.fail("alibi", "MPT without ALiBi is not supported (transformers' MPT "
                      "always uses it)");
    if (a.ok() && a.getString("attn_type", "multihead_attention") !=
                      "multihead_attention")
      a.fail("attn_type", "only multihead_attention is supported");
    maxBias = a.optPositive("alibi_bias_max").value_or(8.0);
    s.clipQkv = a.optPositive("clip_qkv");
    s.attnScale = a.optPositive("softmax_scale").value_or(0.0);
  }
  if (!f.ok())
    return;
  s.norm = {NormType::LayerNorm, f.getNumber("layer_norm_epsilon", 1e-5), 0.0,
            false};
  s.activation = "gelu";
  s.qkvLayout = QkvLayout::FusedRows;
  s.alibiSlopes = mptAlibiSlopes(s.numHeads, maxBias);
  s.names.embed = "transformer.wte.weight";
  s.names.layerPrefix = "transformer.blocks.{i}.";
  s.names.finalNorm = "transformer.norm_f";
  s.names.attnPreNorm = "norm_1";
  s.names.ffnPreNorm = "norm_2";
  s.names.qkv = "attn.Wqkv";
  s.names.o = "attn.out_proj";
  s.names.up = "ffn.up_proj";
  s.names.down = "ffn.down_proj";
}

using ArchReader = std::function<void(JsonFields &, ModelSpec &)>;

const std::vector<std::pair<std::string, ArchReader>> &archReaders() {
  static const std::vector<std::pair<std::string, ArchReader>> readers = {
      {"LlamaForCausalLM", readLlama},
      {"MistralForCausalLM", readMistral},
      {"Qwen2ForCausalLM", readQwen2},
      {"Qwen3ForCausalLM", readQwen3},
      {"GemmaForCausalLM", readGemma1},
      {"Gemma2ForCausalLM",
       [](JsonFields &f, ModelSpec &s) { readGemma(f, s, false); }},
      {"Gemma3ForCausalLM",
       [](JsonFields &f, ModelSpec &s) { readGemma(f, s, true); }},
      {"Olmo2ForCausalLM", readOlmo2},
      {"FalconForCausalLM", readFalcon},
      {"GraniteForCausalLM", readGranite},
      {"CohereForCausalLM", readCohere},
      {"PhiForCausalLM", readPhi},
      {"Phi3ForCausalLM", readPhi3},
      {"StableLmForCausalLM", readStableLm},
      {"Starcoder2ForCausalLM", readStarcoder2},
      {"GPTNeoXForCausalLM", readGPTNeoX},
      {"GPTJForCausalLM", readGPTJ},
      {"GPT2LMHeadModel", readGPT2},
      {"BloomForCausalLM", readBloom},
      {"MptForCausalLM", readMpt},
      // MosaicML's own uploads name their remote-code class; transformers
      // runs them as MptForCausalLM.
      {"MPTForCausalLM", readMpt},
  };
  return readers;
}

/// Canonical validation keys -> the config fields that may hold them, most
/// specific first; the first one present in the file is reported.
std::string hfFieldFor(const std::string &key, const json::Value &config) {
  static const std::map<std::string, std::vector<std::string>> candidates = {
      {"hidden_size", {"hidden_size", "n_embd", "n_embed", "d_model"}},
      {"num_layers", {"num_hidden_layers", "n_layer", "n_layers"}},
      {"heads", {"num_attention_heads", "n_head", "n_heads"}},
      {"kv_heads", {"num_key_value_heads", "num_attention_heads", "n_head"}},
      {"ffn_size", {"intermediate_size", "n_inner"}},
      {"rotary_dim", {"rotary_dim", "partial_rotary_factor", "rotary_pct", "head_dim"}},
      {"residual_scale", {"residual_multiplier"}},
      {"logit_scale", {"logit_scale", "logits_scaling"}},
      {"embedding_scale", {"embedding_multiplier"}},
      {"rope_theta", {"rope_theta", "rotary_emb_base"}},
      {"window", {"sliding_window"}},
      {"max_positions", {"max_position_embeddings", "n_positions"}}};
  auto it = candidates.find(key);
  if (it == candidates.end())
    return key;
  for (const std::string &field : it->second)
    if (config.get(field))
      return field;
  return it->second.front();
}
} // namespace

const std::vector<std::string> &tbc::supportedArchitectures() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto &[name, reader] : archReaders())
      n.push_back(name);
    return n;
  }();
  return names;
}

std::optional<ModelSpec> tbc::readHFConfig(const json::Value &rootIn,
                                           const std::string &file,
                                           SourceError &error) {
  if (!rootIn.isObject()) {
    error = {file, rootIn.pos().line, rootIn.pos().column, "",
             "expected a JSON object"};
    return std::nullopt;
  }
  std::set<std::string> read;
  JsonFields top(rootIn, file, error);
  top.trackReads(&read);
  const json::Value *archs = top.raw("architectures");
  if (!archs || !archs->isArray() || archs->elements().size() != 1 ||
      !archs->elements()[0].isString()) {
    top.fail("architectures",
             archs ? "expected an array holding one architecture name"
                   : "required field is missing");
    return std::nullopt;
  }
  std::string arch = archs->elements()[0].asString();
  const ArchReader *reader = nullptr;
  for (const auto &[name, r] : archReaders())
    if (name == arch)
      reader = &r;
  if (!reader) {
    std::string list;
    for (const std::string &n : supportedArchitectures())
      list += (list.empty() ? "" : ", ") + n;
    top.fail("architectures",
             "unknown architecture '" + arch + "' (supported: " + list + ")");
    return std::nullopt;
  }
  // Multimodal Gemma 3 checkpoints keep the text model under text_config.
  const json::Value &root =
      top.raw("text_config") && top.raw("text_config")->isObject()
          ? *top.raw("text_config")
          : rootIn;
  JsonFields f(root, file, error);
  f.trackReads(&read, &root == &rootIn ? "" : "text_config");
  ModelSpec spec;
  spec.architecture = arch;
  (*reader)(f, spec);
  if (!f.ok())
    return std::nullopt;
  if (std::optional<SpecViolation> v = validateModelSpec(spec)) {
    f.fail(hfFieldFor(v->key, root), v->message);
    return std::nullopt;
  }
  // What the module depends on, as the file has it (null: absent).
  std::set<std::string> topLevel;
  for (const std::string &path : read)
    topLevel.insert(path.substr(0, path.find('.')));
  std::string config = "{";
  for (const std::string &key : topLevel) {
    const json::Value *v = rootIn.get(key);
    config += (config.size() > 1 ? ", " : "") + json::quote(key) + ": " +
              (v ? json::serialize(*v) : "null");
  }
  spec.sourceConfig = config + "}";
  return spec;
}
