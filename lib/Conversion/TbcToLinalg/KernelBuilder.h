//===- KernelBuilder.h - linalg-on-memref building blocks -------*- C++ -*-===//
//
// Small helpers the kernel emitters share: constants, allocations, fills,
// generic ops over activations, and the pointwise math of activations.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_LIB_CONVERSION_KERNELBUILDER_H
#define TBC_LIB_CONVERSION_KERNELBUILDER_H

#include "tbc/Dialect/TbcDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"

namespace tbc {

using BodyFn =
    llvm::function_ref<void(mlir::OpBuilder &, mlir::Location, mlir::ValueRange)>;

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

/// act(x) in f32 with the math dialect (gelu = exact erf form).
mlir::Value emitActivation(mlir::OpBuilder &b, mlir::Location loc,
                           Activation act, mlir::Value x);
/// 1 / sqrt(x) (libm has no rsqrtf, so math.rsqrt is not used).
mlir::Value emitRsqrt(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x);
/// A constant table of `r`'s RoPE inverse frequencies (with its scaling),
/// as the memref.global `name` in `symbolTable` (a module or gpu.module;
/// created once), read through memref.get_global at the builder's point.
mlir::Value emitRopeTable(mlir::OpBuilder &b, mlir::Location loc, RopeOp r,
                          mlir::Operation *symbolTable, llvm::StringRef name);

/// Where element `f` of a row of heads takes its RoPE partner from: whether
/// it is rotated at all (`inRot`: dims past rotary_dim pass through), whether
/// it is the first of its pair (its partner enters with a minus sign), the
/// frequency index `i` and the partner's column, both clamped to safe
/// indices where not rotated. NeoX pairs halves, GPT-J adjacent dims.
struct RopeLanes {
  mlir::Value inRot, first, i, partner;
};
RopeLanes emitRopeLanes(mlir::OpBuilder &b, mlir::Location loc, mlir::Value f,
                        int64_t headDim, int64_t rotaryDim, bool gptj);

/// cap * tanh(x / cap).
mlir::Value emitSoftcap(mlir::OpBuilder &b, mlir::Location loc, double cap,
                        mlir::Value x);

} // namespace tbc

#endif // TBC_LIB_CONVERSION_KERNELBUILDER_H
