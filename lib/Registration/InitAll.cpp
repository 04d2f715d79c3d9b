//===- InitAll.cpp - dialect and pass registration for tbc tools ----------===//

#include "tbc/InitAll.h"

#include "tbc/Dialect/TbcDialect.h"
#include "tbc/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/Passes.h"

void tbc::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<TbcDialect, mlir::func::FuncDialect, mlir::arith::ArithDialect,
                  mlir::tensor::TensorDialect>();
}

void tbc::registerAllPasses() {
  mlir::registerTransformsPasses(); // canonicalize, cse, inline, ...
  registerTbcPasses();
  registerFusePipeline();
}
