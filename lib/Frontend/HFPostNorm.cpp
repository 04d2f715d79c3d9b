//===- HFPostNorm.cpp - norms after each sub-layer ------------------------===//
//
// OLMo 2, OLMo 3 and EXAONE 4: Llama's names and projections in blocks
// x + n(f(x)) (NormPlacement::BranchPost: no norm before a sub-layer, one
// after each, post_attention_layernorm and post_feedforward_layernorm), with
// RMSNorms of the queries and keys.
//
//===----------------------------------------------------------------------===//

#include "HFReaders.h"

using namespace tbc;
using namespace tbc::hf;

namespace {
using L = SpecLimits;

/// The block the three share: `qkNorm` says whether the query and key
/// norms see each head apart (EXAONE 4) or the whole projection (OLMo).
void readBranchPostBlock(JsonFields &f, ModelSpec &s, const LlamaDefaults &defaults,
                         QKNormKind qkNorm) {
  readLlamaCommon(f, s, defaults);
  s.placement = NormPlacement::BranchPost;
  s.names.attnPreNorm = s.names.ffnPreNorm = "";
  s.names.attnPostNorm = "post_attention_layernorm";
  s.names.ffnPostNorm = "post_feedforward_layernorm";
  s.qkNorm = qkNorm;
  s.names.qNorm = "self_attn.q_norm";
  s.names.kNorm = "self_attn.k_norm";
}
} // namespace

void hf::readOlmo2(JsonFields &f, ModelSpec &s) {
  readBranchPostBlock(f, s, {2048, 1e-5}, QKNormKind::Full);
  s.qkvBias = s.oBias = f.getBool("attention_bias", false);
  layerWindows(f, s, 0, [](int64_t) { return false; });
  readRope(f, s, 10000.0);
}

/// OLMo 3: OLMo 2's block with sliding-window layers (three in four by
/// default, or layer_types) and a RoPE scaling (rope_scaling, or
/// rope_parameters.full_attention) on the global layers only; both kinds
/// share the base (500000 by default).
void hf::readOlmo3(JsonFields &f, ModelSpec &s) {
  readBranchPostBlock(f, s, {2048, 1e-5}, QKNormKind::Full);
  s.qkvBias = s.oBias = f.getBool("attention_bias", false);
  int64_t window = slidingWindow(f, 4096);
  layerWindows(f, s, window, [](int64_t i) { return (i + 1) % 4 != 0; });
  if (!f.ok() || readRope(f, s, 500000.0))
    return; // per-layer-type rope_parameters say each kind's scaling
  for (LayerVariant &l : s.layers)
    if (l.window > 0)
      l.rope.scaling = {};
}

/// EXAONE 4: the block with an RMSNorm of each query and key head (one gain
/// of head_dim for all heads) and, when the config has a sliding window,
/// sliding layers (sliding_window_pattern: all but every 4th by default, or
/// layer_types) that alone rotate their queries and keys: the global layers
/// have no positions (NoPE). Without a window every layer is global and
/// rotates.
void hf::readExaone4(JsonFields &f, ModelSpec &s) {
  readBranchPostBlock(f, s, {2048, 1e-5, 32}, QKNormKind::PerHead);
  if (!f.ok())
    return;
  int64_t window = slidingWindow(f, 4096);
  // The pattern is read only where layer_types does not say (configs
  // carrying both spell it "LLLG", which transformers then ignores).
  int64_t pattern = window > 0 && f.absent("layer_types")
                        ? f.getInt("sliding_window_pattern", 4, 1, L::kMaxLayers)
                        : 0;
  layerWindows(f, s, window, [&](int64_t i) { return pattern > 0 && (i + 1) % pattern != 0; });
  if (!f.ok())
    return;
  for (LayerVariant &l : s.layers)
    l.noRope = window > 0 && l.window == 0;
  readRope(f, s, 10000.0);
}
