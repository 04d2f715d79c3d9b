//===- FuseResidualProjection.cpp - residual adds into projections --------===//
//
// `x + linear(a, W)` -> `fused_linear(a, W) residual(x)`: the add becomes
// the last step of the projection's epilogue. A block's two residual adds
// (after the attention's output projection and after the MLP's down
// projection) were kernels of their own, each a pass over the hidden state
// and, on a GPU, a launch per layer and add.
//
//===----------------------------------------------------------------------===//

#include "FusionUtils.h"
#include "tbc/Transforms/Passes.h"

using namespace mlir;

namespace tbc {
#define GEN_PASS_DEF_TBCFUSERESIDUALPROJECTION
#include "tbc/TbcTransforms.h.inc"
} // namespace tbc

using namespace tbc;

namespace {
/// The projection `v` comes from, when its only use is the add and its
/// epilogue can take a residual last.
Operation *residualTarget(Value v) {
  Operation *producer = v.getDefiningOp();
  if (!producer || !isa<LinearOp, FusedLinearOp>(producer) || !v.hasOneUse())
    return nullptr;
  // A tapped projection keeps its own output (`tbc verify` localises a
  // wrong weight by it): the add stays.
  if (producer->hasAttr(TbcDialect::TapAttrHelper::getNameStr()))
    return nullptr;
  if (auto f = dyn_cast<FusedLinearOp>(producer); f && (f.getRope() || f.getResidual()))
    return nullptr;
  return producer;
}

struct FuseAddIntoProjection : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AddOp add, PatternRewriter &rewriter) const override {
    // The right-hand side first: a block adds its sublayer's output to the
    // stream it was given (`x + attn(x)`).
    Value residual;
    Operation *producer = nullptr;
    for (auto [mine, other] : {std::pair{add.getRhs(), add.getLhs()},
                               std::pair{add.getLhs(), add.getRhs()}}) {
      if ((producer = residualTarget(mine))) {
        residual = other;
        break;
      }
    }
    if (!producer)
      return rewriter.notifyMatchFailure(add, "no operand is a projection's only use");
    // The fused op takes the add's place, where the residual and all of the
    // projection's operands exist.
    rewriter.setInsertionPoint(add);
    auto l = dyn_cast<LinearOp>(producer);
    FusedLinearOp fused = l ? fusedLinearOf(rewriter, l, add.getType())
                            : cast<FusedLinearOp>(rewriter.clone(*producer));
    fused.getResidualMutable().assign(residual);
    // The sum is what a tap on the add named.
    if (Attribute tap = add->getAttr(TbcDialect::TapAttrHelper::getNameStr()))
      fused->setAttr(TbcDialect::TapAttrHelper::getNameStr(), tap);
    rewriter.replaceOp(add, fused.getResult());
    rewriter.eraseOp(producer);
    return success();
  }
};

struct TbcFuseResidualProjectionPass
    : tbc::impl::TbcFuseResidualProjectionBase<TbcFuseResidualProjectionPass> {
  void runOnOperation() override {
    if (failed(applyFusionPatterns(getOperation(), populateFuseResidualProjectionPatterns)))
      signalPassFailure();
  }
};
} // namespace

void tbc::populateFuseResidualProjectionPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseAddIntoProjection>(patterns.getContext());
}
