//===- KernelMath.cpp - scalar math both lowerings emit -------------------===//

#include "KernelMath.h"

#include "tbc/Dialect/PositionBias.h"
#include "tbc/Dialect/Rope.h"
#include "tbc/Support/Limits.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/SymbolTable.h"

#include <cmath>

using namespace mlir;
using namespace tbc;

Type tbc::storageElementType(Builder &b, StringRef name) {
  if (name == "bf16")
    return b.getBF16Type();
  if (name == "f16")
    return b.getF16Type();
  return b.getF32Type();
}

Value tbc::emitAttentionWindow(OpBuilder &b, Location loc, AttentionOp a, Value windowSize) {
  if (std::optional<uint64_t> w = a.getWindow())
    return arith::ConstantIndexOp::create(b, loc, int64_t(*w));
  if (!a.getWindowSize())
    return Value();
  assert(windowSize && "a kernel of window(%w) takes its value");
  Value w = arith::IndexCastOp::create(b, loc, b.getIndexType(), windowSize);
  Value none = arith::ConstantIndexOp::create(b, loc, limits::kMaxPositions + 1);
  Value positive = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, w,
                                         arith::ConstantIndexOp::create(b, loc, 0));
  return arith::SelectOp::create(b, loc, positive, w, none);
}

Value tbc::emitActivation(OpBuilder &b, Location loc, Activation act, Value x) {
  auto c = [&](double v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(float(v)));
  };
  auto sigmoid = [&](Value v) -> Value {
    Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, v));
    return arith::DivFOp::create(b, loc, c(1.0),
                                 arith::AddFOp::create(b, loc, c(1.0), e));
  };
  switch (act) {
  case Activation::silu:
    return arith::MulFOp::create(b, loc, x, sigmoid(x));
  case Activation::sigmoid:
    return sigmoid(x);
  case Activation::relu:
    return arith::MaximumFOp::create(b, loc, x, c(0.0));
  case Activation::relu2: {
    Value r = arith::MaximumFOp::create(b, loc, x, c(0.0));
    return arith::MulFOp::create(b, loc, r, r);
  }
  case Activation::gelu: {
    // 0.5 x (1 + erf(x / sqrt(2)))
    Value e = math::ErfOp::create(b, loc,
                                  arith::MulFOp::create(b, loc, x, c(M_SQRT1_2)));
    Value one = arith::AddFOp::create(b, loc, c(1.0), e);
    return arith::MulFOp::create(b, loc, arith::MulFOp::create(b, loc, c(0.5), x),
                                 one);
  }
  case Activation::gelu_tanh: {
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    Value x3 = arith::MulFOp::create(b, loc, x, arith::MulFOp::create(b, loc, x, x));
    Value inner = arith::AddFOp::create(
        b, loc, x, arith::MulFOp::create(b, loc, c(0.044715), x3));
    Value t = math::TanhOp::create(
        b, loc, arith::MulFOp::create(b, loc, c(std::sqrt(2.0 / M_PI)), inner));
    Value one = arith::AddFOp::create(b, loc, c(1.0), t);
    return arith::MulFOp::create(b, loc, arith::MulFOp::create(b, loc, c(0.5), x),
                                 one);
  }
  }
  return x;
}

Value tbc::emitSoftcap(OpBuilder &b, Location loc, double cap, Value x, bool byReciprocal) {
  // x is an f32 or a vector of them (the AMX attention's rows of scores).
  auto c = [&](double v) -> Value {
    FloatAttr f = b.getF32FloatAttr(float(v));
    if (auto vec = dyn_cast<VectorType>(x.getType()))
      return arith::ConstantOp::create(b, loc, vec, DenseElementsAttr::get(vec, f.getValue()));
    return arith::ConstantOp::create(b, loc, f);
  };
  Value capV = c(cap);
  Value scaled;
  if (byReciprocal)
    scaled = arith::MulFOp::create(b, loc, x, c(1.0 / cap));
  else
    scaled = arith::DivFOp::create(b, loc, x, capV);
  Value t = math::TanhOp::create(b, loc, scaled);
  return arith::MulFOp::create(b, loc, capV, t);
}

Value tbc::emitClip(OpBuilder &b, Location loc, double limit, Value x) {
  auto c = [&](double v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(float(v)));
  };
  return arith::MinimumFOp::create(b, loc, arith::MaximumFOp::create(b, loc, x, c(-limit)),
                                   c(limit));
}

Value tbc::emitRsqrt(OpBuilder &b, Location loc, Value x) {
  Value one = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1.0f));
  return arith::DivFOp::create(b, loc, one, math::SqrtOp::create(b, loc, x));
}

/// A private constant memref.global `name` holding `values` in
/// `symbolTable` (created once), read through memref.get_global at the
/// builder's point.
static Value constantTable(OpBuilder &b, Location loc, Operation *symbolTable,
                           StringRef name, DenseElementsAttr values) {
  auto type = MemRefType::get(values.getType().getShape(), values.getElementType());
  if (!SymbolTable::lookupSymbolIn(symbolTable, name)) {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&symbolTable->getRegion(0).front());
    memref::GlobalOp::create(b, loc, name, b.getStringAttr("private"), type, values,
                             /*constant=*/true, IntegerAttr());
  }
  return memref::GetGlobalOp::create(b, loc, type, name);
}

RopeMath::RopeMath(OpBuilder &b, Location loc, RopeScalingAttr scaling, double theta,
                   int64_t rotaryDim, Operation *symbolTable, StringRef name)
    : scaling(scaling), theta(theta), rotaryDim(rotaryDim) {
  std::vector<double> inv = ropeInverseFrequencies(theta, rotaryDim, scaling);
  // LongRoPE: the long factors' frequencies follow the short ones'.
  if (scaling && scaling.getKind() == RopeScalingKind::longrope) {
    std::vector<double> longInv = ropeInverseFrequencies(
        theta, rotaryDim, scaling, scaling.getOriginalMaxPosition() + 1);
    inv.insert(inv.end(), longInv.begin(), longInv.end());
  }
  SmallVector<float> values(inv.begin(), inv.end());
  auto tensorType = RankedTensorType::get({int64_t(values.size())}, b.getF32Type());
  table = constantTable(b, loc, symbolTable, name,
                        DenseElementsAttr::get(tensorType, ArrayRef<float>(values)));
}

Value RopeMath::inverseFrequency(OpBuilder &b, Location loc, Value i,
                                 Value length) const {
  auto ci = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };
  auto cf = [&](double v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(float(v)));
  };
  if (!scaling || !scaling.dependsOnLength())
    return memref::LoadOp::create(b, loc, table, ValueRange{i});
  Value oldLen = arith::ConstantOp::create(
      b, loc, b.getI32IntegerAttr(int32_t(scaling.getOriginalMaxPosition())));
  Value longer = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, length, oldLen);
  if (scaling.getKind() == RopeScalingKind::longrope) {
    Value at = arith::SelectOp::create(
        b, loc, longer, arith::AddIOp::create(b, loc, i, ci(rotaryDim / 2)), i);
    return memref::LoadOp::create(b, loc, table, ValueRange{at});
  }
  // Dynamic NTK past the original length, in f32 as transformers computes
  // it from its seq_len tensor:
  //   base = theta (factor L / M - (factor - 1))^(d / (d - 2)),
  //   inv  = 1 / base^(2i / d).
  double factor = scaling.getFactor().convertToDouble();
  double d = double(rotaryDim);
  Value len = arith::SIToFPOp::create(b, loc, b.getF32Type(), length);
  Value ratio = arith::DivFOp::create(
      b, loc, arith::MulFOp::create(b, loc, cf(factor), len),
      cf(double(scaling.getOriginalMaxPosition())));
  Value grown = math::PowFOp::create(
      b, loc, arith::SubFOp::create(b, loc, ratio, cf(factor - 1)), cf(d / (d - 2)));
  Value base = arith::MulFOp::create(b, loc, cf(theta), grown);
  Value twoI = arith::UIToFPOp::create(
      b, loc, b.getF32Type(),
      arith::IndexCastOp::create(b, loc, b.getI32Type(),
                                 arith::MulIOp::create(b, loc, i, ci(2))));
  Value expo = arith::DivFOp::create(b, loc, twoI, cf(d));
  Value computed = arith::DivFOp::create(b, loc, cf(1.0),
                                         math::PowFOp::create(b, loc, base, expo));
  Value kept = memref::LoadOp::create(b, loc, table, ValueRange{i});
  return arith::SelectOp::create(b, loc, longer, computed, kept);
}

std::pair<Value, Value> RopeMath::cosSin(OpBuilder &b, Location loc, Value position,
                                         Value inv) const {
  Value p = arith::SIToFPOp::create(b, loc, b.getF32Type(), position);
  Value angle = arith::MulFOp::create(b, loc, p, inv);
  Value cos = math::CosOp::create(b, loc, angle);
  Value sin = math::SinOp::create(b, loc, angle);
  double attention = ropeAttentionFactor(scaling);
  if (attention != 1.0) {
    Value factor = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(float(attention)));
    cos = arith::MulFOp::create(b, loc, cos, factor);
    sin = arith::MulFOp::create(b, loc, sin, factor);
  }
  return {cos, sin};
}

Value RopeMath::rotateBy(OpBuilder &b, Location loc, Value v, Value partner, Value first,
                         Value cos, Value sin) {
  auto cf = [&](double v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(float(v)));
  };
  Value sign = arith::SelectOp::create(b, loc, first, cf(-1.0), cf(1.0));
  return arith::AddFOp::create(
      b, loc, arith::MulFOp::create(b, loc, v, cos),
      arith::MulFOp::create(b, loc, arith::MulFOp::create(b, loc, sign, partner), sin));
}

Value RopeMath::rotate(OpBuilder &b, Location loc, Value v, Value partner, Value first,
                       Value position, Value inv) const {
  auto [cos, sin] = cosSin(b, loc, position, inv);
  return rotateBy(b, loc, v, partner, first, cos, sin);
}

PositionBias::PositionBias(OpBuilder &b, Location loc, AttentionOp a,
                           Operation *symbolTable, StringRef name, Value relativeTable)
    : buckets(a.getBucketsAttr()), relativeTable(relativeTable) {
  if (auto slopes = a.getAlibiSlopes()) {
    SmallVector<float> values(slopes->begin(), slopes->end());
    auto type = RankedTensorType::get({int64_t(values.size())}, b.getF32Type());
    table = constantTable(b, loc, symbolTable, (name + "_alibi_slopes").str(),
                          DenseElementsAttr::get(type, ArrayRef<float>(values)));
  } else if (buckets) {
    std::vector<int32_t> bucketOf = relativeBucketTable(buckets);
    auto type = RankedTensorType::get({int64_t(bucketOf.size())}, b.getI32Type());
    table = constantTable(b, loc, symbolTable, (name + "_relative_buckets").str(),
                          DenseElementsAttr::get(type, ArrayRef<int32_t>(bucketOf)));
  }
}

Value PositionBias::at(OpBuilder &b, Location loc, Value head, Value queryPos,
                       Value keyPos) const {
  if (!table)
    return {};
  auto ci = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };
  using P = arith::CmpIPredicate;
  Value r = arith::SubIOp::create(b, loc, keyPos, queryPos); // j - p, signed
  if (!buckets) {
    Value slope = memref::LoadOp::create(b, loc, table, ValueRange{head});
    Value d = arith::SIToFPOp::create(
        b, loc, b.getF32Type(), arith::IndexCastOp::create(b, loc, b.getI64Type(), r));
    return arith::MulFOp::create(b, loc, slope, d);
  }
  // n = |r| (bidirectional) or max(-r, 0), clamped to max_distance.
  Value neg = arith::SubIOp::create(b, loc, ci(0), r);
  Value after = arith::CmpIOp::create(b, loc, P::sgt, r, ci(0));
  Value n = buckets.getBidirectional()
                ? arith::MaxSIOp::create(b, loc, r, neg).getResult()
                : arith::MaxSIOp::create(b, loc, neg, ci(0)).getResult();
  n = arith::MinSIOp::create(b, loc, n, ci(buckets.getMaxDistance()));
  Value bucket = arith::IndexCastOp::create(
      b, loc, b.getIndexType(), memref::LoadOp::create(b, loc, table, ValueRange{n}));
  if (buckets.getBidirectional())
    bucket = arith::AddIOp::create(
        b, loc, bucket,
        arith::SelectOp::create(
            b, loc, after,
            ci(relativeBucketsPerSide(buckets.getNumBuckets(), buckets.getBidirectional())),
            ci(0)));
  return memref::LoadOp::create(b, loc, relativeTable, ValueRange{bucket, head});
}

RopeLanes tbc::emitRopeLanes(OpBuilder &b, Location loc, Value f, int64_t headDim,
                             int64_t rot, bool gptj) {
  auto ci = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };
  using P = arith::CmpIPredicate;
  Value dd = arith::RemUIOp::create(b, loc, f, ci(headDim));
  RopeLanes l;
  l.inRot = arith::CmpIOp::create(b, loc, P::ult, dd, ci(rot));
  if (gptj) {
    Value odd = arith::RemUIOp::create(b, loc, dd, ci(2));
    l.first = arith::CmpIOp::create(b, loc, P::eq, odd, ci(0));
    l.i = arith::DivUIOp::create(b, loc, dd, ci(2));
    l.partner = arith::SelectOp::create(b, loc, l.first, arith::AddIOp::create(b, loc, f, ci(1)),
                                        arith::SubIOp::create(b, loc, f, ci(1)));
  } else {
    int64_t half = rot / 2;
    l.first = arith::CmpIOp::create(b, loc, P::ult, dd, ci(half));
    l.i = arith::SelectOp::create(b, loc, l.first, dd,
                                  arith::SubIOp::create(b, loc, dd, ci(half)));
    l.partner = arith::SelectOp::create(b, loc, l.first,
                                        arith::AddIOp::create(b, loc, f, ci(half)),
                                        arith::SubIOp::create(b, loc, f, ci(half)));
  }
  // Pass-through dims read safe indices; their result is x.
  l.i = arith::SelectOp::create(b, loc, l.inRot, l.i, ci(0));
  l.partner = arith::SelectOp::create(b, loc, l.inRot, l.partner, f);
  return l;
}

RopeLanes tbc::emitRopeLanes(OpBuilder &b, Location loc, Value col, RotaryEpilogueAttr rope) {
  RopeLanes l = emitRopeLanes(b, loc, col, rope.getHeadDim(), rope.getRotaryDim(),
                              rope.getStyle() == RopeStyle::gptj);
  Value leading = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ult, col,
      arith::ConstantIndexOp::create(b, loc, rope.getColumns()));
  l.inRot = arith::AndIOp::create(b, loc, l.inRot, leading);
  return l;
}
