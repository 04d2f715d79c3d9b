//===- KernelBuilder.h - linalg-on-memref building blocks -------*- C++ -*-===//
//
// Small helpers the kernel emitters share: constants, allocations, fills,
// generic ops over activations (the CPU lowering). The scalar math both
// lowerings share is in Common/KernelMath.h.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_LIB_CONVERSION_KERNELBUILDER_H
#define TBC_LIB_CONVERSION_KERNELBUILDER_H

#include "../Common/KernelMath.h"
#include "tbc/Dialect/TbcDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"

namespace tbc {

using BodyFn =
    llvm::function_ref<void(mlir::OpBuilder &, mlir::Location, mlir::ValueRange)>;

/// An scf.for over [lo, hi) by `step` with no loop-carried values, `body`
/// given the loop's builder and induction variable (the yield is added).
/// Takes the builder of the region being filled, so nests read as nests.
void emitForLoop(mlir::OpBuilder &b, mlir::Location loc, mlir::Value lo, mlir::Value hi,
                 mlir::Value step,
                 llvm::function_ref<void(mlir::OpBuilder &, mlir::Value)> body);

class KernelBuilder {
public:
  KernelBuilder(mlir::OpBuilder &b, mlir::Location loc) : b(b), loc(loc) {}

  mlir::OpBuilder &builder() { return b; }
  mlir::Location location() { return loc; }

  mlir::Value f32(double v);
  mlir::Value idx(int64_t v);
  mlir::Value dim(mlir::Value memref, int64_t i);
  /// A temporary f32 buffer; `dynamic` gives the sizes of its dynamic dims.
  mlir::Value alloc(llvm::ArrayRef<int64_t> shape, mlir::ValueRange dynamic);
  void dealloc(mlir::Value buffer);
  void fill(mlir::Value buffer, double value);
  /// The part [begin, begin + size) of dimension `d` of `memref` (index
  /// values), every other dimension whole.
  mlir::Value slice(mlir::Value memref, unsigned d, mlir::Value begin,
                    mlir::Value size);
  /// Splits the last dimension of `memref` into [groups, last / groups].
  mlir::Value splitLastDim(mlir::Value memref, int64_t groups);

  /// A linalg.generic over `numDims` loops; `maps` are lists of dim exprs.
  void generic(mlir::ValueRange ins, mlir::ValueRange outs,
               llvm::ArrayRef<mlir::AffineMap> maps,
               llvm::ArrayRef<mlir::utils::IteratorType> iterators, BodyFn body);
  mlir::AffineMap map(unsigned numDims, llvm::ArrayRef<mlir::AffineExpr> exprs);
  mlir::AffineMap identity(unsigned numDims);
  mlir::AffineExpr d(unsigned i) { return b.getAffineDimExpr(i); }

  static llvm::SmallVector<mlir::utils::IteratorType>
  iterators(unsigned parallel, unsigned reduction = 0);

private:
  mlir::OpBuilder &b;
  mlir::Location loc;
};

} // namespace tbc

#endif // TBC_LIB_CONVERSION_KERNELBUILDER_H
