//===- HFCommon.cpp - config fields many families share -------------------===//
//
// Activation names, per-layer windows, Llama's common fields and RoPE in
// both of transformers' spellings: what the family readers build on.
//
//===----------------------------------------------------------------------===//

#include "HFReaders.h"
#include "RopeScalingFields.h"

#include <map>

using namespace tbc;
using namespace tbc::hf;

namespace {
using L = SpecLimits;

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
} // namespace

/// Maps transformers' activation names onto tbc::Activation keywords.
std::string hf::activationFromHF(JsonFields &f, const std::string &key,
                             const std::string &dflt) {
  std::string act = f.getString(key, dflt);
  static const std::map<std::string, std::string> known = {
      {"silu", "silu"},           {"swish", "silu"},
      {"gelu", "gelu"},           {"gelu_new", "gelu_tanh"},
      {"gelu_pytorch_tanh", "gelu_tanh"},
      {"relu", "relu"},           {"relu2", "relu2"},
      {"sigmoid", "sigmoid"}};
  auto it = known.find(act);
  if (it != known.end())
    return it->second;
  f.fail(key, "unsupported activation '" + act +
                  "' (supported: silu, swish, gelu, gelu_new, "
                  "gelu_pytorch_tanh, relu, relu2, sigmoid)");
  return dflt;
}

/// Per-layer attention kinds from `layer_types` when present, else from
/// `isSliding(i)`.
void hf::layerWindows(JsonFields &f, ModelSpec &spec, int64_t window,
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
/// OLMo 2, Gemma 2/3), absent ones taking `defaults` (a family's config
/// class's defaults where they are not Llama's).
void hf::readLlamaCommon(JsonFields &f, ModelSpec &s, const LlamaDefaults &defaults) {
  s.vocabSize = f.reqInt("vocab_size", 1, L::kMaxVocab);
  s.hiddenSize = f.reqInt("hidden_size", 1, L::kMaxHidden);
  s.numLayers = f.reqInt("num_hidden_layers", 1, L::kMaxLayers);
  s.numHeads = f.reqInt("num_attention_heads", 1, L::kMaxHeads);
  s.numKvHeads = f.getClassInt("num_key_value_heads", defaults.kvHeads.value_or(s.numHeads),
                               s.numHeads, 1, L::kMaxHeads);
  s.ffnSize = f.reqInt("intermediate_size", 1, L::kMaxFfn);
  s.maxPositions = f.getClassInt("max_position_embeddings", defaults.maxPositions, 0, 0,
                                 L::kMaxPositions);
  if (!f.ok())
    return;
  if (f.has("head_dim")) {
    s.headDim = f.reqInt("head_dim", 1, L::kMaxHeadDim);
  } else if (defaults.headDim && f.absent("head_dim")) {
    s.headDim = *defaults.headDim;
  } else if (s.hiddenSize % s.numHeads != 0) {
    f.fail("num_attention_heads",
           "hidden_size " + std::to_string(s.hiddenSize) +
               " is not divisible by num_attention_heads " +
               std::to_string(s.numHeads) + " (and no head_dim is given)");
  } else {
    s.headDim = s.hiddenSize / s.numHeads;
  }
  s.norm.kind = NormType::RMSNorm;
  s.norm.eps = f.getNumber("rms_norm_eps", defaults.rmsNormEps);
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

/// RoPE of every layer. transformers 5 writes `rope_parameters` (one object,
/// or one per layer type: `full_attention` / `sliding_attention`);
/// transformers 4 writes top-level `rope_theta`, `rope_scaling` and
/// `partial_rotary_factor`. Returns true when per-type parameters were read.
/// `phi3`: 'su' and 'yarn' scalings are Phi-3's names for longrope.
bool hf::readRope(JsonFields &f, ModelSpec &s, double defaultTheta,
                  double defaultPartial, bool phi3) {
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

int64_t hf::slidingWindow(JsonFields &f, int64_t classDefault) {
  return f.getClassInt("sliding_window", classDefault, 0, 0, L::kMaxPositions);
}

bool hf::readSizes(JsonFields &f, ModelSpec &s, const char *hiddenKey, const char *layersKey,
                   const char *headsKey) {
  s.vocabSize = f.reqInt("vocab_size", 1, L::kMaxVocab);
  s.hiddenSize = f.reqInt(hiddenKey, 1, L::kMaxHidden);
  s.numLayers = f.reqInt(layersKey, 1, L::kMaxLayers);
  s.numHeads = f.reqInt(headsKey, 1, L::kMaxHeads);
  if (f.ok() && s.hiddenSize % s.numHeads != 0)
    f.fail(headsKey, std::string(hiddenKey) + " " + std::to_string(s.hiddenSize) +
                         " is not divisible by " + headsKey + " " + std::to_string(s.numHeads));
  if (!f.ok())
    return false;
  s.numKvHeads = s.numHeads;
  s.headDim = s.hiddenSize / s.numHeads;
  return true;
}

/// The parallel block of GPT-J, Phi-1/2 and StableLM: both branches read
/// the layer's one LayerNorm, x + attn(n x) + ffn(n x).
void hf::shareParallelNorm(ModelSpec &s) {
  s.parallelBlock = s.sharedParallelNorm = true;
  s.names.ffnPreNorm = "";
}
