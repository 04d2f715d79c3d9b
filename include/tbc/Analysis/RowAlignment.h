//===- RowAlignment.h - which kernel operands' rows are 16-byte aligned -*- C++ -*-===//
//
// An outlined kernel receives each activation as a strided memref whose
// offset and row stride are dynamic in its ABI: a view (tbc.split) is a
// column range of a wider buffer. The schedule fixes them all the same: a
// buffer the runtime allocates starts 256-byte aligned, its rows are as wide
// as the tensor, and a view starts at a constant column of its root. This
// walks the schedule as the manifest flattens it (@forward, and each call of
// a layer function with its own operands) and says, per kernel operand,
// whether every row it is given starts 16 bytes aligned at every call: the
// CUDA GEMMs then read it 128 bits at a time without testing.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_ANALYSIS_ROWALIGNMENT_H
#define TBC_ANALYSIS_ROWALIGNMENT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

namespace tbc {

class RowAlignment {
public:
  /// Analyses `outlined` (after --tbc-outline-kernels). Without an @forward
  /// (a module of kernels alone) nothing is known to be aligned.
  explicit RowAlignment(mlir::ModuleOp outlined);

  /// Whether operand `index` of `kernel` is a 2-D activation whose rows
  /// start 16 bytes aligned at every call of the kernel (false for a kernel
  /// never called, a weight, or a sequence input).
  bool rowsAligned16(mlir::func::FuncOp kernel, unsigned index) const;

  /// Where an operand's rows lie in its root buffer, if known.
  struct Place {
    bool known = false;
    int64_t rootWidth = 0; // floats a row of the root buffer holds
    int64_t offset = 0;    // the operand's first column in it
  };

private:
  void visit(mlir::func::FuncOp fn, llvm::ArrayRef<Place> args,
             llvm::SmallVectorImpl<Place> &results);

  mlir::ModuleOp module;
  llvm::DenseMap<mlir::Operation *, llvm::SmallVector<bool>> aligned;
};

} // namespace tbc

#endif // TBC_ANALYSIS_ROWALIGNMENT_H
