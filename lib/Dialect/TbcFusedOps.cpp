//===- TbcFusedOps.cpp - verifiers of fused ops and weight transforms -----===//

#include "tbc/Dialect/TbcDialect.h"
#include "tbc/Dialect/Rope.h"

#include <cmath>

using namespace mlir;
using namespace tbc;

static RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// Rank-1 operand of length `n`.
static LogicalResult checkVector(Operation *op, Value v, StringRef what,
                                 int64_t n) {
  RankedTensorType t = tensorType(v);
  if (t.getRank() != 1 || t.getShape()[0] != n)
    return op->emitOpError() << what << " must be a vector of " << n
                             << " elements, got " << t;
  return success();
}

/// The norm of a fused op (add_norm, norm_add) over `x`'s rows: eps, the
/// weight and (a LayerNorm's alone) bias, vectors of x's width.
static LogicalResult checkFusedNorm(Operation *op, NormKind kind, APFloat eps, Value x,
                                    Value weight, Value bias) {
  if (eps.convertToDouble() < 0)
    return op->emitOpError("'eps' must be non-negative");
  int64_t hidden = tensorType(x).getShape().back();
  if (failed(checkVector(op, weight, "weight", hidden)))
    return failure();
  if (bias && (kind != NormKind::layer || failed(checkVector(op, bias, "bias", hidden))))
    return op->emitOpError("only a LayerNorm takes a bias of the hidden size");
  return success();
}

/// [out, in] (or [in, out]) dimensions of a rank-2 weight.
static FailureOr<std::pair<int64_t, int64_t>>
weightOutIn(Operation *op, Value weight, bool inOut) {
  RankedTensorType t = tensorType(weight);
  if (t.getRank() != 2)
    return op->emitOpError("weight must be rank 2, got ") << t;
  int64_t out = t.getShape()[inOut ? 1 : 0], in = t.getShape()[inOut ? 0 : 1];
  return std::make_pair(out, in);
}

//===----------------------------------------------------------------------===//
// FusedLinearOp
//===----------------------------------------------------------------------===//

int64_t FusedLinearOp::getInFeatures() {
  ArrayRef<int64_t> w = getWeight().getType().getShape();
  return getWeightInOut() ? w[0] : w[1];
}

int64_t FusedLinearOp::getProjectionWidth() {
  ArrayRef<int64_t> w = getWeight().getType().getShape();
  return getWeightInOut() ? w[1] : w[0];
}

LogicalResult FusedLinearOp::verify() {
  FailureOr<std::pair<int64_t, int64_t>> outIn =
      weightOutIn(*this, getWeight(), getWeightInOut());
  if (failed(outIn))
    return failure();
  auto [rows, in] = *outIn;
  ArrayRef<int64_t> x = getInput().getType().getShape();
  ArrayRef<int64_t> y = getResult().getType().getShape();
  if (x.empty() || x.back() != in)
    return emitOpError("input must end in the weight's ")
           << in << " input features, got " << getInput().getType();
  if (getNorm().has_value() != getEps().has_value())
    return emitOpError("'norm' and 'eps' go together");
  if (getEps() && getEps()->convertToDouble() < 0)
    return emitOpError("'eps' must be non-negative");
  bool layer = getNorm() == NormKind::layer;
  if (layer != bool(getMeanCorrection()))
    return emitOpError("a LayerNorm prologue needs a mean_correction operand, "
                       "and only it");
  if (getGlu() && !getAct())
    return emitOpError("'glu' needs an 'act'");
  if (getSoftcap() && !(getSoftcap()->convertToDouble() > 0))
    return emitOpError("'softcap' must be positive");
  if (getScale() && !(getScale()->convertToDouble() > 0 &&
                      std::isfinite(getScale()->convertToDouble())))
    return emitOpError("'scale' must be positive and finite");
  if (getGlu() && rows % 2 != 0)
    return emitOpError("a GLU epilogue needs an even number of weight rows "
                       "(gate then up), got ")
           << rows;
  int64_t out = getGlu() ? rows / 2 : rows;
  if (y.size() != x.size() || y.back() != out)
    return emitOpError("result must end in ")
           << out << " features, got " << getResult().getType();
  if (getBias() && failed(checkVector(*this, getBias(), "bias", rows)))
    return failure();
  if (getMeanCorrection() &&
      failed(checkVector(*this, getMeanCorrection(), "mean_correction", rows)))
    return failure();
  if (getGain() && !getNorm())
    return emitOpError("'gain' scales a norm prologue's input: it needs 'norm'");
  if (getGainOffset() && !getGain())
    return emitOpError("'gain_offset' needs a 'gain'");
  if (getGainOffset() && layer)
    return emitOpError("'gain_offset' is only supported with an RMS prologue");
  if (getGain() && failed(checkVector(*this, getGain(), "gain", in)))
    return failure();
  if (getResidual() && getResidual().getType() != getResult().getType())
    return emitOpError("'residual' must have the result's type ")
           << getResult().getType() << ", got " << getResidual().getType();
  RotaryEpilogueAttr rope = getRopeAttr();
  if (!rope)
    return getPositions() || getLengths()
               ? emitOpError("'positions' and 'lengths' are read only by a 'rope' epilogue")
               : success();
  if (getGlu() || getAct() || getScale() || getSoftcap() || getResidual())
    return emitOpError(
        "a 'rope' epilogue excludes 'act', 'glu', 'scale', 'softcap' and 'residual'");
  if (rope.getColumns() > out)
    return emitOpError("rope rotates ")
           << rope.getColumns() << " columns but the result has " << out;
  if (!getPositions())
    return emitOpError("a 'rope' epilogue needs the 'positions' operand");
  return verifyRopePositions(*this, getInput(), getPositions(), getLengths(),
                             rope.getScaling());
}

//===----------------------------------------------------------------------===//
// AddNormOp
//===----------------------------------------------------------------------===//

LogicalResult AddNormOp::verify() {
  if (getLhs().getType() != getRhs().getType() ||
      getSum().getType() != getLhs().getType() ||
      getNormed().getType() != getLhs().getType())
    return emitOpError("operands and results must share one type");
  return checkFusedNorm(*this, getKind(), getEps(), getLhs(), getWeight(), getBias());
}

//===----------------------------------------------------------------------===//
// NormAddOp
//===----------------------------------------------------------------------===//

LogicalResult NormAddOp::verify() {
  return checkFusedNorm(*this, getKind(), getEps(), getInput(), getWeight(), getBias());
}

//===----------------------------------------------------------------------===//
// Weight transforms
//===----------------------------------------------------------------------===//

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  int64_t dim = getDim();
  RankedTensorType first = tensorType(getInputs()[0]);
  if (dim < 0 || dim >= first.getRank())
    return emitOpError("'dim' ") << dim << " is out of range";
  SmallVector<int64_t> shape(first.getShape());
  shape[dim] = 0;
  for (Value v : getInputs()) {
    RankedTensorType t = tensorType(v);
    if (t.getRank() != first.getRank() ||
        t.getElementType() != first.getElementType())
      return emitOpError("inputs must share rank and element type");
    for (int64_t d = 0; d < t.getRank(); ++d)
      if (d != dim && t.getShape()[d] != first.getShape()[d])
        return emitOpError("inputs differ outside dimension ") << dim;
    shape[dim] += t.getShape()[dim];
  }
  if (getResult().getType() !=
      RankedTensorType::get(shape, first.getElementType()))
    return emitOpError("result must be ")
           << RankedTensorType::get(shape, first.getElementType());
  return success();
}

LogicalResult FillOp::verify() {
  RankedTensorType t = tensorType(getResult());
  if (!t.hasStaticShape())
    return emitOpError("needs a static shape: it is made at bind time");
  if (!std::isfinite(getValue().convertToDouble()))
    return emitOpError("value must be finite");
  return success();
}

LogicalResult SwapHalvesOp::verify() {
  RankedTensorType t = tensorType(getInput());
  if (t.getRank() < 1 || t.getRank() > 2 || !t.hasStaticShape())
    return emitOpError("swaps the rows of a static vector or matrix");
  int64_t block = getBlock();
  if (block < 2 || block % 2 || t.getDimSize(0) % block)
    return emitOpError("block ")
           << block << " must be even and divide the input's " << t.getDimSize(0) << " rows";
  return success();
}

LogicalResult RowSliceOp::verify() {
  RankedTensorType in = tensorType(getInput()), out = tensorType(getResult());
  if (in.getRank() != 2 || out.getRank() != 2 || !in.hasStaticShape() ||
      !out.hasStaticShape())
    return emitOpError("slices static matrices");
  if (in.getElementType() != out.getElementType() || in.getDimSize(1) != out.getDimSize(1))
    return emitOpError("result must keep the input's columns and element type");
  int64_t start = getStart();
  if (start < 0 || start + out.getDimSize(0) > in.getDimSize(0))
    return emitOpError("rows [") << start << ", " << start + out.getDimSize(0)
                                  << ") are not within the input's " << in.getDimSize(0);
  return success();
}

LogicalResult FoldGainOp::verify() {
  FailureOr<std::pair<int64_t, int64_t>> outIn =
      weightOutIn(*this, getWeight(), getWeightInOut());
  if (failed(outIn))
    return failure();
  return checkVector(*this, getGain(), "gain", outIn->second);
}

LogicalResult WeightRowSumsOp::verify() {
  FailureOr<std::pair<int64_t, int64_t>> outIn =
      weightOutIn(*this, getWeight(), getWeightInOut());
  if (failed(outIn))
    return failure();
  return checkVector(*this, getResult(), "result", outIn->first);
}

LogicalResult FoldBiasOp::verify() {
  FailureOr<std::pair<int64_t, int64_t>> outIn =
      weightOutIn(*this, getWeight(), getWeightInOut());
  if (failed(outIn) ||
      failed(checkVector(*this, getBeta(), "beta", outIn->second)) ||
      failed(checkVector(*this, getResult(), "result", outIn->first)))
    return failure();
  if (getBias() && failed(checkVector(*this, getBias(), "bias", outIn->first)))
    return failure();
  return success();
}
