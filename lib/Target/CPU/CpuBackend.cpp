//===- CpuBackend.cpp - the CPU target: kernels -> a host shared object ---===//

#include "tbc/Conversion/TbcToCPU/KernelABI.h"
#include "tbc/Target/HostCodegen.h"
#include "tbc/Target/TargetBackend.h"

using namespace mlir;
using namespace tbc;

namespace {
class CpuBackend final : public TargetBackend {
public:
  StringRef name() const override { return "cpu"; }

  std::string checkDtype(StringRef dtype) const override {
    if (dtype == "f32" || dtype == "bf16")
      return "";
    return "the CPU backend stores weights as f32 or bf16 (--dtype f32|bf16; "
           "activations are f32): f16 weights are not supported yet";
  }

  std::vector<TargetStage> stages(const TargetOptions &options) const override {
    return {
        {"linalg", "linalg/scf/vector on memrefs (--tbc-lower-to-cpu)",
         [weightType = options.weightType](OpPassManager &pm) {
           buildLinalgPipeline(pm, weightType);
           return success();
         }},
        {"llvm", "the LLVM dialect", buildLLVMPipeline},
    };
  }

  std::optional<PackedOperand> packedOperand(Operation *op,
                                             const TargetOptions &options) const override {
    std::optional<unsigned> p = tbc::packedOperand(op);
    if (!p)
      return std::nullopt;
    bool inOut = packedOperandInOut(op);
    auto shape = cast<ShapedType>(op->getOperand(*p).getType()).getShape();
    return PackedOperand{*p, inOut, packedWeightShape(shape, inOut), options.weightType};
  }

  std::optional<manifest::WorkRange> workRange(func::FuncOp kernel) const override {
    return tbc::workRange(kernel);
  }

  std::string symbol(func::FuncOp kernel) const override {
    return (kernel.getSymName() + "_packed").str();
  }

  FailureOr<std::vector<rt::CodeBlob>> serialize(ModuleOp lowered,
                                                 std::string &error) const override {
    FailureOr<std::string> so = emitHostSharedObject(lowered, error);
    if (failed(so))
      return failure();
    return std::vector<rt::CodeBlob>{{"host.so", *so}, {"host.cpu", hostCpuRequirements()}};
  }
};
} // namespace

std::unique_ptr<TargetBackend> tbc::createCpuBackend() {
  return std::make_unique<CpuBackend>();
}
