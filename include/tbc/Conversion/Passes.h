//===- Passes.h - lowerings from tbc kernels to a target --------*- C++ -*-===//
//
// One lowering per target (dialects/tbc/TbcConversion.td): outlined tbc
// kernels -> the CPU's linalg/scf/vector on memrefs, or gpu.func kernels.
// Each target's backend (lib/Target/<Target>) builds its pipelines from
// these and upstream passes.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_CONVERSION_PASSES_H
#define TBC_CONVERSION_PASSES_H

#include "mlir/Pass/Pass.h"

namespace tbc {
#define GEN_PASS_DECL
#include "tbc/TbcConversion.h.inc"

#define GEN_PASS_REGISTRATION
#include "tbc/TbcConversion.h.inc"
} // namespace tbc

#endif // TBC_CONVERSION_PASSES_H
