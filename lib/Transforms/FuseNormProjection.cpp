//===- FuseNormProjection.cpp - norms computed inside their projections ---===//

#include "FusionUtils.h"
#include "tbc/Transforms/Passes.h"


using namespace mlir;

namespace tbc {
#define GEN_PASS_DEF_TBCFUSENORMPROJECTION
#include "tbc/TbcTransforms.h.inc"
} // namespace tbc

using namespace tbc;

namespace {
/// What both norms share, for the rewrite.
struct NormInfo {
  NormKind kind;
  Value input, gain, beta;
  FloatAttr eps, gainOffset;
};

/// One projection reading the normalised tensor, as (input, weight, bias,
/// epilogue) regardless of whether it is a linear or an epilogue-only
/// fused_linear.
struct Projection {
  Operation *op;
  Value weight, bias;
  bool inOut;
  ActivationAttr act;
  bool glu;
  FloatAttr softcap;
};

std::optional<Projection> asProjection(Operation *user) {
  if (auto l = dyn_cast<LinearOp>(user))
    return Projection{l, l.getWeight(), l.getBias(), l.getWeightInOut(),
                      ActivationAttr(), false, FloatAttr()};
  if (auto f = dyn_cast<FusedLinearOp>(user))
    if (!f.getNorm())
      return Projection{f, f.getWeight(), f.getBias(), f.getWeightInOut(),
                        f.getActAttr(), f.getGlu(), f.getSoftcapAttr()};
  return std::nullopt;
}

LogicalResult fuseNorm(Operation *norm, const NormInfo &info,
                       PatternRewriter &rewriter) {
  SmallVector<Projection> projections;
  for (Operation *user : norm->getResult(0).getUsers()) {
    std::optional<Projection> p = asProjection(user);
    if (!p)
      return rewriter.notifyMatchFailure(
          norm, "the normalised tensor has a non-projection user");
    // The projection must read the norm as its input, not as a weight.
    if (p->op->getOperand(0) != norm->getResult(0))
      return rewriter.notifyMatchFailure(norm, "norm feeds a weight operand");
    if (!isBindTimeValue(p->weight) || (p->bias && !isBindTimeValue(p->bias)))
      return rewriter.notifyMatchFailure(norm, "weights not known at bind time");
    // Folding the gain into a shared weight (a tied LM head) would copy it.
    if (!p->weight.hasOneUse())
      return rewriter.notifyMatchFailure(
          norm, "projection weight is shared; folding would duplicate it");
    SmallVector<Value> weights{p->weight, info.gain};
    if (p->bias)
      weights.push_back(p->bias);
    if (info.beta)
      weights.push_back(info.beta);
    if (!allDominate(weights, p->op))
      return rewriter.notifyMatchFailure(norm, "weights defined too late");
    projections.push_back(*p);
  }
  if (projections.empty() || !isBindTimeValue(info.gain) ||
      (info.beta && !isBindTimeValue(info.beta)))
    return rewriter.notifyMatchFailure(norm, "nothing to fuse into");

  for (const Projection &p : projections) {
    Location loc = p.op->getLoc();
    rewriter.setInsertionPoint(p.op);
    Value folded = FoldGainOp::create(rewriter, loc, p.weight.getType(),
                                      p.weight, info.gain, info.gainOffset,
                                      p.inOut);
    Value bias = p.bias, meanCorrection;
    if (info.kind == NormKind::layer) {
      int64_t rows = cast<RankedTensorType>(p.weight.getType())
                         .getShape()[p.inOut ? 1 : 0];
      auto vec = RankedTensorType::get(
          {rows}, cast<RankedTensorType>(p.weight.getType()).getElementType());
      meanCorrection =
          WeightRowSumsOp::create(rewriter, loc, vec, folded, p.inOut);
      if (info.beta)
        bias = FoldBiasOp::create(rewriter, loc, vec, p.weight, info.beta,
                                  p.bias, p.inOut);
    }
    rewriter.replaceOpWithNewOp<FusedLinearOp>(
        p.op, p.op->getResult(0).getType(), info.input, folded, bias,
        meanCorrection, NormKindAttr::get(rewriter.getContext(), info.kind),
        info.eps, p.act, p.glu, p.softcap, p.inOut);
  }
  rewriter.eraseOp(norm);
  return success();
}

struct FuseRMSNorm : OpRewritePattern<RMSNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RMSNormOp norm,
                                PatternRewriter &rewriter) const override {
    if (norm.getNumGroups() != 1)
      return rewriter.notifyMatchFailure(norm, "grouped (per-head) norm");
    return fuseNorm(norm,
                    {NormKind::rms, norm.getInput(), norm.getWeight(), Value(),
                     norm.getEpsAttr(), norm.getGainOffsetAttr()},
                    rewriter);
  }
};

struct FuseLayerNorm : OpRewritePattern<LayerNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LayerNormOp norm,
                                PatternRewriter &rewriter) const override {
    return fuseNorm(norm,
                    {NormKind::layer, norm.getInput(), norm.getWeight(),
                     norm.getBias(), norm.getEpsAttr(), FloatAttr()},
                    rewriter);
  }
};

struct TbcFuseNormProjectionPass
    : tbc::impl::TbcFuseNormProjectionBase<TbcFuseNormProjectionPass> {
  void runOnOperation() override {
    if (failed(applyFusionPatterns(getOperation(), populateFuseNormProjectionPatterns)))
      signalPassFailure();
  }
};
} // namespace

void tbc::populateFuseNormProjectionPatterns(RewritePatternSet &patterns) {
  patterns.add<FuseRMSNorm, FuseLayerNorm>(patterns.getContext());
}
