//===- FusePipeline.cpp - the tbc-fuse pipeline ---------------------------===//
//
// Order matters:
//  1. gate/up first, so the FFN's two projections become one gated
//     projection (and sibling merging does not see them);
//  2. QKV merging: the attention input is then read by one projection;
//  3. norm -> projection: each pre-norm now feeds exactly one projection,
//     so the statistic is computed once per row, inside it;
//  4. residual + norm for the norms left (post-norm blocks);
//  5. soft-caps as projection epilogues (after 3, so the LM head is
//     already in its final form);
//  6. weight transforms hoisted onto the parameters, dead ones removed.
//
//===----------------------------------------------------------------------===//

#include "tbc/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

void tbc::buildFusePipeline(mlir::OpPassManager &pm) {
  pm.addPass(createTbcFuseGateUp());
  pm.addPass(createTbcMergeQKV());
  pm.addPass(createTbcFuseNormProjection());
  pm.addPass(createTbcFuseResidualNorm());
  pm.addPass(createTbcFuseSoftcap());
  pm.addPass(createTbcHoistWeightTransforms());
  pm.addPass(mlir::createCSEPass());
}

void tbc::registerFusePipeline() {
  mlir::PassPipelineRegistration<>(
      "tbc-fuse",
      "All tbc fusions in a sound order (gate/up, QKV merge, norm+projection, "
      "residual+norm, soft-caps), then weight transforms hoisted onto the "
      "parameters",
      [](mlir::OpPassManager &pm) { buildFusePipeline(pm); });
}
