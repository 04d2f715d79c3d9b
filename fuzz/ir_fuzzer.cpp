//===- ir_fuzzer.cpp - libFuzzer target: tbc IR parser, verifier, tbc-fuse -===//

#include "tbc/Support/IRNesting.h"
#include "tbc/Support/Limits.h"
#include "tbc/InitAll.h"
#include "tbc/Transforms/Passes.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static mlir::DialectRegistry *registry = [] {
    auto *r = new mlir::DialectRegistry;
    tbc::registerAllDialects(*r);
    return r;
  }();
  mlir::MLIRContext context(*registry, mlir::MLIRContext::Threading::DISABLED);
  context.allowUnregisteredDialects(false);
  context.getDiagEngine().registerHandler([](mlir::Diagnostic &) {});
  // MLIR's lexer expects the text to be followed by a NUL (as a file read
  // into a MemoryBuffer is); libFuzzer's bytes are not, so copy them.
  std::string text(reinterpret_cast<const char *>(data), size);
  // As the driver and tbc-opt do: MLIR's recursive parser never sees IR
  // nested past the limit (4,000 nested modules overflow its stack).
  if (!tbc::checkIRNesting(text, tbc::limits::kIRNesting).empty())
    return 0;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(text, &context);
  if (!module || mlir::failed(mlir::verify(*module)))
    return 0;
  mlir::PassManager pm(&context);
  tbc::buildFusePipeline(pm);
  (void)pm.run(*module);
  return 0;
}
