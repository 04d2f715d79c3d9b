//===- RopeScalingFields.cpp - RoPE scaling objects -> RopeScalingSpec ----===//
//
// Defaults follow transformers 5's modeling_rope_utils.py: a missing
// original_max_position_embeddings is max_position_embeddings; yarn and
// longrope without `factor` take max_position_embeddings / original; their
// attention factor, when absent, is derived from the factor.
//
//===----------------------------------------------------------------------===//

#include "RopeScalingFields.h"

#include "tbc/Dialect/Rope.h"

#include <algorithm>

using namespace tbc;

void tbc::extendPositionsForDynamicRope(ModelSpec &s) {
  for (const LayerVariant &l : s.layers)
    if (l.rope.scaling.kind == RopeScalingKind::dynamic)
      s.maxPositions = std::max(
          s.maxPositions,
          int64_t(l.rope.scaling.factor * double(l.rope.scaling.originalMaxPosition)));
}

RopeScalingSpec tbc::readRopeScaling(JsonFields &r, const RopeScalingContext &c) {
  using L = SpecLimits;
  RopeScalingSpec s;
  std::string kindKey = r.has("rope_type") ? "rope_type" : "type";
  std::string kind = r.getString(kindKey, "");
  if (c.phi3 && (kind == "su" || kind == "yarn"))
    kind = "longrope";
  if (kind == "default" || kind.empty() || !r.ok())
    return s;
  std::optional<RopeScalingKind> parsed = symbolizeRopeScalingKind(kind);
  if (!parsed) {
    r.fail(kindKey, "rope scaling '" + kind +
                        "' is not supported (supported: linear, llama3, yarn, "
                        "longrope, dynamic)");
    return s;
  }
  s.kind = *parsed;

  // The length the model was pretrained to.
  bool usesOriginal = s.kind != RopeScalingKind::linear;
  if (usesOriginal) {
    if (s.kind == RopeScalingKind::dynamic) {
      s.originalMaxPosition = c.maxPositions;
      if (s.originalMaxPosition <= 0)
        r.fail(kindKey, "dynamic rope scaling needs the maximum position "
                             "(max_position_embeddings)");
    } else if (c.originalMaxPosition) {
      s.originalMaxPosition = *c.originalMaxPosition;
    } else if (r.has("original_max_position_embeddings")) {
      s.originalMaxPosition =
          r.reqInt("original_max_position_embeddings", 1, L::kMaxPositions);
    } else if (c.maxPositions > 0) {
      s.originalMaxPosition = c.maxPositions;
    } else {
      r.fail("original_max_position_embeddings",
             "required field is missing (and the model gives no maximum position)");
    }
  }

  // yarn and longrope derive a missing factor from the lengths.
  bool derivedFactor = s.kind == RopeScalingKind::yarn || s.kind == RopeScalingKind::longrope;
  if (r.has("factor"))
    s.factor = r.optPositive("factor").value_or(1.0);
  else if (derivedFactor && c.maxPositions > 0 && s.originalMaxPosition > 0)
    s.factor = double(c.maxPositions) / double(s.originalMaxPosition);
  else if (r.ok())
    r.fail("factor", "required field is missing");

  switch (s.kind.value_or(RopeScalingKind::linear)) {
  case RopeScalingKind::linear:
  case RopeScalingKind::dynamic:
    break;
  case RopeScalingKind::llama3:
    s.lowFreqFactor = r.getNumber("low_freq_factor", 1.0);
    s.highFreqFactor = r.getNumber("high_freq_factor", 4.0);
    break;
  case RopeScalingKind::yarn: {
    // `x or default`: transformers treats 0 and null alike.
    auto orDefault = [&](const char *key, double dflt) {
      double v = r.getNumber(key, 0.0);
      return v != 0.0 ? v : dflt;
    };
    s.betaFast = orDefault("beta_fast", 32.0);
    s.betaSlow = orDefault("beta_slow", 1.0);
    if (r.ok() && !(s.betaSlow > 0 && s.betaFast > s.betaSlow))
      r.fail("beta_fast", "must exceed beta_slow (" + json::formatNumber(s.betaSlow) +
                              ") and both be positive, got " +
                              json::formatNumber(s.betaFast));
    s.truncate = r.getBool("truncate", true);
    std::optional<double> given = r.optPositive("attention_factor");
    s.attentionFactor =
        given ? *given
              : yarnDefaultAttentionFactor(s.factor, r.getNumber("mscale", 0.0),
                                           r.getNumber("mscale_all_dim", 0.0));
    break;
  }
  case RopeScalingKind::longrope: {
    for (auto [key, out] : {std::pair{"short_factor", &s.shortFactor},
                            std::pair{"long_factor", &s.longFactor}}) {
      if (!r.has(key)) {
        r.fail(key, "required field is missing (longrope scaling)");
        return s;
      }
      *out = r.optNumbers(key).value_or(std::vector<double>{});
      if (!r.ok())
        return s;
      if (c.rotaryDim > 0 && int64_t(out->size()) != c.rotaryDim / 2) {
        r.fail(key, "has " + std::to_string(out->size()) +
                        " entries; longrope needs one per rotary frequency "
                        "(rotary dims / 2 = " +
                        std::to_string(c.rotaryDim / 2) + ")");
        return s;
      }
      for (size_t i = 0; i < out->size(); ++i)
        if (!((*out)[i] > 0)) {
          r.fail(key, "entry " + std::to_string(i) + " must be positive, got " +
                          json::formatNumber((*out)[i]));
          return s;
        }
    }
    std::optional<double> given = r.optPositive("attention_factor");
    s.attentionFactor =
        given ? *given : longropeDefaultAttentionFactor(s.factor, s.originalMaxPosition);
    break;
  }
  }
  return s;
}
