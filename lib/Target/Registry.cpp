//===- Registry.cpp - the code-generation targets, by name ----------------===//

#include "tbc/Target/TargetBackend.h"

#include "tbc/Dialect/TbcDialect.h"

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

llvm::StringRef tbc::kernelRole(mlir::Operation *op) {
  if (llvm::isa<EmbeddingOp>(op))
    return "embedding";
  if (llvm::isa<LinearOp, FusedLinearOp>(op))
    return "projection";
  if (llvm::isa<AttentionOp>(op))
    return "attention";
  if (llvm::isa<RMSNormOp, LayerNormOp, AddNormOp>(op))
    return "norm";
  return "pointwise";
}
