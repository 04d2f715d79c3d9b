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

/// inv_freq[i] = theta^(-2i / rotaryDim) for i in [0, rotaryDim/2), rescaled
/// as transformers' ROPE_INIT_FUNCTIONS do for `scaling` (none when null).
/// Computed in double, as the reference computes it in float64/float32
/// before casting.
std::vector<double> ropeInverseFrequencies(double theta, int64_t rotaryDim,
                                           RopeScalingAttr scaling = {});

} // namespace tbc

#endif // TBC_DIALECT_ROPE_H
