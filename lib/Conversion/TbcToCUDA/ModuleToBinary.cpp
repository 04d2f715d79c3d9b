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
#include "PtxByKernelGroups.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/CommandLine.h"

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

/// Sets one of LLVM's boolean command-line switches for a scope: the code
/// generator has no other way to leave out one of its IR passes.
class ScopedFlag {
public:
  ScopedFlag(StringRef name, bool value) {
    auto &options = llvm::cl::getRegisteredOptions();
    auto it = options.find(name);
    if (it == options.end())
      return;
    flag = static_cast<llvm::cl::opt<bool> *>(it->second);
    saved = flag->getValue();
    flag->setValue(value);
  }
  ~ScopedFlag() {
    if (flag)
      flag->setValue(saved);
  }

private:
  llvm::cl::opt<bool> *flag = nullptr;
  bool saved = false;
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
    if (kernelGroups > 0)
      return runByKernelGroups(options);

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
      replaceWithBinary(builder, module, objects);
    }
  }

  /// The module's place taken by a gpu.binary of `objects`, as upstream's pass.
  static void replaceWithBinary(OpBuilder &builder, gpu::GPUModuleOp module,
                                ArrayRef<Attribute> objects) {
    builder.setInsertionPointAfter(module);
    gpu::BinaryOp::create(builder, module.getLoc(), module.getName(),
                          dyn_cast_or_null<gpu::OffloadingLLVMTranslationAttrInterface>(
                              module.getOffloadingHandlerAttr()),
                          builder.getArrayAttr(objects));
    module->erase();
  }

  /// `kernel-groups`: each module's kernels in groups, every group optimised
  /// once and generated for all targets, the groups of all modules side by
  /// side; a target's object is its groups' PTX joined.
  void runByKernelGroups(const gpu::TargetOptions &options) {
    if (options.getCompilationTarget() != gpu::CompilationTarget::Assembly) {
      getOperation().emitError("kernel-groups joins PTX texts: it needs format=isa");
      return signalPassFailure();
    }
    struct Module {
      gpu::GPUModuleOp op;
      SmallVector<NVVM::NVVMTargetAttr> targets;
      size_t firstGroup, groups;
    };
    SmallVector<Module> modules;
    SmallVector<tbc::cuda::KernelGroup> groups;
    for (gpu::GPUModuleOp op : getOperation().getOps<gpu::GPUModuleOp>()) {
      FailureOr<SmallVector<NVVM::NVVMTargetAttr>> targets =
          tbc::cuda::sharedOptimisationTargets(op);
      if (failed(targets))
        return signalPassFailure();
      SmallVector<tbc::cuda::KernelGroup> shares = tbc::cuda::shareOutKernels(op, kernelGroups);
      modules.push_back({op, std::move(*targets), groups.size(), shares.size()});
      for (tbc::cuda::KernelGroup &g : shares)
        groups.push_back(std::move(g));
    }

    {
      // LLVM reads the switch as each code generator is set up; no other
      // code generator of this process is set up while the groups compile.
      ScopedFlag noLsr("disable-lsr", !loopStrengthReduction);
      if (failed(failableParallelForEach(&getContext(), groups, [&](tbc::cuda::KernelGroup &g) {
            const Module &m = *llvm::find_if(
                modules, [&](const Module &m) { return m.op == g.module; });
            return tbc::cuda::serializeGroup(g, m.targets, options, shareCodegen);
          })))
        return signalPassFailure();
    }

    OpBuilder builder(&getContext());
    for (Module &m : modules) {
      ArrayRef<tbc::cuda::KernelGroup> shares(groups.data() + m.firstGroup, m.groups);
      SmallVector<Attribute> objects;
      for (size_t t = 0; t < m.targets.size(); ++t) {
        SmallVector<std::string> pieces;
        int64_t ms = 0;
        for (const tbc::cuda::KernelGroup &g : shares) {
          pieces.push_back(g.ptx[t]);
          ms += g.codegenMs[t];
        }
        FailureOr<std::string> ptx = tbc::cuda::joinPtx(pieces);
        if (failed(ptx)) {
          m.op.emitError("a kernel group's PTX for ") << m.targets[t] << " has no header";
          return signalPassFailure();
        }
        // The properties upstream's NVVM objects carry.
        auto properties = builder.getDictionaryAttr(
            {builder.getNamedAttr("LLVMIRToISATimeInMs", builder.getI64IntegerAttr(ms)),
             builder.getNamedAttr("O", builder.getI32IntegerAttr(m.targets[t].getO()))});
        objects.push_back(gpu::ObjectAttr::get(&getContext(), m.targets[t],
                                               gpu::CompilationTarget::Assembly,
                                               builder.getStringAttr(*ptx), properties, nullptr));
      }
      replaceWithBinary(builder, m.op, objects);
    }
  }
};
} // namespace
