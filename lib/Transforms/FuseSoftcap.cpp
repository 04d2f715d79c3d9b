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
      rewriter.setInsertionPoint(cap);
      FusedLinearOp fused = fusedLinearOf(rewriter, l, cap.getType());
      fused.setSoftcapAttr(cap.getCapAttr());
      rewriter.replaceOp(cap, fused.getResult());
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
