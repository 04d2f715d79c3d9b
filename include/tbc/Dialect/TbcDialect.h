//===- TbcDialect.h - the tbc dialect, its attributes and ops ---*- C++ -*-===//

#ifndef TBC_DIALECT_TBCDIALECT_H
#define TBC_DIALECT_TBCDIALECT_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "tbc/TbcDialect.h.inc"

namespace tbc {
/// Bounds on tensors in tbc IR: any one dimension, any one tensor.
inline constexpr int64_t kMaxDim = int64_t(1) << 32;
inline constexpr int64_t kMaxElements = int64_t(1) << 40;

/// The checks of SaneShapesAndAttrs (TbcOps.cpp).
mlir::LogicalResult verifySaneShapesAndAttrs(mlir::Operation *op);

template <typename ConcreteType>
class SaneShapesAndAttrs
    : public mlir::OpTrait::TraitBase<ConcreteType, SaneShapesAndAttrs> {
public:
  static mlir::LogicalResult verifyTrait(mlir::Operation *op) {
    return verifySaneShapesAndAttrs(op);
  }
};

/// Ops with this trait are pure functions of parameters, evaluated once by
/// the runtime when it binds weights (never per token).
template <typename ConcreteType>
class WeightTransform
    : public mlir::OpTrait::TraitBase<ConcreteType, WeightTransform> {};
} // namespace tbc
#include "tbc/TbcEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "tbc/TbcAttrs.h.inc"

#include "tbc/TbcInterfaces.h.inc"

#define GET_OP_CLASSES
#include "tbc/TbcOps.h.inc"

namespace tbc {
/// Whether a kernel operand of this type is a scalar (i64: an attention's
/// `window(%w)`) rather than a buffer (a tensor).
inline bool isScalarOperand(mlir::Type t) { return !mlir::isa<mlir::ShapedType>(t); }
/// How many scalar operands a tbc.kernel function takes. They are its last
/// arguments (the kernel attribute's verifier checks it), and every target
/// takes them after all its buffers (tbc/Conversion/*/KernelABI.h; the
/// manifest's `scalars`).
unsigned kernelScalarOperands(mlir::func::FuncOp kernel);
} // namespace tbc

#endif // TBC_DIALECT_TBCDIALECT_H
