//===- BuildModel.h - ModelSpec -> tbc IR ------------------------*- C++ -*-===//

#ifndef TBC_FRONTEND_BUILDMODEL_H
#define TBC_FRONTEND_BUILDMODEL_H

#include "tbc/Frontend/ModelSpec.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace tbc {

/// Builds the whole model as tbc IR:
///   func.func @forward(%ids: tensor<?x?xi32>, %positions: tensor<?x?xi32>)
///       -> tensor<?x?x{vocab}x{T}>
/// which gathers embeddings, calls one private function per distinct layer
/// kind (@block, or @block_global / @block_window4096 ...) once per layer
/// with that layer's `tbc.param`s, then applies the final norm, the LM head
/// and any final soft-cap. `elementType` is f32, bf16 or f16.
mlir::OwningOpRef<mlir::ModuleOp> buildModelIR(mlir::MLIRContext &context,
                                               const ModelSpec &spec,
                                               mlir::Type elementType);

} // namespace tbc

#endif // TBC_FRONTEND_BUILDMODEL_H
