//===- TbcOps.cpp - tbc op verifiers and shape inference ------------------===//
//
// Verifiers say exactly which operand or attribute is wrong and why; they
// accept dynamic dimensions wherever the static ones would be consistent.
//
//===----------------------------------------------------------------------===//

#include "tbc/Dialect/TbcDialect.h"
#include "tbc/Dialect/Rope.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#include <cmath>

using namespace mlir;
using namespace tbc;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Two dimensions agree unless both are static and different.
static bool dimsAgree(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

static RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// The feature (last) dimension of an activation; activations have rank >= 1.
static FailureOr<int64_t> featureDim(Operation *op, Value v, StringRef what) {
  RankedTensorType t = tensorType(v);
  if (t.getRank() < 1)
    return op->emitOpError() << what << " must have rank >= 1";
  return t.getShape().back();
}

/// Requires a rank-1 weight-like operand with static length.
static FailureOr<int64_t> vectorLength(Operation *op, Value v, StringRef what) {
  RankedTensorType t = tensorType(v);
  if (t.getRank() != 1)
    return op->emitOpError() << what << " must be rank 1, got rank "
                             << t.getRank();
  return t.getShape()[0];
}

static LogicalResult requirePositive(Operation *op, StringRef attr,
                                     double value) {
  if (!(value > 0))
    return op->emitOpError() << "'" << attr << "' must be positive, got "
                             << value;
  return success();
}

static LogicalResult requirePositive(Operation *op, StringRef attr,
                                     int64_t value) {
  if (value <= 0)
    return op->emitOpError() << "'" << attr << "' must be positive, got "
                             << value;
  return success();
}

/// All leading (non-feature) dimensions of two activations agree.
static LogicalResult leadingDimsAgree(Operation *op, Value a, StringRef aName,
                                      Value b, StringRef bName) {
  ArrayRef<int64_t> as = tensorType(a).getShape(), bs = tensorType(b).getShape();
  if (as.size() != bs.size())
    return op->emitOpError() << aName << " and " << bName
                             << " must have the same rank, got " << as.size()
                             << " and " << bs.size();
  for (size_t i = 0; i + 1 < as.size(); ++i)
    if (!dimsAgree(as[i], bs[i]))
      return op->emitOpError() << aName << " and " << bName
                               << " disagree in dimension " << i << " ("
                               << as[i] << " vs " << bs[i] << ")";
  return success();
}

/// a * b, or failure (with a message) when it overflows or passes kMaxDim.
static FailureOr<int64_t> checkedProduct(Operation *op, int64_t a, int64_t b,
                                         StringRef what) {
  int64_t p;
  if (llvm::MulOverflow(a, b, p) || p > kMaxDim)
    return op->emitOpError() << what << " " << a << " x " << b
                             << " overflows tbc's limit of " << kMaxDim;
  return p;
}

LogicalResult tbc::verifySaneShapesAndAttrs(Operation *op) {
  auto checkType = [&](Type t, StringRef role, unsigned index) -> LogicalResult {
    auto tensor = dyn_cast<RankedTensorType>(t);
    if (!tensor)
      return success();
    int64_t elements = 1;
    for (auto [d, size] : llvm::enumerate(tensor.getShape())) {
      if (ShapedType::isDynamic(size))
        continue;
      if (size < 1 || size > kMaxDim)
        return op->emitOpError() << role << " #" << index << " has dimension " << d
                                 << " of size " << size << " (tbc tensors have 1 to "
                                 << kMaxDim << " elements per dimension)";
      if (llvm::MulOverflow(elements, size, elements) || elements > kMaxElements)
        return op->emitOpError() << role << " #" << index << " (" << t
                                 << ") has more than " << kMaxElements << " elements";
    }
    return success();
  };
  for (auto [i, v] : llvm::enumerate(op->getOperands()))
    if (failed(checkType(v.getType(), "operand", i)))
      return failure();
  for (auto [i, v] : llvm::enumerate(op->getResults()))
    if (failed(checkType(v.getType(), "result", i)))
      return failure();
  for (NamedAttribute a : op->getAttrDictionary()) { // inherent ones too
    if (auto f = dyn_cast<FloatAttr>(a.getValue()))
      if (!f.getValue().isFinite())
        return op->emitOpError() << "'" << a.getName().getValue()
                                 << "' must be finite, got "
                                 << (f.getValue().isNaN() ? "NaN" : "infinity");
    if (auto i = dyn_cast<IntegerAttr>(a.getValue()))
      if (i.getType().isSignlessInteger(64) && i.getInt() > kMaxDim)
        return op->emitOpError() << "'" << a.getName().getValue() << "' is "
                                 << i.getInt() << ", past tbc's limit of " << kMaxDim;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// ParamOp
//===----------------------------------------------------------------------===//

LogicalResult ParamOp::verify() {
  if (getName().empty())
    return emitOpError("parameter name must not be empty");
  if (!getResult().getType().hasStaticShape())
    return emitOpError("parameter '")
           << getName() << "' must have a static shape, got "
           << getResult().getType();
  return success();
}

//===----------------------------------------------------------------------===//
// EmbeddingOp
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr, OpaqueProperties, RegionRange,
    SmallVectorImpl<Type> &inferred) {
  auto table = cast<RankedTensorType>(operands[0].getType());
  auto ids = cast<RankedTensorType>(operands[1].getType());
  if (table.getRank() != 2)
    return emitOptionalError(loc, "'tbc.embedding' table must be [vocab, "
                                  "hidden], got rank ",
                             table.getRank());
  SmallVector<int64_t> shape(ids.getShape());
  shape.push_back(table.getShape()[1]);
  inferred.push_back(RankedTensorType::get(shape, table.getElementType()));
  return success();
}

LogicalResult EmbeddingOp::verify() {
  if (getTable().getType().getRank() != 2)
    return emitOpError("table must be [vocab, hidden], got rank ")
           << getTable().getType().getRank();
  if (auto scale = getScale())
    if (failed(requirePositive(*this, "scale", scale->convertToDouble())))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// SinusoidalPositionsOp
//===----------------------------------------------------------------------===//

LogicalResult SinusoidalPositionsOp::verify() {
  if (failed(requirePositive(*this, "base", getBase().convertToDouble())))
    return failure();
  ArrayRef<int64_t> pos = getPositions().getType().getShape();
  ArrayRef<int64_t> out = getResult().getType().getShape();
  if (out.size() != pos.size() + 1)
    return emitOpError("result must have rank ")
           << pos.size() + 1 << " (the positions' shape plus a width)";
  for (size_t i = 0; i < pos.size(); ++i)
    if (!dimsAgree(pos[i], out[i]))
      return emitOpError("result disagrees with the positions in dimension ")
             << i;
  if (ShapedType::isDynamic(out.back()) || out.back() % 2 != 0)
    return emitOpError("width must be static and even, got ") << out.back();
  return success();
}

//===----------------------------------------------------------------------===//
// Norms
//===----------------------------------------------------------------------===//

/// A norm's gain (or bias) for `groups` groups of `hidden` features: one
/// group's length shared by all ([len]), or a gain per group ([G * len] or
/// [G, len]).
static LogicalResult verifyNormVector(Operation *op, Value v, StringRef what, int64_t hidden,
                                      int64_t groups) {
  RankedTensorType t = tensorType(v);
  if (groups > 1 && t.getRank() == 2) {
    if (t.getShape()[0] != groups || t.getShape()[1] * groups != hidden)
      return op->emitOpError() << what << " of shape [" << t.getShape()[0] << ", "
                               << t.getShape()[1] << "] is not [groups, hidden / groups] = ["
                               << groups << ", " << hidden / groups << "]";
    return success();
  }
  FailureOr<int64_t> len = vectorLength(op, v, what);
  if (failed(len))
    return failure();
  if (*len == hidden)
    return success();
  if (groups == 1)
    return op->emitOpError() << what << " length " << *len << " does not match the hidden size "
                             << hidden;
  FailureOr<int64_t> grouped = checkedProduct(op, *len, groups, (what + " length x groups").str());
  if (failed(grouped))
    return failure();
  if (*grouped != hidden)
    return op->emitOpError() << what << " length " << *len << " times groups " << groups
                             << " does not match the hidden size " << hidden;
  return success();
}

/// The checks every norm shares: eps, groups, gain and bias shapes.
static LogicalResult verifyNorm(Operation *op, double eps, int64_t groups, Value input,
                                Value weight, Value bias) {
  if (eps < 0)
    return op->emitOpError("'eps' must be non-negative, got ") << eps;
  if (failed(requirePositive(op, "groups", groups)))
    return failure();
  FailureOr<int64_t> hidden = featureDim(op, input, "input");
  if (failed(hidden))
    return failure();
  if (ShapedType::isDynamic(*hidden))
    return op->emitOpError("input feature dimension must be static");
  if (*hidden % groups != 0)
    return op->emitOpError("hidden size ") << *hidden << " is not a multiple of groups "
                                           << groups;
  if (failed(verifyNormVector(op, weight, "weight", *hidden, groups)))
    return failure();
  if (bias && tensorType(bias).getShape() != tensorType(weight).getShape())
    return op->emitOpError("bias shape must be the weight's, got ")
           << tensorType(bias) << " and " << tensorType(weight);
  return success();
}

LogicalResult RMSNormOp::verify() {
  return verifyNorm(*this, getEps().convertToDouble(), getNumGroups(), getInput(), getWeight(),
                    Value());
}

LogicalResult LayerNormOp::verify() {
  return verifyNorm(*this, getEps().convertToDouble(), getNumGroups(), getInput(), getWeight(),
                    getBias());
}

//===----------------------------------------------------------------------===//
// LinearOp
//===----------------------------------------------------------------------===//

int64_t LinearOp::getInFeatures() {
  ArrayRef<int64_t> w = getWeight().getType().getShape();
  return getWeightInOut() ? w[0] : w[1];
}

int64_t LinearOp::getOutFeatures() {
  ArrayRef<int64_t> w = getWeight().getType().getShape();
  return getWeightInOut() ? w[1] : w[0];
}

LogicalResult LinearOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, ValueRange operands,
    DictionaryAttr attrs, OpaqueProperties properties, RegionRange,
    SmallVectorImpl<Type> &inferred) {
  auto input = cast<RankedTensorType>(operands[0].getType());
  auto weight = cast<RankedTensorType>(operands[1].getType());
  if (input.getRank() < 1 || weight.getRank() != 2)
    return emitOptionalError(loc, "'tbc.linear' needs an input of rank >= 1 "
                                  "and a rank-2 weight, got ranks ",
                             input.getRank(), " and ", weight.getRank());
  // Builders may pass the attribute either as properties or in `attrs`.
  bool inOut = attrs && attrs.get("weight_in_out");
  if (auto *props = properties.as<Properties *>())
    inOut |= props->weight_in_out != nullptr;
  SmallVector<int64_t> shape(input.getShape());
  shape.back() = weight.getShape()[inOut ? 1 : 0];
  inferred.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult LinearOp::verify() {
  if (getWeight().getType().getRank() != 2)
    return emitOpError("weight must be rank 2, got rank ")
           << getWeight().getType().getRank();
  FailureOr<int64_t> in = featureDim(*this, getInput(), "input");
  if (failed(in))
    return failure();
  if (!dimsAgree(*in, getInFeatures()))
    return emitOpError("input has ")
           << *in << " features but the weight expects " << getInFeatures()
           << (getWeightInOut() ? " (weight is [in, out])"
                                : " (weight is [out, in])");
  if (Value bias = getBias()) {
    FailureOr<int64_t> blen = vectorLength(*this, bias, "bias");
    if (failed(blen))
      return failure();
    if (!dimsAgree(*blen, getOutFeatures()))
      return emitOpError("bias length ")
             << *blen << " does not match the " << getOutFeatures()
             << " output features";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// SplitOp
//===----------------------------------------------------------------------===//

LogicalResult SplitOp::verify() {
  if (getResults().empty())
    return emitOpError("must produce at least one result");
  int64_t groups = getNumGroups();
  if (failed(requirePositive(*this, "groups", groups)))
    return failure();
  FailureOr<int64_t> in = featureDim(*this, getInput(), "input");
  if (failed(in))
    return failure();
  int64_t total = 0;
  for (auto [i, r] : llvm::enumerate(getResults())) {
    if (tensorType(r).getElementType() != getInput().getType().getElementType())
      return emitOpError("result #") << i << " must have the input's element type";
    if (failed(leadingDimsAgree(*this, getInput(), "input", r, "result")))
      return failure();
    int64_t width = tensorType(r).getShape().back();
    if (ShapedType::isDynamic(width) || width % groups != 0)
      return emitOpError("result #")
             << i << " width " << width
             << " must be static and divisible by groups " << groups;
    if (llvm::AddOverflow(total, width, total))
      return emitOpError("result widths overflow");
  }
  if (!dimsAgree(*in, total))
    return emitOpError("result widths sum to ")
           << total << " but the input has " << *in << " features";
  return success();
}

//===----------------------------------------------------------------------===//
// RopeOp
//===----------------------------------------------------------------------===//

LogicalResult RopeOp::verify() {
  int64_t headDim = getHeadDim();
  RopeScalingAttr scaling = getScalingAttr();
  if (failed(verifyRotaryParameters([&] { return emitOpError(); }, headDim, getRotaryDim(),
                                    getTheta().convertToDouble(), scaling)))
    return failure();
  FailureOr<int64_t> width = featureDim(*this, getInput(), "input");
  if (failed(width))
    return failure();
  if (!ShapedType::isDynamic(*width) && *width % headDim != 0)
    return emitOpError("input width ")
           << *width << " is not a multiple of 'head_dim' " << headDim;
  return verifyRopePositions(*this, getInput(), getPositions(), getLengths(), scaling);
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

LogicalResult AttentionOp::verify() {
  int64_t heads = getNumHeads(), kvHeads = getNumKvHeads(),
          headDim = getHeadDim();
  if (failed(requirePositive(*this, "heads", heads)) ||
      failed(requirePositive(*this, "kv_heads", kvHeads)) ||
      failed(requirePositive(*this, "head_dim", headDim)) ||
      failed(requirePositive(*this, "scale", getScale().convertToDouble())))
    return failure();
  if (heads % kvHeads != 0)
    return emitOpError("heads (")
           << heads << ") must be a multiple of kv_heads (" << kvHeads << ")";
  if (auto window = getWindow())
    if (failed(requirePositive(*this, "window", static_cast<int64_t>(*window))))
      return failure();
  if (getWindow() && getWindowSize())
    return emitOpError("takes a window attribute or a window(%value), not both");
  // A sliding window bounds how far back a row looks, p - window < j <= p:
  // without `causal` a row sees later positions too, and no model defines
  // a window for that.
  if ((getWindow() || getWindowSize()) && !getCausal())
    return emitOpError("a sliding window needs `causal`");
  if (auto cap = getSoftcap())
    if (failed(requirePositive(*this, "softcap", cap->convertToDouble())))
      return failure();
  auto checkWidth = [&](Value v, StringRef name, int64_t n) -> LogicalResult {
    FailureOr<int64_t> width = featureDim(*this, v, name);
    if (failed(width))
      return failure();
    FailureOr<int64_t> want = checkedProduct(*this, n, headDim, "heads x head_dim");
    if (failed(want))
      return failure();
    if (!dimsAgree(*width, *want))
      return emitOpError() << name << " width " << *width << " must be "
                           << n << " heads x " << headDim << " = " << *want;
    return success();
  };
  if (failed(checkWidth(getQuery(), "query", heads)) ||
      failed(checkWidth(getKey(), "key", kvHeads)) ||
      failed(checkWidth(getValue(), "value", kvHeads)) ||
      failed(leadingDimsAgree(*this, getQuery(), "query", getKey(), "key")) ||
      failed(leadingDimsAgree(*this, getKey(), "key", getValue(), "value")))
    return failure();
  if (getKey().getType().getElementType() !=
          getQuery().getType().getElementType() ||
      getValue().getType().getElementType() !=
          getQuery().getType().getElementType())
    return emitOpError("query, key and value must share an element type");
  if (auto slopes = getAlibiSlopes()) {
    if (getRelativeBias())
      return emitOpError("takes alibi_slopes or a relative_bias, not both");
    if (int64_t(slopes->size()) != heads)
      return emitOpError("alibi_slopes has ")
             << slopes->size() << " slopes; expected one per head (" << heads << ")";
    for (auto [h, m] : llvm::enumerate(*slopes))
      if (!(m > 0) || !std::isfinite(m))
        return emitOpError("alibi slope of head ")
               << h << " must be positive and finite, got " << m;
  }
  if (bool(getRelativeBias()) != bool(getBuckets()))
    return emitOpError("relative_bias and buckets go together");
  if (Value table = getRelativeBias()) {
    auto type = cast<RankedTensorType>(table.getType());
    int64_t buckets = getBuckets()->getNumBuckets();
    if (type.getRank() != 2 || type.getDimSize(0) != buckets ||
        type.getDimSize(1) != heads)
      return emitOpError("relative_bias must be [num_buckets, heads] = [")
             << buckets << ", " << heads << "], got " << table.getType();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// SoftcapOp
//===----------------------------------------------------------------------===//

LogicalResult SoftcapOp::verify() {
  return requirePositive(*this, "cap", getCap().convertToDouble());
}

//===----------------------------------------------------------------------===//
// ScaleOp
//===----------------------------------------------------------------------===//

LogicalResult ScaleOp::verify() {
  double factor = getFactor().convertToDouble();
  if (!std::isfinite(factor))
    return emitOpError() << "'factor' must be finite, got " << factor;
  return requirePositive(*this, "factor", factor);
}

//===----------------------------------------------------------------------===//
// ClipOp
//===----------------------------------------------------------------------===//

LogicalResult ClipOp::verify() {
  return requirePositive(*this, "limit", getLimit().convertToDouble());
}

#define GET_OP_CLASSES
#include "tbc/TbcOps.cpp.inc"
