//===- FusionUtils.cpp - helpers shared by the fusion patterns ------------===//

#include "FusionUtils.h"

#include "mlir/IR/Dominance.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

bool tbc::isBindTimeValue(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || !type.hasStaticShape())
    return false;
  if (auto arg = dyn_cast<BlockArgument>(v))
    return isa<func::FuncOp>(arg.getOwner()->getParentOp());
  Operation *def = v.getDefiningOp();
  return isa<ParamOp>(def) || def->hasTrait<WeightTransform>();
}

bool tbc::allDominate(ValueRange values, Operation *op) {
  DominanceInfo dom(op->getParentOfType<func::FuncOp>());
  return llvm::all_of(values,
                      [&](Value v) { return dom.properlyDominates(v, op); });
}

Value tbc::concatWeights(PatternRewriter &rewriter, Location loc,
                         ValueRange parts, int64_t dim) {
  auto first = cast<RankedTensorType>(parts[0].getType());
  SmallVector<int64_t> shape(first.getShape());
  shape[dim] = 0;
  for (Value p : parts)
    shape[dim] += cast<RankedTensorType>(p.getType()).getShape()[dim];
  return ConcatOp::create(rewriter, loc,
                          RankedTensorType::get(shape, first.getElementType()),
                          parts, dim);
}

tbc::FusedLinearOp tbc::fusedLinearOf(PatternRewriter &rewriter, LinearOp linear, Type type) {
  return FusedLinearOp::create(
      rewriter, linear.getLoc(), type, linear.getInput(), linear.getWeight(), linear.getBias(),
      /*mean_correction=*/Value(), /*gain=*/Value(), /*positions=*/Value(), /*lengths=*/Value(),
      /*residual=*/Value(), NormKindAttr(), /*eps=*/FloatAttr(), /*gain_offset=*/FloatAttr(),
      ActivationAttr(), /*glu=*/false, /*scale=*/FloatAttr(), /*softcap=*/FloatAttr(),
      RotaryEpilogueAttr(), linear.getWeightInOut());
}

RankedTensorType tbc::withWidth(Type activation, int64_t width) {
  auto t = cast<RankedTensorType>(activation);
  SmallVector<int64_t> shape(t.getShape());
  shape.back() = width;
  return RankedTensorType::get(shape, t.getElementType());
}

LogicalResult tbc::applyFusionPatterns(Operation *root,
                                       void (*populate)(RewritePatternSet &)) {
  RewritePatternSet patterns(root->getContext());
  populate(patterns);
  return applyPatternsGreedily(root, std::move(patterns));
}
