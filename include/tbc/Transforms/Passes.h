//===- Passes.h - tbc-to-tbc passes and their patterns ----------*- C++ -*-===//
//
// Fusion, weight-transform hoisting and outlining: passes on the tbc
// dialect alone (dialects/tbc/TbcTransforms.td). Nothing here knows a
// target; the lowerings are in tbc/Conversion/Passes.h.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_TRANSFORMS_PASSES_H
#define TBC_TRANSFORMS_PASSES_H

#include "tbc/Dialect/TbcDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace tbc {
#define GEN_PASS_DECL
#include "tbc/TbcTransforms.h.inc"

#define GEN_PASS_REGISTRATION
#include "tbc/TbcTransforms.h.inc"

void populateMergeQKVPatterns(mlir::RewritePatternSet &patterns);
void populateFuseGateUpPatterns(mlir::RewritePatternSet &patterns);
void populateFuseNormProjectionPatterns(mlir::RewritePatternSet &patterns,
                                        bool gainOnActivation = false);
void populateFuseRopePatterns(mlir::RewritePatternSet &patterns);
void populateFuseResidualNormPatterns(mlir::RewritePatternSet &patterns);
void populateFuseSoftcapPatterns(mlir::RewritePatternSet &patterns);
void populateFuseScalePatterns(mlir::RewritePatternSet &patterns);
void populateFuseResidualProjectionPatterns(mlir::RewritePatternSet &patterns);

struct FusePipelineOptions
    : mlir::PassPipelineOptions<FusePipelineOptions> {
  Option<std::string> weightType{
      *this, "weight-type", llvm::cl::init("f32"),
      llvm::cl::desc("How the target stores weights (f32, bf16, f16): with "
                     "16-bit weights no norm gain is folded into a weight, "
                     "which would round it a second time")};
  Option<bool> normGainOnActivation{
      *this, "norm-gain-on-activation", llvm::cl::init(false),
      llvm::cl::desc("With 16-bit weights, fuse norms into their projections "
                     "all the same, the gain scaling the activation as the "
                     "kernel loads it (the target's kernels take it there: "
                     "CUDA); else those norms stay unfused")};
};

/// The `tbc-fuse` pipeline: every fusion in a sound order, then the weight
/// transforms hoisted onto the parameters (docs/passes.md).
void buildFusePipeline(mlir::OpPassManager &pm,
                       const FusePipelineOptions &options = {});
/// Registers `--tbc-fuse` with the pass registry.
void registerFusePipeline();

} // namespace tbc

#endif // TBC_TRANSFORMS_PASSES_H
