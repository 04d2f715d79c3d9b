//===- FuseNormProjection.cpp - norms computed inside their projections ---===//

#include "FusionUtils.h"
#include "tbc/Transforms/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"


using namespace mlir;

namespace tbc {
#define GEN_PASS_DEF_TBCFUSENORMPROJECTION
#include "tbc/TbcTransforms.h.inc"
} // namespace tbc

using namespace tbc;

namespace {
/// One projection reading the normalised tensor, as (input, weight, bias,
/// epilogue) regardless of whether it is a linear or an epilogue-only
/// fused_linear.
struct Projection {
  Operation *op;
  Value weight, bias;
  bool inOut;
  ActivationAttr act;
  bool glu;
  FloatAttr scale, softcap;
};

std::optional<Projection> asProjection(Operation *user) {
  auto p = dyn_cast<ProjectionOpInterface>(user);
  if (!p || p.hasNormPrologue())
    return std::nullopt;
  Projection proj{user, p.getWeight(), p.getBias(), p.getWeightInOut(),
                  ActivationAttr(), false, FloatAttr(), FloatAttr()};
  if (auto f = dyn_cast<FusedLinearOp>(user)) {
    // RoPE would need its positions carried over, a residual its operand;
    // both are fused after this pass.
    if (f.getRope() || f.getResidual())
      return std::nullopt;
    proj.act = f.getActAttr();
    proj.glu = f.getGlu();
    proj.scale = f.getScaleAttr();
    proj.softcap = f.getSoftcapAttr();
  }
  return proj;
}

struct FuseNorm : OpInterfaceRewritePattern<NormOpInterface> {
  FuseNorm(MLIRContext *ctx, bool gainOnActivation)
      : OpInterfaceRewritePattern(ctx), gainOnActivation(gainOnActivation) {}
  LogicalResult matchAndRewrite(NormOpInterface norm,
                                PatternRewriter &rewriter) const override;
  bool gainOnActivation;
};

LogicalResult FuseNorm::matchAndRewrite(NormOpInterface norm,
                                        PatternRewriter &rewriter) const {
  if (norm.getNumGroups() != 1)
    return rewriter.notifyMatchFailure(norm, "grouped (per-head) norm");
  Value gain = norm.getWeight(), beta = norm.getNormBias();
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
    // A shared weight (a tied LM head) keeps the gain on the activation.
    if ((gainOnActivation || !p->weight.hasOneUse()) && norm.getNormKind() == NormKind::layer &&
        norm.getGainOffsetAttr())
      return rewriter.notifyMatchFailure(
          norm, "shared weight under a LayerNorm with a gain offset");
    SmallVector<Value> weights{p->weight, gain};
    if (p->bias)
      weights.push_back(p->bias);
    if (beta)
      weights.push_back(beta);
    if (!allDominate(weights, p->op))
      return rewriter.notifyMatchFailure(norm, "weights defined too late");
    projections.push_back(*p);
  }
  if (projections.empty() || !isBindTimeValue(gain) ||
      (beta && !isBindTimeValue(beta)))
    return rewriter.notifyMatchFailure(norm, "nothing to fuse into");

  for (const Projection &p : projections) {
    Location loc = p.op->getLoc();
    rewriter.setInsertionPoint(p.op);
    // Folding the gain into a shared weight would copy it (a tied head's
    // embedding table), into a 16-bit one round it again: the kernel
    // scales the activation instead.
    bool shared = gainOnActivation || !p.weight.hasOneUse();
    Value weight = shared ? p.weight
                          : FoldGainOp::create(rewriter, loc, p.weight.getType(),
                                               p.weight, gain,
                                               norm.getGainOffsetAttr(), p.inOut)
                                .getResult();
    Value bias = p.bias, meanCorrection;
    if (norm.getNormKind() == NormKind::layer) {
      int64_t rows = cast<RankedTensorType>(p.weight.getType())
                         .getShape()[p.inOut ? 1 : 0];
      auto vec = RankedTensorType::get(
          {rows}, cast<RankedTensorType>(p.weight.getType()).getElementType());
      // (x - mean) (g W^T) = x (g W^T) - mean * sum_i g_i W[o, i].
      meanCorrection =
          shared ? FoldBiasOp::create(rewriter, loc, vec, p.weight, gain, Value(), p.inOut)
                       .getResult()
                 : WeightRowSumsOp::create(rewriter, loc, vec, weight, p.inOut).getResult();
      if (beta)
        bias = FoldBiasOp::create(rewriter, loc, vec, p.weight, beta,
                                  p.bias, p.inOut);
    }
    // The projection's output is unchanged: a tap on it stays.
    Attribute tap = p.op->getAttr(TbcDialect::TapAttrHelper::getNameStr());
    auto fused = rewriter.replaceOpWithNewOp<FusedLinearOp>(
        p.op, p.op->getResult(0).getType(), norm.getInput(), weight, bias,
        meanCorrection, shared ? gain : Value(), /*positions=*/Value(), /*lengths=*/Value(),
        /*residual=*/Value(),
        NormKindAttr::get(rewriter.getContext(), norm.getNormKind()), norm.getEpsAttr(),
        shared ? norm.getGainOffsetAttr() : FloatAttr(), p.act, p.glu, p.scale, p.softcap,
        /*rope=*/RotaryEpilogueAttr(), p.inOut);
    if (tap)
      fused->setAttr(TbcDialect::TapAttrHelper::getNameStr(), tap);
  }
  rewriter.eraseOp(norm);
  return success();
}

struct TbcFuseNormProjectionPass
    : tbc::impl::TbcFuseNormProjectionBase<TbcFuseNormProjectionPass> {
  using TbcFuseNormProjectionBase::TbcFuseNormProjectionBase;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateFuseNormProjectionPatterns(patterns, gainOnActivation);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

void tbc::populateFuseNormProjectionPatterns(RewritePatternSet &patterns,
                                             bool gainOnActivation) {
  patterns.add<FuseNorm>(patterns.getContext(), gainOnActivation);
}
