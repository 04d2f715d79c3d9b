//===- FuseRope.cpp - RoPE in the epilogue of the QKV projection ----------===//
//
// After QKV merging the queries and keys are the leading slices of one
// projection's output: `split(linear(x)) -> rope(q), rope(k), v`. Rotating
// them as the projection writes them saves writing the unrotated q and k and
// reading them back in a RoPE kernel.
//
//===----------------------------------------------------------------------===//

#include "FusionUtils.h"
#include "tbc/Transforms/Passes.h"

using namespace mlir;

namespace tbc {
#define GEN_PASS_DEF_TBCFUSEROPE
#include "tbc/TbcTransforms.h.inc"
} // namespace tbc

using namespace tbc;

namespace {
/// The RoPE user of `v` when it is its only user.
RopeOp onlyRope(Value v) {
  return v.hasOneUse() ? dyn_cast<RopeOp>(*v.getUsers().begin()) : RopeOp();
}

bool rotatesAlike(RopeOp a, RopeOp b) {
  return a.getStyle() == b.getStyle() && a.getHeadDim() == b.getHeadDim() &&
         a.getRotaryDim() == b.getRotaryDim() && a.getTheta() == b.getTheta() &&
         a.getScalingAttr() == b.getScalingAttr() && a.getPositions() == b.getPositions() &&
         a.getLengths() == b.getLengths();
}

/// Rooted at a RoPE whose input comes (through a split, or directly) from a
/// projection with no other epilogue; rewrites all the RoPEs of that output.
struct FuseRopeIntoProjection : OpRewritePattern<RopeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(RopeOp rope, PatternRewriter &rewriter) const override {
    Value rotatedInput = rope.getInput();
    auto split = rotatedInput.getDefiningOp<SplitOp>();
    Value projected = split ? split.getInput() : rotatedInput;
    Operation *producer = projected.getDefiningOp();
    if (!producer || !isa<LinearOp, FusedLinearOp>(producer) || !projected.hasOneUse())
      return rewriter.notifyMatchFailure(rope, "input is not a projection's only use");
    if (auto f = dyn_cast<FusedLinearOp>(producer);
        f && (f.getAct() || f.getGlu() || f.getScale() || f.getSoftcap() || f.getRope() ||
              f.getResidual()))
      return rewriter.notifyMatchFailure(rope, "the projection has another epilogue");

    // The RoPEs to absorb: the leading results of the split, each rotated
    // alike and by nothing else; the rest not rotated at all.
    SmallVector<RopeOp> ropes;
    int64_t columns = 0;
    if (!split) {
      ropes.push_back(rope);
      columns = cast<ShapedType>(projected.getType()).getShape().back();
    } else {
      if (split.getNumGroups() != 1)
        return rewriter.notifyMatchFailure(rope, "per-group split (q, k, v per head)");
      bool prefix = true;
      for (Value part : split.getResults()) {
        RopeOp r = onlyRope(part);
        bool rotatedHere = llvm::any_of(part.getUsers(), [](Operation *u) { return isa<RopeOp>(u); });
        if (prefix && r && rotatesAlike(r, rope)) {
          ropes.push_back(r);
          columns += cast<ShapedType>(part.getType()).getShape().back();
          continue;
        }
        prefix = false;
        if (rotatedHere)
          return rewriter.notifyMatchFailure(rope, "a rotated slice that is not a leading one");
      }
      if (!llvm::is_contained(ropes, rope))
        return rewriter.notifyMatchFailure(rope, "not among the leading rotated slices");
    }
    SmallVector<Value> positionOperands{rope.getPositions()};
    if (rope.getLengths())
      positionOperands.push_back(rope.getLengths());
    if (!allDominate(positionOperands, producer))
      return rewriter.notifyMatchFailure(rope, "positions defined after the projection");

    auto attr = RotaryEpilogueAttr::get(rewriter.getContext(), rope.getStyle(), columns,
                                        rope.getHeadDim(), rope.getRotaryDim(),
                                        rope.getTheta(), rope.getScalingAttr());
    rewriter.setInsertionPoint(producer);
    FusedLinearOp fused;
    if (auto l = dyn_cast<LinearOp>(producer)) {
      fused = fusedLinearOf(rewriter, l, l.getType());
      fused.getPositionsMutable().assign(rope.getPositions());
      if (rope.getLengths())
        fused.getLengthsMutable().assign(rope.getLengths());
      fused.setRopeAttr(attr);
    } else {
      auto f = cast<FusedLinearOp>(producer);
      fused = FusedLinearOp::create(
          rewriter, f.getLoc(), f.getType(), f.getInput(), f.getWeight(), f.getBias(),
          f.getMeanCorrection(), f.getGain(), rope.getPositions(), rope.getLengths(),
          /*residual=*/Value(), f.getNormAttr(), f.getEpsAttr(), f.getGainOffsetAttr(), ActivationAttr(), false,
          /*scale=*/FloatAttr(), /*softcap=*/FloatAttr(), attr, f.getWeightInOut());
    }
    rewriter.replaceOp(producer, fused.getResult());
    // The slices now leave the projection rotated.
    for (RopeOp r : ropes)
      rewriter.replaceOp(r, r.getInput());
    return success();
  }
};

struct TbcFuseRopePass : tbc::impl::TbcFuseRopeBase<TbcFuseRopePass> {
  void runOnOperation() override {
    if (failed(applyFusionPatterns(getOperation(), populateFuseRopePatterns)))
      signalPassFailure();
  }
};
} // namespace

void tbc::populateFuseRopePatterns(RewritePatternSet &patterns) {
  patterns.add<FuseRopeIntoProjection>(patterns.getContext());
}
