//===- HostCodegen.h - CPU kernels to a host shared object ------*- C++ -*-===//

#ifndef TBC_TARGET_HOSTCODEGEN_H
#define TBC_TARGET_HOSTCODEGEN_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "tbc/Conversion/TbcToCPU/KernelABI.h"

#include <string>

namespace tbc {

/// tbc kernels -> linalg on memrefs (--tbc-lower-to-cpu), packed weights
/// stored as `weightType` (f32 or bf16), projections tiled as `tile`.
void buildLinalgPipeline(mlir::OpPassManager &pm, llvm::StringRef weightType,
                         const CpuTile &tile);
/// linalg on memrefs -> loops -> LLVM dialect.
mlir::LogicalResult buildLLVMPipeline(mlir::OpPassManager &pm);

/// The CPU the host code is generated for: `cpu` ("host": this machine, or
/// an LLVM CPU name such as znver3 or skylake-avx512) with `features`
/// added or removed ("+avx2,-avx512f"), as `tbc compile --cpu --cpu-features`.
struct HostTarget {
  std::string cpu = "host";
  std::string features;
};

/// Refuses a CPU or feature LLVM does not know for this architecture ("" when
/// fine).
std::string checkHostTarget(const HostTarget &target);
/// Whether code for `target` may use the extension `feature` ("avx512f").
bool hostTargetHas(const HostTarget &target, llvm::StringRef feature);
/// The LLVM name of the CPU code for `target` is tuned for: `cpu`, or this
/// machine's ("znver3", "sapphirerapids") for "host".
std::string hostTargetCpu(const HostTarget &target);

/// LLVM dialect -> a host shared object (bytes), via an object file for
/// `target` and the system linker (`cc -shared`).
mlir::FailureOr<std::string> emitHostSharedObject(mlir::ModuleOp module,
                                                  const HostTarget &target,
                                                  std::string &error);

/// The instruction-set extensions the host code may use, as the runtime
/// checks them before loading it ("x86_64 avx avx2 fma avx512f ..."): code
/// compiled for one CPU would die of SIGILL on an older one.
std::string hostCpuRequirements(const HostTarget &target);

} // namespace tbc

#endif // TBC_TARGET_HOSTCODEGEN_H
