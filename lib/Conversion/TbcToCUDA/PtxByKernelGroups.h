//===- PtxByKernelGroups.h - PTX for every target, kernels in groups ------===//
//
// The `kernel-groups` mode of `--tbc-gpu-module-to-binary`. A gpu.module's
// kernels are shared out into groups that compile side by side; each group
// is translated, linked and optimised once and generated as PTX for every
// target (or, for plain chips of one PTX ISA, generated once and assembled
// for each); a target's PTX is its groups' PTX joined into one text.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_CONVERSION_TBCTOCUDA_PTXBYKERNELGROUPS_H
#define TBC_CONVERSION_TBCTOCUDA_PTXBYKERNELGROUPS_H

#include "mlir/Dialect/GPU/IR/CompilationInterfaces.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>

namespace tbc::cuda {

/// Some of a gpu.module's kernels: a clone of the module without the others.
struct KernelGroup {
  mlir::gpu::GPUModuleOp module; // the module the group comes from
  unsigned index = 0;            // 0 keeps its symbols' names
  mlir::OwningOpRef<mlir::ModuleOp> clone;
  llvm::SmallVector<std::string> ptx;       // one per target, once serialized
  llvm::SmallVector<int64_t> codegenMs;     // LLVM IR -> PTX, per target
};

/// Shares `module`'s kernels out into at most `groups` groups of about equal
/// size (operations counted), largest kernel first; a group keeps the
/// kernels' order. Depends on the module alone, never on the thread count.
llvm::SmallVector<KernelGroup> shareOutKernels(mlir::gpu::GPUModuleOp module, unsigned groups);

/// The targets of `module` when they can share one optimised LLVM module:
/// NVVM targets with the same triple, optimisation level, flags and
/// libraries, differing in chip and features. Emits an error otherwise.
mlir::FailureOr<llvm::SmallVector<mlir::NVVM::NVVMTargetAttr>>
sharedOptimisationTargets(mlir::gpu::GPUModuleOp module);

/// For each target, the target whose generated code it takes: itself, or
/// with `share` the lowest plain `sm_N` chip of the same features (the same
/// PTX ISA) when the target is a plain chip too. PTX selected for sm_80 is
/// PTX for sm_90 as well (ptxas assembles it for either); only
/// architecture-specific chips (`sm_90a`) always generate their own.
llvm::SmallVector<size_t> codegenSources(llvm::ArrayRef<mlir::NVVM::NVVMTargetAttr> targets,
                                         bool share);

/// `ptx` generated for chip `from`, its `.target` line naming `to`, and a
/// comment at its top that says so. Fails without a `.target from` line.
mlir::FailureOr<std::string> retargetPtx(llvm::StringRef ptx, llvm::StringRef from,
                                         llvm::StringRef to);

/// Translates, links and optimises the group once (for targets[0]) and
/// generates PTX for each target (with `shareCodegen`, once per
/// codegenSources source). Thread-safe across groups.
mlir::LogicalResult serializeGroup(KernelGroup &group,
                                   llvm::ArrayRef<mlir::NVVM::NVVMTargetAttr> targets,
                                   const mlir::gpu::TargetOptions &options, bool shareCodegen);

/// One PTX text from the groups' PTX for one target: the first whole, the
/// others without their header (.version, .target, .address_size).
mlir::FailureOr<std::string> joinPtx(llvm::ArrayRef<std::string> pieces);

} // namespace tbc::cuda

#endif // TBC_CONVERSION_TBCTOCUDA_PTXBYKERNELGROUPS_H
