//===- TbcDialect.cpp - tbc dialect registration and attributes -----------===//

#include "tbc/Dialect/TbcDialect.h"

#include "tbc/Dialect/PositionBias.h"
#include "tbc/Dialect/Rope.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace tbc;

#include "tbc/TbcDialect.cpp.inc"
#include "tbc/TbcEnums.cpp.inc"
#include "tbc/TbcInterfaces.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "tbc/TbcAttrs.cpp.inc"

void TbcDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "tbc/TbcAttrs.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "tbc/TbcOps.cpp.inc"
      >();
}

LogicalResult RopeScalingAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, RopeScalingKind kind,
    APFloat factorF, APFloat lowF, APFloat highF, int64_t originalMaxPosition,
    APFloat attentionF, APFloat betaFastF, APFloat betaSlowF, bool truncate,
    DenseF64ArrayAttr shortFactor, DenseF64ArrayAttr longFactor) {
  double factor = factorF.convertToDouble();
  double lowFreqFactor = lowF.convertToDouble();
  double highFreqFactor = highF.convertToDouble();
  std::string name = stringifyRopeScalingKind(kind).str();
  if (!(factor > 0) || !std::isfinite(factor))
    return emitError() << "rope scaling factor must be positive, got "
                       << factor;
  if (kind != RopeScalingKind::linear && originalMaxPosition <= 0)
    return emitError() << name
                       << " rope scaling needs a positive "
                          "original_max_position, got "
                       << originalMaxPosition;
  double attention = attentionF.convertToDouble();
  if (!(attention > 0) || !std::isfinite(attention))
    return emitError() << "attention_factor must be positive, got "
                       << attention;
  if (attention != 1.0 && kind != RopeScalingKind::yarn &&
      kind != RopeScalingKind::longrope)
    return emitError() << "attention_factor is only used by yarn and "
                          "longrope scaling, not "
                       << name;
  if ((shortFactor || longFactor) != (kind == RopeScalingKind::longrope))
    return emitError() << (kind == RopeScalingKind::longrope
                               ? "longrope scaling needs short_factor and "
                                 "long_factor"
                               : "short_factor and long_factor belong to "
                                 "longrope scaling, not " +
                                     name);
  if (kind == RopeScalingKind::llama3 &&
      (!(lowFreqFactor > 0) || !(highFreqFactor > lowFreqFactor)))
    return emitError() << "llama3 rope scaling needs 0 < low_freq_factor < "
                          "high_freq_factor, got "
                       << lowFreqFactor << " and " << highFreqFactor;
  if (kind == RopeScalingKind::yarn) {
    double fast = betaFastF.convertToDouble(), slow = betaSlowF.convertToDouble();
    if (!(slow > 0) || !(fast > slow) || !std::isfinite(fast))
      return emitError() << "yarn rope scaling needs 0 < beta_slow < "
                            "beta_fast, got "
                         << slow << " and " << fast;
  }
  if (kind == RopeScalingKind::longrope) {
    if (!shortFactor || !longFactor)
      return emitError() << "longrope scaling needs short_factor and "
                            "long_factor";
    if (shortFactor.size() != longFactor.size())
      return emitError() << "short_factor has " << shortFactor.size()
                         << " entries but long_factor " << longFactor.size();
    for (auto [which, factors] :
         {std::pair{"short_factor", shortFactor}, {"long_factor", longFactor}})
      for (auto [i, f] : llvm::enumerate(factors.asArrayRef()))
        if (!(f > 0) || !std::isfinite(f))
          return emitError() << which << "[" << i
                             << "] must be positive and finite, got " << f;
  }
  return success();
}

LogicalResult RotaryEpilogueAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                         RopeStyle, int64_t columns, int64_t headDim,
                                         int64_t rotaryDim, APFloat theta,
                                         RopeScalingAttr scaling) {
  if (failed(verifyRotaryParameters(emitError, headDim, rotaryDim, theta.convertToDouble(),
                                    scaling)))
    return failure();
  if (columns <= 0 || columns % headDim != 0)
    return emitError() << "rotary 'columns' must be a positive multiple of 'head_dim' "
                       << headDim << " (whole heads), got " << columns;
  return success();
}

LogicalResult
RelativeBucketsAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                            int64_t numBuckets, int64_t maxDistance,
                            bool bidirectional) {
  // Each side's buckets: half exact distances, half logarithmic ones, so a
  // side needs at least 2 and max_distance must pass the exact range.
  int64_t side = relativeBucketsPerSide(numBuckets, bidirectional);
  if (numBuckets <= 0 || side < 2 || (bidirectional && numBuckets % 2 != 0))
    return emitError() << "num_buckets must be "
                       << (bidirectional ? "even and at least 4" : "at least 2")
                       << ", got " << numBuckets;
  if (maxDistance <= side / 2)
    return emitError() << "max_distance must exceed the exact range ("
                       << side / 2 << " buckets), got " << maxDistance;
  return success();
}

//===----------------------------------------------------------------------===//
// Discardable attributes (TbcDialect.td's discardableAttrs)
//===----------------------------------------------------------------------===//

LogicalResult TbcDialect::verifyOperationAttribute(Operation *op,
                                                   NamedAttribute attribute) {
  StringRef name = attribute.getName().getValue();
  Attribute value = attribute.getValue();
  auto requireOn = [&](bool ok, StringRef where) -> LogicalResult {
    if (ok)
      return success();
    return op->emitError() << "'" << name << "' belongs on " << where;
  };
  if (name == KernelAttrHelper::getNameStr() || name == KvCacheAttrHelper::getNameStr()) {
    if (!isa<UnitAttr>(value))
      return op->emitError() << "'" << name << "' is a unit attribute";
    auto fn = dyn_cast<func::FuncOp>(op);
    if (failed(requireOn(fn && !fn.isExternal(), "a func.func with a body")))
      return failure();
    // A kernel is one tbc compute op and its return (--tbc-outline-kernels).
    Block &body = fn.getBody().front();
    Operation *first = &body.front();
    if (body.getOperations().size() != 2 || first->getDialect() != this ||
        !isa<func::ReturnOp>(body.back()))
      return op->emitError() << "'" << name << "' function must hold exactly one tbc op";
    if (name == KernelAttrHelper::getNameStr()) {
      ArrayRef<Type> inputs = fn.getArgumentTypes();
      if (!std::all_of(llvm::find_if(inputs, isScalarOperand), inputs.end(), isScalarOperand))
        return op->emitError() << "'" << name
                               << "' function must take its scalar operands last";
    }
    if (name == KvCacheAttrHelper::getNameStr() && !isa<AttentionOp>(first))
      return op->emitError() << "'" << name << "' is for tbc.attention kernels, not '"
                             << first->getName() << "'";
    if (name == KvCacheAttrHelper::getNameStr() &&
        !op->hasAttr(KernelAttrHelper::getNameStr()))
      return op->emitError() << "'" << name << "' needs '"
                             << KernelAttrHelper::getNameStr() << "'";
    return success();
  }
  if (name == ArchitectureAttrHelper::getNameStr()) {
    if (failed(requireOn(isa<ModuleOp>(op), "the module")))
      return failure();
    auto s = dyn_cast<StringAttr>(value);
    if (!s || s.getValue().empty())
      return op->emitError() << "'" << name << "' must be a non-empty string";
    return success();
  }
  if (name == VocabSizeAttrHelper::getNameStr() ||
      name == MaxPositionsAttrHelper::getNameStr()) {
    if (failed(requireOn(isa<ModuleOp>(op), "the module")))
      return failure();
    auto i = dyn_cast<IntegerAttr>(value);
    if (!i || !i.getType().isInteger(64) || i.getInt() <= 0 || i.getInt() > kMaxDim)
      return op->emitError() << "'" << name << "' must be a positive i64 of at most "
                             << kMaxDim;
    return success();
  }
  if (name == NameAttrHelper::getNameStr())
    return op->emitError() << "'" << name << "' names function arguments, not ops";
  if (name == TapAttrHelper::getNameStr()) {
    auto s = dyn_cast<StringAttr>(value);
    if (!s || s.getValue().empty())
      return op->emitError() << "'" << name << "' must be a non-empty module path";
    return requireOn((op->getDialect() == this && op->getNumResults() > 0) ||
                         isa<func::CallOp>(op),
                     "a tbc op with a result or a call");
  }
  return op->emitError() << "unknown tbc attribute '" << name << "'";
}

LogicalResult TbcDialect::verifyRegionArgAttribute(Operation *op, unsigned region,
                                                   unsigned argIndex,
                                                   NamedAttribute attribute) {
  StringRef name = attribute.getName().getValue();
  if (name != NameAttrHelper::getNameStr())
    return op->emitError() << "unknown tbc argument attribute '" << name << "'";
  auto s = dyn_cast<StringAttr>(attribute.getValue());
  if (!s || s.getValue().empty())
    return op->emitError() << "'" << name << "' of argument " << argIndex
                           << " must be a non-empty string";
  return success();
}

unsigned tbc::kernelScalarOperands(func::FuncOp kernel) {
  return llvm::count_if(kernel.getArgumentTypes(), isScalarOperand);
}
