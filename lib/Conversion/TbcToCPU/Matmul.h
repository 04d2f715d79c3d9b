//===- Matmul.h - register-tiled, vectorised projections --------*- C++ -*-===//

#ifndef TBC_LIB_CONVERSION_MATMUL_H
#define TBC_LIB_CONVERSION_MATMUL_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "tbc/Conversion/TbcToCPU/KernelABI.h"

namespace tbc {

/// Emits acc[0, t, n] += x[0, t, :] . W[n, :] for the output columns n in
/// [colBegin, colEnd) (index values) as tiled vector loops of `tile`, with W
/// packed in panels ([panels, in, tile.panel], see TbcToCPU/KernelABI.h).
/// Without `accumulate`, acc = x . W^T instead: acc's old contents (which
/// may be anything, NaN included) are never read into the result.
void emitPanelMatmul(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                     mlir::Value packed, mlir::Value acc, mlir::Value colBegin,
                     mlir::Value colEnd, const CpuTile &tile, bool accumulate);

} // namespace tbc

#endif // TBC_LIB_CONVERSION_MATMUL_H
