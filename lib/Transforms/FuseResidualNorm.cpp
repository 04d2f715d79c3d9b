//===- FuseResidualNorm.cpp - residual add + norm -> tbc.add_norm ---------===//

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

struct TbcFuseResidualNormPass
    : tbc::impl::TbcFuseResidualNormBase<TbcFuseResidualNormPass> {
  void runOnOperation() override {
    if (failed(applyFusionPatterns(getOperation(), populateFuseResidualNormPatterns)))
      signalPassFailure();
  }
};
} // namespace

void tbc::populateFuseResidualNormPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseAddNorm>(patterns.getContext());
}
