//===- TbcConversion.td - lowerings out of tbc -------------*- tablegen -*-===//
//
// The target-specific passes that take outlined tbc kernels to code: one
// lowering per target (lib/Conversion/TbcTo<Target>), plus the CPU path's
// polynomial math. Declared in tbc/Conversion/Passes.h; each target's
// backend (lib/Target/<Target>) strings them into its registered pipelines.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_CONVERSION_TD
#define TBC_CONVERSION_TD

include "mlir/Pass/PassBase.td"

def TbcApproximateMath : Pass<"tbc-approximate-math"> {
  let summary = "Replace exp, tanh, erf and friends by inline polynomials (the CPU path)";
  let description = [{
    Rewrites the transcendental math ops of the kernels (`math.exp` in
    softmax and SiLU, `math.tanh` in GELU-tanh and soft-caps, `math.erf` in
    exact GELU, ...) into MLIR's polynomial approximations: arith ops that
    LLVM vectorises, instead of one libm call per element. Their error is a
    few ulp of f32; the conformance tests hold every architecture to 1e-4
    of transformers through them. Runs between `--tbc-lower-to-cpu` and
    the conversion to LLVM, on any op (the CPU pipeline nests it on each
    kernel function, so the kernels are rewritten side by side).
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect"];
}

def TbcLowerToCPU : Pass<"tbc-lower-to-cpu", "::mlir::ModuleOp"> {
  let summary = "Lower outlined tbc kernels to linalg, scf and vector on memrefs (the CPU path)";
  let description = [{
    Every `tbc.kernel` function becomes a function on memrefs in
    destination-passing style: its operands, then one buffer per result,
    then (attention) the key and value caches, then (projections and
    attention) the [begin, end) of the share of the work to do: output
    columns, or key/value heads. Activation operands may be strided views
    (splits of a fused projection). Projections read their weight packed in
    32-column panels and are register-tiled outer products (scf + vector);
    attention is vector loops that skip masked positions; norms, RoPE and
    pointwise ops are linalg generics. Functions that are not kernels (the
    schedule) are removed: the module writer has already recorded them in
    the manifest.
  }];
  let options = [
    Option<"weightType", "weight-type", "std::string", /*default=*/"\"f32\"",
           "Storage type of packed weights (projections, embedding tables): f32, or bf16 "
           "(widened to f32 in registers)">,
    Option<"vectorWidth", "vector-width", "int64_t", /*default=*/"16",
           "Floats per SIMD register of the target (16: AVX-512, 8: AVX2)">,
    Option<"panelWidth", "panel-width", "int64_t", /*default=*/"32",
           "Output columns per packed weight panel (a multiple of vector-width)">,
    Option<"tileRows", "tile-rows", "int64_t", /*default=*/"8",
           "Token rows of a projection's register tile">,
    Option<"bf16Dot", "bf16-dot", "bool", /*default=*/"false",
           "Projections multiply bf16 weights packed in k pairs by activations rounded to "
           "bf16 (x86vector.avx512.dot: vdpbf16ps, AVX512-BF16); needs weight-type=bf16 and "
           "the 16-wide tile">,
    Option<"amx", "amx", "bool", /*default=*/"false",
           "With bf16-dot: multi-row projection tiles multiply on AMX tiles (amx.tile_mulf: "
           "tdpbf16ps, 32 rows x 32 columns x 32 k a step) where the reduction is a multiple "
           "of 32; single rows stay on vdpbf16ps. An attention call of 4 queries or more "
           "(head_dim a multiple of 32, no position bias) attends on AMX tiles">,
    Option<"activationTerms", "activation-terms", "int64_t", /*default=*/"1",
           "With bf16-dot: the activations as a sum of this many bf16 terms (1, 2 or 3; "
           "3 is an f32 exactly), each multiplied in turn">,
    Option<"decodePrefetch", "decode-prefetch", "int64_t", /*default=*/"8192",
           "Bytes ahead that a single-row (decode) projection tile prefetches its weight "
           "panel into L2; 0: no software prefetch">,
    Option<"decodeStreams", "decode-streams", "int64_t", /*default=*/"1",
           "Weight panels a single-row (decode) projection tile reads side by side "
           "(1, 2 or 4): a core's share cut into that many runs, panel i of each at once">,
    Option<"promptAttentionTiles", "prompt-attention-tiles", "bool", /*default=*/"true",
           "An attention call of 4 queries or more (no position bias) attends in register "
           "tiles: 4 query rows against blocks of keys packed transposed; false: one query "
           "row a pass, as decoding does">,
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect",
                           "::mlir::x86vector::X86VectorDialect", "::mlir::amx::AMXDialect"];
}

def TbcLowerToGPU : Pass<"tbc-lower-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Lower outlined tbc kernels to gpu.func kernels (the CUDA path)";
  let description = [{
    Every `tbc.kernel` function becomes one or more `gpu.func` kernels in a
    `gpu.module @tbc_kernels`, with the geometry of TbcToCUDA/KernelABI.h: the
    kernel's operands, results and (attention) key/value caches as memrefs,
    then the chunk's row count and the number of positions cached before it.
    Pointwise ops run a thread per element; norms a warp per row; projections
    a warp per output column and 8 token rows with the norm prologue and the
    GLU/activation/bias/soft-cap epilogue fused; attention a warp per query
    row and head with an online softmax over the cache (attention also gets
    an `_append` step, launched first, that writes the chunk into the caches).
    Functions that are not kernels (the schedule) are removed: the module
    writer has already recorded them in the manifest.

    With `weight-type=bf16`, projections whose input width is a multiple of
    16 (and whose weight is [out, in]) read a bf16 weight and run on tensor
    cores instead: a warp computes 16 token rows x 8 output columns with
    `nvvm.mma.sync` m16n8k16 (bf16 operands, f32 accumulation), the
    activations rounded to bf16 as they are loaded; the norm statistic and
    the epilogue are those of the f32 kernel, in f32.
  }];
  let options = [
    Option<"weightType", "weight-type", "std::string", /*default=*/"\"f32\"",
           "Storage type of projection weights: f32 (FMA kernels) or bf16 (tensor cores)">,
    Option<"flashAttention", "flash-attention", "bool", /*default=*/"true",
           "With 16-bit weights, run prefill attention as the tensor-core flash kernel "
           "(false: the split-KV kernel everywhere)">,
    Option<"flashKeys", "flash-keys", "int64_t", /*default=*/"32",
           "Positions of the flash kernel's key and value tiles: 32, or 64 (head dims "
           "up to 128; past that 32)">,
    Option<"flashRows", "flash-rows", "int64_t", /*default=*/"64",
           "Query rows of a flash block: 64 (16 a warp), or 128 (two 16-row MMA tiles a "
           "warp, queries staged in shared memory; head dims up to 128, past that 64)">,
    Option<"flashPasses", "flash-passes", "int64_t", /*default=*/"2",
           "Walks of the flash kernel past head dim 128: 2 (one per half of the output dims, "
           "the scores computed twice), or 1 (queries staged in shared memory, the whole head's "
           "accumulators in registers, keys and values in a ring of 2 stages; needs caches of "
           "the weights' type)">,
    Option<"flashWgmma", "flash-wgmma", "bool", /*default=*/"false",
           "The flash kernel's products on sm_90a's wgmma.mma_async (a warpgroup for each 64 rows of "
           "the block: one, or two with flash-rows=128; head dims 64 and 128, tiles of 32 "
           "positions, or 64 with flash-rows=128; caches of the weights' type), the next tile's "
           "scores in flight behind a tile's softmax; the module then runs on sm_90a alone">,
    Option<"flashOverlap", "flash-overlap", "bool", /*default=*/"false",
           "With flash-wgmma: each tile's P V stays in flight through the next tile's softmax "
           "beside that tile's scores (FlashAttention-3's order within a warpgroup), the ring "
           "of 5 stages then holding the tile P V reads as well">,
    Option<"tiledStages", "tiled-stages", "int64_t", /*default=*/"4",
           "Stages of the block-tiled projection's ring of shared memory (2-8, "
           "16 KB each at 128 columns and k 32; at most 227 KB in all): stages - 1 "
           "steps of its operands in flight by cp.async">,
    Option<"tiledWarps", "tiled-warps", "int64_t", /*default=*/"8",
           "Warps of the block-tiled projection: 8 (a 64x32 tile each) or 4 (64x64)">,
    Option<"tiledWgmma", "tiled-wgmma", "bool", /*default=*/"false",
           "The block-tiled projection on sm_90a's wgmma.mma_async (8 warps: two "
           "warpgroups of 64x128), its operands read from the ring by descriptor; "
           "the module then runs on sm_90a (H100/H200) alone">,
    Option<"tiledCols", "tiled-cols", "int64_t", /*default=*/"128",
           "GEMM columns of a block of the block-tiled projection: 128, or 256 with "
           "tiled-wgmma (each warpgroup 64x256, one block an SM)">,
    Option<"tiledK", "tiled-k", "int64_t", /*default=*/"32",
           "k step of the block-tiled projection: 32, or 64 with tiled-wgmma (rows of "
           "128 bytes in wgmma's 128-byte swizzle; inputs not a multiple of 64 walk 32)">,
    Option<"kvCacheType", "kv-cache-type", "std::string", /*default=*/"\"f32\"",
           "Element type of the device KV caches: f32, or bf16/f16 (keys and values "
           "rounded as they are appended, widened as attention reads them)">,
    Option<"dependentLaunch", "dependent-launch", "bool", /*default=*/"false",
           "Programmatic dependent launch (sm_90 and later): every kernel waits for the "
           "kernels before it (griddepcontrol.wait) before it touches memory other than its "
           "weights, then lets the next one launch (griddepcontrol.launch_dependents); a "
           "decode GEMV first prefetches the start of its weight rows into L2, so that its "
           "weight stream starts while the kernel before it finishes">,
    Option<"decodeSplits", "decode-splits", "int64_t", /*default=*/"0",
           "Blocks a decoding head's positions are split over, 1 to 16 (0: enough for "
           "about 256 blocks in all, at most 16): fewer for a GPU of fewer SMs or short "
           "caches">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect",
                           "::mlir::NVVM::NVVMDialect", "::mlir::LLVM::LLVMDialect"];
}

def TbcGpuModuleToBinary : Pass<"tbc-gpu-module-to-binary", "::mlir::ModuleOp"> {
  let summary = "Serialize each gpu.module for each of its targets, the targets in parallel";
  let description = [{
    Does what upstream `gpu-module-to-binary` does (each `gpu.module` becomes
    a `gpu.binary` holding one object per target attribute, in the targets'
    order), but serializes the (module, target) pairs on the context's
    threads. Translating a module to LLVM IR edits it, so every pair works on
    its own clone; LLVM's optimiser and the NVPTX code generator run in one
    LLVM context per pair. With two architectures (sm_80 and sm_90, the CUDA
    default) this halves the longest stage of a CUDA compile on two cores.

    With `kernel-groups=N` (N >= 1; the CUDA backend's pipeline uses it) a
    module's kernels are shared out, largest first, into N groups compiled
    side by side; each group is translated, linked with libdevice and
    optimised once, for the first target, and the optimised IR is then
    generated as PTX for every target. A target's PTX is its groups' PTX
    joined into one text (the groups' private functions and globals renamed
    apart), so a module still holds one PTX per target, and the result does
    not depend on the number of threads. Only `format=isa`, and only NVVM
    targets that differ in chip and features alone.

    With `share-codegen` as well (the CUDA backend's pipeline sets it), code
    is generated once for the lowest of the plain `sm_N` targets that share
    their features (the PTX ISA), and the others take that PTX with their own
    `.target` line and a comment at its top that says for which chip its
    instructions were selected. This is what `nvcc -gencode
    arch=compute_80,code=sm_90` ships, and ptxas assembles it for sm_90 as
    for sm_80. NVPTX selects the same instructions for sm_80 and sm_90 in
    every example model (`cuda-shared-codegen.test` compares the opcodes);
    the code generator was a third of the compile. Architecture-specific
    chips (`sm_90a`) always generate their own.
  }];
  let options = [
    Option<"toolkitPath", "toolkit", "std::string", /*default=*/"\"\"",
           "The CUDA toolkit whose libdevice is linked">,
    Option<"format", "format", "std::string", /*default=*/"\"isa\"",
           "What each object holds, as gpu-module-to-binary's format: isa (PTX), "
           "bin, fatbin or llvm">,
    Option<"kernelGroups", "kernel-groups", "unsigned", /*default=*/"0",
           "Compile each module's kernels in this many groups side by side, "
           "optimising each group once for all targets (0: every target "
           "serialized on its own, as upstream does)">,
    Option<"loopStrengthReduction", "loop-strength-reduction", "bool", /*default=*/"true",
           "With kernel-groups: run LLVM's loop strength reduction in the NVPTX "
           "code generator (false, as tbc compile sets it: a third less "
           "code-generation time, fewer registers in most kernels and fewer "
           "instructions; true as upstream, for experiments)">,
    Option<"shareCodegen", "share-codegen", "bool", /*default=*/"false",
           "With kernel-groups: generate code once for plain sm_N targets of "
           "the same features (the same PTX ISA), for the lowest of them, and "
           "give the others that PTX with their own .target line (a comment "
           "at its top says so), as nvcc's -gencode arch=compute_80,code=sm_90 "
           "does; architecture-specific chips (sm_90a) always get their own">,
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

#endif // TBC_CONVERSION_TD
