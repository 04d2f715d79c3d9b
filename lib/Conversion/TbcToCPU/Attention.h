//===- Attention.h - causal attention over the KV cache ---------*- C++ -*-===//

#ifndef TBC_LIB_CONVERSION_ATTENTION_H
#define TBC_LIB_CONVERSION_ATTENTION_H

#include "tbc/Dialect/TbcDialect.h"

#include "../Common/KernelMath.h"

#include "mlir/IR/Builders.h"

namespace tbc {

/// Appends the chunk's keys and values of the key/value heads [kvBegin,
/// kvEnd) (index values) to the caches, then writes the attention output of
/// every query head of those heads' groups (Attention.cpp), adding `bias`
/// to the logits. `windowSize`: the i64 value of the op's `window(%w)`, if
/// it has one. `vectorFloats`: the floats of one SIMD register of the
/// target (the value sums' register budget). `amx`: a chunk of
/// kAmxMinRows queries or more attends on AMX tiles (AmxAttention.cpp)
/// where the op allows it (amxAttends). `tiles`: otherwise, a chunk of
/// kTiledMinRows queries or more whose logits have no position bias attends
/// in register tiles (TiledAttention.cpp).
void emitAttention(mlir::OpBuilder &b, mlir::Location loc, AttentionOp a,
                   mlir::Value q, mlir::Value kNew, mlir::Value vNew, mlir::Value windowSize,
                   mlir::Value out, mlir::Value kCache, mlir::Value vCache,
                   mlir::Value kvBegin, mlir::Value kvEnd,
                   const PositionBias &bias, int64_t vectorFloats, bool amx, bool tiles);

/// Whether the AMX attention takes op `a`: a head_dim that is a multiple
/// of 32 (one tile's k) and logits without a position bias.
bool amxAttends(AttentionOp a, const PositionBias &bias);

/// The attention of the query rows [0, T) of the heads of key/value heads
/// [kvBegin, kvEnd) on AMX tiles (AmxAttention.cpp), over the caches' L rows
/// (the chunk's already appended: query row t is at position L - T + t);
/// `window` the sliding window (an index) or null.
void emitAmxAttention(mlir::OpBuilder &b, mlir::Location loc, AttentionOp a, mlir::Value q,
                      mlir::Value window, mlir::Value out, mlir::Value kCache,
                      mlir::Value vCache, mlir::Value kvBegin, mlir::Value kvEnd);

/// The fewest queries of a chunk that attend in register tiles
/// (TiledAttention.cpp); fewer (decoding) attend one row at a time.
constexpr int64_t kTiledMinRows = 4;

/// The attention of the query rows [0, T) of the heads of key/value heads
/// [kvBegin, kvEnd) in register tiles of `vectorFloats`-wide vectors
/// (TiledAttention.cpp), over the caches' L rows (the chunk's already
/// appended), logits without a position bias; `window` as for
/// emitAmxAttention.
void emitTiledAttention(mlir::OpBuilder &b, mlir::Location loc, AttentionOp a, mlir::Value q,
                        mlir::Value window, mlir::Value out, mlir::Value kCache,
                        mlir::Value vCache, mlir::Value kvBegin, mlir::Value kvEnd,
                        int64_t vectorFloats);

/// The first position a query at position `p` sees through a sliding
/// `window` (index values): p + 1 - window, clamped at 0.
mlir::Value emitWindowStart(mlir::OpBuilder &b, mlir::Location loc, mlir::Value p,
                            mlir::Value window);

/// The maximum of S[row][jBegin, jEnd) (f32 scores; index bounds, jBegin <
/// jEnd), `width` at a time, then the rest one by one.
mlir::Value emitRowMax(mlir::OpBuilder &b, mlir::Location loc, mlir::Value S, mlir::Value row,
                       mlir::Value jBegin, mlir::Value jEnd, int64_t width);

/// Replaces the scores S[row][jBegin, jEnd) by exp(s - max) (unnormalised
/// probabilities) and returns their sum.
mlir::Value emitExpAndSum(mlir::OpBuilder &b, mlir::Location loc, mlir::Value S,
                          mlir::Value row, mlir::Value jBegin, mlir::Value jEnd,
                          mlir::Value max, int64_t width);

/// The loop of emitValueSums for `chunks` chunks from column `colBegin` of
/// the values: from `inits` (rows x chunks vectors, row-major) adds
/// S[rows[r]][j] V[j][colBegin + c width, + width) for j in [jBegin, jEnd)
/// in order and returns the sums, each value row's chunks loaded once for
/// all the rows.
llvm::SmallVector<mlir::Value> emitValueLoop(mlir::OpBuilder &b, mlir::Location loc,
                                             mlir::Value S, llvm::ArrayRef<mlir::Value> rows,
                                             mlir::Value jBegin, mlir::Value jEnd,
                                             mlir::Value vCache, mlir::Value colBegin,
                                             int64_t width, int64_t chunks,
                                             mlir::ValueRange inits);

/// Chunks [0, chunks) of head_dim in sweeps of `perSweep`: the full sweeps
/// in a loop (one copy of `sweep`, the value loop of both attention
/// kernels, whatever head_dim is), then the rest. `sweep(b, c0, m)` does m
/// chunks from chunk c0 (an index value); `zero` is the index 0.
void emitSweeps(mlir::OpBuilder &b, mlir::Location loc, mlir::Value zero, int64_t chunks,
                int64_t perSweep,
                llvm::function_ref<void(mlir::OpBuilder &, mlir::Value, int64_t)> sweep);

/// out[0, ts[r], cols[r] + d] = invs[r] * sum_j S[rows[r]][j] V[j][kvCol + d]
/// for j in [jBegin, jEnd) and d < headDim (index values but the sizes),
/// `width`-wide: `chunksPerSweep` chunks of head_dim of every row a sweep
/// over the values, each value row's chunks loaded once for all the rows
/// (their accumulators: rows x chunksPerSweep vectors).
void emitValueSums(mlir::OpBuilder &b, mlir::Location loc, mlir::Value S,
                   llvm::ArrayRef<mlir::Value> rows, mlir::Value jBegin, mlir::Value jEnd,
                   mlir::Value vCache, mlir::Value kvCol, int64_t headDim, int64_t width,
                   int64_t chunksPerSweep, llvm::ArrayRef<mlir::Value> invs, mlir::Value out,
                   llvm::ArrayRef<mlir::Value> ts, llvm::ArrayRef<mlir::Value> cols);

} // namespace tbc

#endif // TBC_LIB_CONVERSION_ATTENTION_H
