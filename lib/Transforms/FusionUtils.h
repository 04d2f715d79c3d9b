//===- FusionUtils.h - helpers shared by the fusion patterns ----*- C++ -*-===//

#ifndef TBC_LIB_TRANSFORMS_FUSIONUTILS_H
#define TBC_LIB_TRANSFORMS_FUSIONUTILS_H

#include "tbc/Dialect/TbcDialect.h"

#include "mlir/IR/PatternMatch.h"

namespace tbc {

/// A value the runtime knows at bind time: a `tbc.param`, a weight
/// transform of such, or a statically shaped function argument (how layer
/// functions receive their weights; activations have dynamic batch/seq).
bool isBindTimeValue(mlir::Value v);

/// True when every value in `values` dominates `op` (weights defined after
/// a projection in @forward cannot feed a transform placed before it).
bool allDominate(mlir::ValueRange values, mlir::Operation *op);

/// Bind-time concatenation of `parts` along `dim`.
mlir::Value concatWeights(mlir::PatternRewriter &rewriter, mlir::Location loc,
                          mlir::ValueRange parts, int64_t dim);

/// Applies the patterns `populate` adds to everything under `root`.
mlir::LogicalResult
applyFusionPatterns(mlir::Operation *root,
                    void (*populate)(mlir::RewritePatternSet &));

/// The epilogue-free `tbc.fused_linear` computing what `linear` does, with
/// result type `type`, at the rewriter's insertion point: the patterns that
/// fuse a step into a plain projection then give it that step (a scale, a
/// soft-cap, RoPE, a residual).
FusedLinearOp fusedLinearOf(mlir::PatternRewriter &rewriter, LinearOp linear, mlir::Type type);

/// The same activation type with a new feature width.
mlir::RankedTensorType withWidth(mlir::Type activation, int64_t width);

} // namespace tbc

#endif // TBC_LIB_TRANSFORMS_FUSIONUTILS_H
