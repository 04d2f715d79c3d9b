//===- ModuleToBinary.cpp - gpu.module -> gpu.binary, targets in parallel -===//
//
// `--tbc-gpu-module-to-binary`: upstream's gpu-module-to-binary, except that
// the (module, target) pairs are serialized on the context's threads. LLVM's
// optimiser and the NVPTX code generator are most of a CUDA compile, and each
// architecture is compiled from scratch: with the default sm_80 and sm_90
// the two can run side by side.
//
//===----------------------------------------------------------------------===//

#include "tbc/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/CompilationInterfaces.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Threading.h"
#include "llvm/ADT/StringSwitch.h"

#include <optional>

namespace tbc {
#define GEN_PASS_DEF_TBCGPUMODULETOBINARY
#include "tbc/TbcConversion.h.inc"
} // namespace tbc

using namespace mlir;

namespace {

/// One object to make: a target of a gpu.module, serialized from a clone of
/// the module of its own (translation to LLVM IR edits the module it reads).
struct Job {
  gpu::GPUModuleOp module;
  gpu::TargetAttrInterface target;
  OwningOpRef<ModuleOp> clone;
  std::optional<SmallVector<char, 0>> object;
};

struct GpuModuleToBinary final : tbc::impl::TbcGpuModuleToBinaryBase<GpuModuleToBinary> {
  using Base::Base;

  void runOnOperation() override {
    std::optional<gpu::CompilationTarget> kind =
        llvm::StringSwitch<std::optional<gpu::CompilationTarget>>(format)
            .Cases({"isa", "assembly"}, gpu::CompilationTarget::Assembly)
            .Cases({"bin", "binary"}, gpu::CompilationTarget::Binary)
            .Cases({"fatbin", "fatbinary"}, gpu::CompilationTarget::Fatbin)
            .Cases({"llvm", "offloading"}, gpu::CompilationTarget::Offload)
            .Default(std::nullopt);
    if (!kind) {
      getOperation().emitError() << "unknown format '" << format << "' (isa, bin, fatbin or llvm)";
      return signalPassFailure();
    }
    gpu::TargetOptions options(toolkitPath, {}, {}, {}, *kind);

    // Clones first, on this thread: the workers only read shared IR.
    std::vector<Job> jobs;
    SmallVector<gpu::GPUModuleOp> modules(getOperation().getOps<gpu::GPUModuleOp>());
    for (gpu::GPUModuleOp module : modules) {
      if (!module.getTargetsAttr()) {
        module.emitError("the module has no target attributes");
        return signalPassFailure();
      }
      for (Attribute attr : module.getTargetsAttr()) {
        Job job{module, cast<gpu::TargetAttrInterface>(attr), nullptr, std::nullopt};
        job.clone = ModuleOp::create(module.getLoc());
        job.clone->getBody()->push_back(module->clone());
        jobs.push_back(std::move(job));
      }
    }

    if (failed(failableParallelForEach(&getContext(), jobs, [&](Job &job) -> LogicalResult {
          Operation *copy = &job.clone->getBody()->front();
          job.object = job.target.serializeToObject(copy, options);
          if (!job.object)
            return job.module.emitError("serializing the module for ") << job.target << " failed";
          return success();
        })))
      return signalPassFailure();

    // Objects in the targets' order, one gpu.binary per module.
    OpBuilder builder(&getContext());
    size_t next = 0;
    for (gpu::GPUModuleOp module : modules) {
      SmallVector<Attribute> objects;
      for (size_t n = module.getTargetsAttr().size(); n > 0; --n, ++next) {
        Job &job = jobs[next];
        // From the clone: the serializer notes its timings on the module it
        // compiled, and the object's properties carry them.
        Attribute object =
            job.target.createObject(&job.clone->getBody()->front(), *job.object, options);
        if (!object) {
          module.emitError("making the GPU object for ") << job.target << " failed";
          return signalPassFailure();
        }
        objects.push_back(object);
      }
      builder.setInsertionPointAfter(module);
      gpu::BinaryOp::create(builder, module.getLoc(), module.getName(),
                            dyn_cast_or_null<gpu::OffloadingLLVMTranslationAttrInterface>(
                                module.getOffloadingHandlerAttr()),
                            builder.getArrayAttr(objects));
      module->erase();
    }
  }
};
} // namespace
