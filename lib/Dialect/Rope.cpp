//===- Rope.cpp - rotary embedding frequencies ----------------------------===//
//
// Each scaling follows its function in transformers' modeling_rope_utils.py
// (_compute_<kind>_parameters), step for step.
//
//===----------------------------------------------------------------------===//

#include "tbc/Dialect/Rope.h"

#include <algorithm>
#include <cmath>

using namespace tbc;

namespace {
constexpr double kPi = 3.14159265358979323846;

void scaleLlama3(std::vector<double> &inv, RopeScalingAttr s) {
  // Long wavelengths are slowed down by `factor`, short ones kept, the band
  // between interpolated.
  double factor = s.getFactor().convertToDouble();
  double oldLen = double(s.getOriginalMaxPosition());
  double low = s.getLowFreqFactor().convertToDouble();
  double high = s.getHighFreqFactor().convertToDouble();
  double lowWavelen = oldLen / low;
  double highWavelen = oldLen / high;
  for (double &f : inv) {
    double wavelen = 2 * kPi / f;
    if (wavelen > lowWavelen) {
      f /= factor;
    } else if (wavelen >= highWavelen) {
      double smooth = (oldLen / wavelen - low) / (high - low);
      f = (1 - smooth) * f / factor + smooth * f;
    }
  }
}

void scaleYarn(std::vector<double> &inv, RopeScalingAttr s, double theta,
               int64_t dim) {
  // The dim whose wavelength makes `rotations` turns in the original length.
  double oldLen = double(s.getOriginalMaxPosition());
  auto correctionDim = [&](double rotations) {
    return (double(dim) * std::log(oldLen / (rotations * 2 * kPi))) /
           (2 * std::log(theta));
  };
  double low = correctionDim(s.getBetaFast().convertToDouble());
  double high = correctionDim(s.getBetaSlow().convertToDouble());
  if (s.getTruncate()) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, double(dim - 1));
  if (low == high)
    high += 0.001; // transformers' guard against a zero-width ramp
  double factor = s.getFactor().convertToDouble();
  for (size_t i = 0; i < inv.size(); ++i) {
    double ramp = std::clamp((double(i) - low) / (high - low), 0.0, 1.0);
    double extrapolation = 1 - ramp; // share of the unscaled frequency
    inv[i] = inv[i] / factor * (1 - extrapolation) + inv[i] * extrapolation;
  }
}
} // namespace

std::vector<double> tbc::ropeInverseFrequencies(double theta, int64_t rotaryDim,
                                                RopeScalingAttr scaling,
                                                int64_t sequenceLength) {
  auto unscaled = [&](double base) {
    std::vector<double> inv(rotaryDim / 2);
    for (int64_t i = 0; i < rotaryDim / 2; ++i)
      inv[i] = 1.0 / std::pow(base, double(2 * i) / double(rotaryDim));
    return inv;
  };
  if (!scaling)
    return unscaled(theta);
  double factor = scaling.getFactor().convertToDouble();
  int64_t oldLen = scaling.getOriginalMaxPosition();
  switch (scaling.getKind()) {
  case RopeScalingKind::linear: {
    std::vector<double> inv = unscaled(theta);
    for (double &f : inv)
      f /= factor;
    return inv;
  }
  case RopeScalingKind::llama3: {
    std::vector<double> inv = unscaled(theta);
    scaleLlama3(inv, scaling);
    return inv;
  }
  case RopeScalingKind::yarn: {
    std::vector<double> inv = unscaled(theta);
    scaleYarn(inv, scaling, theta, rotaryDim);
    return inv;
  }
  case RopeScalingKind::longrope: {
    std::vector<double> inv = unscaled(theta);
    llvm::ArrayRef<double> ext = sequenceLength > oldLen
                                     ? scaling.getLongFactor().asArrayRef()
                                     : scaling.getShortFactor().asArrayRef();
    for (size_t i = 0; i < inv.size() && i < ext.size(); ++i)
      inv[i] /= ext[i];
    return inv;
  }
  case RopeScalingKind::dynamic: {
    double len = double(std::max(sequenceLength, oldLen));
    double d = double(rotaryDim);
    return unscaled(theta * std::pow(factor * len / double(oldLen) - (factor - 1),
                                     d / (d - 2)));
  }
  }
  return unscaled(theta);
}

double tbc::ropeAttentionFactor(RopeScalingAttr scaling) {
  return scaling ? scaling.getAttentionFactor().convertToDouble() : 1.0;
}

double tbc::yarnDefaultAttentionFactor(double factor, double mscale,
                                       double mscaleAllDim) {
  auto get = [&](double m) {
    return factor <= 1 ? 1.0 : 0.1 * m * std::log(factor) + 1.0;
  };
  if (mscale != 0 && mscaleAllDim != 0)
    return get(mscale) / get(mscaleAllDim);
  return get(1.0);
}

double tbc::longropeDefaultAttentionFactor(double factor,
                                           int64_t originalMaxPosition) {
  if (factor <= 1)
    return 1.0;
  return std::sqrt(1 + std::log(factor) / std::log(double(originalMaxPosition)));
}
