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

mlir::LogicalResult
tbc::verifyRotaryParameters(llvm::function_ref<mlir::InFlightDiagnostic()> emitError,
                            int64_t headDim, int64_t rotaryDim, double theta,
                            RopeScalingAttr scaling) {
  for (auto [name, value] : {std::pair{"head_dim", headDim}, {"rotary_dim", rotaryDim}})
    if (value <= 0)
      return emitError() << "'" << name << "' must be positive, got " << value;
  if (!(theta > 0))
    return emitError() << "'theta' must be positive, got " << theta;
  if (rotaryDim % 2 != 0)
    return emitError() << "'rotary_dim' must be even, got " << rotaryDim;
  if (rotaryDim > headDim)
    return emitError() << "'rotary_dim' " << rotaryDim << " exceeds 'head_dim' " << headDim;
  if (scaling && scaling.getShortFactor() &&
      int64_t(scaling.getShortFactor().size()) != rotaryDim / 2)
    return emitError() << "longrope factors must have rotary_dim / 2 = " << rotaryDim / 2
                       << " entries, got " << scaling.getShortFactor().size();
  return mlir::success();
}

mlir::LogicalResult tbc::verifyRopePositions(mlir::Operation *op, mlir::Value input,
                                             mlir::Value positions, mlir::Value lengths,
                                             RopeScalingAttr scaling) {
  using mlir::ShapedType;
  llvm::ArrayRef<int64_t> in = llvm::cast<ShapedType>(input.getType()).getShape();
  llvm::ArrayRef<int64_t> pos = llvm::cast<ShapedType>(positions.getType()).getShape();
  if (pos.size() + 1 != in.size())
    return op->emitOpError("positions must have rank ")
           << in.size() - 1 << " (the input without its feature dimension)";
  for (size_t i = 0; i < pos.size(); ++i)
    if (!ShapedType::isDynamic(pos[i]) && !ShapedType::isDynamic(in[i]) && pos[i] != in[i])
      return op->emitOpError("positions disagree with the input in dimension ") << i;
  bool needsLengths = scaling && scaling.dependsOnLength();
  if (needsLengths != bool(lengths))
    return needsLengths
               ? op->emitOpError("'")
                     << stringifyRopeScalingKind(scaling.getKind())
                     << "' scaling depends on the sequence's length: it needs "
                        "the 'lengths' operand"
               : op->emitOpError("'lengths' is only read by longrope and dynamic "
                                 "scaling");
  if (lengths && lengths.getType() != positions.getType())
    return op->emitOpError("lengths must have the type of positions, ")
           << positions.getType();
  return mlir::success();
}

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
