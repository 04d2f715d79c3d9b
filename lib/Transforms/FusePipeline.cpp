//===- FusePipeline.cpp - the tbc-fuse pipeline ---------------------------===//
//
// Order matters:
//  1. gate/up first, so the FFN's two projections become one gated
//     projection (and sibling merging does not see them);
//  2. QKV merging: the attention input is then read by one projection;
//  3. norm -> projection: each pre-norm now feeds exactly one projection,
//     so the statistic is computed once per row, inside it;
//  4. RoPE into the (now final) QKV projection's epilogue (after 3, which
//     would otherwise not recognise a RoPE-fused projection as one to fold
//     a norm into);
//  5. residual + norm for the norms left (post-norm blocks), and norms
//     added to a residual (sandwich blocks' post-norms: norm_add);
//  6. soft-caps as projection epilogues (after 3, so the LM head is
//     already in its final form);
//  7. residual adds into the projections that produce an operand (after 5,
//     which prefers add_norm, and 6, whose cap comes before the add);
//  8. weight transforms hoisted onto the parameters, dead ones removed.
//
// With 16-bit weights (bf16/f16 storage) step 3 cannot fold the norm's gain
// into the weight (W * g): rounding that product to 16 bits would round
// every weight a second time, away from the checkpoint's own values that
// transformers computes with. Where the target's kernels scale the
// activation by the gain as they load it (norm-gain-on-activation, CUDA's
// tensor-core kernels, which round the activation to 16 bits there anyway)
// step 3 fuses that way; else it is left out and the norms are fused with
// their residual add (step 5) instead (the CPU, whose bf16 tiles would pay
// a multiply per loaded activation in their inner loop).
//
//===----------------------------------------------------------------------===//

#include "tbc/Transforms/Passes.h"
#include "tbc/Support/HalfFloats.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

void tbc::buildFusePipeline(mlir::OpPassManager &pm,
                            const FusePipelineOptions &options) {
  pm.addPass(createTbcFuseGateUp());
  pm.addPass(createTbcMergeQKV());
  if (options.weightType == "f32" || options.normGainOnActivation)
    pm.addPass(createTbcFuseNormProjection(
        TbcFuseNormProjectionOptions{/*gainOnActivation=*/options.weightType != "f32"}));
  pm.addPass(createTbcFuseRope());
  pm.addPass(createTbcFuseResidualNorm());
  pm.addPass(createTbcFuseScale());
  pm.addPass(createTbcFuseSoftcap());
  pm.addPass(createTbcFuseResidualProjection());
  pm.addPass(createTbcHoistWeightTransforms());
  pm.addPass(mlir::createCSEPass());
}

void tbc::registerFusePipeline() {
  mlir::registerPassPipeline(
      "tbc-fuse",
      "All tbc fusions in a sound order (gate/up, QKV merge, norm+projection, "
      "RoPE into QKV, residual+norm, scales, soft-caps, residual+projection), then weight transforms "
      "hoisted onto the parameters",
      [](mlir::OpPassManager &pm, llvm::StringRef optionsText,
         llvm::function_ref<mlir::LogicalResult(const llvm::Twine &)> errorHandler)
          -> mlir::LogicalResult {
        FusePipelineOptions options;
        if (failed(options.parseFromString(optionsText)))
          return mlir::failure();
        if (!isStorageType(options.weightType))
          return errorHandler("tbc-fuse: unknown weight-type '" + options.weightType +
                              "' (expected f32, bf16 or f16)");
        buildFusePipeline(pm, options);
        return mlir::success();
      },
      [](llvm::function_ref<void(const mlir::detail::PassOptions &)> handler) {
        handler(FusePipelineOptions());
      });
}
