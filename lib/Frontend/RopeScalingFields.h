//===- RopeScalingFields.h - RoPE scaling objects -> RopeScalingSpec -*- C++ -*-===//
//
// One reader for the scaling object of transformers 4's `rope_scaling`, 5's
// `rope_parameters` and the native spec's `positions.scaling`: the same
// field names, the same defaults as transformers' ROPE_INIT_FUNCTIONS.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_LIB_FRONTEND_ROPESCALINGFIELDS_H
#define TBC_LIB_FRONTEND_ROPESCALINGFIELDS_H

#include "JsonFields.h"
#include "tbc/Frontend/ModelSpec.h"

namespace tbc {

/// What a scaling object's defaults come from outside it.
struct RopeScalingContext {
  /// max_position_embeddings (0: not given).
  int64_t maxPositions = 0;
  /// A top-level original_max_position_embeddings, which takes priority
  /// over the object's (transformers' standardize_rope_params does so).
  std::optional<int64_t> originalMaxPosition;
  /// Rotary dims: longrope's factors need rotaryDim / 2 entries.
  int64_t rotaryDim = 0;
  /// Phi-3 spells longrope 'su' or 'yarn' (Phi3Config renames them).
  bool phi3 = false;
};

/// The scaling of the object `r`, whose kind is its `rope_type` (or
/// `type`): default/none, linear, llama3, yarn, longrope or dynamic.
RopeScalingSpec readRopeScaling(JsonFields &r, const RopeScalingContext &c);

/// Dynamic NTK exists to run past max_position_embeddings: a model whose
/// layers use it may reach factor x that length (its sessions' default
/// capacity), not the trained length.
void extendPositionsForDynamicRope(ModelSpec &s);

} // namespace tbc

#endif // TBC_LIB_FRONTEND_ROPESCALINGFIELDS_H
