//===- HFLlamaLike.cpp - families with Llama's tensor names ---------------===//
//
// Llama, Mistral (Ministral), Qwen2/3, Phi-3, Gemma 1/2/3, VaultGemma,
// Granite, StarCoder2, StableLM, Arcee, Nemotron, Persimmon, GLM, SmolLM3,
// Helium, Seed-OSS, ERNIE 4.5, HunYuan and NanoChat: `model.layers.{i}.` with self_attn/mlp projections,
// each family's quirks on top of readLlamaCommon.
//
//===----------------------------------------------------------------------===//

#include "HFReaders.h"

#include <cmath>

using namespace tbc;
using namespace tbc::hf;

namespace {
using L = SpecLimits;
} // namespace

void hf::readLlama(JsonFields &f, ModelSpec &s) {
  readLlamaCommon(f, s, {2048});
  bool attnBias = f.getBool("attention_bias", false);
  bool mlpBias = f.getBool("mlp_bias", false);
  s.qkvBias = s.oBias = attnBias;
  s.ffnBias = s.downBias = mlpBias;
  layerWindows(f, s, 0, [](int64_t) { return false; });
  readRope(f, s, 10000.0);
}

namespace {
/// Llama's names, attention and serial blocks with a gateless MLP, up_proj
/// and down_proj around `hidden_act` (a squared ReLU by default): Arcee's
/// and Nemotron's blocks, all but their RoPE.
void readGatelessLlama(JsonFields &f, ModelSpec &s, const LlamaDefaults &defaults) {
  readLlamaCommon(f, s, defaults);
  if (!f.ok())
    return;
  s.ffnKind = FfnKind::Mlp;
  s.activation = hf::activationFromHF(f, "hidden_act", "relu2");
  s.qkvBias = s.oBias = f.getBool("attention_bias", false);
  s.ffnBias = s.downBias = f.getBool("mlp_bias", false);
  s.names.gate = "";
  layerWindows(f, s, 0, [](int64_t) { return false; });
}
} // namespace

/// Arcee (AFM): Llama with a gateless squared-ReLU MLP.
void hf::readArcee(JsonFields &f, ModelSpec &s) {
  readGatelessLlama(f, s, {4096, 1e-5});
  if (f.ok())
    readRope(f, s, 10000.0);
}

/// Nemotron (Nemotron-4, Minitron, Nemotron-Mini): Arcee's blocks on
/// LayerNorm1P, a LayerNorm with a bias whose gain is 1 + weight; NeoX RoPE
/// on half of each head by default.
void hf::readNemotron(JsonFields &f, ModelSpec &s) {
  readGatelessLlama(f, s, {4096});
  if (!f.ok())
    return;
  s.norm = {NormType::LayerNorm, f.getNumber("norm_eps", 1e-5), 1.0, true};
  readRope(f, s, 10000.0, 0.5);
}

/// Persimmon (and Fuyu's language model): Nemotron's squared-ReLU MLP and
/// NeoX RoPE on half of each head in a serial block on biased
/// LayerNorms, GPT-NeoX's query_key_value ([q k v] per head), biases on
/// every projection but the LM head, and with qk_layernorm (the default) one
/// LayerNorm, gain and bias, for every query head and one for every key head.
void hf::readPersimmon(JsonFields &f, ModelSpec &s) {
  // RoPE's base: the released configs say 25000 (transformers 4's
  // default); transformers 5's PersimmonConfig defaults to 10000.
  readLlamaCommon(f, s, {16384});
  if (!f.ok())
    return;
  s.norm = {NormType::LayerNorm, f.getNumber("layer_norm_eps", 1e-5), 0.0, true};
  s.ffnKind = FfnKind::Mlp;
  s.activation = activationFromHF(f, "hidden_act", "relu2");
  s.qkvBias = s.oBias = s.ffnBias = s.downBias = true;
  s.qkvLayout = QkvLayout::FusedPerHead;
  s.names.q = s.names.k = s.names.v = s.names.gate = "";
  s.names.qkv = "self_attn.query_key_value";
  s.names.o = "self_attn.dense";
  s.names.up = "mlp.dense_h_to_4h";
  s.names.down = "mlp.dense_4h_to_h";
  s.names.finalNorm = "model.final_layernorm";
  if (f.getBool("qk_layernorm", true)) {
    s.qkNorm = QKNormKind::PerHead;
    s.names.qNorm = "self_attn.q_layernorm";
    s.names.kNorm = "self_attn.k_layernorm";
  }
  layerWindows(f, s, 0, [](int64_t) { return false; });
  readRope(f, s, 10000.0, 0.5);
}

/// GLM (GLM-4-9B's transformers port) and GLM-4 (the 0414 models): Llama's
/// RMSNorm blocks with q/k/v biases, one gate_up_proj ([gate; up] rows, as
/// Phi-3's), interleaved-pair RoPE on half of each head; GLM-4 adds a norm
/// after each sub-layer (post_self_attn_layernorm, post_mlp_layernorm:
/// sandwich placement). Their configs' defaults are GLM-4-9B's sizes, not
/// Llama's: head_dim 128, 2 key/value heads, eps 1.5625e-7.
void hf::readGlm(JsonFields &f, ModelSpec &s, bool glm4) {
  readLlamaCommon(f, s, {131072, 1.5625e-7, 2, 128});
  if (!f.ok())
    return;
  s.qkvBias = f.getBool("attention_bias", true);
  s.fusedGateUp = true;
  s.names.gateUp = "mlp.gate_up_proj";
  s.names.gate = s.names.up = "";
  if (glm4) {
    s.placement = NormPlacement::Sandwich;
    s.names.attnPostNorm = "post_self_attn_layernorm";
    s.names.ffnPostNorm = "post_mlp_layernorm";
  }
  layerWindows(f, s, 0, [](int64_t) { return false; });
  readRope(f, s, 10000.0, 0.5);
  for (LayerVariant &l : s.layers)
    l.rope.gptjStyle = true;
}

/// SmolLM3: Llama with NoPE layers: no_rope_layers holds 1 for a layer that
/// rotates its queries and keys and 0 for one that does not (by default
/// every no_rope_layer_interval-th layer is NoPE); with use_sliding_window
/// the NoPE layers are the sliding ones (unless layer_types says which);
/// tied embeddings by default.
void hf::readSmolLM3(JsonFields &f, ModelSpec &s) {
  readLlamaCommon(f, s, {32768, 1e-6, 4});
  if (!f.ok())
    return;
  s.qkvBias = s.oBias = f.getBool("attention_bias", false);
  s.ffnBias = s.downBias = f.getBool("mlp_bias", false);
  s.tiedEmbeddings = f.getBool("tie_word_embeddings", true);
  int64_t interval = f.getInt("no_rope_layer_interval", 4, 1, L::kMaxLayers);
  std::vector<bool> rotates(s.numLayers);
  for (int64_t i = 0; i < s.numLayers; ++i)
    rotates[i] = (i + 1) % interval != 0;
  if (std::optional<std::vector<double>> flags = f.optNumbers("no_rope_layers")) {
    if (int64_t(flags->size()) != s.numLayers) {
      f.fail("no_rope_layers", "expected " + std::to_string(s.numLayers) +
                                   " entries (one per layer), got " +
                                   std::to_string(flags->size()));
      return;
    }
    for (int64_t i = 0; i < s.numLayers; ++i) {
      if ((*flags)[i] != 0 && (*flags)[i] != 1) {
        f.fail("no_rope_layers", "entry " + std::to_string(i) +
                                     " must be 1 (RoPE) or 0 (no RoPE), got " +
                                     json::formatNumber((*flags)[i]));
        return;
      }
      rotates[i] = (*flags)[i] == 1;
    }
  }
  if (!f.ok())
    return;
  int64_t window = f.getBool("use_sliding_window", false) ? slidingWindow(f) : 0;
  layerWindows(f, s, window, [&](int64_t i) { return window > 0 && !rotates[i]; });
  for (int64_t i = 0; f.ok() && i < s.numLayers; ++i)
    s.layers[i].noRope = !rotates[i];
  readRope(f, s, 2000000.0);
}

void hf::readMistral(JsonFields &f, ModelSpec &s) {
  readLlamaCommon(f, s, {131072, 1e-6, 8});
  int64_t window = slidingWindow(f, 4096);
  layerWindows(f, s, window, [&](int64_t) { return window > 0; });
  readRope(f, s, 10000.0);
}

namespace {
/// Qwen2's and Qwen3's blocks: with use_sliding_window, windows on the
/// layers from max_window_layers on. Their config classes default to 32
/// key/value heads whatever the number of heads.
void readQwen(JsonFields &f, ModelSpec &s, std::optional<int64_t> classHeadDim) {
  readLlamaCommon(f, s, {32768, 1e-6, 32, classHeadDim});
  s.qkvBias = true;
  bool useSliding = f.getBool("use_sliding_window", false);
  int64_t window = useSliding ? slidingWindow(f, 4096) : 0;
  int64_t maxWindowLayers = f.getInt("max_window_layers", 28, 0, L::kMaxLayers);
  layerWindows(f, s, window, [&](int64_t i) {
    return window > 0 && i >= maxWindowLayers;
  });
  readRope(f, s, 10000.0);
}
} // namespace

void hf::readQwen2(JsonFields &f, ModelSpec &s) { readQwen(f, s, std::nullopt); }

void hf::readQwen3(JsonFields &f, ModelSpec &s) {
  readQwen(f, s, 128);
  s.qkvBias = s.oBias = f.getBool("attention_bias", false);
  s.qkNorm = QKNormKind::PerHead;
  s.names.qNorm = "self_attn.q_norm";
  s.names.kNorm = "self_attn.k_norm";
}

void hf::readPhi3(JsonFields &f, ModelSpec &s) {
  readLlamaCommon(f, s, {4096, 1e-5});
  s.qkvLayout = QkvLayout::FusedRows;
  s.fusedGateUp = true;
  s.names.qkv = "self_attn.qkv_proj";
  s.names.gateUp = "mlp.gate_up_proj";
  s.names.q = s.names.k = s.names.v = s.names.gate = s.names.up = "";
  s.qkvBias = s.oBias = f.getBool("attention_bias", false);
  int64_t window = slidingWindow(f);
  layerWindows(f, s, window, [&](int64_t) { return window > 0; });
  readRope(f, s, 10000.0, 1.0, /*phi3=*/true);
}

/// Gemma (1): Llama's pre-norm block with Gemma's (1 + w) RMSNorm gain,
/// embeddings scaled by sqrt(hidden), GeGLU and tied embeddings.
void hf::readGemma1(JsonFields &f, ModelSpec &s) {
  readLlamaCommon(f, s, {8192, 1e-6, 16, 256});
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

/// Gemma 2 and Gemma 3 text: sandwich norms with (1 + w), scaled
/// embeddings, query_pre_attn_scalar, GeGLU-tanh, alternating windows.
void hf::readGemma(JsonFields &f, ModelSpec &s, bool gemma3) {
  readLlamaCommon(f, s, {gemma3 ? 131072 : 8192, 1e-6, 4, 256});
  s.activation = activationFromHF(
      f, f.has("hidden_activation") ? "hidden_activation" : "hidden_act",
      "gelu_pytorch_tanh");
  s.placement = NormPlacement::Sandwich;
  s.norm.gainOffset = 1.0;
  s.tiedEmbeddings = f.getBool("tie_word_embeddings", true);
  s.embeddingScale = std::sqrt(double(s.hiddenSize));
  s.names.ffnPreNorm = "pre_feedforward_layernorm";
  s.names.attnPostNorm = "post_attention_layernorm";
  s.names.ffnPostNorm = "post_feedforward_layernorm";
  double qpa = f.optPositive("query_pre_attn_scalar").value_or(256.0);
  s.attnScale = 1.0 / std::sqrt(qpa);
  // Gemma 2's config class soft-caps by default, Gemma 3's does not.
  s.attnSoftcap = f.optPositive("attn_logit_softcapping",
                                gemma3 ? std::nullopt : std::optional<double>(50.0));
  s.finalSoftcap = f.optPositive("final_logit_softcapping",
                                 gemma3 ? std::nullopt : std::optional<double>(30.0));
  int64_t window = slidingWindow(f, 4096);
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

/// OLMo (1): Llama's names and blocks on LayerNorms without a learned gain
/// or bias (eps 1e-5: OlmoLayerNorm's, not the config's) and, with
/// clip_qkv, the q, k and v projections clamped to [-clip_qkv, clip_qkv].
void hf::readOlmo(JsonFields &f, ModelSpec &s) {
  readLlamaCommon(f, s, {2048});
  if (!f.ok())
    return;
  s.norm = {NormType::LayerNorm, 1e-5, 0.0, false, /*gain=*/false};
  s.qkvBias = s.oBias = f.getBool("attention_bias", false);
  s.clipQkv = f.optPositive("clip_qkv");
  layerWindows(f, s, 0, [](int64_t) { return false; });
  readRope(f, s, 10000.0);
}

/// VaultGemma: Gemma 2 without the norms after each sub-layer (pre-norm
/// blocks on input_layernorm and pre_feedforward_layernorm), the rest of
/// Gemma 2 and its config class's defaults.
void hf::readVaultGemma(JsonFields &f, ModelSpec &s) {
  readGemma(f, s, false);
  s.placement = NormPlacement::Pre;
  s.names.attnPostNorm = s.names.ffnPostNorm = "";
}

/// Helium (Kyutai): Llama with interleaved-pair (GPT-J-style) RoPE over
/// whole heads, optional q/k/v and MLP biases and never an o_proj bias;
/// HeliumConfig's defaults (head_dim 128, eps 1e-8, base 100000).
void hf::readHelium(JsonFields &f, ModelSpec &s) {
  readLlamaCommon(f, s, {4096, 1e-8, 20, 128});
  if (!f.ok())
    return;
  s.qkvBias = f.getBool("attention_bias", false);
  s.ffnBias = s.downBias = f.getBool("mlp_bias", false);
  layerWindows(f, s, 0, [](int64_t) { return false; });
  readRope(f, s, 100000.0);
  for (LayerVariant &l : s.layers)
    l.rope.gptjStyle = true;
}

/// ERNIE 4.5 (Baidu's dense models, 0.3B): Llama with interleaved-pair
/// (GPT-J-style) RoPE over whole heads, biases on every projection or none
/// (use_bias), tied embeddings and Ernie4_5Config's defaults (2 key/value
/// heads, head_dim 128, eps 1e-5, base 500000).
void hf::readErnie45(JsonFields &f, ModelSpec &s) {
  readLlamaCommon(f, s, {131072, 1e-5, 2, 128});
  if (!f.ok())
    return;
  s.qkvBias = s.oBias = s.ffnBias = s.downBias = f.getBool("use_bias", false);
  s.tiedEmbeddings = f.getBool("tie_word_embeddings", true);
  layerWindows(f, s, 0, [](int64_t) { return false; });
  readRope(f, s, 500000.0);
  for (LayerVariant &l : s.layers)
    l.rope.gptjStyle = true;
}

/// Seed-OSS (ByteDance): Llama with q/k/v biases by default
/// (attention_bias), an o_proj bias of its own (attention_out_bias) and
/// SeedOssConfig's defaults (8 key/value heads, head_dim 128).
void hf::readSeedOss(JsonFields &f, ModelSpec &s) {
  readLlamaCommon(f, s, {524288, 1e-6, 8, 128});
  if (!f.ok())
    return;
  s.qkvBias = f.getBool("attention_bias", true);
  s.oBias = f.getBool("attention_out_bias", false);
  s.ffnBias = s.downBias = f.getBool("mlp_bias", false);
  layerWindows(f, s, 0, [](int64_t) { return false; });
  readRope(f, s, 10000.0);
}

/// HunYuan dense (Hunyuan-7B/4B/1.8B/0.5B): Llama with a per-head RMSNorm
/// of the rotated queries and keys (query_layernorm, key_layernorm, after
/// RoPE) and NTK-alpha RoPE: a "dynamic" scaling with an `alpha` stretches
/// the base once, theta * alpha^(d / (d - 2)) for head_dim d, whatever the
/// sequence's length (transformers' ntk_alpha; its factor is not read).
void hf::readHunYuanDense(JsonFields &f, ModelSpec &s) {
  readLlamaCommon(f, s, {2048, 1e-5});
  if (!f.ok())
    return;
  s.qkvBias = s.oBias = f.getBool("attention_bias", false);
  s.qkNorm = QKNormKind::PerHead;
  s.qkNormAfterRope = true;
  s.names.qNorm = "self_attn.query_layernorm";
  s.names.kNorm = "self_attn.key_layernorm";
  layerWindows(f, s, 0, [](int64_t) { return false; });
  std::optional<double> alpha;
  for (const char *key : {"rope_parameters", "rope_scaling"})
    if (const json::Value *obj = f.getObject(key)) {
      JsonFields r = f.nested(*obj, key);
      std::string kind = r.getString(r.has("rope_type") ? "rope_type" : "type", "");
      if (kind == "dynamic" && r.has("alpha"))
        alpha = r.optPositive("alpha");
      break;
    }
  int64_t maxPositions = s.maxPositions;
  readRope(f, s, 10000.0);
  if (!alpha || !f.ok())
    return;
  double d = double(s.headDim);
  for (LayerVariant &l : s.layers) {
    l.rope.scaling = {};
    l.rope.theta *= std::pow(*alpha, d / (d - 2.0));
  }
  s.maxPositions = maxPositions; // not a dynamic scaling's longer reach
}

/// NanoChat (Karpathy's nanochat, as transformers ports it): Llama's names
/// with no learned gain in any RMSNorm, one of them on the embeddings too
/// (the final norm's module, used twice); a per-head RMSNorm of the rotated
/// queries and keys (after RoPE); RoPE turning q and k the other way
/// (rotate_half is cat(x2, -x1)); a squared-ReLU MLP without a gate (fc1,
/// fc2) and logits soft-capped at 15 by default.
void hf::readNanoChat(JsonFields &f, ModelSpec &s) {
  readLlamaCommon(f, s, {2048, 1e-6});
  if (!f.ok())
    return;
  s.norm.gain = false;
  s.names.embedNorm = "model.norm";
  s.qkvBias = s.oBias = f.getBool("attention_bias", false);
  s.qkNorm = QKNormKind::PerHead;
  s.qkNormAfterRope = true;
  s.reverseRope = true;
  s.names.qNorm = "self_attn.q_norm";
  s.names.kNorm = "self_attn.k_norm";
  s.ffnKind = FfnKind::Mlp;
  s.activation = activationFromHF(f, "hidden_act", "relu2");
  s.names.gate = "";
  s.names.up = "mlp.fc1";
  s.names.down = "mlp.fc2";
  s.finalSoftcap = f.optPositive("final_logit_softcapping", std::optional<double>(15.0));
  layerWindows(f, s, 0, [](int64_t) { return false; });
  readRope(f, s, 10000.0);
}

/// Granite (3.x): Llama with four multipliers: embeddings, attention logits
/// (in place of head_dim^-0.5), each sub-layer's output before its residual
/// add, and the logits (divided by logits_scaling).
void hf::readGranite(JsonFields &f, ModelSpec &s) {
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

/// StarCoder2: LayerNorm, GQA, a GELU-tanh MLP, biases on every projection
/// (use_bias), one sliding window for every layer, tied embeddings.
void hf::readStarcoder2(JsonFields &f, ModelSpec &s) {
  readLlamaCommon(f, s, {4096, 1e-6, 2});
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
/// RoPE (a quarter of the head by default), serial or parallel on one norm,
/// and with qk_layernorm (StableLM 2 12B) a bias-free LayerNorm of each
/// query and key head with its own gain (q_layernorm.norms.{h}).
void hf::readStableLm(JsonFields &f, ModelSpec &s) {
  readLlamaCommon(f, s, {4096, 1e-6, 32});
  if (!f.ok())
    return;
  s.norm = {NormType::LayerNorm, f.getNumber("layer_norm_eps", 1e-5), 0.0, true};
  if (f.getBool("qk_layernorm", false)) {
    s.qkNorm = QKNormKind::PerHeadTensors;
    s.qkNormSpec = NormSpec{NormType::LayerNorm, s.norm.eps, 0.0, false};
    s.names.qNorm = "self_attn.q_layernorm";
    s.names.kNorm = "self_attn.k_layernorm";
  }
  s.qkvBias = f.getBool("use_qkv_bias", false);
  if (f.getBool("use_parallel_residual", false))
    shareParallelNorm(s);
  layerWindows(f, s, 0, [](int64_t) { return false; });
  readRope(f, s, 10000.0, 0.25);
}
