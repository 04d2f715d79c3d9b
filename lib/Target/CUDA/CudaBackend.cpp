//===- CudaBackend.cpp - the CUDA target: kernels -> PTX through NVPTX ----===//
//
// Outlined kernels -> gpu.func (`--tbc-lower-to-gpu`) -> NVVM (upstream
// `convert-gpu-to-nvvm`, one `nvvm-attach-target` per architecture) -> PTX
// (`--tbc-gpu-module-to-binary`: LLVM's NVPTX backend in-process, one thread
// per architecture, with libdevice linked for exp/erf/tanh/sin/cos). The
// module carries one PTX blob per architecture; the runtime's CUDA executor
// JITs the one for its GPU.
//
//===----------------------------------------------------------------------===//

#include "tbc/Conversion/TbcToCUDA/KernelABI.h"
#include "tbc/Target/TargetBackend.h"
#include "tbc/Conversion/Passes.h"
#include "tbc/Support/HalfFloats.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"

#include <cstdlib>

using namespace mlir;
using namespace tbc;

namespace {

/// The pipeline from gpu.func kernels to NVVM, for `archs`.
std::string nvvmPipeline(const std::vector<std::string> &archs) {
  std::string p;
  for (const std::string &arch : archs)
    // +ptx80: CUDA 12.0's PTX ISA, understood by every driver that runs
    // sm_90; LLVM's default (ptx60) cannot express sm_90 at all.
    p += "nvvm-attach-target{chip=" + arch + " features=+ptx80 O=3},";
  // Every pass that works a function at a time is nested on the functions,
  // which the pass manager then runs on the context's threads; only the
  // conversion of gpu.func to llvm.func needs the whole module.
  // math-sincos-fusion: RoPE takes the cosine and the sine of one angle,
  // and libdevice's __nv_sincosf reduces it once for both, where
  // __nv_cosf and __nv_sinf each inline their own reduction (~240
  // instructions with its slow path) for LLVM to optimise and generate.
  // convert-nvvm-to-llvm: NVVM ops without an intrinsic (wgmma.mma_async)
  // become their inline PTX.
  return p + "gpu.module(gpu.func(math-sincos-fusion,convert-vector-to-scf,convert-scf-to-cf,"
             "expand-strided-metadata,lower-affine),convert-gpu-to-nvvm,convert-nvvm-to-llvm,"
             "llvm.func(convert-vector-to-llvm,canonicalize,cse),reconcile-unrealized-casts)";
}

/// The prefill GEMM's shape the options ask for (cuda::TiledGemm): on
/// wgmma where every architecture is sm_90a, the one that has it (PTX for
/// sm_90a runs on sm_90 GPUs alone, so a portable module keeps mma.sync).
cuda::TiledGemm tiledGemm(const TargetOptions &options) {
  bool wgmma = !options.cudaArchs.empty() &&
               llvm::all_of(options.cudaArchs, [](const std::string &a) { return a == "sm_90a"; });
  return {options.cudaGemmStages, options.cudaGemmWarps, wgmma, options.cudaGemmCols,
          options.cudaGemmK};
}

cuda::FlashTile flashTile(const TargetOptions &options) {
  return {options.cudaFlashKeys, options.cudaFlashRows, options.cudaFlashPasses,
          options.cudaFlashWgmma, options.cudaFlashOverlap};
}

/// Kernel groups compiled side by side (each optimised once for every
/// architecture). Fixed, not the host's core count, so that a module's PTX
/// is the same on every machine.
constexpr unsigned kKernelGroups = 2;

/// The CUDA toolkit whose libdevice is linked into the kernels (exp, erf,
/// tanh, sin, cos, sqrt): $CUDA_HOME, $CUDA_PATH, or /usr/local/cuda.
/// Only its bitcode library is read; ptxas is not run.
std::string cudaToolkit() {
  for (const char *var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char *v = std::getenv(var); v && *v)
      return v;
  return "/usr/local/cuda";
}

class CudaBackend final : public TargetBackend {
public:
  StringRef name() const override { return "cuda"; }
  // bf16 weights on tensor cores, as a GPU user runs a checkpoint; f32
  // (`--dtype f32`) is the exact mode the tight checks use.
  StringRef defaultDtype() const override { return "bf16"; }
  // Every projection kernel scales its activation by an input gain as it
  // loads it; the tensor-core ones round it to 16 bits there anyway.
  bool takesNormGainOnActivation() const override { return true; }

  std::string checkOptions(const TargetOptions &options) const override {
    std::string libdevice = cudaToolkit() + "/nvvm/libdevice/libdevice.10.bc";
    if (!llvm::sys::fs::exists(libdevice))
      return "--target cuda links CUDA's libdevice, and " + libdevice +
             " does not exist: install the CUDA toolkit or set CUDA_HOME";
    if (options.cudaArchs.empty())
      return "--cuda-arch needs at least one architecture (e.g. sm_80,sm_90)";
    if (std::string why = tiledGemm(options).check(); !why.empty())
      return "--cuda-gemm-" + why;
    if (std::string why = flashTile(options).check(); !why.empty())
      return "--cuda-flash-" + why;
    if (options.cudaDecodeSplits < 0 || options.cudaDecodeSplits > cuda::kDecodeMaxSplits)
      return "--cuda-decode-splits must be 1 to " + std::to_string(cuda::kDecodeMaxSplits) +
             " (or 0: chosen by the heads), not " + std::to_string(options.cudaDecodeSplits);
    if (options.cudaFlashWgmma && !tiledGemm(options).wgmma)
      return "--cuda-flash-wgmma needs --cuda-arch sm_90a (wgmma is sm_90a's alone)";
    // wgmma reads the keys and values from the ring that cp.async fills;
    // a cache of another type is converted through registers instead.
    if (options.cudaFlashWgmma && kvCacheType(options) != options.weightType)
      return "--cuda-flash-wgmma reads the KV cache in the weights' type (--dtype " +
             options.weightType + "), not --cuda-kv-cache " + options.cudaKvCache;
    // (Without --cuda-kv-cache the cache takes --dtype, checked by checkDtype.)
    if (!options.cudaKvCache.empty() && !isStorageType(options.cudaKvCache))
      return "unknown --cuda-kv-cache '" + options.cudaKvCache + "' (f32, bf16 or f16)";
    // One pass copies whole-head tiles by cp.async into its ring; a cache of
    // another type is converted through registers, which a whole head's
    // keys and values beside its accumulators do not fit.
    if (options.cudaFlashPasses == 1 && kvCacheType(options) != options.weightType)
      return "--cuda-flash-passes 1 reads the KV cache in the weights' type (--dtype " +
             options.weightType + "), not --cuda-kv-cache " + options.cudaKvCache;
    for (const std::string &arch : options.cudaArchs) {
      StringRef a(arch);
      unsigned n = 0;
      // sm_90a: that architecture's own instructions (wgmma), the only
      // architecture-specific target the kernels know.
      bool specific = a.consume_back("a");
      if (!a.consume_front("sm_") || a.getAsInteger(10, n) || n < 75 || (specific && n != 90))
        return "unknown --cuda-arch '" + arch +
               "' (expected sm_NN with NN >= 75, e.g. sm_80 or sm_90, or sm_90a)";
      // griddepcontrol is sm_90's; an sm_80 GPU could not load the PTX.
      if (options.cudaDependentLaunch && n < 90)
        return "--cuda-pdl needs every --cuda-arch to be sm_90 or later (griddepcontrol), "
               "not " + arch + ": compile with --cuda-arch sm_90";
    }
    return "";
  }

  std::vector<TargetStage> stages(const TargetOptions &options) const override {
    std::string nvvm = nvvmPipeline(options.cudaArchs);
    return {
        {"gpu", "gpu.func kernels on memrefs (--tbc-lower-to-gpu)",
         [weightType = options.weightType, flash = options.cudaFlashAttention,
          flashShape = flashTile(options),
          tiled = tiledGemm(options), cache = kvCacheType(options),
          dependentLaunch = options.cudaDependentLaunch,
          decodeSplits = options.cudaDecodeSplits](OpPassManager &pm) {
           pm.addPass(createTbcLowerToGPU(
               TbcLowerToGPUOptions{weightType, flash, flashShape.keys, flashShape.rows,
                                    flashShape.passes, flashShape.wgmma, flashShape.overlap,
                                    tiled.stages,
                                    tiled.warps,
                                    tiled.wgmma, tiled.cols, tiled.k, cache,
                                    dependentLaunch, decodeSplits}));
           // Readable IR for --emit gpu: constants folded and shared, a
           // kernel at a time (the kernels on the context's threads).
           OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>().nest<gpu::GPUFuncOp>();
           kernels.addPass(createCanonicalizerPass());
           kernels.addPass(createCSEPass());
           return success();
         }},
        {"nvvm", "the NVVM and LLVM dialects, one target per architecture",
         [nvvm](OpPassManager &pm) { return parsePassPipeline(nvvm, pm); }},
        {"ptx", "gpu.binary with one PTX object per architecture",
         [](OpPassManager &pm) {
           // gpu-module-to-binary, the kernels in groups side by side, each
           // optimised once and generated once for sm_80 and sm_90 alike.
           // No loop strength reduction in NVPTX's code generator: it was a
           // third of code generation (SCEV over every unrolled address),
           // and without it ptxas gives most kernels fewer registers and
           // the Llama-3-8B module 20% fewer SASS instructions, the inner
           // loops of the GEMVs, GEMMs and flash attention as long or
           // shorter (bench/NOTES.md, 2026-11-27).
           pm.addPass(createTbcGpuModuleToBinary(
               {cudaToolkit(), "isa", kKernelGroups, /*loopStrengthReduction=*/false,
                /*shareCodegen=*/true}));
           return success();
         }},
    };
  }

  std::string kvCacheType(const TargetOptions &options) const override {
    return options.cudaKvCache.empty() ? options.weightType : options.cudaKvCache;
  }

  std::optional<PackedOperand> packedOperand(Operation *op,
                                             const TargetOptions &options) const override {
    // Tensor-core projections read their weight in 16 bits (a `convert` at
    // bind time); GPT-2's [in, out] weights are transposed (a `pack` with a
    // panel width of 1, in 16 bits too for tensor cores); every other weight
    // is read as the checkpoint has it.
    bool mma = cuda::usesTensorCores(op, options.weightType);
    if (!cuda::transposesWeight(op)) {
      if (!mma)
        return std::nullopt;
      return PackedOperand{1, false, {}, options.weightType};
    }
    auto shape = cast<ShapedType>(op->getOperand(1).getType()).getShape();
    return PackedOperand{1, true, {shape[1], shape[0], 1}, mma ? options.weightType : "f32"};
  }

  std::optional<manifest::WorkRange> workRange(func::FuncOp,
                                               const TargetOptions &) const override {
    return std::nullopt; // the grid covers the whole op
  }

  std::string symbol(func::FuncOp kernel) const override {
    return kernel.getSymName().str();
  }

  int64_t scratchFloats(func::FuncOp kernel, const TargetOptions &options) const override {
    return cuda::scratchFloats(&kernel.getBody().front().front(), options.cudaDecodeSplits);
  }

  int64_t stagingWidth(func::FuncOp kernel, const TargetOptions &options) const override {
    return cuda::stagingWidth(&kernel.getBody().front().front(), options.weightType);
  }

  std::vector<manifest::Launch> launches(func::FuncOp kernel,
                                         const TargetOptions &options) const override {
    std::vector<manifest::Launch> out;
    for (const cuda::Launch &l :
         cuda::launchesFor(&kernel.getBody().front().front(), options.weightType,
                           options.cudaFlashAttention, tiledGemm(options), flashTile(options),
                           options.cudaDecodeSplits))
      out.push_back({kernel.getSymName().str() + l.suffix, l.blockX, l.blockY, l.gridX,
                     l.rowsPerBlock, l.minRows, l.maxRows, l.sharedBytes,
                     options.cudaDependentLaunch});
    return out;
  }

  FailureOr<std::vector<rt::CodeBlob>> serialize(ModuleOp lowered, const TargetOptions &,
                                                 std::string &error) const override {
    std::vector<rt::CodeBlob> blobs;
    for (auto binary : lowered.getOps<gpu::BinaryOp>())
      for (Attribute a : binary.getObjects()) {
        auto object = cast<gpu::ObjectAttr>(a);
        auto target = dyn_cast<NVVM::NVVMTargetAttr>(object.getTarget());
        if (!target) {
          error = "a GPU object has no NVVM target";
          return failure();
        }
        blobs.push_back({"cuda." + target.getChip().str() + ".ptx",
                         object.getObject().getValue().str()});
      }
    if (blobs.empty()) {
      error = "the lowering produced no GPU code";
      return failure();
    }
    return blobs;
  }
};
} // namespace

std::unique_ptr<TargetBackend> tbc::createCudaBackend() {
  return std::make_unique<CudaBackend>();
}
