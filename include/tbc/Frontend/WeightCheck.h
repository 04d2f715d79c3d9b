//===- WeightCheck.h - IR parameters against a checkpoint --------*- C++ -*-===//

#ifndef TBC_FRONTEND_WEIGHTCHECK_H
#define TBC_FRONTEND_WEIGHTCHECK_H

#include "tbc/Support/Safetensors.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace tbc {

/// Checks that every `tbc.param` of `module` exists in `weights` with the
/// same shape and a float dtype (f32, f16, bf16). Returns an empty string, or
/// one message per problem (at most `maxProblems`), newline-separated.
std::string checkWeights(mlir::ModuleOp module, const rt::WeightStore &weights,
                         size_t maxProblems = 10);

} // namespace tbc

#endif // TBC_FRONTEND_WEIGHTCHECK_H
