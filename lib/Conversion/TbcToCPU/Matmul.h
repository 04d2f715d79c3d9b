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

/// Masks of the lanes of `width`-wide stores whose output column lies in
/// [colBegin, colEnd): the bounds broadcast once, a mask per first column.
struct ColumnMask {
  ColumnMask(mlir::OpBuilder &b, mlir::Location loc, int64_t width, mlir::Value colBegin,
             mlir::Value colEnd);
  /// The mask of the lanes from column `col` (an index) on.
  mlir::Value at(mlir::OpBuilder &b, mlir::Location loc, mlir::Value col) const;
  mlir::VectorType laneType;
  mlir::Value iota, lo, hi;
};

/// AMX's shapes (AmxMatmul.cpp): a tile is 16 rows of 64 bytes (32 bf16 of
/// k, or 16 f32 columns); a block is 32 token rows x one 32-column panel.
constexpr int64_t kAmxTileRows = 16, kAmxTileK = 32, kAmxBlockRows = 32;
/// The reduction's chunk (k) of the AMX whole blocks' outermost loop.
constexpr int64_t kAmxChunkK = 2048;
/// The rows of whole blocks that go through all chunks and panels before the
/// next rows do (their activations' chunk, 1 MiB, stays in L2).
constexpr int64_t kAmxRowGroup = 256;
/// The fewest rows a call multiplies on AMX tiles (fewer: one at a time).
constexpr int64_t kAmxMinRows = 4;

/// Row `row` of activation term `term` in a buffer of term row sets
/// `termRows` rows apart: term j's row t is row j * termRows + t.
mlir::Value activationTermRow(mlir::OpBuilder &b, mlir::Location loc, mlir::Value row,
                              mlir::Value termRows, int64_t term);

/// Emits acc[0, t, n] (+)= xb[t, :] . W[n, :] on AMX tiles for the rows t <
/// `rows` of the blocks of 32 in [0, blockEnd) (blockEnd a multiple of 32;
/// xb, bf16 [>= blockEnd, in], holds zeros past `rows`) and the columns n in
/// [colBegin, colEnd) of panels [panelBegin, panelEnd), with W packed in k
/// pairs (KernelABI.h; 32-column panels, `in` a multiple of 32). With
/// `terms` > 1, xb holds that many bf16 terms of the activations, term j's
/// row t at activationTermRow(t, termRows, j), each multiplied in turn.
void emitAmxPanelTiles(mlir::OpBuilder &b, mlir::Location loc, mlir::Value xb,
                       mlir::Value packed, mlir::Value acc, mlir::Value rows,
                       mlir::Value blockEnd, mlir::Value panelBegin, mlir::Value panelEnd,
                       mlir::Value colBegin, mlir::Value colEnd, bool accumulate,
                       int64_t terms, mlir::Value termRows);

} // namespace tbc

#endif // TBC_LIB_CONVERSION_MATMUL_H
