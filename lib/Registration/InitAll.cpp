//===- InitAll.cpp - dialect and pass registration for tbc tools ----------===//

#include "tbc/InitAll.h"

#include "tbc/Dialect/TbcDialect.h"
#include "tbc/Conversion/Passes.h"
#include "tbc/Target/TargetBackend.h"
#include "tbc/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Transforms/Passes.h"

void tbc::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<TbcDialect>();
  // The CPU and CUDA paths go through upstream dialects (linalg, memref,
  // scf, llvm, gpu, nvvm, ...): register them all, as mlir-opt does.
  mlir::registerAllDialects(registry);
  // The NVVM target attribute's serialisation (gpu-module-to-binary) and
  // the translations to LLVM IR it runs.
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
}

void tbc::registerAllPasses() {
  mlir::registerAllPasses(); // canonicalize, cse, the lowering passes, ...
  registerTbcTransformsPasses();
  registerTbcConversionPasses();
  registerFusePipeline();
  registerTargetPipelines(); // --tbc-cpu-linalg, ..., --tbc-cuda-ptx
}
