//===- Matmul.h - register-tiled, vectorised projections --------*- C++ -*-===//

#ifndef TBC_LIB_CONVERSION_MATMUL_H
#define TBC_LIB_CONVERSION_MATMUL_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"

namespace tbc {

/// Emits acc[0, t, n] += x[0, t, :] . W[n, :] for the output columns n in
/// [colBegin, colEnd) (index values) as tiled vector loops; returns false
/// (emitting nothing) when the shapes do not fit the tiling (then the
/// caller emits a linalg reduction instead).
bool emitTiledMatmul(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                     mlir::Value w, mlir::Value acc, bool inOut,
                     mlir::Value colBegin, mlir::Value colEnd);

} // namespace tbc

#endif // TBC_LIB_CONVERSION_MATMUL_H
