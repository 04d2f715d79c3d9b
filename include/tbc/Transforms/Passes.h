//===- Passes.h - tbc-to-tbc passes and their patterns ----------*- C++ -*-===//

#ifndef TBC_TRANSFORMS_PASSES_H
#define TBC_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "tbc/Dialect/TbcDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir {
class RewritePatternSet;
} // namespace mlir

namespace tbc {
#define GEN_PASS_DECL
#include "tbc/TbcPasses.h.inc"

#define GEN_PASS_REGISTRATION
#include "tbc/TbcPasses.h.inc"

void populateMergeQKVPatterns(mlir::RewritePatternSet &patterns);
void populateFuseGateUpPatterns(mlir::RewritePatternSet &patterns);
void populateFuseNormProjectionPatterns(mlir::RewritePatternSet &patterns);
void populateFuseResidualNormPatterns(mlir::RewritePatternSet &patterns);
void populateFuseSoftcapPatterns(mlir::RewritePatternSet &patterns);

/// The `tbc-fuse` pipeline: every fusion in a sound order, then the weight
/// transforms hoisted onto the parameters (docs/passes.md).
void buildFusePipeline(mlir::OpPassManager &pm);
/// Registers `--tbc-fuse` with the pass registry.
void registerFusePipeline();

} // namespace tbc

#endif // TBC_TRANSFORMS_PASSES_H
