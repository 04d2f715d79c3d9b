//===- FuseSoftcap.cpp - soft-caps as projection epilogues ----------------===//

#include "FusionUtils.h"
#include "tbc/Transforms/Passes.h"


using namespace mlir;

namespace tbc {
#define GEN_PASS_DEF_TBCFUSESOFTCAP
#include "tbc/TbcTransforms.h.inc"
} // namespace tbc

using namespace tbc;

namespace {
struct FuseSoftcapIntoProjection : OpRewritePattern<SoftcapOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SoftcapOp cap,
                                PatternRewriter &rewriter) const override {
    Operation *producer = cap.getInput().getDefiningOp();
    if (!producer || !producer->hasOneUse())
      return rewriter.notifyMatchFailure(cap, "input has other users");
    if (auto l = dyn_cast<LinearOp>(producer)) {
      rewriter.replaceOpWithNewOp<FusedLinearOp>(
          cap, cap.getType(), l.getInput(), l.getWeight(), l.getBias(),
          /*mean_correction=*/Value(), /*gain=*/Value(), /*positions=*/Value(),
          /*lengths=*/Value(), /*residual=*/Value(), NormKindAttr(), FloatAttr(),
          /*gain_offset=*/FloatAttr(), ActivationAttr(), false, /*scale=*/FloatAttr(),
          cap.getCapAttr(), /*rope=*/RotaryEpilogueAttr(), l.getWeightInOut());
      rewriter.eraseOp(l);
      return success();
    }
    if (auto f = dyn_cast<FusedLinearOp>(producer)) {
      // A residual is added after the cap: cap(y + r) is not cap(y) + r.
      if (f.getSoftcap() || f.getRope() || f.getResidual())
        return rewriter.notifyMatchFailure(cap, "already soft-capped, rotated or residual");
      rewriter.modifyOpInPlace(f, [&] {
        f.setSoftcapAttr(cap.getCapAttr());
        f->removeAttr(TbcDialect::TapAttrHelper::getNameStr()); // its output is capped now
      });
      rewriter.replaceOp(cap, f.getResult());
      return success();
    }
    return rewriter.notifyMatchFailure(cap, "input is not a projection");
  }
};

struct TbcFuseSoftcapPass : tbc::impl::TbcFuseSoftcapBase<TbcFuseSoftcapPass> {
  void runOnOperation() override {
    if (failed(applyFusionPatterns(getOperation(), populateFuseSoftcapPatterns)))
      signalPassFailure();
  }
};
} // namespace

void tbc::populateFuseSoftcapPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseSoftcapIntoProjection>(patterns.getContext());
}
