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
/// target (the value sums' register budget).
void emitAttention(mlir::OpBuilder &b, mlir::Location loc, AttentionOp a,
                   mlir::Value q, mlir::Value kNew, mlir::Value vNew, mlir::Value windowSize,
                   mlir::Value out, mlir::Value kCache, mlir::Value vCache,
                   mlir::Value kvBegin, mlir::Value kvEnd,
                   const PositionBias &bias, int64_t vectorFloats);

} // namespace tbc

#endif // TBC_LIB_CONVERSION_ATTENTION_H
