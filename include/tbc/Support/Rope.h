//===- Rope.h - rotary embedding frequencies --------------------*- C++ -*-===//
//
// One definition of RoPE's inverse frequencies (with linear and llama3
// scaling), shared by the lowering, the runtime and the tests. LLVM-free.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_SUPPORT_ROPE_H
#define TBC_SUPPORT_ROPE_H

#include <cstdint>
#include <vector>

namespace tbc {

enum class RopeScalingMode { None, Linear, Llama3 };

struct RopeScalingParams {
  RopeScalingMode mode = RopeScalingMode::None;
  double factor = 1.0;
  double lowFreqFactor = 1.0;
  double highFreqFactor = 4.0;
  int64_t originalMaxPosition = 8192;
};

/// inv_freq[i] = theta^(-2i / rotaryDim) for i in [0, rotaryDim/2), rescaled
/// as transformers' ROPE_INIT_FUNCTIONS do. Computed in double, as the
/// reference computes it in float64/float32 before casting.
std::vector<double> ropeInverseFrequencies(double theta, int64_t rotaryDim,
                                           const RopeScalingParams &scaling = {});

} // namespace tbc

#endif // TBC_SUPPORT_ROPE_H
