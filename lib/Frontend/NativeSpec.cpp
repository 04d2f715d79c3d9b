//===- NativeSpec.cpp - tbc's own model description -> ModelSpec ----------===//
//
// The native spec (docs/spec.md) names every design choice directly, so it
// can describe combinations no released model uses. Weight names follow the
// Llama convention of transformers, with the norm names of the placement.
//
//===----------------------------------------------------------------------===//

#include "JsonFields.h"
#include "RopeScalingFields.h"
#include "tbc/Dialect/PositionBias.h"
#include "tbc/Frontend/ModelReaders.h"

#include <cmath>
#include <map>

using namespace tbc;

namespace {
using L = SpecLimits;

void readNorm(JsonFields &f, ModelSpec &s) {
  const json::Value *obj = f.getObject("norm");
  if (!obj) {
    f.fail("norm", "required section is missing");
    return;
  }
  JsonFields n = f.nested(*obj, "norm");
  std::string kind = n.getChoice("kind", "rms", {"rms", "layer"});
  std::string placement = n.getChoice(
      "placement", "pre", {"pre", "post", "branch_post", "sandwich"});
  s.norm.kind = kind == "rms" ? NormType::RMSNorm : NormType::LayerNorm;
  s.norm.eps = n.getNumber("eps", 1e-5);
  if (n.ok() && s.norm.eps < 0)
    n.fail("eps", "must be non-negative");
  s.norm.gainOffset = n.getNumber("gain_offset", 0.0);
  s.norm.bias = n.getBool("bias", false);
  if (n.ok() && s.norm.bias && s.norm.kind == NormType::RMSNorm)
    n.fail("bias", "RMSNorm has no bias");
  std::map<std::string, NormPlacement> placements = {
      {"pre", NormPlacement::Pre},
      {"post", NormPlacement::Post},
      {"branch_post", NormPlacement::BranchPost},
      {"sandwich", NormPlacement::Sandwich}};
  s.placement = placements[placement];
  WeightNames &w = s.names;
  switch (s.placement) {
  case NormPlacement::Pre:
    w.attnPreNorm = "input_layernorm";
    w.ffnPreNorm = "post_attention_layernorm";
    break;
  case NormPlacement::Sandwich:
    w.attnPreNorm = "input_layernorm";
    w.attnPostNorm = "post_attention_layernorm";
    w.ffnPreNorm = "pre_feedforward_layernorm";
    w.ffnPostNorm = "post_feedforward_layernorm";
    break;
  case NormPlacement::Post:
  case NormPlacement::BranchPost:
    w.attnPostNorm = "post_attention_layernorm";
    w.ffnPostNorm = "post_feedforward_layernorm";
    break;
  }
}

void readAttention(JsonFields &f, ModelSpec &s) {
  const json::Value *obj = f.getObject("attention");
  if (!obj) {
    f.fail("attention", "required section is missing");
    return;
  }
  JsonFields a = f.nested(*obj, "attention");
  s.numHeads = a.reqInt("heads", 1, L::kMaxHeads);
  s.numKvHeads = a.getInt("kv_heads", s.numHeads, 1, L::kMaxHeads);
  if (a.has("head_dim")) {
    s.headDim = a.reqInt("head_dim", 1, L::kMaxHeadDim);
  } else if (a.ok() && s.hiddenSize % s.numHeads != 0) {
    a.fail("heads", "hidden_size " + std::to_string(s.hiddenSize) +
                        " is not divisible by " + std::to_string(s.numHeads) +
                        " heads (and no head_dim is given)");
  } else if (a.ok()) {
    s.headDim = s.hiddenSize / s.numHeads;
  }
  s.causal = a.getBool("causal", true);
  s.attnScale = a.optPositive("scale").value_or(0.0);
  s.attnSoftcap = a.optPositive("softcap");
  std::string qk = a.getChoice("qk_norm", "none", {"none", "per_head", "per_head_gains", "full"});
  s.qkNorm = qk == "none"             ? QKNormKind::None
             : qk == "per_head"       ? QKNormKind::PerHead
             : qk == "per_head_gains" ? QKNormKind::PerHeadStacked
                                      : QKNormKind::Full;
  // An RMSNorm with the blocks' epsilon and gain offset, or a bias-free
  // LayerNorm (Cohere, StableLM 2), whatever the blocks' norm is.
  std::string qkKind = a.getChoice("qk_norm_kind", "rms", {"rms", "layer"});
  if (s.qkNorm != QKNormKind::None) {
    s.names.qNorm = "self_attn.q_norm";
    s.names.kNorm = "self_attn.k_norm";
    s.qkNormSpec = qkKind == "rms" ? NormSpec{NormType::RMSNorm, s.norm.eps, s.norm.gainOffset, false}
                                   : NormSpec{NormType::LayerNorm, s.norm.eps, 0.0, false};
  }
  s.qkvBias = a.getBool("bias", false);
  s.oBias = a.getBool("out_bias", false);
  int64_t window = a.getInt("sliding_window", 0, 0, L::kMaxPositions);
  // A window bounds how far back a row looks: bidirectional attention has
  // no "back" (tbc.attention's verifier says the same of the IR).
  if (window > 0 && !s.causal)
    a.fail("sliding_window", "needs causal attention (\"causal\": false is set)");
  // layer_pattern repeats over the layers: "local" layers use the window.
  std::vector<bool> pattern{window > 0};
  if (const json::Value *p = a.raw("layer_pattern")) {
    pattern.clear();
    if (!p->isArray() || p->elements().empty())
      a.fail("layer_pattern", "expected a non-empty array of \"local\" / "
                              "\"global\"");
    else
      for (const json::Value &e : p->elements()) {
        if (!e.isString() ||
            (e.asString() != "local" && e.asString() != "global")) {
          a.fail("layer_pattern", "entries must be \"local\" or \"global\"");
          break;
        }
        pattern.push_back(e.asString() == "local");
      }
    if (a.ok() && window == 0)
      a.fail("layer_pattern", "needs attention.sliding_window > 0");
  }
  if (!a.ok())
    return;
  s.layers.assign(s.numLayers, LayerVariant{});
  for (int64_t i = 0; i < s.numLayers; ++i)
    s.layers[i].window = pattern[i % pattern.size()] ? window : 0;
}

void readFfn(JsonFields &f, ModelSpec &s) {
  const json::Value *obj = f.getObject("ffn");
  if (!obj) {
    f.fail("ffn", "required section is missing");
    return;
  }
  JsonFields n = f.nested(*obj, "ffn");
  std::string kind = n.getChoice("kind", "glu", {"glu", "mlp"});
  s.ffnKind = kind == "glu" ? FfnKind::Glu : FfnKind::Mlp;
  s.activation = n.getChoice("activation", "silu",
                             {"silu", "gelu", "gelu_tanh", "relu", "relu2", "sigmoid"});
  s.ffnSize = n.reqInt("d_ff", 1, L::kMaxFfn);
  s.ffnBias = s.downBias = n.getBool("bias", false);
  if (s.ffnKind == FfnKind::Glu)
    s.names.gate = "mlp.gate_proj";
  s.names.up = "mlp.up_proj";
  s.names.down = "mlp.down_proj";
}

/// ALiBi slopes: a family's rule ("bloom", the paper's; "mpt", with
/// `max_bias`) or one number per head.
void readAlibi(JsonFields &p, ModelSpec &s) {
  const json::Value *slopes = p.raw("slopes");
  if (slopes && slopes->isArray()) {
    for (const json::Value &e : slopes->elements()) {
      if (!e.isNumber()) {
        p.fail("slopes", "expected numbers (one slope per head)");
        return;
      }
      s.alibiSlopes.push_back(e.asDouble());
    }
    return;
  }
  std::string rule = p.getChoice("slopes", "bloom", {"bloom", "mpt"});
  s.alibiSlopes = rule == "bloom"
                      ? bloomAlibiSlopes(s.numHeads)
                      : mptAlibiSlopes(s.numHeads,
                                       p.optPositive("max_bias").value_or(8.0));
}

void readPositions(JsonFields &f, ModelSpec &s) {
  const json::Value *obj = f.getObject("positions");
  if (!obj) {
    f.fail("positions", "required section is missing");
    return;
  }
  JsonFields p = f.nested(*obj, "positions");
  std::string kind = p.getChoice(
      "kind", "rope", {"rope", "learned", "sinusoidal", "alibi", "relative", "none"});
  s.positions = kind == "rope"         ? PositionKind::Rope
                : kind == "learned"    ? PositionKind::Learned
                : kind == "sinusoidal" ? PositionKind::Sinusoidal
                : kind == "alibi"      ? PositionKind::Alibi
                : kind == "relative"   ? PositionKind::Relative
                                       : PositionKind::None;
  if (s.positions == PositionKind::Learned)
    s.names.positionEmbed = "model.embed_positions.weight";
  if (s.positions == PositionKind::Sinusoidal)
    s.sinusoidalBase = p.optPositive("base").value_or(10000.0);
  if (s.positions == PositionKind::Alibi)
    readAlibi(p, s);
  if (s.positions == PositionKind::Relative) {
    s.relative.numBuckets = p.getInt("num_buckets", 32, 0, int64_t(1) << 16);
    s.relative.maxDistance = p.getInt("max_distance", 128, 0, L::kMaxPositions);
    s.relative.bidirectional = p.getBool("bidirectional", false);
    s.relative.perLayer = p.getBool("per_layer", false);
    s.names.relativeBias = s.relative.perLayer
                               ? "self_attn.relative_attention_bias"
                               : "model.relative_attention_bias";
  }
  if (s.positions != PositionKind::Rope || !p.ok())
    return;
  RopeSpec rope;
  rope.gptjStyle = p.getChoice("style", "neox", {"neox", "gptj"}) == "gptj";
  rope.theta = p.optPositive("theta").value_or(10000.0);
  if (p.has("rotary_dim")) {
    rope.rotaryDim = p.reqInt("rotary_dim", 1, L::kMaxHeadDim);
  } else {
    double factor = p.getNumber("partial_rotary_factor", 1.0);
    if (p.ok() && !(factor > 0 && factor <= 1))
      p.fail("partial_rotary_factor", "must be in (0, 1]");
    rope.rotaryDim = int64_t(double(s.headDim) * factor);
  }
  if (const json::Value *sc = p.getObject("scaling")) {
    JsonFields r = p.nested(*sc, "scaling");
    if (!r.has("type"))
      r.fail("type", "required field is missing");
    RopeScalingContext c;
    c.maxPositions = s.maxPositions;
    c.rotaryDim = rope.rotaryDim;
    if (r.ok())
      rope.scaling = readRopeScaling(r, c);
  }
  double localTheta = p.optPositive("local_theta").value_or(rope.theta);
  for (LayerVariant &l : s.layers) {
    l.rope = rope;
    if (l.window > 0 && p.has("local_theta")) {
      l.rope.theta = localTheta;
      l.rope.scaling = {};
    }
  }
  // no_rope_pattern repeats over the layers: true marks a layer whose
  // queries and keys are not rotated (NoPE: SmolLM3's every fourth layer,
  // Cohere 2's global ones).
  if (const json::Value *pattern = p.raw("no_rope_pattern")) {
    if (!pattern->isArray() || pattern->elements().empty() ||
        !llvm::all_of(pattern->elements(), [](const json::Value &e) { return e.isBool(); })) {
      p.fail("no_rope_pattern", "expected a non-empty array of true (no RoPE) / false");
      return;
    }
    const auto &flags = pattern->elements();
    for (int64_t i = 0; i < s.numLayers; ++i)
      s.layers[i].noRope = flags[i % flags.size()].asBool();
  }
  extendPositionsForDynamicRope(s);
}

std::string specFieldFor(const std::string &key) {
  static const std::map<std::string, std::string> fields = {
      {"heads", "attention.heads"},
      {"kv_heads", "attention.kv_heads"},
      {"head_dim", "attention.head_dim"},
      {"ffn_size", "ffn.d_ff"},
      {"rotary_dim", "positions.rotary_dim"},
      {"rope_theta", "positions.theta"},
      {"rope_scaling", "positions.scaling"},
      {"window", "attention.sliding_window"},
      {"alibi_slopes", "positions.slopes"},
      {"num_buckets", "positions.num_buckets"},
      {"max_distance", "positions.max_distance"}};
  auto it = fields.find(key);
  return it == fields.end() ? key : it->second;
}
} // namespace

std::optional<ModelSpec> tbc::readNativeSpec(const json::Value &root,
                                             const std::string &file,
                                             SourceError &error) {
  std::set<std::string> read;
  JsonFields f(root, file, error);
  f.trackReads(&read);
  ModelSpec s;
  s.architecture = "native spec";
  // Free text for people (docs/spec.md): known, so not a typo.
  f.getString("name", "");
  f.getString("description", "");
  if (f.getInt("tbc_spec", 0, 1, 1) != 1)
    f.fail("tbc_spec", "required field is missing (this format is version 1)");
  s.vocabSize = f.reqInt("vocab_size", 1, L::kMaxVocab);
  s.hiddenSize = f.reqInt("hidden_size", 1, L::kMaxHidden);
  s.numLayers = f.reqInt("num_layers", 1, L::kMaxLayers);
  s.maxPositions = f.getInt("max_positions", 0, 0, L::kMaxPositions);
  if (!f.ok())
    return std::nullopt;
  s.names.embed = "model.embed_tokens.weight";
  s.names.layerPrefix = "model.layers.{i}.";
  s.names.finalNorm = "model.norm";
  s.names.lmHead = "lm_head.weight";
  s.names.q = "self_attn.q_proj";
  s.names.k = "self_attn.k_proj";
  s.names.v = "self_attn.v_proj";
  s.names.o = "self_attn.o_proj";
  readNorm(f, s);
  if (f.ok())
    readAttention(f, s);
  if (f.ok())
    readFfn(f, s);
  if (f.ok())
    readPositions(f, s);
  std::string block =
      f.getChoice("block", "serial", {"serial", "parallel", "parallel_shared_norm"});
  s.parallelBlock = block != "serial";
  s.sharedParallelNorm = block == "parallel_shared_norm";
  if (s.sharedParallelNorm)
    s.names.ffnPreNorm = "";
  if (f.ok() && s.parallelBlock && s.placement != NormPlacement::Pre)
    f.fail("block", "a parallel block needs norm.placement \"pre\"");
  if (const json::Value *scale = f.raw("embedding_scale")) {
    if (scale->isString() && scale->asString() == "sqrt_hidden")
      s.embeddingScale = std::sqrt(double(s.hiddenSize));
    else
      s.embeddingScale = f.optPositive("embedding_scale").value_or(1.0);
  }
  s.residualScale = f.optPositive("residual_scale").value_or(1.0);
  s.logitScale = f.optPositive("logit_scale").value_or(1.0);
  s.finalNorm = f.getBool("final_norm", true);
  s.tiedEmbeddings = f.getBool("tied_embeddings", false);
  s.lmHeadBias = f.getBool("lm_head_bias", false);
  if (s.lmHeadBias)
    s.names.lmHeadBias = "lm_head.bias";
  s.finalSoftcap = f.optPositive("final_logit_softcap");
  if (!f.ok())
    return std::nullopt;
  failUnknownFields(f, root, read);
  if (!f.ok())
    return std::nullopt;
  if (std::optional<SpecViolation> v = validateModelSpec(s)) {
    f.fail(specFieldFor(v->key), v->message);
    return std::nullopt;
  }
  return s;
}
