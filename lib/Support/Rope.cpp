//===- Rope.cpp - rotary embedding frequencies ----------------------------===//

#include "tbc/Support/Rope.h"

#include <cmath>

std::vector<double> tbc::ropeInverseFrequencies(double theta, int64_t rotaryDim,
                                                const RopeScalingParams &s) {
  std::vector<double> inv(rotaryDim / 2);
  for (int64_t i = 0; i < rotaryDim / 2; ++i)
    inv[i] = 1.0 / std::pow(theta, double(2 * i) / double(rotaryDim));
  switch (s.mode) {
  case RopeScalingMode::None:
    break;
  case RopeScalingMode::Linear:
    for (double &f : inv)
      f /= s.factor;
    break;
  case RopeScalingMode::Llama3: {
    // transformers' _compute_llama3_parameters: long wavelengths are slowed
    // down by `factor`, short ones kept, the band between interpolated.
    const double pi = 3.14159265358979323846;
    double oldLen = double(s.originalMaxPosition);
    double lowWavelen = oldLen / s.lowFreqFactor;
    double highWavelen = oldLen / s.highFreqFactor;
    for (double &f : inv) {
      double wavelen = 2 * pi / f;
      if (wavelen > lowWavelen) {
        f /= s.factor;
      } else if (wavelen >= highWavelen) {
        double smooth = (oldLen / wavelen - s.lowFreqFactor) /
                        (s.highFreqFactor - s.lowFreqFactor);
        f = (1 - smooth) * f / s.factor + smooth * f;
      }
    }
    break;
  }
  }
  return inv;
}
