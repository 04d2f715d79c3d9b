//===- Rope.h - rotary embedding frequencies --------------------*- C++ -*-===//
//
// One definition of RoPE's inverse frequencies (with the scalings of
// #tbc.rope_scaling), used by both lowerings' frequency tables and the tests.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_DIALECT_ROPE_H
#define TBC_DIALECT_ROPE_H

#include "tbc/Dialect/TbcDialect.h"

#include <vector>

namespace tbc {

/// The checks tbc.rope and #tbc.rotary share: positive head_dim, rotary_dim
/// and theta, an even rotary_dim within head_dim, and as many longrope
/// factors as frequencies (rotary_dim / 2).
mlir::LogicalResult
verifyRotaryParameters(llvm::function_ref<mlir::InFlightDiagnostic()> emitError,
                       int64_t headDim, int64_t rotaryDim, double theta,
                       RopeScalingAttr scaling);

/// The position operands of an op that rotates `input` ([..., seq,
/// features]): `positions` is [..., seq]; `lengths` (its type) is present
/// exactly when `scaling` depends on the sequence's length.
mlir::LogicalResult verifyRopePositions(mlir::Operation *op, mlir::Value input,
                                        mlir::Value positions, mlir::Value lengths,
                                        RopeScalingAttr scaling);

/// inv_freq[i] = theta^(-2i / rotaryDim) for i in [0, rotaryDim/2), rescaled
/// as transformers' ROPE_INIT_FUNCTIONS do for `scaling` (none when null)
/// for a sequence of `sequenceLength` positions (longrope and dynamic
/// depend on it; 0: a sequence within original_max_position). Computed in
/// double, as the reference computes it in float64/float32 before casting.
std::vector<double> ropeInverseFrequencies(double theta, int64_t rotaryDim,
                                           RopeScalingAttr scaling = {},
                                           int64_t sequenceLength = 0);

/// The factor cos and sin are multiplied by (transformers'
/// attention_scaling): `attention_factor` for yarn and longrope, else 1.
double ropeAttentionFactor(RopeScalingAttr scaling);

/// transformers' defaults for attention_factor when a config leaves it out:
/// yarn's `0.1 mscale ln(factor) + 1` ratio and longrope's
/// `sqrt(1 + ln(factor) / ln(original_max_position))`. `mscale` and
/// `mscaleAllDim` are 0 when absent.
double yarnDefaultAttentionFactor(double factor, double mscale,
                                  double mscaleAllDim);
double longropeDefaultAttentionFactor(double factor,
                                      int64_t originalMaxPosition);

} // namespace tbc

#endif // TBC_DIALECT_ROPE_H
