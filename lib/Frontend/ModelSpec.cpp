//===- ModelSpec.cpp - cross-field rules of a model description -----------===//

#include "tbc/Frontend/ModelSpec.h"

#include "tbc/Dialect/PositionBias.h"

#include "tbc/Support/Json.h"

#include <cmath>

using namespace tbc;

static std::string num(int64_t v) { return std::to_string(v); }

std::optional<SpecViolation> tbc::validateModelSpec(const ModelSpec &s) {
  using L = SpecLimits;
  auto range = [](const char *key, int64_t v, int64_t max)
      -> std::optional<SpecViolation> {
    if (v < 1 || v > max)
      return SpecViolation{key, "value " + num(v) + " is outside [1, " +
                                    num(max) + "]"};
    return std::nullopt;
  };
  if (auto v = range("vocab_size", s.vocabSize, L::kMaxVocab)) return v;
  if (auto v = range("hidden_size", s.hiddenSize, L::kMaxHidden)) return v;
  if (auto v = range("num_layers", s.numLayers, L::kMaxLayers)) return v;
  if (auto v = range("heads", s.numHeads, L::kMaxHeads)) return v;
  if (auto v = range("kv_heads", s.numKvHeads, L::kMaxHeads)) return v;
  if (auto v = range("head_dim", s.headDim, L::kMaxHeadDim)) return v;
  if (auto v = range("ffn_size", s.ffnSize, L::kMaxFfn)) return v;
  if (s.numHeads % s.numKvHeads != 0)
    return SpecViolation{"kv_heads", "the " + num(s.numHeads) +
                                         " attention heads are not divisible "
                                         "into " +
                                         num(s.numKvHeads) + " key/value heads"};
  if (s.vocabSize * s.hiddenSize > L::kMaxTensorElements ||
      s.ffnSize * s.hiddenSize > L::kMaxTensorElements ||
      s.numHeads * s.headDim * s.hiddenSize > L::kMaxTensorElements)
    return SpecViolation{"hidden_size",
                         "a weight tensor would exceed 2^36 elements"};
  if (s.positions == PositionKind::Learned &&
      (s.maxPositions < 1 || s.maxPositions > L::kMaxPositions))
    return SpecViolation{"max_positions",
                         "learned positions need a table size in [1, " +
                             num(L::kMaxPositions) + "], got " +
                             num(s.maxPositions)};
  if (s.positions == PositionKind::Alibi) {
    if (s.alibiSlopes.size() != size_t(s.numHeads))
      return SpecViolation{"alibi_slopes",
                           "expected one slope per head (" + num(s.numHeads) +
                               "), got " + num(int64_t(s.alibiSlopes.size()))};
    for (size_t h = 0; h < s.alibiSlopes.size(); ++h)
      if (!(s.alibiSlopes[h] > 0) || !std::isfinite(s.alibiSlopes[h]))
        return SpecViolation{"alibi_slopes",
                             "slope " + num(int64_t(h)) +
                                 " must be positive and finite, got " +
                                 json::formatNumber(s.alibiSlopes[h])};
  }
  if (s.positions == PositionKind::Relative) {
    const RelativeBiasSpec &r = s.relative;
    int64_t side = relativeBucketsPerSide(r.numBuckets, r.bidirectional);
    if (r.numBuckets < 2 || side < 2 || r.numBuckets > (1 << 16) ||
        (r.bidirectional && r.numBuckets % 2 != 0))
      return SpecViolation{"num_buckets",
                           std::string("must be ") +
                               (r.bidirectional ? "even and in [4, 65536]"
                                                : "in [2, 65536]") +
                               ", got " + num(r.numBuckets)};
    if (r.maxDistance <= side / 2 || r.maxDistance > L::kMaxPositions)
      return SpecViolation{"max_distance",
                           "must exceed the exact range (" + num(side / 2) +
                               ") and be at most " + num(L::kMaxPositions) +
                               ", got " + num(r.maxDistance)};
  }
  for (auto [key, v] : {std::pair{"residual_scale", s.residualScale},
                        std::pair{"logit_scale", s.logitScale},
                        std::pair{"embedding_scale", s.embeddingScale}})
    if (!(v > 0 && std::isfinite(v)))
      return SpecViolation{key, "must be positive and finite, got " + json::formatNumber(v)};
  if (s.clipQkv && !(*s.clipQkv > 0))
    return SpecViolation{"clip_qkv", "must be positive, got " +
                                         json::formatNumber(*s.clipQkv)};
  if (s.reverseRope &&
      (s.positions != PositionKind::Rope || s.qkvLayout != QkvLayout::Separate ||
       s.qkNorm == QKNormKind::PerHeadStacked))
    return SpecViolation{"rotary_dim", "a reversed RoPE needs RoPE positions, separate q/k "
                                       "projections and QK-norm gains per feature"};
  if (s.layers.size() != size_t(s.numLayers))
    return SpecViolation{"num_layers", "expected " + num(s.numLayers) +
                                           " layer descriptions, got " +
                                           num(int64_t(s.layers.size()))};
  for (const LayerVariant &l : s.layers) {
    if (l.window < 0)
      return SpecViolation{"window", "sliding window must be positive, got " +
                                         num(l.window)};
    if (s.positions != PositionKind::Rope)
      continue;
    const RopeSpec &r = l.rope;
    if (r.rotaryDim < 2 || r.rotaryDim % 2 != 0 || r.rotaryDim > s.headDim)
      return SpecViolation{"rotary_dim",
                           "rotary dims must be even and in [2, head_dim = " +
                               num(s.headDim) + "], got " + num(r.rotaryDim)};
    // A reversed RoPE is NeoX's on q/k whose heads' halves swap: it needs
    // the whole head rotated in halves, and q/k tensors it can swap.
    if (s.reverseRope && (r.gptjStyle || r.rotaryDim != s.headDim))
      return SpecViolation{"rotary_dim", "a reversed RoPE rotates whole heads in halves"};
    if (!(r.theta > 0))
      return SpecViolation{"rope_theta", "must be positive, got " +
                                             json::formatNumber(r.theta)};
    if (r.scaling.kind &&
        !(r.scaling.factor > 0))
      return SpecViolation{"rope_scaling", "factor must be positive"};
    if (r.scaling.kind == RopeScalingKind::llama3 &&
        !(r.scaling.lowFreqFactor > 0 &&
          r.scaling.highFreqFactor > r.scaling.lowFreqFactor &&
          r.scaling.originalMaxPosition > 0))
      return SpecViolation{"rope_scaling",
                           "llama3 scaling needs 0 < low_freq_factor < "
                           "high_freq_factor and original_max_position_"
                           "embeddings > 0"};
    if (r.scaling.kind == RopeScalingKind::yarn &&
        !(r.scaling.betaSlow > 0 && r.scaling.betaFast > r.scaling.betaSlow))
      return SpecViolation{"rope_scaling",
                           "yarn scaling needs 0 < beta_slow < beta_fast, got " +
                               json::formatNumber(r.scaling.betaSlow) + " and " +
                               json::formatNumber(r.scaling.betaFast)};
    if (r.scaling.kind == RopeScalingKind::longrope &&
        (int64_t(r.scaling.shortFactor.size()) != r.rotaryDim / 2 ||
         r.scaling.longFactor.size() != r.scaling.shortFactor.size()))
      return SpecViolation{"rope_scaling",
                           "longrope needs rotary dims / 2 = " + num(r.rotaryDim / 2) +
                               " short and long factors, got " +
                               num(int64_t(r.scaling.shortFactor.size())) + " and " +
                               num(int64_t(r.scaling.longFactor.size()))};
  }
  return std::nullopt;
}
