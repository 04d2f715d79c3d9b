//===- Cost.h - FLOPs and minimum bytes moved per op ------------*- C++ -*-===//
//
// The cost model behind `tbc compile --report` (docs/passes.md explains each
// rule and hand-counts the Llama-3-8B layer). Bytes are the minimum an op
// must move: every operand read once, every result written once; weights
// count where they are read. Bind-time weight transforms are listed apart:
// they run once, not per token.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_ANALYSIS_COST_H
#define TBC_ANALYSIS_COST_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>

namespace tbc {

struct Cost {
  int64_t flops = 0;
  int64_t bytes = 0;
  Cost &operator+=(const Cost &o) {
    flops += o.flops;
    bytes += o.bytes;
    return *this;
  }
};

/// Cost of one op for one sequence of `tokens` tokens (batch 1, full
/// prefill, no KV cache). Calls and weight transforms cost nothing here.
Cost opCost(mlir::Operation *op, int64_t tokens);

/// Per-op tables for every function, then one-layer and whole-model totals.
void printCostReport(mlir::ModuleOp module, int64_t tokens,
                     llvm::raw_ostream &os);

/// "one layer" (each layer function) and "model" totals, before and after,
/// with the bytes fusion saves.
void printCostSummary(mlir::ModuleOp before, mlir::ModuleOp after,
                      int64_t tokens, llvm::raw_ostream &os);

/// Whole-model per-token cost (each function's ops times its call count).
Cost modelCost(mlir::ModuleOp module, int64_t tokens);

/// Cost of one function's own ops.
Cost functionCost(mlir::func::FuncOp fn, int64_t tokens);

} // namespace tbc

#endif // TBC_ANALYSIS_COST_H
