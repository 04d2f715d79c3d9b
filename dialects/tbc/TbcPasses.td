//===- TbcPasses.td - tbc passes ---------------------------*- tablegen -*-===//
//
// Every tbc pass is declared here (summary, description, options) and
// defined in lib/Transforms or lib/Conversion with GEN_PASS_DEF_<NAME>.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_PASSES_TD
#define TBC_PASSES_TD

include "mlir/Pass/PassBase.td"

#endif // TBC_PASSES_TD
