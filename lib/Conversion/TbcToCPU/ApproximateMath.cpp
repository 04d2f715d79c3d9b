//===- ApproximateMath.cpp - inline polynomials for transcendental ops ----===//
//
// A GELU-tanh FFN of a 64-token prompt evaluates millions of tanh: as libm
// calls they cost more than the projection that produces their inputs. The
// polynomial forms are plain arith, so LLVM vectorises them with the loops
// around them.
//
//===----------------------------------------------------------------------===//

#include "tbc/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace tbc {
#define GEN_PASS_DEF_TBCAPPROXIMATEMATH
#include "tbc/TbcConversion.h.inc"
} // namespace tbc

namespace {
struct TbcApproximateMathPass
    : tbc::impl::TbcApproximateMathBase<TbcApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(
        patterns, [](StringRef name) {
          name.consume_front("math.");
          return name == "exp" || name == "expm1" || name == "tanh" ||
                 name == "erf" || name == "log" || name == "log1p";
        });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
