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
/// Ops with this trait are pure functions of parameters, evaluated once by
/// the runtime when it binds weights (never per token).
template <typename ConcreteType>
class WeightTransform
    : public mlir::OpTrait::TraitBase<ConcreteType, WeightTransform> {};
} // namespace tbc
#include "tbc/TbcEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "tbc/TbcAttrs.h.inc"

#define GET_OP_CLASSES
#include "tbc/TbcOps.h.inc"

#endif // TBC_DIALECT_TBCDIALECT_H
