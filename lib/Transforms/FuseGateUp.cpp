//===- FuseGateUp.cpp - gate/up projections + GLU -> one gated projection -===//

#include "FusionUtils.h"
#include "tbc/Transforms/Passes.h"


using namespace mlir;

namespace tbc {
#define GEN_PASS_DEF_TBCFUSEGATEUP
#include "tbc/TbcTransforms.h.inc"
} // namespace tbc

using namespace tbc;

namespace {
/// A projection whose only user is the op being fused.
LinearOp singleUseLinear(Value v) {
  auto l = v.getDefiningOp<LinearOp>();
  if (!l || !l->hasOneUse() || !isBindTimeValue(l.getWeight()) ||
      (l.getBias() && !isBindTimeValue(l.getBias())))
    return nullptr;
  return l;
}

FusedLinearOp createGated(PatternRewriter &rewriter, Operation *replaced,
                          Value input, Value weight, Value bias, bool inOut,
                          Activation act, bool glu) {
  auto attr = ActivationAttr::get(rewriter.getContext(), act);
  return rewriter.replaceOpWithNewOp<FusedLinearOp>(
      replaced, replaced->getResult(0).getType(), input, weight, bias,
      /*mean_correction=*/Value(), /*gain=*/Value(), /*positions=*/Value(),
      /*lengths=*/Value(), /*residual=*/Value(), /*norm=*/NormKindAttr(),
      /*eps=*/FloatAttr(), /*gain_offset=*/FloatAttr(), attr, glu, /*scale=*/FloatAttr(), /*softcap=*/FloatAttr(),
      /*rope=*/RotaryEpilogueAttr(), inOut);
}

/// glu(linear(x, Wg), linear(x, Wu)) -> fused_linear(x, concat(Wg, Wu)) glu.
struct FuseSeparateGateUp : OpRewritePattern<GluOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GluOp glu,
                                PatternRewriter &rewriter) const override {
    LinearOp gate = singleUseLinear(glu.getGate());
    LinearOp up = singleUseLinear(glu.getUp());
    if (!gate || !up || gate == up)
      return rewriter.notifyMatchFailure(glu, "gate/up are not projections");
    if (gate.getInput() != up.getInput() ||
        gate.getWeightInOut() != up.getWeightInOut() ||
        bool(gate.getBias()) != bool(up.getBias()) ||
        gate.getWeight().getType() != up.getWeight().getType())
      return rewriter.notifyMatchFailure(glu, "gate/up differ in input or shape");
    SmallVector<Value> weights{gate.getWeight(), up.getWeight()};
    if (gate.getBias()) {
      weights.push_back(gate.getBias());
      weights.push_back(up.getBias());
    }
    Operation *first = gate->isBeforeInBlock(up) ? gate : up;
    if (!allDominate(weights, first))
      return rewriter.notifyMatchFailure(glu, "weights defined too late");
    bool inOut = gate.getWeightInOut();
    rewriter.setInsertionPoint(first);
    Value w = concatWeights(rewriter, glu.getLoc(),
                            {gate.getWeight(), up.getWeight()}, inOut ? 1 : 0);
    Value b = gate.getBias() ? concatWeights(rewriter, glu.getLoc(),
                                             {gate.getBias(), up.getBias()}, 0)
                             : Value();
    Value input = gate.getInput();
    rewriter.setInsertionPoint(glu);
    createGated(rewriter, glu, input, w, b, inOut, glu.getAct(), true);
    rewriter.eraseOp(gate);
    rewriter.eraseOp(up);
    return success();
  }
};

/// glu(split(linear(x, W_gate_up))) -> fused_linear(x, W_gate_up) glu: the
/// checkpoint's fused weight is used as is (Phi-3, or after --tbc-merge-qkv).
struct FuseFusedGateUp : OpRewritePattern<GluOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GluOp glu,
                                PatternRewriter &rewriter) const override {
    auto split = glu.getGate().getDefiningOp<SplitOp>();
    if (!split || split != glu.getUp().getDefiningOp<SplitOp>() ||
        split.getNumResults() != 2 || split.getNumGroups() != 1 ||
        glu.getGate() != split.getResult(0) || glu.getUp() != split.getResult(1) ||
        !split.getResult(0).hasOneUse() || !split.getResult(1).hasOneUse())
      return rewriter.notifyMatchFailure(glu, "not a split gate/up projection");
    LinearOp proj = singleUseLinear(split.getInput());
    if (!proj)
      return rewriter.notifyMatchFailure(glu, "split input is not a projection");
    createGated(rewriter, glu, proj.getInput(), proj.getWeight(),
                proj.getBias(), proj.getWeightInOut(), glu.getAct(), true);
    rewriter.eraseOp(split);
    rewriter.eraseOp(proj);
    return success();
  }
};

/// activation(linear(x, W)) -> fused_linear(x, W) act (plain MLPs).
struct FuseMlpActivation : OpRewritePattern<ActivationOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ActivationOp act,
                                PatternRewriter &rewriter) const override {
    LinearOp proj = singleUseLinear(act.getInput());
    if (!proj)
      return rewriter.notifyMatchFailure(act, "input is not a projection");
    createGated(rewriter, act, proj.getInput(), proj.getWeight(),
                proj.getBias(), proj.getWeightInOut(), act.getAct(), false);
    rewriter.eraseOp(proj);
    return success();
  }
};

struct TbcFuseGateUpPass : tbc::impl::TbcFuseGateUpBase<TbcFuseGateUpPass> {
  void runOnOperation() override {
    if (failed(applyFusionPatterns(getOperation(), populateFuseGateUpPatterns)))
      signalPassFailure();
  }
};
} // namespace

void tbc::populateFuseGateUpPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseSeparateGateUp, FuseFusedGateUp, FuseMlpActivation>(
      patterns.getContext());
}
