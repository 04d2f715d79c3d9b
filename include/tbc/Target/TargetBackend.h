//===- TargetBackend.h - what a code-generation target provides -*- C++ -*-===//
//
// The compiler is target-independent up to `--tbc-outline-kernels`. A target
// backend takes it from there: the pass pipelines from outlined kernels to
// code (each stage is an `--emit` name), the kernel ABI the module writer
// records in the manifest (which operand is read in a bind-time layout, work
// ranges, launch data), and the serialisation of the lowered module into the
// named code blobs of a .tbcm. Backends are siblings registered by name in
// lib/Target/Registry.cpp; nothing else names a target.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_TARGET_TARGETBACKEND_H
#define TBC_TARGET_TARGETBACKEND_H

#include "tbc/Support/Manifest.h"
#include "tbc/Support/ModuleFile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace tbc {

/// One stage of a backend's lowering: `tbc compile --emit <name>` stops
/// after it, and `tbc-opt --tbc-<target>-<name>` (registered by
/// registerTargetPipelines) runs the same passes on the previous stage's IR.
struct TargetStage {
  std::string name;
  std::string description;
  std::function<mlir::LogicalResult(mlir::OpPassManager &)> build;
};

/// An operand a kernel reads in a form the runtime makes at bind time: a
/// layout (the manifest's `pack` weight transform) and/or a storage type
/// (`convert`).
struct PackedOperand {
  unsigned operand;
  bool inOut = false;                  // the checkpoint's tensor is [in, out]
  llvm::SmallVector<int64_t, 3> shape; // [panels, in, panel width]; empty: as is
  std::string dtype = "f32";           // what the kernel reads: f32 or bf16
  bool kPairs = false;                 // panels hold k in pairs (the CPU's bf16 dot)
};

/// What the user asked of the target (`tbc compile` flags).
struct TargetOptions {
  /// CUDA: the GPU architectures to emit code for (sm_80, sm_90, ...).
  std::vector<std::string> cudaArchs{"sm_80", "sm_90"};
  /// How weights are stored where the backend can choose (`--dtype`):
  /// f32, or bf16 (CUDA: tensor-core projections). Activations are f32.
  std::string weightType = "f32";
  /// CUDA: prefill attention of 16-bit modules as the tensor-core flash
  /// kernel (`--cuda-attention flash`, the default) or split-KV.
  bool cudaFlashAttention = true;
  /// CUDA: positions of the flash kernel's tiles (`--cuda-flash-keys`, 32
  /// or 64; cuda::flashTileKeys).
  int64_t cudaFlashKeys = 32;
  /// CUDA: query rows of a flash block (`--cuda-flash-rows`, 64 or 128;
  /// cuda::flashBlockRows).
  int64_t cudaFlashRows = 64;
  /// CUDA: walks of the flash kernel past head dim 128
  /// (`--cuda-flash-passes`, 2 or 1; cuda::flashPassDims).
  int64_t cudaFlashPasses = 2;
  /// CUDA: the flash kernel's scores on sm_90a's wgmma
  /// (`--cuda-flash-wgmma`; cuda::flashOnWgmma).
  bool cudaFlashWgmma = false;
  /// CUDA: on wgmma, a tile's P V in flight through the next tile's
  /// softmax (`--cuda-flash-overlap`; cuda::FlashTile::overlap).
  bool cudaFlashOverlap = false;
  /// CUDA: stages of the prefill GEMM's shared-memory ring
  /// (`--cuda-gemm-stages`, 2-8; cuda::kTiledStagesDefault).
  int64_t cudaGemmStages = 4;
  /// CUDA: warps of the prefill GEMM's block (`--cuda-gemm-warps`, 4 or 8).
  int64_t cudaGemmWarps = 8;
  /// CUDA: GEMM columns of the prefill GEMM's block (`--cuda-gemm-cols`,
  /// 128, or 256 on sm_90a's wgmma).
  int64_t cudaGemmCols = 128;
  /// CUDA: the prefill GEMM's k step (`--cuda-gemm-k`, 32, or 64 on
  /// sm_90a's wgmma).
  int64_t cudaGemmK = 32;
  /// CUDA: the KV caches' element type (`--cuda-kv-cache`: f32, bf16 or
  /// f16; empty: the weights' type, as a bf16 model in transformers keeps
  /// its cache in bf16).
  std::string cudaKvCache;
  /// CUDA: programmatic dependent launch (`--cuda-pdl`; every architecture
  /// sm_90 or later): kernels wait for their predecessors in the kernel
  /// itself, and the runtime launches them before those end.
  bool cudaDependentLaunch = false;
  /// CUDA: blocks a decoding head's positions are split over
  /// (`--cuda-decode-splits`, 1-16; 0: cuda::decodeSplits chooses).
  int64_t cudaDecodeSplits = 0;
  /// CPU: the processor to generate code for (`--cpu`; host: this one) and
  /// extensions added or removed (`--cpu-features +avx2,-avx512f`).
  std::string cpu = "host";
  std::string cpuFeatures;
  /// CPU: how projections multiply bf16 weights (`--cpu-dot`): f32 (widened,
  /// f32 activations), bf16 (activations rounded to bf16, vdpbf16ps) or amx
  /// (the same, prompts' projections and attention on AMX tiles).
  std::string cpuDot = "f32";
  /// CPU: how a decode tile reads its weights, for tuning on a CPU tbc has
  /// no rule for (`--cpu-decode-streams`, `--cpu-decode-prefetch`): panels
  /// read side by side (1, 2 or 4) and bytes of software prefetch ahead of
  /// them; 0 and -1 keep the target CPU's own (CpuBackend.cpp).
  int64_t cpuDecodeStreams = 0;
  int64_t cpuDecodePrefetch = -1;
  /// CPU: how a prompt's attention runs (`--cpu-prompt-attention`): tiles
  /// (several query rows against blocks of packed keys) or rows (one query
  /// row a pass, as decoding).
  std::string cpuPromptAttention = "tiles";
};

class TargetBackend {
public:
  virtual ~TargetBackend() = default;
  virtual llvm::StringRef name() const = 0;

  /// Refuses a `--dtype` the backend cannot compile (empty: fine). The
  /// backend computes in f32; `--dtype` sets options.weightType. Both
  /// backends store f32, bf16 and f16 weights (Registry.cpp).
  virtual std::string checkDtype(llvm::StringRef dtype) const;
  /// The weight storage when `--dtype` is not given: what users of the
  /// target run (f32 on the CPU, exact; bf16 on CUDA, tensor cores).
  virtual llvm::StringRef defaultDtype() const { return "f32"; }
  /// Whether, with 16-bit weights, the projection kernels take a fused
  /// norm's gain on the activation as they load it (tbc-fuse's
  /// norm-gain-on-activation); if not, those norms stay unfused (a gain
  /// folded into a 16-bit weight would round it twice).
  virtual bool takesNormGainOnActivation() const { return false; }
  /// Refuses options the backend cannot honour (empty: fine).
  virtual std::string checkOptions(const TargetOptions &options) const { return ""; }
  /// The stages after outlining, in order.
  virtual std::vector<TargetStage> stages(const TargetOptions &options) const = 0;

  // The kernel ABI, as the module writer records it.
  /// The operand of `op` (an outlined kernel's op) read packed, if any.
  virtual std::optional<PackedOperand> packedOperand(mlir::Operation *op,
                                                     const TargetOptions &options) const = 0;
  /// The share of its work a kernel can be given (it then takes [begin, end)
  /// as a last operand), or none.
  virtual std::optional<manifest::WorkRange> workRange(mlir::func::FuncOp kernel,
                                                      const TargetOptions &options) const = 0;
  /// The element type of the KV caches the attention kernels read and
  /// append to (the manifest's kv_cache buffers): f32, bf16 or f16.
  virtual std::string kvCacheType(const TargetOptions &options) const { return "f32"; }
  /// f32 values of scratch memory a kernel takes after its caches (the
  /// session's, shared by every step; 0: none).
  virtual int64_t scratchFloats(mlir::func::FuncOp kernel, const TargetOptions &options) const {
    return 0;
  }
  /// The width K of a [T, K] array of 16-bit values of session memory a
  /// kernel takes after its scratch, T the chunk's rows (0: none).
  virtual int64_t stagingWidth(mlir::func::FuncOp kernel,
                               const TargetOptions &options) const {
    return 0;
  }
  /// The code symbol the runtime resolves for a kernel.
  virtual std::string symbol(mlir::func::FuncOp kernel) const = 0;
  /// The device functions the runtime launches for a kernel, with their
  /// geometry (none: the runtime calls `symbol`).
  virtual std::vector<manifest::Launch> launches(mlir::func::FuncOp kernel,
                                                 const TargetOptions &options) const {
    return {};
  }

  /// The code blobs of the module after the last stage.
  virtual mlir::FailureOr<std::vector<rt::CodeBlob>>
  serialize(mlir::ModuleOp lowered, const TargetOptions &options, std::string &error) const = 0;
};

/// The backends (one line each in lib/Target/Registry.cpp).
std::unique_ptr<TargetBackend> createCpuBackend();
std::unique_ptr<TargetBackend> createCudaBackend();

/// The backend registered as `name`, or nullptr.
const TargetBackend *lookupTargetBackend(llvm::StringRef name);
/// Every registered backend's name, in registration order.
std::vector<std::string> targetBackendNames();

/// The registered pass pipeline that reproduces `stage` of `backend`.
std::string targetPipelineName(const TargetBackend &backend, const TargetStage &stage);
/// Registers every backend's stages as pass pipelines
/// (`--tbc-<target>-<stage>`, with a `cuda-arch` option), so that tbc-opt
/// reproduces each `tbc compile --emit` stage from the one before it.
void registerTargetPipelines();

/// The role of an outlined kernel's op, recorded in the manifest so that the
/// runtime never infers it from a symbol name: embedding, projection,
/// attention, norm or pointwise.
llvm::StringRef kernelRole(mlir::Operation *op);

} // namespace tbc

#endif // TBC_TARGET_TARGETBACKEND_H
