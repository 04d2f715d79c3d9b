//===- MergeQKV.cpp - merge sibling projections of one input --------------===//

#include "FusionUtils.h"
#include "tbc/Transforms/Passes.h"


using namespace mlir;

namespace tbc {
#define GEN_PASS_DEF_TBCMERGEQKV
#include "tbc/TbcTransforms.h.inc"
} // namespace tbc

using namespace tbc;

namespace {
/// Rooted at the first (in block order) of several compatible linears that
/// read the same input; rewrites the whole group.
struct MergeSiblingLinears : OpRewritePattern<LinearOp> {
  using OpRewritePattern::OpRewritePattern;

  static bool compatible(LinearOp a, LinearOp b) {
    return a.getWeightInOut() == b.getWeightInOut() &&
           bool(a.getBias()) == bool(b.getBias()) &&
           a.getType().getElementType() == b.getType().getElementType() &&
           a.getWeight().getType().getElementType() ==
               b.getWeight().getType().getElementType() &&
           isBindTimeValue(b.getWeight()) &&
           (!b.getBias() || isBindTimeValue(b.getBias()));
  }

  LogicalResult matchAndRewrite(LinearOp root,
                                PatternRewriter &rewriter) const override {
    if (!isBindTimeValue(root.getWeight()) ||
        (root.getBias() && !isBindTimeValue(root.getBias())))
      return rewriter.notifyMatchFailure(root, "weights not known at bind time");
    SmallVector<LinearOp> group;
    for (Operation *user : root.getInput().getUsers()) {
      auto sibling = dyn_cast<LinearOp>(user);
      if (!sibling || sibling->getBlock() != root->getBlock() ||
          !compatible(root, sibling) ||
          llvm::is_contained(group, sibling))
        continue;
      group.push_back(sibling);
    }
    if (group.size() < 2)
      return rewriter.notifyMatchFailure(root, "no sibling projection");
    llvm::sort(group, [](LinearOp a, LinearOp b) {
      return a->isBeforeInBlock(b);
    });
    if (group.front() != root)
      return rewriter.notifyMatchFailure(root, "not the first sibling");
    SmallVector<Value> weights, biases, inputs;
    SmallVector<Type> resultTypes;
    for (LinearOp l : group) {
      weights.push_back(l.getWeight());
      if (l.getBias())
        biases.push_back(l.getBias());
      resultTypes.push_back(l.getType());
    }
    inputs = weights;
    inputs.append(biases);
    if (!allDominate(inputs, root))
      return rewriter.notifyMatchFailure(root, "weights defined too late");

    Location loc = root.getLoc();
    rewriter.setInsertionPoint(root);
    bool inOut = root.getWeightInOut();
    Value weight = concatWeights(rewriter, loc, weights, inOut ? 1 : 0);
    Value bias = biases.empty() ? Value() : concatWeights(rewriter, loc, biases, 0);
    auto merged = LinearOp::create(rewriter, loc, root.getInput(), weight,
                                   bias, inOut);
    auto split = SplitOp::create(rewriter, loc, resultTypes, merged.getResult(),
                                 IntegerAttr());
    for (auto [l, part] : llvm::zip(group, split.getResults()))
      rewriter.replaceOp(l, part);
    return success();
  }
};

struct TbcMergeQKVPass : tbc::impl::TbcMergeQKVBase<TbcMergeQKVPass> {
  void runOnOperation() override {
    if (failed(applyFusionPatterns(getOperation(), populateMergeQKVPatterns)))
      signalPassFailure();
  }
};
} // namespace

void tbc::populateMergeQKVPatterns(RewritePatternSet &patterns) {
  patterns.add<MergeSiblingLinears>(patterns.getContext());
}
