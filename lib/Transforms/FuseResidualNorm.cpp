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
LogicalResult fuse(Operation *norm, NormKind kind, Value input, Value weight,
                   Value bias, FloatAttr eps, FloatAttr gainOffset,
                   PatternRewriter &rewriter) {
  auto add = input.getDefiningOp<AddOp>();
  if (!add)
    return rewriter.notifyMatchFailure(norm, "input is not a residual add");
  SmallVector<Value> weights{weight};
  if (bias)
    weights.push_back(bias);
  // The fused op replaces the add, so the norm's weights must exist there.
  if (!allDominate(weights, add))
    return rewriter.notifyMatchFailure(norm, "weights defined after the add");
  rewriter.setInsertionPoint(add);
  auto fused = AddNormOp::create(
      rewriter, add.getLoc(), add.getType(), add.getType(),
      NormKindAttr::get(rewriter.getContext(), kind), add.getLhs(),
      add.getRhs(), weight, bias, eps, gainOffset);
  rewriter.replaceOp(norm, fused.getNormed());
  rewriter.replaceOp(add, fused.getSum());
  return success();
}

struct FuseAddRMSNorm : OpRewritePattern<RMSNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RMSNormOp norm,
                                PatternRewriter &rewriter) const override {
    if (norm.getNumGroups() != 1)
      return rewriter.notifyMatchFailure(norm, "grouped (per-head) norm");
    return fuse(norm, NormKind::rms, norm.getInput(), norm.getWeight(),
                Value(), norm.getEpsAttr(), norm.getGainOffsetAttr(), rewriter);
  }
};

struct FuseAddLayerNorm : OpRewritePattern<LayerNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LayerNormOp norm,
                                PatternRewriter &rewriter) const override {
    return fuse(norm, NormKind::layer, norm.getInput(), norm.getWeight(),
                norm.getBias(), norm.getEpsAttr(), FloatAttr(), rewriter);
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
  patterns.add<FuseAddRMSNorm, FuseAddLayerNorm>(patterns.getContext());
}
