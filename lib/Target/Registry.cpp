//===- Registry.cpp - the code-generation targets, by name ----------------===//

#include "tbc/Target/TargetBackend.h"

#include "tbc/Dialect/TbcDialect.h"
#include "tbc/Support/HalfFloats.h"

#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"

using namespace tbc;

namespace {
const std::vector<std::unique_ptr<TargetBackend>> &backends() {
  static const std::vector<std::unique_ptr<TargetBackend>> all = [] {
    std::vector<std::unique_ptr<TargetBackend>> v;
    v.push_back(createCpuBackend());  // lib/Target/CPU
    v.push_back(createCudaBackend()); // lib/Target/CUDA
    return v;
  }();
  return all;
}
} // namespace

const TargetBackend *tbc::lookupTargetBackend(llvm::StringRef name) {
  for (const auto &b : backends())
    if (b->name() == name)
      return b.get();
  return nullptr;
}

std::vector<std::string> tbc::targetBackendNames() {
  std::vector<std::string> names;
  for (const auto &b : backends())
    names.push_back(b->name().str());
  return names;
}

std::string TargetBackend::checkDtype(llvm::StringRef dtype) const {
  if (isStorageType(dtype))
    return "";
  return "the " + name().upper() + " backend stores weights as f32, bf16 or f16 "
                                   "(activations are f32)";
}

std::string tbc::targetPipelineName(const TargetBackend &backend,
                                    const TargetStage &stage) {
  return ("tbc-" + backend.name() + "-" + stage.name).str();
}

namespace {
/// The `tbc compile` flags a stage depends on, as pipeline options.
struct TargetPipelineOptions : mlir::PassPipelineOptions<TargetPipelineOptions> {
  ListOption<std::string> cudaArch{
      *this, "cuda-arch",
      llvm::cl::desc("GPU architectures of the cuda target, as tbc compile --cuda-arch "
                     "(default sm_80,sm_90; the cpu target has no options)")};

  Option<std::string> weightType{
      *this, "weight-type",
      llvm::cl::desc("Weight storage, as tbc compile --dtype: f32, bf16 or f16 "
                     "(default: the target's, f32 for cpu, bf16 for cuda)")};

  Option<std::string> cudaKvCache{
      *this, "cuda-kv-cache",
      llvm::cl::desc("KV cache element type of the cuda target, as tbc compile "
                     "--cuda-kv-cache (default: the weight type)")};

  Option<std::string> cpu{*this, "cpu",
                          llvm::cl::desc("The CPU of the cpu target, as tbc compile --cpu"),
                          llvm::cl::init("host")};
  Option<std::string> cpuFeatures{
      *this, "cpu-features",
      llvm::cl::desc("Extensions of the cpu target, as tbc compile --cpu-features")};

  TargetOptions toTargetOptions() const {
    TargetOptions t;
    t.cpu = cpu;
    t.cpuFeatures = cpuFeatures;
    if (!cudaArch.empty())
      t.cudaArchs.assign(cudaArch.begin(), cudaArch.end());
    t.weightType = weightType;
    t.cudaKvCache = cudaKvCache;
    return t;
  }
};
} // namespace

void tbc::registerTargetPipelines() {
  for (const auto &b : backends()) {
    const TargetBackend *backend = b.get();
    for (const TargetStage &stage : backend->stages(TargetOptions{})) {
      std::string stageName = stage.name;
      mlir::registerPassPipeline(
          targetPipelineName(*backend, stage),
          "tbc compile --target " + backend->name().str() + " --emit " + stageName + ": " +
              stage.description,
          [backend, stageName](mlir::OpPassManager &pm, llvm::StringRef optionsText,
                               llvm::function_ref<mlir::LogicalResult(const llvm::Twine &)>
                                   errorHandler) -> mlir::LogicalResult {
            TargetPipelineOptions options;
            if (failed(options.parseFromString(optionsText)))
              return mlir::failure();
            TargetOptions target = options.toTargetOptions();
            if (target.weightType.empty())
              target.weightType = backend->defaultDtype().str();
            if (std::string why = backend->checkDtype(target.weightType); !why.empty())
              return errorHandler(why);
            if (std::string why = backend->checkOptions(target); !why.empty())
              return errorHandler(why);
            // Built by the same function `tbc compile` runs: one definition.
            for (const TargetStage &s : backend->stages(target))
              if (s.name == stageName)
                return s.build(pm);
            return errorHandler("no stage " + stageName);
          },
          [](llvm::function_ref<void(const mlir::detail::PassOptions &)> handler) {
            handler(TargetPipelineOptions());
          });
    }
  }
}

llvm::StringRef tbc::kernelRole(mlir::Operation *op) {
  if (llvm::isa<EmbeddingOp>(op))
    return "embedding";
  if (llvm::isa<ProjectionOpInterface>(op))
    return "projection";
  if (llvm::isa<AttentionOp>(op))
    return "attention";
  if (llvm::isa<NormOpInterface, AddNormOp, NormAddOp>(op))
    return "norm";
  return "pointwise";
}
