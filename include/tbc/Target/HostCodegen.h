//===- HostCodegen.h - CPU kernels to a host shared object ------*- C++ -*-===//

#ifndef TBC_TARGET_HOSTCODEGEN_H
#define TBC_TARGET_HOSTCODEGEN_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <string>

namespace tbc {

/// tbc kernels -> linalg on memrefs (--tbc-lower-to-cpu), packed weights
/// stored as `weightType` (f32 or bf16).
void buildLinalgPipeline(mlir::OpPassManager &pm, llvm::StringRef weightType);
/// linalg on memrefs -> loops -> LLVM dialect.
mlir::LogicalResult buildLLVMPipeline(mlir::OpPassManager &pm);

/// LLVM dialect -> a host shared object (bytes), via an object file for the
/// host CPU and the system linker (`cc -shared`).
mlir::FailureOr<std::string> emitHostSharedObject(mlir::ModuleOp module,
                                                  std::string &error);

/// The instruction-set extensions the host code may use, as the runtime
/// checks them before loading it ("x86_64 avx avx2 fma avx512f ..."): code
/// compiled for this CPU would die of SIGILL on an older one.
std::string hostCpuRequirements();

} // namespace tbc

#endif // TBC_TARGET_HOSTCODEGEN_H
