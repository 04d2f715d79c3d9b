//===- FuseResidualNorm.cpp - residual adds and norms: add_norm, norm_add ===//

#include "FusionUtils.h"
#include "tbc/Transforms/Passes.h"


using namespace mlir;

namespace tbc {
#define GEN_PASS_DEF_TBCFUSERESIDUALNORM
#include "tbc/TbcTransforms.h.inc"
} // namespace tbc

using namespace tbc;

namespace {
/// `norm(a + b)` -> `add_norm(a, b)`, for every norm (NormOpInterface).
struct FuseAddNorm : OpInterfaceRewritePattern<NormOpInterface> {
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;
  LogicalResult matchAndRewrite(NormOpInterface norm,
                                PatternRewriter &rewriter) const override {
    if (norm.getNumGroups() != 1)
      return rewriter.notifyMatchFailure(norm, "grouped (per-head) norm");
    auto add = norm.getInput().getDefiningOp<AddOp>();
    if (!add)
      return rewriter.notifyMatchFailure(norm, "input is not a residual add");
    Value weight = norm.getWeight(), bias = norm.getNormBias();
    SmallVector<Value> weights{weight};
    if (bias)
      weights.push_back(bias);
    // The fused op replaces the add, so the norm's weights must exist there.
    if (!allDominate(weights, add))
      return rewriter.notifyMatchFailure(norm, "weights defined after the add");
    rewriter.setInsertionPoint(add);
    auto fused = AddNormOp::create(
        rewriter, add.getLoc(), add.getType(), add.getType(),
        NormKindAttr::get(rewriter.getContext(), norm.getNormKind()), add.getLhs(),
        add.getRhs(), weight, bias, norm.getEpsAttr(), norm.getGainOffsetAttr());
    rewriter.replaceOp(norm, fused.getNormed());
    rewriter.replaceOp(add, fused.getSum());
    return success();
  }
};

/// `r + norm(x)` -> `norm_add(x, residual r)` where the add is the norm's
/// only use: a post-norm (Gemma's sandwich, OLMo 2), whose normalised rows
/// then never reach memory. Either operand of the add may be the norm.
struct FuseNormAdd : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AddOp add, PatternRewriter &rewriter) const override {
    for (unsigned i = 0; i < 2; ++i) {
      auto norm = add->getOperand(i).getDefiningOp<NormOpInterface>();
      if (!norm || norm.getNumGroups() != 1 || !norm->hasOneUse())
        continue;
      // The norm and its operands dominate the add: the fused op goes there.
      rewriter.setInsertionPoint(add);
      auto fused = NormAddOp::create(
          rewriter, add.getLoc(), add.getType(),
          NormKindAttr::get(rewriter.getContext(), norm.getNormKind()), norm.getInput(),
          add->getOperand(1 - i), norm.getWeight(), norm.getNormBias(), norm.getEpsAttr(),
          norm.getGainOffsetAttr());
      rewriter.replaceOp(add, fused.getResult());
      rewriter.eraseOp(norm);
      return success();
    }
    return rewriter.notifyMatchFailure(add, "no operand is a norm used by the add alone");
  }
};

struct TbcFuseResidualNormPass
    : tbc::impl::TbcFuseResidualNormBase<TbcFuseResidualNormPass> {
  void runOnOperation() override {
    if (failed(applyFusionPatterns(getOperation(), populateFuseResidualNormPatterns)))
      signalPassFailure();
  }
};
} // namespace

void tbc::populateFuseResidualNormPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseAddNorm, FuseNormAdd>(patterns.getContext());
}
