//===- FuseScale.cpp - constant scales as projection epilogues ------------===//
//
// `scale(linear(a, W))` -> `fused_linear(a, W) scale = s`: the logits of a
// Cohere or Granite head are written once, already scaled, and a Granite
// block's scaled sub-layer outputs leave their projections scaled (their
// residual adds are folded in after this pass).
//
//===----------------------------------------------------------------------===//

#include "FusionUtils.h"
#include "tbc/Transforms/Passes.h"

using namespace mlir;

namespace tbc {
#define GEN_PASS_DEF_TBCFUSESCALE
#include "tbc/TbcTransforms.h.inc"
} // namespace tbc

using namespace tbc;

namespace {
struct FuseScaleIntoProjection : OpRewritePattern<ScaleOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ScaleOp scale, PatternRewriter &rewriter) const override {
    Operation *producer = scale.getInput().getDefiningOp();
    if (!producer || !producer->hasOneUse())
      return rewriter.notifyMatchFailure(scale, "input has other users");
    // A tapped projection keeps its own, unscaled output (`tbc verify`
    // compares it with the reference's module output).
    if (producer->hasAttr(TbcDialect::TapAttrHelper::getNameStr()))
      return rewriter.notifyMatchFailure(scale, "the projection's output is tapped");
    if (auto l = dyn_cast<LinearOp>(producer)) {
      rewriter.setInsertionPoint(scale);
      FusedLinearOp fused = fusedLinearOf(rewriter, l, scale.getType());
      fused.setScaleAttr(scale.getFactorAttr());
      rewriter.replaceOp(scale, fused.getResult());
      rewriter.eraseOp(l);
      return success();
    }
    if (auto f = dyn_cast<FusedLinearOp>(producer)) {
      // The epilogue scales before its soft-cap and residual add, and a
      // RoPE epilogue takes no other step.
      if (f.getScale() || f.getSoftcap() || f.getRope() || f.getResidual())
        return rewriter.notifyMatchFailure(scale, "already scaled, soft-capped, rotated or "
                                                  "residual");
      rewriter.modifyOpInPlace(f, [&] { f.setScaleAttr(scale.getFactorAttr()); });
      rewriter.replaceOp(scale, f.getResult());
      return success();
    }
    return rewriter.notifyMatchFailure(scale, "input is not a projection");
  }
};

struct TbcFuseScalePass : tbc::impl::TbcFuseScaleBase<TbcFuseScalePass> {
  void runOnOperation() override {
    if (failed(applyFusionPatterns(getOperation(), populateFuseScalePatterns)))
      signalPassFailure();
  }
};
} // namespace

void tbc::populateFuseScalePatterns(RewritePatternSet &patterns) {
  patterns.add<FuseScaleIntoProjection>(patterns.getContext());
}
