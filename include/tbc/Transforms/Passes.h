//===- Passes.h - tbc tbc-to-tbc passes -------------------------*- C++ -*-===//

#ifndef TBC_TRANSFORMS_PASSES_H
#define TBC_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"
#include "tbc/Dialect/TbcDialect.h"

namespace tbc {
#define GEN_PASS_DECL
#include "tbc/TbcPasses.h.inc"

#define GEN_PASS_REGISTRATION
#include "tbc/TbcPasses.h.inc"
} // namespace tbc

#endif // TBC_TRANSFORMS_PASSES_H
