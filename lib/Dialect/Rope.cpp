//===- Rope.cpp - rotary embedding frequencies ----------------------------===//

#include "tbc/Dialect/Rope.h"

#include <cmath>

std::vector<double> tbc::ropeInverseFrequencies(double theta, int64_t rotaryDim,
                                                RopeScalingAttr scaling) {
  std::vector<double> inv(rotaryDim / 2);
  for (int64_t i = 0; i < rotaryDim / 2; ++i)
    inv[i] = 1.0 / std::pow(theta, double(2 * i) / double(rotaryDim));
  if (!scaling)
    return inv;
  double factor = scaling.getFactor().convertToDouble();
  switch (scaling.getKind()) {
  case RopeScalingKind::linear:
    for (double &f : inv)
      f /= factor;
    break;
  case RopeScalingKind::llama3: {
    // transformers' _compute_llama3_parameters: long wavelengths are slowed
    // down by `factor`, short ones kept, the band between interpolated.
    const double pi = 3.14159265358979323846;
    double oldLen = double(scaling.getOriginalMaxPosition());
    double low = scaling.getLowFreqFactor().convertToDouble();
    double high = scaling.getHighFreqFactor().convertToDouble();
    double lowWavelen = oldLen / low;
    double highWavelen = oldLen / high;
    for (double &f : inv) {
      double wavelen = 2 * pi / f;
      if (wavelen > lowWavelen) {
        f /= factor;
      } else if (wavelen >= highWavelen) {
        double smooth = (oldLen / wavelen - low) / (high - low);
        f = (1 - smooth) * f / factor + smooth * f;
      }
    }
    break;
  }
  }
  return inv;
}
