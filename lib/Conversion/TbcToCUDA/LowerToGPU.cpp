//===- LowerToGPU.cpp - outlined tbc kernels -> gpu.func (the CUDA path) --===//
//
// Every `tbc.kernel` function becomes the gpu.funcs of TbcToCUDA/KernelABI.h in
// one `gpu.module @tbc_kernels`, written directly with gpu/scf/arith/math/
// memref/vector ops (hand-shaped kernels, not a generic tiling):
//
// * pointwise ops (add, glu, activation, soft-cap, embedding gather, RoPE,
//   sinusoidal positions, grouped split, the KV-cache append): one thread per
//   element of a row, one block row per token row;
// * norms (RMS with groups, Layer, add+norm): one warp per row (or group),
//   two passes over it in registers' reach, butterfly shuffles for the sums;
// * projections (plain and fused): one warp per output column and
//   kProjectionRows token rows (one when decoding a token: a GEMV), so each
//   weight row is read once per 8 tokens with 128-bit loads; with 16-bit
//   weights, chunks of 16 rows and up on tensor cores instead (a warp per
//   16 x 8 tile; from 64 rows, a block per 128 x 128 tile staged in shared
//   memory, on wgmma in sm_90a modules). The norm
//   statistic is the prologue (for the 128 x 128 tiles, a staging launch's
//   before them), bias / GLU / activation / soft-cap the epilogue, exactly as
//   `tbc.fused_linear` says;
// * attention: in 16-bit modules, a flash kernel on tensor cores for
//   chunks of 16 rows or more (FlashAttention.cpp); otherwise (decoding, f32
//   modules) one block per (query row, head), its warps each an online
//   softmax over a share of the visible cached positions (no score matrix
//   anywhere), head dims split across the lanes.
//
// Arithmetic is f32. The transcendental math ops become libdevice calls in
// `convert-gpu-to-nvvm` (linked by `gpu-module-to-binary`).
//
//===----------------------------------------------------------------------===//

#include "tbc/Analysis/RowAlignment.h"
#include "tbc/Conversion/TbcToCUDA/KernelABI.h"
#include "tbc/Conversion/Passes.h"
#include "tbc/Support/HalfFloats.h"

#include "../Common/KernelMath.h"
#include "FlashAttention.h"
#include "GpuBuilder.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <limits>
#include <tuple>

using namespace mlir;

namespace tbc {
#define GEN_PASS_DEF_TBCLOWERTOGPU
#include "tbc/TbcConversion.h.inc"
} // namespace tbc

using namespace tbc;
using cuda::GpuBuilder;
using cuda::MmaHalf;

//===----------------------------------------------------------------------===//
// Launch geometry (TbcToCUDA/KernelABI.h)
//===----------------------------------------------------------------------===//

static int64_t lastDim(Type t) { return cast<ShapedType>(t).getShape().back(); }
static int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool cuda::transposesWeight(Operation *op) {
  auto p = dyn_cast<ProjectionOpInterface>(op);
  return p && p.getWeightInOut();
}

bool cuda::usesTensorCores(Operation *op, StringRef weightType) {
  auto p = dyn_cast<ProjectionOpInterface>(op);
  if (!p || (weightType != "bf16" && weightType != "f16"))
    return false;
  // A NeoX RoPE epilogue pairs columns rotary_dim / 2 apart: on tensor cores
  // a warp's tile of kMmaCols columns must be all first-of-pair, all second
  // or all pass-through (see ropeTiles), which needs both widths to be
  // multiples of the tile (every released head_dim and rotary_dim is).
  if (auto f = dyn_cast<FusedLinearOp>(op); f && f.getRope()) {
    RotaryEpilogueAttr rope = *f.getRope();
    if (rope.getStyle() == RopeStyle::neox &&
        (rope.getHeadDim() % kMmaCols != 0 || (rope.getRotaryDim() / 2) % kMmaCols != 0))
      return false;
  }
  return lastDim(p.getInput().getType()) % kMmaK == 0;
}

bool cuda::usesTiledProjection(Operation *op, StringRef weightType) {
  if (!usesTensorCores(op, weightType))
    return false;
  return lastDim(cast<ProjectionOpInterface>(op).getInput().getType()) % kTiledK == 0;
}

bool cuda::usesFlashAttention(Operation *op, StringRef weightType, bool allowed) {
  auto a = dyn_cast<AttentionOp>(op);
  return allowed && a && (weightType == "bf16" || weightType == "f16") &&
         a.getHeadDim() % kMmaK == 0 && a.getHeadDim() <= kFlashMaxHeadDim;
}

int64_t cuda::splitKvHeadsPerBlock(int64_t heads, int64_t kvHeads, int64_t headDim) {
  int64_t group = heads / kvHeads, dims = ceilDiv(headDim, 32);
  for (int64_t n = group; n > 1; --n)
    if (group % n == 0 && dims * (n + 2 * kSplitKvPositions) + 2 * n <= kSplitKvLaneRegisters)
      return n;
  return 1;
}
static int64_t headsPerBlock(AttentionOp a) {
  return cuda::splitKvHeadsPerBlock(a.getNumHeads(), a.getNumKvHeads(), a.getHeadDim());
}

int64_t cuda::decodeSplits(int64_t headBlocks) {
  return std::clamp<int64_t>(ceilDiv(kDecodeBlocks, headBlocks), 1, kDecodeMaxSplits);
}
/// The slices of a decoding row's positions, each a block of
/// headsPerBlock(a) heads.
static int64_t decodeSlices(AttentionOp a) {
  return cuda::decodeSplits(a.getNumHeads() / headsPerBlock(a));
}

/// Decoding attention's scratch array: first a counter per (row t, head h)
/// (at t H + h: the slices that have written their partials), kDecodeMaxRows
/// x the most heads of any attention of the module, so that no kernel's
/// partials overwrite another's counters; then per (row, head) its slices'
/// partials (max, sum, D values each), padded to a multiple of 128 bytes so
/// that no cache line holds two (row, head)s' partials (the merging block
/// reads its (row, head)'s in L2: combineSlices).
static int64_t decodePartialsOffset(AttentionOp a) {
  int64_t heads = a.getNumHeads();
  if (auto module = a->getParentOfType<ModuleOp>())
    module.walk([&](AttentionOp other) { heads = std::max<int64_t>(heads, other.getNumHeads()); });
  return llvm::alignTo(cuda::kDecodeMaxRows * heads, 32);
}
static int64_t decodePartialsStride(AttentionOp a) {
  return llvm::alignTo(decodeSlices(a) * (2 + a.getHeadDim()), 32);
}

int64_t cuda::scratchFloats(Operation *op) {
  auto a = dyn_cast<AttentionOp>(op);
  if (!a)
    return 0;
  return decodePartialsOffset(a) + kDecodeMaxRows * a.getNumHeads() * decodePartialsStride(a);
}

int64_t cuda::stagingWidth(Operation *op, StringRef weightType) {
  if (!usesTiledProjection(op, weightType))
    return 0;
  return lastDim(cast<ProjectionOpInterface>(op).getInput().getType()) + kStagingStatsSlots;
}

std::string cuda::TiledGemm::check() const {
  if (stages < kTiledStagesMin || stages > kTiledStagesMax)
    return "stages must be from " + std::to_string(kTiledStagesMin) + " to " +
           std::to_string(kTiledStagesMax) + ", not " + std::to_string(stages);
  if (warps != 4 && warps != 8)
    return "warps must be 4 or 8, not " + std::to_string(warps);
  if (wgmma && warps != 8)
    return "warps must be 8 for sm_90a's wgmma GEMM (two warpgroups), not " +
           std::to_string(warps);
  // A shape with a wider value for wgmma alone: "" if `value` is one it takes.
  auto wgmmaWider = [&](const char *name, int64_t value, int64_t plain, int64_t wide) {
    if (value == plain || (wgmma && value == wide))
      return std::string();
    return std::string(name) + " must be " + std::to_string(plain) +
           (wgmma ? " or " + std::to_string(wide)
                  : " (" + std::to_string(wide) + " needs sm_90a's wgmma)") +
           ", not " + std::to_string(value);
  };
  if (std::string why = wgmmaWider("cols", cols, kTiledCols, kTiledWideCols); !why.empty())
    return why;
  if (std::string why = wgmmaWider("k", k, kTiledK, kTiledWideK); !why.empty())
    return why;
  if (sharedBytes(k) > limits::kMaxDynamicSharedBytes)
    return "stages must be at most " +
           std::to_string((limits::kMaxDynamicSharedBytes - ringAlign(k)) / stageBytes(k)) +
           " with a k step of " + std::to_string(k) + " and " + std::to_string(cols) +
           " columns (" + std::to_string(stageBytes(k) / 1024) + " KB a stage), not " +
           std::to_string(stages);
  return "";
}

std::string cuda::FlashTile::check() const {
  if (keys != kFlashKeys && keys != kFlashWideKeys)
    return "keys must be " + std::to_string(kFlashKeys) + " or " +
           std::to_string(kFlashWideKeys) + ", not " + std::to_string(keys);
  if (rows != kFlashRows && rows != kFlashTallRows)
    return "rows must be " + std::to_string(kFlashRows) + " or " +
           std::to_string(kFlashTallRows) + ", not " + std::to_string(rows);
  if (passes != 1 && passes != 2)
    return "passes must be 1 or 2, not " + std::to_string(passes);
  // Two m-tiles' scores of 64 positions beside their output accumulators
  // spilled ~200 bytes in Llama's tile loop (head dim 128).
  if (!wgmma && rows == kFlashTallRows && keys != kFlashKeys)
    return "rows " + std::to_string(kFlashTallRows) + " takes tiles of " +
           std::to_string(kFlashKeys) + " keys (with " + std::to_string(keys) +
           " its scores and accumulators spill)";
  // The pipelined walk holds two tiles' scores: at 64 positions Llama's
  // kernel spilled 52 bytes at 255 registers in blocks of one warpgroup,
  // none in blocks of two (225 registers, 245 with overlap's P as well).
  if (wgmma && keys != kFlashKeys && rows != kFlashTallRows)
    return "wgmma takes tiles of " + std::to_string(keys) + " keys only in blocks of " +
           std::to_string(kFlashTallRows) + " rows (the pipelined walk holds two tiles' scores; " +
           "a warpgroup's registers in blocks of " + std::to_string(kFlashRows) + " spill)";
  if (overlap && !wgmma)
    return "overlap orders wgmma's products: it needs wgmma too";
  return "";
}

SmallVector<cuda::Launch, 4> cuda::launchesFor(Operation *op, StringRef weightType,
                                               bool flashAttention, TiledGemm gemm,
                                               FlashTile flash) {
  auto pointwise = [](int64_t width, Body body = Body::op) {
    return Launch{"", kPointwiseBlock, 1, ceilDiv(width, kPointwiseBlock), 1, body};
  };
  if (auto a = dyn_cast<AttentionOp>(op)) {
    int64_t H = a.getNumHeads(), headBlocks = H / headsPerBlock(a);
    // Decoding chunks append their keys and values in the slices' kernel
    // (splitKvAttention): the append launch serves longer chunks only.
    Launch append = pointwise(a.getNumKvHeads() * a.getHeadDim(), Body::cacheAppend);
    append.minRows = kDecodeMaxRows + 1;
    Launch slices{"_attend_decode", 32, kSplitKvWarps, headBlocks * decodeSlices(a), 1,
                  Body::decodeSlice, 1, kDecodeMaxRows};
    // Chunks past kDecodeMaxRows: the flash kernel (which needs
    // kFlashMinRows, the same bound) or the one-block-per-row split-KV.
    static_assert(kDecodeMaxRows + 1 == kFlashMinRows);
    if (usesFlashAttention(a, weightType, flashAttention))
      return {append, slices,
              Launch{"_attend_flash", 32, flashBlockWarps(a.getHeadDim(), flash), H,
                     flashBlockRows(a.getHeadDim(), flash), Body::flash, kFlashMinRows, 0,
                     flashSharedBytes(a.getHeadDim(), flash)}};
    return {append, slices,
            Launch{"_attend", 32, kSplitKvWarps, headBlocks, 1, Body::splitKv,
                   kDecodeMaxRows + 1}};
  }
  if (auto p = dyn_cast<ProjectionOpInterface>(op)) {
    // Decoding one token: a GEMV; a few rows: kProjectionRows per weight
    // read; with 16-bit weights, chunks of kMmaRows and up on tensor cores.
    int64_t fmaGrid = ceilDiv(p.getResultWidth(), kWarpsPerBlock);
    bool mma = usesTensorCores(op, weightType);
    SmallVector<Launch, 4> variants{
        Launch{"_row1", 32, kWarpsPerBlock, fmaGrid, 1, Body::fma, 1, 1},
        Launch{mma ? "_rows8" : "", 32, kWarpsPerBlock, fmaGrid, kProjectionRows, Body::fma, 2,
               mma ? kMmaRows - 1 : 0}};
    if (!mma)
      return variants;
    bool tiled = usesTiledProjection(op, weightType);
    variants.push_back(Launch{"", 32, kMmaWarps,
                              ceilDiv(ceilDiv(p.getResultWidth(), kMmaCols), kMmaWarps),
                              kMmaRows, Body::mma, kMmaRows, tiled ? kTiledMinRows - 1 : 0});
    if (tiled) {
      // A GLU's GEMM columns are its gate and up columns (tiledProjection).
      auto f = dyn_cast<FusedLinearOp>(op);
      int64_t columns = p.getResultWidth() * (f && f.getGlu() ? 2 : 1);
      // Its activations first, rounded to 16 bits with their norm
      // statistics beside them (KernelABI.h).
      variants.push_back(Launch{"_tiles_stage", 32, kWarpsPerBlock, 1, kWarpsPerBlock,
                                Body::tiledStage, kTiledMinRows});
      variants.push_back(Launch{"_tiles", 32, gemm.warps, ceilDiv(columns, gemm.cols),
                                kTiledRows, Body::tiledMma, kTiledMinRows, 0,
                                gemm.sharedBytes(gemm.kStep(lastDim(p.getInput().getType())))});
    }
    return variants;
  }
  if (auto n = dyn_cast<NormOpInterface>(op))
    return {Launch{"", 32, kWarpsPerBlock, ceilDiv(n.getNumGroups(), kWarpsPerBlock), 1}};
  if (isa<AddNormOp>(op))
    return {Launch{"", 32, kWarpsPerBlock, 1, 1}};
  if (auto s = dyn_cast<SplitOp>(op))
    return {pointwise(lastDim(s.getInput().getType()))};
  return {pointwise(lastDim(op->getResult(0).getType()))};
}

/// Whether the GEMV `launch` with the RoPE epilogue `rope` (null: none)
/// computes a RoPE pair's two columns in
/// two warps of one block, which swap their results through shared memory
/// (Emitter::pairedRopeColumn): GPT-J pairs are adjacent columns already;
/// NeoX pairs, half a head apart, are brought together where every head
/// dim rotates and half a head is a multiple of 4 columns. Elsewhere (NeoX
/// with partial rotary, or several rows) one warp reads both weight rows
/// and its partner's warp idles.
static bool pairsRopeWarps(RotaryEpilogueAttr rope, const cuda::Launch &launch) {
  if (!rope || launch.body != cuda::Body::fma || launch.maxRows != 1)
    return false;
  return rope.getStyle() == RopeStyle::gptj ||
         (rope.getRotaryDim() == rope.getHeadDim() && rope.getRotaryDim() % 8 == 0);
}

/// The blocks an SM must be able to hold of `launch`'s kernel for `op`
/// (`nvvm.minctasm`, which bounds the registers ptxas may give a thread), or
/// 0 where ptxas's own choice spills nowhere.
static int64_t minBlocksPerSM(Operation *op, const cuda::Launch &launch, bool halfWeights,
                              const cuda::TiledGemm &tiled) {
  using cuda::Body;
  // Attention's blocks are sized to fill an SM's warps on their own
  // (16 warps a split-KV block; the flash kernel's registers). Without a
  // minimum of one block per SM, ptxas caps registers for two or four
  // blocks and spills (4 bytes at MPT-7B's ALiBi head dim 128, and in a
  // local/global soft-capped flash kernel on sm_90).
  if (launch.body == Body::splitKv || launch.body == Body::decodeSlice ||
      launch.body == Body::flash)
    return 1;
  // The block-tiled projection likewise with 8 warps (ptxas took 128
  // registers for the GLU variant and spilled once its activations came
  // 128 bits at a time; capped at 128 for two blocks, the ring's kernels
  // spilled 32-140 bytes). Its 4-warp shape is meant to run two blocks an
  // SM (TiledGemm): 255 registers still fit two of 128 threads. On wgmma
  // two blocks too, so that one block's barrier and wait overlap the
  // other's multiplies (ptxas took 126-254 registers unasked: one block).
  // At the 128 that leaves, the k walk holds no fragments (wgmma reads the
  // ring) and spills nothing; the row tile's setup and the epilogue spill
  // 20-540 bytes (Llama-3-8B, Gemma-2-9B; the most with RoPE), once a tile.
  // At 256 columns a thread holds 128 accumulators: one block, whose wgmma
  // batch in flight keeps the tensor cores busy through its barriers.
  if (launch.body == Body::tiledMma)
    return launch.blockY == 4 || (tiled.wgmma && tiled.cols == cuda::kTiledCols) ? 2 : 1;
  // The GEMV on 16-bit weights without a norm, GLU or RoPE (an o or down
  // projection, a plain linear): 4 blocks, 32 warps an SM, so that a grid
  // of a hidden size's columns (4096 warps at 8B shapes) runs in one wave
  // of 132 SMs. At the 72 registers ptxas took unasked, 3 blocks fitted:
  // a second wave of 928 warps, each as long a chain of loads as the first
  // wave's, with the rest of the GPU idle (the H200's o projection read
  // 2.3 TB/s of weights, the down projection 3 TB/s).
  auto fused = dyn_cast<FusedLinearOp>(op);
  if (launch.body == Body::fma && launch.maxRows == 1 && halfWeights &&
      (!fused || (!fused.getNorm() && !fused.getGlu() && !fused.getRope())))
    return 4;
  if (!fused)
    return 0;
  bool layerNorm = fused.getNorm() == NormKind::layer, rope = bool(fused.getRope());
  // A tensor-core projection's block is 4 warps: ptxas aims at 1024
  // threads an SM and so caps it at 64 registers, which a LayerNorm
  // prologue (a mean per row besides the rstd, and the correction)
  // with a GPT-J RoPE epilogue overran by 4 bytes of spill on sm_90.
  // Such kernels may have 5 blocks an SM (96 registers); the others
  // keep the 8 that ptxas picks (lifting the cap for all of them, they
  // took 110-128 registers for nothing that could be measured here).
  // 6 blocks (80 registers) left GPT-2's sm_90 GELU and residual
  // projections 4 bytes of spill once the IR was optimised once for
  // sm_80 and sm_90 together (--tbc-gpu-module-to-binary=kernel-groups).
  // A RoPE epilogue alone (its sine and cosine) needs fewer: 6 blocks,
  // 80 registers, where 64 spilled 4 bytes in the Gemma-2 fixtures'
  // QKV on sm_90.
  if (launch.body == Body::mma)
    return layerNorm ? 5 : rope ? 6 : 0;
  // The FMA projection over several rows (8 warps): ptxas gives most of
  // them 80-128 registers, but held MPT's LayerNorm + GELU one to 64
  // and spilled 16 bytes (f32, both architectures). Two blocks an SM
  // allow 128, which is what the others take unasked. With a RoPE
  // epilogue, whose 8 rows of sines and cosines take more (the parallel
  // GPT-J spec's QKV spilled 300-450 bytes at 128), it may have all the
  // registers ptxas wants (one block an SM): without LSR in the code
  // generator (CudaBackend.cpp) ptxas took 128 unasked for the
  // llama-dynamic fixture's f32 QKV and spilled 8 bytes.
  if (launch.body == Body::fma && launch.rowsPerBlock > 1)
    return rope ? 1 : layerNorm ? 2 : 0;
  // The fused GEMV on 16-bit weights (8 warps): its loads of x, 128 bits
  // where the schedule shows the rows aligned, are no longer kept apart
  // from the weight's by a run-time branch, and ptxas hoists them all:
  // held to the 48 registers it picks unasked, 10 of the examples' fused
  // GEMVs spilled 8 bytes (LayerNorm or RMSNorm, with or without RoPE);
  // with 80 (3 blocks) a RoPE one at K = 1024 still did. Two blocks, 16
  // warps an SM, each with its U steps of 128-bit loads in flight.
  if (launch.body == Body::fma && launch.maxRows == 1 && halfWeights)
    return 2;
  return 0;
}

namespace {

/// Memref types of the ABI (TbcToCUDA/KernelABI.h).
MemRefType activationType(MLIRContext *ctx, int64_t width) {
  auto layout = StridedLayoutAttr::get(ctx, ShapedType::kDynamic,
                                       {ShapedType::kDynamic, 1});
  return MemRefType::get({ShapedType::kDynamic, width}, Float32Type::get(ctx), layout);
}

Type abiType(Type t, MLIRContext *ctx) {
  auto tensor = cast<RankedTensorType>(t);
  if (tensor.getElementType().isInteger(32))
    return MemRefType::get({ShapedType::kDynamic}, tensor.getElementType());
  if (tensor.hasStaticShape())
    return MemRefType::get(tensor.getShape(), tensor.getElementType());
  return activationType(ctx, tensor.getShape().back());
}

//===----------------------------------------------------------------------===//
// Kernel bodies
//===----------------------------------------------------------------------===//

class Emitter {
public:
  Emitter(OpBuilder &b, Location loc, gpu::GPUModuleOp gpuModule, int index,
          StringRef weightType, bool flash, cuda::FlashTile flashTile, cuda::TiledGemm tiled,
          StringRef kvCacheType, const RowAlignment &alignment)
      : g{b, loc}, b(b), loc(loc), gpuModule(gpuModule), index(index),
        weightType(weightType), flash(flash), flashTile(flashTile), tiled(tiled),
        cacheType(storageElementType(b, kvCacheType)), alignment(alignment) {}

  /// Builds the gpu.funcs of `kernel` (an outlined tbc.kernel function).
  LogicalResult lower(func::FuncOp kernel) {
    Operation *op = &kernel.getBody().front().front();
    MLIRContext *ctx = b.getContext();
    // Scalar operands (an attention's window) come last, after T and past
    // (KernelABI.h).
    const unsigned nScalars = kernelScalarOperands(kernel);
    const unsigned nIn = kernel.getNumArguments() - nScalars, nOut = kernel.getNumResults();
    SmallVector<Type> args;
    for (Type t : kernel.getArgumentTypes().take_front(nIn))
      args.push_back(abiType(t, ctx));
    // The weight as the runtime stores it: 16-bit where tensor cores read
    // it, and GPT-2's [in, out] transposed at bind time to [out, in, 1].
    bool mma = cuda::usesTensorCores(op, weightType);
    Type weightElement = mma ? halfType() : b.getF32Type();
    if (cuda::transposesWeight(op)) {
      auto w = cast<ShapedType>(kernel.getArgumentTypes()[1]).getShape();
      args[1] = MemRefType::get({w[1], w[0], 1}, weightElement);
    } else if (mma) {
      args[1] = MemRefType::get(cast<ShapedType>(kernel.getArgumentTypes()[1]).getShape(),
                                weightElement);
    }
    for (Type t : kernel.getResultTypes())
      args.push_back(abiType(t, ctx));
    bool cached = kernel->hasAttr(TbcDialect::KvCacheAttrHelper::getNameStr());
    if (cached) {
      auto a = cast<AttentionOp>(op);
      auto cache = MemRefType::get({ShapedType::kDynamic, int64_t(a.getNumKvHeads() * a.getHeadDim())},
                                   cacheType);
      args.append({cache, cache});
    }
    int64_t scratchSize = cuda::scratchFloats(op);
    if (auto a = dyn_cast<AttentionOp>(op))
      partialsOffset = decodePartialsOffset(a); // a walk of the module: once a kernel
    if (scratchSize)
      args.push_back(MemRefType::get({scratchSize}, b.getF32Type()));
    int64_t stagingK = cuda::stagingWidth(op, weightType);
    if (stagingK)
      args.push_back(MemRefType::get({ShapedType::kDynamic, stagingK}, halfType()));
    args.append({b.getIndexType(), b.getIndexType()}); // T, past
    args.append(nScalars, b.getI64Type());
    for (const cuda::Launch &launch :
         cuda::launchesFor(op, weightType, flash, tiled, flashTile)) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToEnd(gpuModule.getBody());
      auto fn = gpu::GPUFuncOp::create(b, loc, (kernel.getSymName() + launch.suffix).str(),
                                       b.getFunctionType(args, {}));
      fn->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
      fn.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(
          {int32_t(launch.blockX), int32_t(launch.blockY), 1}));
      if (int64_t blocks =
              minBlocksPerSM(op, launch, cuda::usesTensorCores(op, weightType), tiled))
        fn->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(), b.getI32IntegerAttr(blocks));
      // Shared memory first: adding it appends an argument to the entry
      // block, which must not move the arguments taken below.
      workgroup = flashKeys = flashValues = flashQueries = tileA = tileB = accTile = Value();
      if (launch.body == cuda::Body::splitKv || launch.body == cuda::Body::decodeSlice)
        workgroup = fn.addWorkgroupAttribution(attentionPartsType(cast<AttentionOp>(op)), loc);
      if (auto f = dyn_cast<FusedLinearOp>(op); f && pairsRopeWarps(f.getRopeAttr(), launch))
        // a result per warp
        workgroup = fn.addWorkgroupAttribution(
            MemRefType::get({cuda::kWarpsPerBlock}, b.getF32Type(), MemRefLayoutAttrInterface{},
                            gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup)),
            loc);
      b.setInsertionPointToStart(&fn.getBody().front());
      auto workgroupSpace = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
      // Views of the launch's dynamic shared memory (launch.sharedBytes).
      auto dynamicShared = [&] {
        return gpu::DynamicSharedMemoryOp::create(
            b, loc,
            MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), MemRefLayoutAttrInterface{},
                            workgroupSpace));
      };
      auto view = [&](Value bytes, MemRefType type, Value offset) {
        return memref::ViewOp::create(b, loc, type, bytes, offset, ValueRange{});
      };
      // The offset of `bytes`' first multiple of `align` (wgmma's swizzles
      // XOR the bits of absolute shared addresses).
      auto alignedStart = [&](Value bytes, int64_t align) {
        Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, bytes);
        return g.rem(g.sub(g.idx(align), g.rem(base, align)), align);
      };
      if (launch.body == cuda::Body::flash) {
        // The ring of key tiles, the ring of value tiles, then (staged
        // queries) the query tile: flashSharedBytes. On wgmma the key
        // ring, the query tile and the value ring, from the next multiple
        // of the swizzle's period (wgmma swizzles absolute addresses).
        int64_t D = cast<AttentionOp>(op).getHeadDim();
        MemRefType keys = cuda::flashKeyTileType(ctx, halfType(), D, flashTile);
        MemRefType values = cuda::flashValueTileType(ctx, halfType(), D, flashTile);
        Value bytes = dynamicShared();
        if (cuda::flashOnWgmma(D, flashTile)) {
          MemRefType queries = cuda::flashQueryTileType(ctx, halfType(), D, flashTile);
          Value start = alignedStart(bytes, cuda::kFlashSwizzleBytes);
          assert(keys.getNumElements() * 2 % cuda::kFlashSwizzleBytes == 0 &&
                 queries.getNumElements() * 2 % cuda::kFlashSwizzleBytes == 0 &&
                 "each tile starts at a multiple of the swizzle's period");
          flashKeys = view(bytes, keys, start);
          flashQueries = view(bytes, queries, g.add(start, keys.getNumElements() * 2));
          flashValues =
              view(bytes, values,
                   g.add(start, (keys.getNumElements() + queries.getNumElements()) * 2));
        } else {
          flashKeys = view(bytes, keys, g.idx(0));
          flashValues = view(bytes, values, g.idx(keys.getNumElements() * 2));
          if (cuda::flashStagesQueries(D, flashTile))
            flashQueries =
                view(bytes, cuda::flashQueryTileType(ctx, halfType(), D, flashTile),
                     g.idx((keys.getNumElements() + values.getNumElements()) * 2));
        }
      }
      if (launch.body == cuda::Body::tiledMma) {
        // The ring of stages in dynamic shared memory (launch.sharedBytes:
        // past the 48 KB a block may have statically), the activation
        // tiles of every stage, then the weight tiles; rows unpadded
        // (tiledProjection swizzles their 16-byte chunks).
        // wgmma reads it by swizzled absolute addresses: from the next
        // multiple of the swizzle's period (TiledGemm::sharedBytes has room).
        Value bytes = dynamicShared();
        Value start = g.idx(0);
        const int64_t kStep =
            tiled.kStep(lastDim(cast<ProjectionOpInterface>(op).getInput().getType()));
        if (int64_t align = tiled.ringAlign(kStep))
          start = alignedStart(bytes, align);
        auto ring = [&](int64_t rows, Value offset) {
          return view(bytes,
                      MemRefType::get({tiled.stages, rows, kStep}, halfType(),
                                      MemRefLayoutAttrInterface{}, workgroupSpace),
                      offset);
        };
        tileA = ring(cuda::kTiledRows, start);
        tileB = ring(tiled.cols,
                     g.add(start, cast<MemRefType>(tileA.getType()).getNumElements() * 2));
        // The epilogue's accumulators, over the ring (wgmma: accumulatorBytes).
        if (int64_t bytesOfAccs = tiled.accumulatorBytes()) {
          const int64_t threads = 32 * tiled.warps;
          accTile = view(bytes,
                         MemRefType::get({bytesOfAccs / 4 / threads, threads}, b.getF32Type(),
                                         MemRefLayoutAttrInterface{}, workgroupSpace),
                         g.idx(0));
        }
      }
      ValueRange all = fn.getArguments().take_front(fn.getFunctionType().getNumInputs());
      ValueRange scalars = all.take_back(nScalars);
      T = all[all.size() - nScalars - 2];
      past = all[all.size() - nScalars - 1];
      window = Value();
      if (auto a = dyn_cast<AttentionOp>(op))
        window = emitAttentionWindow(b, loc, a, a.getWindowSize() ? scalars.back() : Value());
      ValueRange in = all.take_front(nIn), out = all.slice(nIn, nOut);
      alignedRows.clear();
      for (unsigned i = 0; i < nIn; ++i)
        if (alignment.rowsAligned16(kernel, i))
          alignedRows.insert(in[i]);
      ValueRange caches = cached ? all.slice(nIn + nOut, 2) : ValueRange{};
      scratch = scratchSize ? all[nIn + nOut + caches.size()] : Value();
      staging = stagingK ? all[nIn + nOut + caches.size() + (scratchSize ? 1 : 0)] : Value();
      if (failed(emit(op, launch, in, out, caches)))
        return failure();
      // The runtime passes a cacheless kernel 0 positions (KernelABI.h).
      if (!cached && !past.use_empty())
        return op->emitError("a kernel without key/value caches reads the cached positions "
                             "(KernelABI.h: the runtime passes it 0)");
      gpu::ReturnOp::create(b, loc);
    }
    return success();
  }

private:
  GpuBuilder g;
  OpBuilder &b;
  Location loc;
  gpu::GPUModuleOp gpuModule;
  int index;
  StringRef weightType;
  bool flash; // the pass's flash-attention option
  cuda::FlashTile flashTile; // and its flash-keys, -rows and -passes options
  cuda::TiledGemm tiled; // and its tiled-stages and tiled-warps options
  Type cacheType; // the KV caches' element type (kv-cache-type)
  Value T, past;
  Value window;    // an attention's window (emitAttentionWindow), if it has one
  Value workgroup; // the gpu.func's shared memory, if it has any
  Value scratch;   // the scratch operand (cuda::scratchFloats), if any
  Value staging;   // the staging operand (cuda::stagingWidth), if any
  int64_t partialsOffset = 0; // where an attention's partials start in it
  Value flashKeys, flashValues, flashQueries; // the flash kernel's shared tiles
  Value tileA, tileB; // the tiled projection's shared tiles
  Value accTile;      // and its accumulators for the epilogue (wgmma)
  const RowAlignment &alignment; // of the schedule's kernel operands
  DenseSet<Value> alignedRows;   // the inputs it finds aligned

  /// Whether x's rows start 16 bytes aligned: true where the schedule says
  /// so for every call (no branch in the kernel, and no element-wise copy
  /// of each load for NVPTX's loop strength reduction to work through:
  /// bench/NOTES.md), else tested at run time (GpuBuilder::rowsAligned16).
  Value rowsAligned16(Value x) {
    if (alignedRows.contains(x))
      return arith::ConstantOp::create(b, loc, b.getBoolAttr(true));
    return g.rowsAligned16(x);
  }

  /// Shared memory of an attention block: per head of the block and warp,
  /// its running max, its sum and its 32 * ceil(D / 32) weighted values.
  MemRefType attentionPartsType(AttentionOp a) {
    int64_t stride = 2 + 32 * ceilDiv(a.getHeadDim(), 32);
    return MemRefType::get(
        {headsPerBlock(a), cuda::kSplitKvWarps, stride}, b.getF32Type(),
        MemRefLayoutAttrInterface(),
        gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup));
  }

  static int64_t width(Value v) { return cast<MemRefType>(v.getType()).getShape().back(); }

  LogicalResult emit(Operation *op, const cuda::Launch &launch, ValueRange in,
                     ValueRange out, ValueRange caches) {
    return llvm::TypeSwitch<Operation *, LogicalResult>(op)
        .Case([&](AttentionOp a) {
          if (launch.body == cuda::Body::cacheAppend)
            return appendToCaches(in[1], in[2], caches);
          return attention(a, launch.body, in[0], in[1], in[2],
                           a.getRelativeBias() ? in[3] : Value(), caches, out[0]);
        })
        .Case([&](LinearOp l) {
          return projection(launch, in[0], in[1], l.getBias() ? in[2] : Value(), Value(), {},
                            out[0], std::nullopt, 0.0, std::nullopt, false, std::nullopt,
                            nullptr, Value());
        })
        .Case([&](FusedLinearOp f) {
          unsigned next = 2;
          Value bias = f.getBias() ? in[next++] : Value();
          Value corr = f.getMeanCorrection() ? in[next++] : Value();
          InputGain gain{f.getGain() ? in[next++] : Value(),
                         f.getGainOffset() ? f.getGainOffset()->convertToDouble() : 0.0};
          std::optional<double> cap;
          if (f.getSoftcap())
            cap = f.getSoftcap()->convertToDouble();
          std::optional<Rotary> rope;
          if (RotaryEpilogueAttr attr = f.getRopeAttr()) {
            Value positions = in[next++];
            Value lengths = f.getLengths() ? in[next++] : Value();
            rope.emplace(b, loc, attr, gpuModule, "rope_inv_freq_" + std::to_string(index),
                         positions, lengths);
          }
          Value residual = f.getResidual() ? in[next++] : Value();
          return projection(launch, in[0], in[1], bias, corr, gain, out[0], f.getNorm(),
                            f.getEps() ? f.getEps()->convertToDouble() : 0.0, f.getAct(),
                            f.getGlu(), cap, rope ? &*rope : nullptr, residual);
        })
        .Case([&](NormOpInterface n) {
          return rowNorm(n.getNormKind(), Value(), in[0], in[1],
                         n.getNormBias() ? in[2] : Value(), Value(), out[0],
                         n.getEpsAttr().getValueAsDouble(), n.getGainOffsetValue(),
                         n.getNumGroups());
        })
        .Case([&](AddNormOp n) {
          double off = n.getGainOffset() ? n.getGainOffset()->convertToDouble() : 0.0;
          return rowNorm(n.getKind(), in[0], in[1], in[2], n.getBias() ? in[3] : Value(),
                         out[0], out[1], n.getEps().convertToDouble(), off, 1);
        })
        .Case([&](EmbeddingOp e) {
          std::optional<double> scale;
          if (e.getScale())
            scale = e.getScale()->convertToDouble();
          return pointwise(width(out[0]), [&](Value t, Value c) {
            Value row = g.toIndex(g.load(in[1], t));
            Value v = g.load(in[0], {row, c});
            if (scale)
              v = g.fmul(v, g.f32(*scale));
            g.store(v, out[0], {t, c});
          });
        })
        .Case([&](SplitOp s) {
          int64_t groups = s.getNumGroups(), perGroup = width(in[0]) / groups;
          // Thread c reads input column c and writes it to its result.
          return pointwise(width(in[0]), [&](Value t, Value c) {
            Value v = g.load(in[0], {t, c});
            Value grp = g.div(c, perGroup), j = g.rem(c, perGroup);
            int64_t at = 0;
            for (Value o : out) {
              int64_t w = width(o) / groups;
              Value mine = g.andi(
                  arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, j, g.idx(at)),
                  g.lt(j, at + w));
              g.ifThen(mine, [&] {
                g.store(v, o, {t, g.add(g.mul(grp, w), g.sub(j, g.idx(at)))});
              });
              at += w;
            }
          });
        })
        .Case([&](RopeOp r) {
          return rope(r, in[0], in[1], r.getLengths() ? in[2] : Value(), out[0]);
        })
        .Case([&](SinusoidalPositionsOp s) {
          double base = s.getBase().convertToDouble();
          int64_t w = width(out[0]);
          return pointwise(w, [&](Value t, Value c) {
            Value odd = g.rem(c, 2);
            Value even = g.sub(c, odd);
            Value e = arith::UIToFPOp::create(
                b, loc, b.getF32Type(),
                arith::IndexCastOp::create(b, loc, b.getI32Type(), even));
            Value denom = math::PowFOp::create(b, loc, g.f32(base), g.fdiv(e, g.f32(double(w))));
            Value angle = g.fdiv(g.toF32(g.load(in[0], t)), denom);
            Value v = g.select(g.eq(odd, 0), math::SinOp::create(b, loc, angle),
                               math::CosOp::create(b, loc, angle));
            g.store(v, out[0], {t, c});
          });
        })
        .Case([&](GluOp op) {
          Activation act = op.getAct();
          return pointwise(width(out[0]), [&](Value t, Value c) {
            Value y = g.fmul(emitActivation(b, loc, act, g.load(in[0], {t, c})),
                             g.load(in[1], {t, c}));
            g.store(y, out[0], {t, c});
          });
        })
        .Case([&](ActivationOp op) {
          Activation act = op.getAct();
          return pointwise(width(out[0]), [&](Value t, Value c) {
            g.store(emitActivation(b, loc, act, g.load(in[0], {t, c})), out[0], {t, c});
          });
        })
        .Case([&](SoftcapOp op) {
          double cap = op.getCap().convertToDouble();
          return pointwise(width(out[0]), [&](Value t, Value c) {
            g.store(emitSoftcap(b, loc, cap, g.load(in[0], {t, c})), out[0], {t, c});
          });
        })
        .Case([&](ClipOp op) {
          double limit = op.getLimit().convertToDouble();
          return pointwise(width(out[0]), [&](Value t, Value c) {
            g.store(emitClip(b, loc, limit, g.load(in[0], {t, c})), out[0], {t, c});
          });
        })
        .Case([&](AddOp) {
          return pointwise(width(out[0]), [&](Value t, Value c) {
            g.store(g.fadd(g.load(in[0], {t, c}), g.load(in[1], {t, c})), out[0], {t, c});
          });
        })
        .Default([&](Operation *o) { return o->emitOpError("has no CUDA lowering"); });
  }

  /// Token rows of the chunk this block handles, `rows` at a time: blocks
  /// stride over them when the chunk has more than kMaxGridY blocks' worth,
  /// starting at row tile `tile` (default: the block's y index).
  void forRowTiles(int64_t rows, llvm::function_ref<void(Value)> body, Value tile = Value()) {
    Value first = g.mul(tile ? tile : g.bid(gpu::Dimension::y), rows);
    Value step = g.mul(g.gridDim(gpu::Dimension::y), rows);
    g.loop(first, T, step, body);
  }

  /// fn(t, c) for every column c < width of every row t, one thread each.
  LogicalResult pointwise(int64_t w, llvm::function_ref<void(Value, Value)> fn) {
    Value c = g.add(g.mul(g.bid(gpu::Dimension::x), cuda::kPointwiseBlock),
                    g.tid(gpu::Dimension::x));
    g.ifThen(g.lt(c, w), [&] { forRowTiles(1, [&](Value t) { fn(t, c); }); });
    return success();
  }

  /// An f32 key or value as the caches store it (16-bit: rounded to
  /// nearest even), and a cached one as attention computes with it.
  Value toCache(Value v) {
    return cacheType.isF32() ? v : arith::TruncFOp::create(b, loc, cacheType, v).getResult();
  }
  Value fromCache(Value v) {
    return cacheType.isF32() ? v : arith::ExtFOp::create(b, loc, b.getF32Type(), v).getResult();
  }

  LogicalResult appendToCaches(Value k, Value v, ValueRange caches) {
    return pointwise(width(k), [&](Value t, Value c) {
      Value row = g.add(past, t);
      g.store(toCache(g.load(k, {t, c})), caches[0], {row, c});
      g.store(toCache(g.load(v, {t, c})), caches[1], {row, c});
    });
  }

  /// A row's norm statistics over its n values: {mean (LayerNorm only,
  /// else null), rstd}. `rowSum(term)` sums term(v) over the row for the
  /// values v its caller loads (scalars or vectors) across the threads
  /// that share the row; the mean reaches a vector term broadcast.
  std::pair<Value, Value>
  rowStatistics(NormKind norm, int64_t n, double eps,
                llvm::function_ref<Value(llvm::function_ref<Value(Value)>)> rowSum) {
    return rowsStatistics(norm, n, eps, [&](auto term) {
      return SmallVector<Value>{rowSum([&](Value v) { return term(0, v); })};
    })[0];
  }
  /// The same for several rows summed side by side: `rowSums(term)` sums
  /// term(r, v) over each row r.
  SmallVector<std::pair<Value, Value>>
  rowsStatistics(NormKind norm, int64_t n, double eps,
                 llvm::function_ref<SmallVector<Value>(
                     llvm::function_ref<Value(int64_t, Value)>)> rowSums) {
    Value inv = g.f32(1.0 / double(n));
    SmallVector<Value> mean;
    if (norm == NormKind::layer)
      for (Value s : rowSums([](int64_t, Value v) { return v; }))
        mean.push_back(g.fmul(s, inv));
    SmallVector<Value> ss = rowSums([&](int64_t r, Value v) {
      if (!mean.empty()) {
        Value m = mean[r];
        if (auto vec = dyn_cast<VectorType>(v.getType()))
          m = vector::BroadcastOp::create(b, loc, vec, m);
        v = g.fsub(v, m);
      }
      return g.fmul(v, v);
    });
    SmallVector<std::pair<Value, Value>> stats;
    for (size_t r = 0; r < ss.size(); ++r)
      stats.push_back({mean.empty() ? Value() : mean[r],
                       g.rsqrt(g.fadd(g.fmul(ss[r], inv), g.f32(eps)))});
    return stats;
  }

  /// sum over i in [lane, n) step 32 of f(i), summed over the warp.
  Value warpReduce(Value lane, int64_t n, llvm::function_ref<Value(Value)> f) {
    Value part = g.loop(lane, g.idx(n), g.idx(32), ValueRange{g.f32(0.0)},
                        [&](Value i, ValueRange acc) {
                          return SmallVector<Value>{g.fadd(acc[0], f(i))};
                        })[0];
    return g.warpSum(part);
  }

  /// This lane's share of the sum over x[row, 0 .. n) of term(4 values),
  /// the row read in 128-bit loads (`aligned`: rows 16-byte aligned, else
  /// element loads; n % 4 == 0) by `lanes` lanes side by side, this one
  /// from `first` (its index among them times 4), up to `maxLoads` loads in
  /// flight a lane where n allows (a multiple of 2, 4 or 8 rounds of the
  /// lanes' 4 values; else one a step, lanes past n idle in the last).
  /// The prologue of the norm-fused projections: a warp's statistics over
  /// K = 4096 in 4 rounds of loads, where a scalar loop (one dependent load
  /// a step) took as long as streaming the warp's weight row on an H200
  /// (bench/NOTES.md, 2026-11-27 H200).
  Value rowPartialSum(Value x, Value row, int64_t n, Value aligned, Value first, int64_t lanes,
                      int64_t maxLoads, llvm::function_ref<Value(Value)> term) {
    auto f32x4 = VectorType::get({4}, b.getF32Type());
    const int64_t round = lanes * 4;
    int64_t P = 1;
    while (P < maxLoads && n % (2 * P * round) == 0)
      P *= 2;
    Value zero = arith::ConstantOp::create(b, loc, f32x4, DenseElementsAttr::get(f32x4, 0.0f));
    Value part = g.loop(first, g.idx(n), g.idx(round * P), ValueRange{zero},
                        [&](Value k, ValueRange acc) {
                          SmallVector<std::pair<Value, Value>> at;
                          for (int64_t p = 0; p < P; ++p)
                            at.push_back({row, p ? g.add(k, p * round) : k});
                          Value s = acc[0];
                          for (Value v : g.loadRows(x, at, f32x4, aligned))
                            s = g.fadd(s, term(v));
                          return SmallVector<Value>{s};
                        })[0];
    return vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, part);
  }

  /// Row `row`'s norm statistics over all of x's width, summed by the warp:
  /// two passes for LayerNorm, 128-bit loads with 4 in flight where
  /// `aligned` is given (rowPartialSum: the value, or the run-time test, of
  /// x's rows starting 16-byte aligned; x's width a multiple of 4), else a
  /// float at a time.
  std::pair<Value, Value> warpRowStatistics(NormKind norm, Value x, Value row, double eps,
                                            Value aligned) {
    const int64_t K = width(x);
    Value lane = g.tid(gpu::Dimension::x);
    return rowStatistics(norm, K, eps, [&](auto term) {
      if (aligned)
        return g.warpSum(rowPartialSum(x, row, K, aligned, g.mul(lane, 4), 32, 4, term));
      return warpReduce(lane, K, [&](Value k) { return term(g.load(x, {row, k})); });
    });
  }

  /// One warp per row (per group): RMSNorm, LayerNorm, or with `lhs` the
  /// residual add first (`sum` receives it).
  LogicalResult rowNorm(NormKind kind, Value lhs, Value x, Value w, Value bias, Value sum,
                        Value out, double eps, double offset, int64_t groups) {
    int64_t glen = width(x) / groups;
    Value lane = g.tid(gpu::Dimension::x);
    Value grp = g.add(g.mul(g.bid(gpu::Dimension::x), cuda::kWarpsPerBlock),
                      g.tid(gpu::Dimension::y));
    g.ifThen(g.lt(grp, groups), [&] {
      forRowTiles(1, [&](Value t) {
        Value base = g.mul(grp, glen);
        Value src = x;
        if (lhs) { // sum = lhs + x, then normalise the sum
          g.loop(lane, g.idx(glen), g.idx(32), [&](Value i) {
            Value c = g.add(base, i);
            g.store(g.fadd(g.load(lhs, {t, c}), g.load(x, {t, c})), sum, {t, c});
          });
          src = sum;
        }
        auto at = [&](Value i) { return g.load(src, {t, g.add(base, i)}); };
        Value mean, rstd; // captured below: not a structured binding (C++17)
        std::tie(mean, rstd) = rowStatistics(kind, glen, eps, [&](auto term) {
          return warpReduce(lane, glen, [&](Value i) { return term(at(i)); });
        });
        g.loop(lane, g.idx(glen), g.idx(32), [&](Value i) {
          Value v = at(i);
          Value gain = g.load(w, i);
          Value y;
          if (kind == NormKind::rms) {
            if (offset != 0.0)
              gain = g.fadd(g.f32(offset), gain);
            y = g.fmul(g.fmul(v, rstd), gain);
          } else {
            y = g.fmul(g.fmul(g.fsub(v, mean), rstd), gain);
            if (bias)
              y = g.fadd(y, g.load(bias, i));
          }
          g.store(y, out, {t, g.add(base, i)});
        });
      });
    });
    return success();
  }

  /// The projection epilogue for one output element: accumulator `z(h)`
  /// of half h (gate, up) -> mean correction, rstd, bias, then GLU or the
  /// activation, then the soft-cap, exactly as tbc.fused_linear says; the
  /// residual, when there is one, is added as the element is stored
  /// (`storeOutput`), where its token row is known.
  struct Epilogue {
    Value bias, corr;
    std::optional<NormKind> norm;
    std::optional<Activation> act;
    bool glu;
    std::optional<double> cap;
    int64_t N;
    Value residual;
  };
  /// Stores output element (t, col): `y` plus the residual's element.
  void storeOutput(const Epilogue &e, Value y, Value out, Value t, Value col) {
    if (e.residual)
      y = g.fadd(y, g.load(e.residual, {t, col}));
    g.store(y, out, {t, col});
  }
  Value epilogue(const Epilogue &e, Value col, Value mean, Value rstd,
                 llvm::function_ref<Value(int64_t)> acc) {
    auto z = [&](int64_t h) {
      Value v = acc(h);
      Value c = g.add(col, h * e.N);
      if (e.corr)
        v = g.fsub(v, g.fmul(mean, g.load(e.corr, c)));
      if (e.norm)
        v = g.fmul(v, rstd);
      if (e.bias)
        v = g.fadd(v, g.load(e.bias, c));
      return v;
    };
    Value v = z(0);
    if (e.glu)
      v = g.fmul(emitActivation(b, loc, *e.act, v), z(1));
    else if (e.act)
      v = emitActivation(b, loc, *e.act, v);
    if (e.cap)
      v = emitSoftcap(b, loc, *e.cap, v);
    return v;
  }

  /// A fused projection's activation-side gain (a shared weight, as a tied
  /// LM head, keeps the norm's gain off the weight): x is read as
  /// x * (offset + gain).
  struct InputGain {
    Value gain;
    double offset = 0.0;
    /// `x` (a scalar or vector of V elements from column k) times the gain.
    /// A vector's k is a multiple of its width when `aligned` (the gain is
    /// a weight: it starts 256-byte aligned), so the gain loads as one.
    Value apply(GpuBuilder &g, OpBuilder &b, Location loc, Value x, Value k,
                bool aligned = false) const {
      if (!gain)
        return x;
      Value v;
      if (auto vec = dyn_cast<VectorType>(x.getType())) {
        auto load = vector::LoadOp::create(b, loc, vec, gain, ValueRange{k});
        if (aligned)
          load.setAlignment(vec.getNumElements() * 4);
        v = load;
        if (offset != 0.0)
          v = g.fadd(v, vector::BroadcastOp::create(b, loc, vec, g.f32(offset)));
      } else {
        v = g.load(gain, {k});
        if (offset != 0.0)
          v = g.fadd(v, g.f32(offset));
      }
      return g.fmul(x, v);
    }
  };

  /// A projection's RoPE epilogue (tbc.fused_linear's `rope`): the leading
  /// `columns` output columns are rotated, each with its partner column.
  struct Rotary {
    RotaryEpilogueAttr attr;
    RopeMath math;
    Value positions, lengths;
    Rotary(OpBuilder &b, Location loc, RotaryEpilogueAttr attr, Operation *symbolTable,
           StringRef name, Value positions, Value lengths)
        : attr(attr), math(b, loc, attr, symbolTable, name), positions(positions),
          lengths(lengths) {}
    /// Column `col`'s lanes; `inRot`: it is rotated (a rotary dim of a head
    /// within the leading columns).
    RopeLanes lanes(OpBuilder &b, Location loc, Value col) const {
      return emitRopeLanes(b, loc, col, attr);
    }
    /// z rotated against its partner's zp for token row `t`.
    Value rotate(GpuBuilder &g, OpBuilder &b, Location loc, Value z, Value zp, Value first,
                 const RopeLanes &l, Value t) const {
      Value inv = math.inverseFrequency(b, loc, l.i, lengths ? g.load(lengths, t) : Value());
      return math.rotate(b, loc, z, zp, first, g.load(positions, t), inv);
    }
    /// A pair's two columns rotated for token row `t`: z0 (the first of the
    /// pair, `l` its lanes) and its partner z1.
    std::pair<Value, Value> rotatePair(GpuBuilder &g, OpBuilder &b, Location loc, Value z0, Value z1,
                                       const RopeLanes &l, Value t) const {
      Value inv = math.inverseFrequency(b, loc, l.i, lengths ? g.load(lengths, t) : Value());
      Value position = g.load(positions, t);
      auto first = [&](bool v) {
        return arith::ConstantOp::create(b, loc, b.getBoolAttr(v)).getResult();
      };
      return {math.rotate(b, loc, z0, z1, first(true), position, inv),
              math.rotate(b, loc, z1, z0, first(false), position, inv)};
    }
  };

  Value boolean(bool v) { return arith::ConstantOp::create(b, loc, b.getBoolAttr(v)); }
  Value negate(Value c) { return arith::XOrIOp::create(b, loc, c, boolean(true)); }

  /// The output column of this warp of a GEMV whose RoPE pairs sit in one
  /// block (pairsRopeWarps), and how far apart (XOR) the warps of a pair's
  /// two columns are:
  /// GPT-J's pairs are adjacent (warps w and w ^ 1); a NeoX pair's columns
  /// half a head apart go to warps w and w ^ 4, so block b of the rotated
  /// columns takes pairs 4b .. 4b + 3 (the first columns in warps 0-3, their
  /// partners in 4-7). The rotated columns are whole heads of a multiple of
  /// 8 dims, so a block is all rotated or none; columns past them keep their
  /// plain order.
  std::pair<Value, int64_t> pairedRopeColumn(RotaryEpilogueAttr attr) {
    Value bid = g.bid(gpu::Dimension::x), warp = g.tid(gpu::Dimension::y);
    Value plain = g.add(g.mul(bid, cuda::kWarpsPerBlock), warp);
    if (attr.getStyle() == RopeStyle::gptj)
      return {plain, 1};
    int64_t half = attr.getRotaryDim() / 2;
    Value pair = g.add(g.mul(bid, cuda::kWarpsPerBlock / 2), g.rem(warp, 4));
    Value paired = g.add(g.add(g.mul(g.div(pair, half), attr.getHeadDim()), g.rem(pair, half)),
                         g.mul(g.div(warp, 4), half));
    return {g.select(g.lt(plain, attr.getColumns()), paired, plain), 4};
  }

  /// A projection: on tensor cores (Body::mma), or on the FMA units with one
  /// warp per output column o and launch.rowsPerBlock token rows:
  /// z = prologue(x W[o]^T) + b[o], then the epilogue.
  LogicalResult projection(const cuda::Launch &launch, Value x, Value w, Value bias, Value corr,
                           const InputGain &gain, Value out, std::optional<NormKind> norm,
                           double eps, std::optional<Activation> act, bool glu,
                           std::optional<double> cap, const Rotary *rope, Value residual) {
    Epilogue e{bias, corr, norm, act, glu, cap, width(out), residual};
    // A transposed 16-bit weight ([out, in, 1], made from GPT-2's [in, out]
    // at bind time) is an [out, in] matrix to every variant.
    if (auto t = cast<MemRefType>(w.getType());
        t.getRank() == 3 && !t.getElementType().isF32())
      w = memref::CollapseShapeOp::create(b, loc, w,
                                          ArrayRef<ReassociationIndices>{{0}, {1, 2}});
    if (launch.body == cuda::Body::mma)
      return mmaProjection(x, w, out, e, gain, eps, rope);
    if (launch.body == cuda::Body::tiledStage)
      return stageActivations(x, gain, norm, eps);
    if (launch.body == cuda::Body::tiledMma)
      return tiledProjection(w, out, e, rope);
    const int64_t R = launch.rowsPerBlock;
    auto wType = cast<MemRefType>(w.getType());
    bool transposed = wType.getRank() == 3;
    // 16-bit weights (those the tensor-core variant reads: K % kMmaK == 0)
    // come 8 per 128-bit load, widened to f32 in registers; f32 weights 4.
    bool halfWeights = !wType.getElementType().isF32();
    int64_t K = width(x), N = width(out);
    int64_t V = halfWeights ? 8 : K % 4 == 0 ? 4 : 1; // weights per lane per step
    int64_t A = std::min<int64_t>(V, 4);               // accumulator width
    auto vec = VectorType::get({A}, b.getF32Type());
    Value lane = g.tid(gpu::Dimension::x);
    const bool pairedRope = rope && pairsRopeWarps(rope->attr, launch);
    Value o;
    int64_t pairApart = 0; // pairedRope: partner warp = warp ^ pairApart
    if (pairedRope)
      std::tie(o, pairApart) = pairedRopeColumn(rope->attr);
    else
      o = g.add(g.mul(g.bid(gpu::Dimension::x), cuda::kWarpsPerBlock), g.tid(gpu::Dimension::y));
    // Paired warps meet at barriers: every warp of the block runs (one past
    // N reads row N - 1 and stores nothing).
    Value inRange = g.lt(o, N);
    if (pairedRope)
      o = g.min(o, g.idx(N - 1));
    Value zero = arith::ConstantOp::create(b, loc, vec, DenseElementsAttr::get(vec, 0.0f));
    if (transposed && V == 4) {
      // View [out, in, 1] as [out, in] for the vector loads.
      w = memref::CollapseShapeOp::create(b, loc, w,
                                          ArrayRef<ReassociationIndices>{{0}, {1, 2}});
      transposed = false;
    }
    // W[row, k .. k + V) as V / A vectors of A floats.
    auto loadW = [&](Value row, Value k) -> SmallVector<Value, 2> {
      if (V == 1) {
        SmallVector<Value> at{row, k};
        if (transposed) // [out, in, 1]: row-major with a unit trailing dim
          at.push_back(g.idx(0));
        return {vector::BroadcastOp::create(b, loc, vec, g.load(w, at))};
      }
      auto raw = VectorType::get({V}, wType.getElementType());
      auto load = vector::LoadOp::create(b, loc, raw, w, ValueRange{row, k});
      load.setAlignment(16); // rows of K % V == 0 elements from a 256-byte base
      if (!halfWeights)
        return {load};
      Value wide =
          arith::ExtFOp::create(b, loc, VectorType::get({V}, b.getF32Type()), load.getResult());
      SmallVector<Value, 2> parts;
      for (int64_t s = 0; s < V; s += A)
        parts.push_back(vector::ExtractStridedSliceOp::create(
            b, loc, wide, ArrayRef<int64_t>{s}, ArrayRef<int64_t>{A}, ArrayRef<int64_t>{1}));
      return parts;
    };
    // x[t, k + s * A .. + A) times the input gain, for every part s < n of
    // loadW (k % A == 0). The 16-bit GEMV reads them 128 bits at a time
    // where x's rows are aligned (its loads of x outnumbered the weight's 8
    // to 1); the 8-row kernel and the f32-weight GEMV keep one path (two
    // spilled 4 bytes: rows8 on sm_90, GPT-J's LayerNorm+RoPE f32 GEMV on
    // sm_80).
    Value xAligned = halfWeights && R == 1 ? rowsAligned16(x) : Value();
    // The GEMV sums its row's norm statistics in the k walk (WalkRowStats)
    // from the x it loads there anyway: the warp's lanes load each of the
    // row's K values once (V at a time; K % V == 0). A prologue before the
    // walk was a chain of dependent loads (4 rounds of x from L2 at K =
    // 4096) that every warp waited out before its first weight load.
    const bool statsInWalk = norm && R == 1 && V > 1;
    // Elsewhere the statistics' loads (rowPartialSum) come before the main
    // loop: 4 in flight for several rows, whose kernels with a LayerNorm and
    // the run-time alignment test spilled 8 bytes at 8 (BLOOM, the
    // parallel GPT-J spec).
    Value statsAligned = !norm || statsInWalk || K % 4 ? Value()
                         : xAligned                     ? xAligned
                                                        : rowsAligned16(x);
    // x's parts as loaded go to `raw` as well, if asked for.
    auto loadX = [&](Value t, Value k, int64_t n,
                     SmallVector<Value> *raw = nullptr) -> SmallVector<Value> {
      if (V == 1)
        return {vector::BroadcastOp::create(b, loc, vec,
                                            gain.apply(g, b, loc, g.load(x, {t, k}), k))};
      SmallVector<Value> parts;
      if (xAligned)
        parts = g.loadRow(x, t, k, n, vec, xAligned);
      else
        for (int64_t s = 0; s < n; ++s)
          parts.push_back(vector::LoadOp::create(b, loc, vec, x, ValueRange{t, g.add(k, s * A)}));
      if (raw)
        *raw = parts;
      for (int64_t s = 0; s < n; ++s)
        parts[s] = gain.apply(g, b, loc, parts[s], g.add(k, s * A), /*aligned=*/true);
      return parts;
    };
    g.ifThen(pairedRope ? g.i1(true) : inRange, [&] {
      forRowTiles(R, [&](Value t0) {
        SmallVector<Value> rows;
        Value last = g.sub(T, g.idx(1));
        for (int64_t r = 0; r < R; ++r)
          rows.push_back(g.min(g.add(t0, r), last)); // reads stay in bounds
        // Prologue: each row's statistics (warpRowStatistics; the scalar
        // loop where K % 4 != 0). Llama-3-8B's GEMVs on an H200, scalar ->
        // vector: norm+QKV 0.055 -> 0.025 ms, norm+gate/up 0.12 -> 0.064 ms.
        SmallVector<Value> mean(R), rstd(R);
        for (int64_t r = 0; r < R && norm && !statsInWalk; ++r)
          std::tie(mean[r], rstd[r]) = warpRowStatistics(*norm, x, rows[r], eps, statsAligned);
        // Main loop: R dot products per weight row read (a GLU's gate and
        // up rows, a RoPE pair's two rows).
        // Decoding reads each weight once per token: the GEMV (R == 1)
        // issues U steps' loads before their FMAs, so that more of the
        // weight is in flight per warp (the loop is not unrolled otherwise).
        // A RoPE pair's two weight rows on 16-bit weights take 2 steps, as
        // many weight bytes in flight as 4 steps of one row: at 4 its
        // registers, with the epilogue's sine and cosine, outgrew even 128
        // at K = 1024 (bench-llama-1k's QKV spilled 16 bytes).
        // With statsInWalk it leaves the row's statistics in mean and rstd.
        auto dot = [&](ArrayRef<Value> weightRows) {
          int64_t U = 1, maxU = halfWeights && rope && weightRows.size() == 2 ? 2 : 4;
          while (R == 1 && U < maxU && K % (2 * U * 32 * V) == 0)
            U *= 2;
          SmallVector<Value> init(R * weightRows.size(), zero);
          const size_t accs = init.size();
          std::optional<WalkRowStats> walkStats;
          if (statsInWalk) {
            walkStats.emplace(*this, *norm, x, ArrayRef<Value>{rows[0]});
            init.append(walkStats->sums(), g.f32(0.0));
          }
          SmallVector<Value> state = g.loop(
              g.mul(lane, V), g.idx(K), g.idx(32 * V * U), init, [&](Value k0, ValueRange a) {
                SmallVector<Value> ks;
                SmallVector<SmallVector<SmallVector<Value, 2>>> wv(U); // [u][row][part]
                for (int64_t u = 0; u < U; ++u) {
                  ks.push_back(u ? g.add(k0, u * 32 * V) : k0);
                  for (Value row : weightRows)
                    wv[u].push_back(loadW(row, ks[u]));
                }
                SmallVector<Value> next(a.begin(), a.end());
                for (int64_t u = 0; u < U; ++u)
                  for (int64_t r = 0; r < R; ++r) {
                    SmallVector<Value> raw;
                    SmallVector<Value> xv = loadX(rows[r], ks[u], int64_t(wv[u][0].size()),
                                                  walkStats ? &raw : nullptr);
                    for (size_t s = 0; s < xv.size(); ++s)
                      for (size_t h = 0; h < weightRows.size(); ++h)
                        next[h * R + r] =
                            vector::FMAOp::create(b, loc, xv[s], wv[u][h][s], next[h * R + r]);
                    for (Value part : raw) {
                      SmallVector<Value> sums =
                          walkStats->add(ArrayRef<Value>(next).drop_front(accs), part);
                      std::copy(sums.begin(), sums.end(), next.begin() + accs);
                    }
                  }
                return next;
              });
          if (walkStats)
            std::tie(mean[0], rstd[0]) =
                walkStats->statistics(ArrayRef<Value>(state).drop_front(accs), 32, eps)[0];
          state.resize(accs);
          return state;
        };
        auto sum = [&](ArrayRef<Value> acc, int64_t h, int64_t r) {
          return g.warpSum(
              vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, acc[h * R + r]));
        };
        // After the butterfly every lane holds every row's sums: lane r keeps
        // row r's (a select per row) and runs the epilogue, RoPE's sine and
        // cosine included, for that row alone rather than for all R rows.
        auto mineOf = [&](ArrayRef<Value> perRow) {
          Value m = perRow[0];
          for (int64_t r = 1; r < R && m; ++r)
            m = g.select(g.eq(lane, r), perRow[r], m);
          return m;
        };
        // The lane's sums of the H weight rows, taken row by row (taking
        // them weight row by weight row had ptxas spill on sm_80).
        auto mySums = [&](ArrayRef<Value> acc, int64_t H) {
          SmallVector<Value> m(H);
          for (int64_t r = 0; r < R; ++r)
            for (int64_t h = 0; h < H; ++h) {
              Value s = sum(acc, h, r);
              m[h] = r ? g.select(g.eq(lane, r), s, m[h]) : s;
            }
          return m;
        };
        // Lane r writes row t0 + r of column `col`.
        auto store = [&](Value col, Value y) {
          Value t = g.add(t0, lane);
          g.ifThen(g.andi(g.andi(g.lt(lane, R), g.lt(t, T)), inRange),
                   [&] { storeOutput(e, y, out, t, col); });
        };
        auto plain = [&] {
          SmallVector<Value> weightRows{o};
          if (glu)
            weightRows.push_back(g.add(o, N));
          SmallVector<Value> acc = dot(weightRows);
          SmallVector<Value> sums = mySums(acc, int64_t(weightRows.size()));
          Value myMean = mineOf(mean), myRstd = mineOf(rstd);
          store(o, epilogue(e, o, myMean, myRstd, [&](int64_t h) { return sums[h]; }));
        };
        if (!rope)
          return plain();
        if (pairedRope) {
          // Each warp its own column; the pair's two results meet in shared
          // memory, and each warp rotates and stores its own.
          SmallVector<Value> acc = dot({o});
          Value sum = mySums(acc, 1)[0];
          Value z = epilogue(e, o, mean[0], rstd[0], [&](int64_t) { return sum; });
          Value warp = g.tid(gpu::Dimension::y);
          g.ifThen(g.eq(lane, 0), [&] { g.store(z, workgroup, {warp}); });
          gpu::BarrierOp::create(b, loc);
          RopeLanes l = rope->lanes(b, loc, o);
          Value zp = g.load(workgroup, {arith::XOrIOp::create(b, loc, warp, g.idx(pairApart))});
          // The next row's results must not overwrite these before they are read.
          gpu::BarrierOp::create(b, loc);
          auto [first, second] = rope->rotatePair(g, b, loc, g.select(l.first, z, zp),
                                                  g.select(l.first, zp, z), l, rows[0]);
          store(o, g.select(l.inRot, g.select(l.first, first, second), z));
          return;
        }
        // RoPE: the warp of a pair's first column computes both columns and
        // writes both rotated, the second's has nothing to do, so each
        // weight row is still read once; other columns pass through.
        RopeLanes l = rope->lanes(b, loc, o);
        g.ifThen(negate(l.inRot), plain);
        g.ifThen(g.andi(l.inRot, l.first), [&] {
          SmallVector<Value> acc = dot({o, l.partner});
          SmallVector<Value> sums = mySums(acc, 2);
          Value myMean = mineOf(mean), myRstd = mineOf(rstd);
          Value z0 = epilogue(e, o, myMean, myRstd, [&](int64_t) { return sums[0]; });
          Value z1 = epilogue(e, l.partner, myMean, myRstd, [&](int64_t) { return sums[1]; });
          auto [first, second] = rope->rotatePair(g, b, loc, z0, z1, l, mineOf(rows));
          store(o, first);
          store(l.partner, second);
        });
      });
    });
    return success();
  }

  /// The 16-bit type the tensor-core kernels read weights in, and their
  /// mma.sync operands.
  MmaHalf half() { return MmaHalf{b, loc, weightType == "f16"}; }
  Type halfType() { return half().type(); }

  /// A projection on tensor cores: a warp computes kMmaRows token rows x
  /// kMmaCols output columns (and, for a GLU, the matching up columns) with
  /// mma.sync m16n8k16, bf16 weights [out, in] and activations rounded to
  /// bf16, accumulating in f32 (fragment layout: MmaHalf in GpuBuilder.h).
  LogicalResult mmaProjection(Value x, Value w, Value out, const Epilogue &e,
                              const InputGain &gain, double eps, const Rotary *rope) {
    using namespace cuda;
    int64_t K = width(x), N = e.N;
    Value lane = g.tid(gpu::Dimension::x);
    Value group = g.div(lane, 4), quad = g.rem(lane, 4);
    Value n0 = g.mul(g.add(g.mul(g.bid(gpu::Dimension::x), kMmaWarps), g.tid(gpu::Dimension::y)),
                     kMmaCols);
    MmaHalf mh = half();
    // The weight row this lane's B registers read for output column `col`
    // (clamped: columns past N compute garbage that is never stored).
    auto weightRow = [&](Value col) { return g.min(col, g.idx(N - 1)); };
    g.ifThen(g.lt(n0, N), [&] {
      forRowTiles(kMmaRows, [&](Value t0) {
        Value last = g.sub(T, g.idx(1));
        // This lane's two rows (clamped for loads; stores are masked).
        Value rows[2] = {g.min(g.add(t0, group), last), g.min(g.add(g.add(t0, group), 8), last)};
        // Prologue: the statistics of the lane's two rows, shared by the 4
        // lanes of its group (each sums its 4 of every 16 values in 128-bit
        // loads, 4 in flight: rowPartialSum; every 4th value one at a time
        // where K % 4 != 0; then the group adds its partial sums).
        Value mean[2], rstd[2];
        Value statsAligned = e.norm && K % 4 == 0 ? rowsAligned16(x) : Value();
        for (int r = 0; r < 2 && e.norm; ++r)
          std::tie(mean[r], rstd[r]) = rowStatistics(*e.norm, K, eps, [&](auto term) {
            if (statsAligned)
              return g.rowQuadSum(
                  rowPartialSum(x, rows[r], K, statsAligned, g.mul(quad, 4), 4, 4, term));
            Value part = g.loop(quad, g.idx(K), g.idx(4), ValueRange{g.f32(0.0)},
                                [&](Value k, ValueRange acc) {
                                  return SmallVector<Value>{
                                      g.fadd(acc[0], term(g.load(x, {rows[r], k})))};
                                })[0];
            return g.rowQuadSum(part);
          });
        // Main loop over k in steps of 16: one mma per weight tile (the
        // B registers of tile h read weight row wRow[h]).
        auto mmaLoop = [&](ArrayRef<Value> wRow) {
          SmallVector<Value> init(4 * wRow.size(), g.f32(0.0));
          auto body = [&](Value k0, ValueRange c) -> SmallVector<Value> {
            Value kLo = g.add(k0, g.mul(quad, 2)), kHi = g.add(kLo, 8);
            auto aReg = [&](Value row, Value k) {
              Value k1 = g.add(k, 1);
              Value lo = gain.apply(g, b, loc, g.load(x, {row, k}), k);
              Value hi = gain.apply(g, b, loc, g.load(x, {row, k1}), k1);
              return mh.pack(lo, hi);
            };
            SmallVector<Value> a{aReg(rows[0], kLo), aReg(rows[1], kLo), aReg(rows[0], kHi),
                                 aReg(rows[1], kHi)};
            SmallVector<Value> next;
            for (size_t h = 0; h < wRow.size(); ++h) {
              auto bReg = [&](Value k) { return mh.loadPair(w, {wRow[h], k}); };
              // k is even and rows hold K % 16 == 0 elements: 4-byte aligned.
              llvm::append_range(next, mh.mma(a, {bReg(kLo), bReg(kHi)}, c.slice(4 * h, 4)));
            }
            return next;
          };
          // Rolled: unrolled by LLVM and without LSR (CudaBackend.cpp), a
          // RoPE QKV's copies kept 20-56 bytes of addresses in local memory
          // even at 128 registers; rolled it takes 56-80 and spills none.
          return g.rolledLoop(g.idx(0), g.idx(K), g.idx(kMmaK), init, body);
        };
        // Epilogue: accumulator i is row (i < 2 ? group : group + 8),
        // column n0 + 2 * quad + i % 2 (of tile 0; tile h's at the same
        // place of its own columns).
        auto forEachAccumulator = [&](llvm::function_ref<void(int64_t i, int r, Value t,
                                                              Value col)> body) {
          for (int64_t i = 0; i < 4; ++i) {
            int r = i < 2 ? 0 : 1;
            Value t = g.add(g.add(t0, group), r * 8);
            Value col = g.add(g.add(n0, g.mul(quad, 2)), i % 2);
            g.ifThen(g.andi(g.lt(t, T), g.lt(col, N)), [&] { body(i, r, t, col); });
          }
        };
        Value ownRow = weightRow(g.add(n0, group));
        auto plain = [&] {
          SmallVector<Value> wRow{ownRow};
          if (e.glu)
            wRow.push_back(g.add(ownRow, N));
          SmallVector<Value> acc = mmaLoop(wRow);
          forEachAccumulator([&](int64_t i, int r, Value t, Value col) {
            Value y =
                epilogue(e, col, mean[r], rstd[r], [&](int64_t h) { return acc[4 * h + i]; });
            storeOutput(e, y, out, t, col);
          });
        };
        if (!rope)
          return plain();
        ropeTiles(*rope, e, n0, ownRow, mean, rstd, rows, out, plain, mmaLoop,
                  forEachAccumulator, weightRow);
      });
    });
    return success();
  }

  /// The RoPE epilogue of a tensor-core projection. GPT-J pairs are adjacent
  /// columns, which a lane's accumulators i and i ^ 1 already hold. NeoX
  /// pairs are rotary_dim / 2 apart, a multiple of the tile width, so a tile
  /// is all first-of-pair, all second or all pass-through: the first tile's
  /// warp computes the partner tile too and writes both, the second's has
  /// nothing to do, and each weight row is still read once.
  template <typename MmaLoop, typename ForEach, typename WeightRow>
  void ropeTiles(const Rotary &rope, const Epilogue &e, Value n0, Value ownRow,
                 Value mean[2], Value rstd[2], Value rows[2], Value out,
                 llvm::function_ref<void()> plain, MmaLoop &mmaLoop, ForEach &forEachAccumulator,
                 WeightRow &weightRow) {
    auto z = [&](SmallVector<Value> &acc, int64_t i, int r, Value col) {
      return epilogue(e, col, mean[r], rstd[r], [&](int64_t) { return acc[i]; });
    };
    int64_t half = rope.attr.getRotaryDim() / 2;
    if (rope.attr.getStyle() == RopeStyle::gptj) {
      SmallVector<Value> acc = mmaLoop({ownRow});
      forEachAccumulator([&](int64_t i, int r, Value t, Value col) {
        RopeLanes l = rope.lanes(b, loc, col);
        Value partner = weightRow(g.add(g.sub(col, g.idx(i % 2)), 1 - i % 2));
        Value z0 = z(acc, i, r, col), z1 = z(acc, i ^ 1, r, partner);
        Value y = rope.rotate(g, b, loc, z0, z1, boolean(i % 2 == 0), l, rows[r]);
        g.store(g.select(l.inRot, y, z0), out, {t, col});
      });
      return;
    }
    RopeLanes tile = rope.lanes(b, loc, n0);
    g.ifThen(negate(tile.inRot), plain);
    g.ifThen(g.andi(tile.inRot, tile.first), [&] {
      SmallVector<Value> acc = mmaLoop({ownRow, g.add(ownRow, half)});
      forEachAccumulator([&](int64_t i, int r, Value t, Value col) {
        RopeLanes l = rope.lanes(b, loc, col);
        Value partner = g.add(col, half);
        Value z0 = z(acc, i, r, col), z1 = z(acc, 4 + i, r, partner);
        auto [first, second] = rope.rotatePair(g, b, loc, z0, z1, l, rows[r]);
        g.store(first, out, {t, col});
        g.store(second, out, {t, partner});
      });
    });
  }

  /// The weight row GEMM column ("slot") `s` of a tiled projection reads:
  /// a GLU's gate and up rows interleaved (slot 2j gate j, 2j + 1 up j), a
  /// NeoX RoPE's pair halves interleaved in each head's rotary dims (slot
  /// 2j of a head its dim j, 2j + 1 its dim j + rotary_dim / 2), every other
  /// column itself. Either way the two values of every pair land in one
  /// lane's adjacent accumulators (mma columns 2 quad and 2 quad + 1), as
  /// GPT-J's adjacent pairs already do, so the epilogue is the same for all
  /// tiles and needs no branch by warp.
  Value slotRow(Value s, const Epilogue &e, const Rotary *rope) {
    if (e.glu)
      return g.add(g.div(s, 2), g.mul(g.rem(s, 2), e.N));
    if (!rope || rope->attr.getStyle() != RopeStyle::neox)
      return s;
    int64_t headDim = rope->attr.getHeadDim(), rot = rope->attr.getRotaryDim();
    Value dd = g.rem(s, headDim);
    Value permuted = g.add(g.sub(s, dd), g.add(g.div(dd, 2), g.mul(g.rem(dd, 2), rot / 2)));
    Value rotated = g.andi(g.lt(s, rope->attr.getColumns()), g.lt(dd, rot));
    return g.select(rotated, permuted, s);
  }

  /// A projection's norm statistics summed in its main loop from the f32
  /// activations it loads there (the GEMV's x, 4 or 8 a lane a step; the
  /// tiled kernel did the same until its staging launch took the norm):
  /// per row the sum of d^2
  /// and, for a LayerNorm, of d, where d is x less the row's first value.
  /// The shift keeps the one-pass variance E[d^2] - E[d]^2 from cancelling
  /// where a row's mean is large against its spread (the prologues of the
  /// other kernels take the mean first, then the centred squares).
  struct WalkRowStats {
    Emitter &em;
    NormKind norm;
    int64_t K, n;             // the row length; the rows a thread stages
    SmallVector<Value> shift; // LayerNorm: x[row, 0] of each staged row

    WalkRowStats(Emitter &em, NormKind norm, Value x, ArrayRef<Value> rows)
        : em(em), norm(norm), K(em.width(x)), n(rows.size()) {
      if (norm == NormKind::layer)
        for (Value row : rows)
          shift.push_back(em.g.load(x, {row, em.g.idx(0)}));
    }
    int64_t sums() const { return norm == NormKind::layer ? 2 * n : n; }
    /// `sums` ([sum d^2 per row, then sum d per row]) with this step's
    /// `staged` vectors added.
    SmallVector<Value> add(ValueRange sums, ValueRange staged) {
      GpuBuilder &g = em.g;
      auto sum = [&](Value v) {
        return vector::ReductionOp::create(em.b, em.loc, vector::CombiningKind::ADD, v)
            .getResult();
      };
      SmallVector<Value> next(sums.begin(), sums.end());
      for (size_t r = 0; r < staged.size(); ++r) {
        Value d = staged[r];
        if (norm == NormKind::layer) {
          d = g.fsub(d, vector::BroadcastOp::create(em.b, em.loc, d.getType(), shift[r]));
          next[n + r] = g.fadd(next[n + r], sum(d));
        }
        next[r] = g.fadd(next[r], sum(g.fmul(d, d)));
      }
      return next;
    }
    /// Each row's (mean, or null for an RMSNorm, and rstd) from `sums`
    /// added over the row's `lanes` lanes (adjacent threads, a power of 2).
    SmallVector<std::pair<Value, Value>> statistics(ArrayRef<Value> sums, int64_t lanes,
                                                    double eps) {
      GpuBuilder &g = em.g;
      SmallVector<int32_t> offsets;
      for (int32_t o = 1; o < lanes; o *= 2)
        offsets.push_back(o);
      auto total = [&](Value v) {
        return g.butterfly(v, offsets, [&](Value p, Value q) { return g.fadd(p, q); });
      };
      Value inv = g.f32(1.0 / double(K));
      SmallVector<std::pair<Value, Value>> stats;
      for (int64_t r = 0; r < n; ++r) {
        Value mean, ms = g.fmul(total(sums[r]), inv); // E[d^2]
        if (norm == NormKind::layer) {
          Value md = g.fmul(total(sums[n + r]), inv); // E[d]
          mean = g.fadd(shift[r], md);
          ms = g.fmax(g.fsub(ms, g.fmul(md, md)), g.f32(0.0));
        }
        stats.push_back({mean, g.rsqrt(g.fadd(ms, g.f32(eps)))});
      }
      return stats;
    }
  };

  /// The (column block, first row tile) of this block of a tiled
  /// projection's grid (x: column blocks, y: row tiles), renumbered so that
  /// blocks that run at once share their weights: the GPU starts blocks in
  /// the order of x + y gridDim.x, which took a whole row of column blocks
  /// first (for an 8B model's gate/up, 132 blocks at once read 132 MB of
  /// weights, more than L2 holds, and every row tile read them all again
  /// from memory). Numbered down groups of kTiledRowGroup row tiles
  /// instead, a wave of 132 blocks reads 8 row tiles and 17 column blocks
  /// (16 + 17 MB); a bijection, as Triton's grouped ordering.
  std::pair<Value, Value> tiledBlockOrder() {
    Value columns = g.gridDim(gpu::Dimension::x), rows = g.gridDim(gpu::Dimension::y);
    Value id = g.add(g.mul(g.bid(gpu::Dimension::y), columns), g.bid(gpu::Dimension::x));
    Value perGroup = g.mul(columns, cuda::kTiledRowGroup);
    Value firstRow = g.mul(g.div(id, perGroup), cuda::kTiledRowGroup);
    Value rowsInGroup = g.min(g.sub(rows, firstRow), g.idx(cuda::kTiledRowGroup));
    Value inGroup = g.rem(id, perGroup);
    return {g.div(inGroup, rowsInGroup), g.add(firstRow, g.rem(inGroup, rowsInGroup))};
  }

  /// The tiled projection's first launch: each row of x (a warp a row) into
  /// the staging array as the GEMM's 16-bit A operand, times the input gain
  /// and rounded once, as the GEMM rounded it itself before; then, where the
  /// projection fuses a norm, the row's (mean, rstd) as two f32 in its
  /// kStagingStatsSlots slots past K (statistics in two passes over the row,
  /// as the norm kernels take them), which the GEMM's epilogue applies.
  /// Rows whose activations are not 16-byte aligned load a float at a time
  /// (GpuBuilder::loadRows).
  LogicalResult stageActivations(Value x, const InputGain &gain, std::optional<NormKind> norm,
                                 double eps) {
    const int64_t K = width(x);
    auto f32x4 = VectorType::get({4}, b.getF32Type());
    auto halfx8 = VectorType::get({8}, halfType());
    Value lane = g.tid(gpu::Dimension::x), warp = g.tid(gpu::Dimension::y);
    Value aligned = rowsAligned16(x); // K % kTiledK == 0: whole vectors of 8
    forRowTiles(cuda::kWarpsPerBlock, [&](Value t0) {
      Value t = g.add(t0, warp);
      g.ifThen(g.lt(t, T), [&] {
        if (norm) {
          auto [mean, rstd] = warpRowStatistics(*norm, x, t, eps, aligned);
          Value stats = vector::FromElementsOp::create(
              b, loc, f32x4, ValueRange{mean ? mean : g.f32(0.0), rstd, g.f32(0.0), g.f32(0.0)});
          g.ifThen(g.eq(lane, 0), [&] {
            vector::StoreOp::create(b, loc, vector::BitCastOp::create(b, loc, halfx8, stats),
                                    staging, ValueRange{t, g.idx(K)})
                .setAlignment(16);
          });
        }
        // Lane l converts columns [8 l, 8 l + 8) of every 256.
        g.loop(g.mul(lane, 8), g.idx(K), g.idx(8 * 32), [&](Value k) {
          SmallVector<Value> parts = g.loadRows(x, {{t, k}, {t, g.add(k, 4)}}, f32x4, aligned);
          for (int64_t p = 0; p < 2; ++p)
            parts[p] = gain.apply(g, b, loc, parts[p], g.add(k, 4 * p), /*aligned=*/true);
          Value wide = vector::ShuffleOp::create(b, loc, parts[0], parts[1],
                                                 ArrayRef<int64_t>{0, 1, 2, 3, 4, 5, 6, 7});
          vector::StoreOp::create(b, loc, arith::TruncFOp::create(b, loc, halfx8, wide), staging,
                                  ValueRange{t, k})
              .setAlignment(16); // rows of K + 8 16-bit values, K % 32 == 0
        });
      });
    });
    return success();
  }

  /// A projection of a long chunk on tensor cores, a block per kTiledRows x
  /// kTiledCols tile of the GEMM (KernelABI.h). Each step of kTiledK, the
  /// block's threads copy the step's activation rows (16-bit, from the
  /// staging array the first launch wrote: stageActivations) and weight rows
  /// (slotRow) into one stage of a ring in shared memory by cp.async, a
  /// warp's copies covering 8 whole rows, stages - 1 steps ahead of the
  /// step the warps multiply: each warp runs its (kTiledRows /
  /// kTiledWarpsM) x (kTiledCols / warpsN) tile's mma.sync from its
  /// ldmatrix fragments, one barrier a step (TiledGemm: stages, warps). The
  /// copies take no registers and keep stages - 1 steps in flight (the
  /// register staging before it had one, with 32-48 registers a thread).
  /// On sm_90a (TiledGemm::wgmma) each warpgroup runs wgmma.mma_async on its
  /// 64 rows x the block's columns straight from the ring, one batch in
  /// flight through the next step's barrier. A fused norm was applied by
  /// the staging launch's statistics.
  LogicalResult tiledProjection(Value w, Value out, Epilogue e, const Rotary *rope) {
    using namespace cuda;
    Value x = staging;
    const int64_t K = width(x) - kStagingStatsSlots, N = e.N, S = e.glu ? 2 * N : N;
    const int64_t warpsN = tiled.warpsN(), stages = tiled.stages;
    // A warp's accumulators: with mma.sync a warpRows x warpCols tile of
    // the block's; with wgmma its 16 rows of its warpgroup's 64 x cols (the
    // same fragment layout, column tile after column tile).
    const int64_t cols = tiled.cols;
    const int64_t warpRows = tiled.wgmma ? kMmaRows : kTiledRows / kTiledWarpsM;
    const int64_t warpCols = tiled.wgmma ? cols : cols / warpsN;
    const int64_t rowTiles = warpRows / kMmaRows, colTiles = warpCols / kMmaCols;
    static_assert(kTiledRows == 2 * kWarpgroupRows, "two warpgroups of 64 rows");
    // A stage's row is kStep 16-bit values, `chunks` 16-byte chunks; a
    // thread copies one chunk of aRounds activation rows and bRounds
    // weight rows a step.
    static_assert(kTiledK == 32 && kTiledWideK == 64 && kTiledStagesMin >= 2);
    const int64_t kStep = tiled.kStep(K);
    const int64_t threads = 32 * tiled.warps;
    const int64_t chunks = kStep / 8, rowsPerRound = threads / chunks;
    const int64_t aRounds = kTiledRows / rowsPerRound, bRounds = cols / rowsPerRound;
    MmaHalf mh = half();
    Value lane = g.tid(gpu::Dimension::x), warp = g.tid(gpu::Dimension::y);
    Value thread = g.add(g.mul(warp, 32), lane);
    Value group = g.div(lane, 4), quad = g.rem(lane, 4);
    Value warpgroup = g.div(warp, 4);
    Value warpRow = tiled.wgmma ? g.add(g.mul(warpgroup, kWarpgroupRows),
                                        g.mul(g.rem(warp, 4), kMmaRows))
                                : g.mul(g.div(warp, warpsN), warpRows);
    Value warpCol = tiled.wgmma ? g.idx(0) : g.mul(g.rem(warp, warpsN), warpCols);
    Value copyRow = g.div(thread, chunks), copyChunk = g.rem(thread, chunks);
    // Chunk c of a row of a stage sits at chunk c ^ (row / 2) % 4 of it:
    // rows are 64 bytes, so without the swizzle an ldmatrix's 8 rows at one
    // chunk would fall in 2 bank groups (4-way conflicts); with it they
    // fill all 8. A warp's copies write 8 whole rows: no conflicts either
    // way. wgmma's 64-byte swizzle is this one; rows of 128 bytes (k steps
    // of 64, wgmma only) are in its 128-byte swizzle, chunk c at c ^ row % 8.
    // The ring's [stage, row, column] of chunk c of `row`:
    assert((chunks == 4 || (chunks == 8 && tiled.wgmma)) && "64-byte rows for ldmatrix");
    auto swizzled = [&](Value stage, Value row, Value chunk) -> SmallVector<Value, 3> {
      return {stage, row, g.mul(g.xori(chunk, g.rem(g.div(row, 8 / chunks), chunks)), 8)};
    };
    // The row and chunk of the matrix row this lane addresses in an
    // ldmatrix.x4 (matrix = lane / 8): A's matrices step down 8 rows then
    // across 8 columns, B's across 8 columns then down a column tile.
    static_assert(kMmaRows == 16 && kMmaCols == 8 && kMmaK == 16);
    assert(colTiles % 2 == 0 && kTiledRows % rowsPerRound == 0 && cols % rowsPerRound == 0);
    Value matrix = g.div(lane, 8), matrixRow = g.rem(lane, 8);
    Value aRowHalf = g.mul(g.rem(matrix, 2), 8), aChunkHalf = g.div(matrix, 2);
    Value bRowHalf = g.mul(g.div(matrix, 2), 8), bChunkHalf = g.rem(matrix, 2);
    auto [columnBlock, firstRowTile] = tiledBlockOrder();
    Value n0 = g.mul(columnBlock, cols);
    // The weight rows this thread copies, round by round (slots past S: the
    // last one's, never stored). Where no block runs past S, round j's row
    // is the first's plus a constant: j rowsPerRound slots, and with gate
    // and up interleaved (rowsPerRound even) half as many rows of each;
    // with a NeoX RoPE's pair halves interleaved, in a block whose slots
    // all rotate (full rotary dims; the rotated columns whole blocks; a
    // block within a head or whole heads, rounds within a head or whole
    // heads apart, so no round wraps a head), offset o's row is o / hd
    // heads on plus half of o % hd, and in a block past the rotated columns
    // the slots themselves. Then the copies are one global pointer a step
    // plus constants, as for the activations below; elsewhere each round
    // keeps its own row.
    assert(rowsPerRound % 2 == 0);
    const bool neox = rope && rope->attr.getStyle() == RopeStyle::neox;
    bool constantWeightRounds = S % cols == 0;
    if (neox) {
      const int64_t hd = rope->attr.getHeadDim();
      constantWeightRounds &= rope->attr.getRotaryDim() == hd &&
                              rope->attr.getColumns() % cols == 0 &&
                              (cols % hd == 0 || hd % cols == 0) &&
                              (rowsPerRound % hd == 0 || hd % rowsPerRound == 0);
    }
    // Round j's weight row less round 0's, in a block of plain (or
    // gate/up) slots and in one of rotated slots.
    auto weightRoundRows = [&](int64_t j, bool rotated) {
      const int64_t o = j * rowsPerRound;
      if (e.glu)
        return o / 2;
      if (!rotated)
        return o;
      const int64_t hd = rope->attr.getHeadDim();
      return o / hd * hd + o % hd / 2;
    };
    SmallVector<Value> wRows;
    for (int64_t j = 0; j < (constantWeightRounds ? 1 : bRounds); ++j)
      wRows.push_back(slotRow(
          g.min(g.add(n0, g.add(copyRow, j * rowsPerRound)), g.idx(S - 1)), e, rope));
    Value rotatedBlock = neox && constantWeightRounds
                             ? g.lt(n0, g.idx(rope->attr.getColumns()))
                             : Value();
    const int64_t accs = rowTiles * colTiles * 4, steps = K / kStep;
    // The staging array holds whole row tiles (the runtime allocates its
    // rows in multiples of limits::kStagingRowMultiple): a row tile's rows
    // past T are copied as they are, into accumulators of rows the epilogue
    // never stores. So a thread's activation rows need no clamp, and its
    // rounds are constant offsets from one shared and one global pointer a
    // step (rowsPerRound is a multiple of 8: the rounds' swizzle is the
    // first's), which ptxas folds into the copies. Clamped, each round had
    // kept its own 64-bit row address live through the k walk.
    static_assert(limits::kStagingRowMultiple % kTiledRows == 0);
    assert(rowsPerRound % 8 == 0 && "a round keeps the swizzle of the thread's first row");
    forRowTiles(kTiledRows, [&](Value t0) {
      Value xRow = g.add(t0, copyRow);
      // Step `step`'s copies into stage `stage`, as one group. Steps past
      // the last copy the last again (into a stage nobody reads after):
      // every thread commits a group each step, so that waiting for all
      // but the newest stages - 2 always means the step's own.
      auto copyStep = [&](Value step, Value stage) {
        Value k = g.add(g.mul(g.min(step, g.idx(steps - 1)), kStep), g.mul(copyChunk, 8));
        Value aTo = mh.sharedPointer(tileA, mh.elementOf(tileA, swizzled(stage, copyRow, copyChunk)));
        Value aFrom = mh.globalPointer(x, {xRow, k});
        Value bTo = mh.sharedPointer(tileB, mh.elementOf(tileB, swizzled(stage, copyRow, copyChunk)));
        Value bFrom = constantWeightRounds ? mh.globalPointer(w, {wRows[0], k}) : Value();
        for (int64_t j = 0; j < aRounds; ++j)
          mh.copyAsync16At(mh.offsetPointer(aTo, j * rowsPerRound * MmaHalf::rowBytes(tileA)),
                           mh.offsetPointer(aFrom, j * rowsPerRound * MmaHalf::rowBytes(x)));
        auto weightRounds = [&](bool rotated) {
          for (int64_t j = 0; j < bRounds; ++j)
            mh.copyAsync16At(
                mh.offsetPointer(bTo, j * rowsPerRound * MmaHalf::rowBytes(tileB)),
                constantWeightRounds
                    ? mh.offsetPointer(bFrom, weightRoundRows(j, rotated) * MmaHalf::rowBytes(w))
                    : mh.globalPointer(w, {wRows[j], k}));
        };
        if (rotatedBlock) // a block-uniform branch
          g.ifThenElse(rotatedBlock, [&] { weightRounds(true); }, [&] { weightRounds(false); });
        else
          weightRounds(false);
        NVVM::CpAsyncCommitGroupOp::create(b, loc);
      };
      // On wgmma with 3 stages or more, a step's multiplies stay in flight
      // through the next step's barrier and copies (wgmma.wait_group 1):
      // the copies then run stages - 2 steps ahead, into the stage read two
      // steps ago, whose wgmma every warpgroup has waited for before the
      // barrier. Otherwise stages - 1 ahead, into the stage read last step.
      const int64_t inFlight = tiled.wgmma && stages >= 3 ? 1 : 0;
      const int64_t ahead = stages - 1 - inFlight;
      for (int64_t s = 0; s < ahead; ++s)
        copyStep(g.idx(s), g.idx(s));
      SmallVector<Value> init(accs, g.f32(0.0));
      SmallVector<Value> state = g.rolledLoop(
          g.idx(0), g.idx(steps), g.idx(1), init, [&](Value step, ValueRange s) {
            SmallVector<Value> acc(s);
            // This step's copies have landed, every thread's (the
            // barrier), and every warp is done with the stage the copies
            // issued next overwrite.
            NVVM::CpAsyncWaitGroupOp::create(b, loc, ahead - 1);
            if (tiled.wgmma) // wgmma reads through the async proxy
              mh.fenceSharedForWgmma();
            gpu::BarrierOp::create(b, loc);
            Value next = g.add(step, ahead);
            copyStep(next, g.rem(next, stages));
            Value stage = g.rem(step, stages);
            if (tiled.wgmma) {
              // The warpgroup's 64 rows x cols columns, k 16 at a time,
              // done before the barrier past which copies overwrite this
              // stage: by the next step's end (inFlight), else now.
              NVVM::WgmmaFenceAlignedOp::create(b, loc);
              Value firstRow = g.mul(warpgroup, kWarpgroupRows);
              for (int64_t ks = 0; ks < kStep; ks += kMmaK) {
                Value a = mh.descriptorAt(mh.swizzledDescriptor(
                    mh.byteAddress(tileA, mh.elementOf(tileA, {stage, firstRow, g.idx(ks)})),
                    kStep * 2));
                Value bDesc = mh.descriptorAt(mh.swizzledDescriptor(
                    mh.byteAddress(tileB, mh.elementOf(tileB, {stage, g.idx(0), g.idx(ks)})),
                    kStep * 2));
                acc = mh.warpgroupMma(a, bDesc, acc);
              }
              NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
              NVVM::WgmmaWaitGroupSyncOp::create(b, loc, inFlight);
              return acc;
            }
            // Fragments by ldmatrix.x4: lane l addresses row l % 8 of
            // matrix l / 8; A's matrices are (rows 0-7 | 8-15) x (k 0-7 |
            // 8-15), B's (column tile nt | nt + 1) x (k 0-7 | 8-15). A
            // lane's rows step by 16 (row tiles, column tile pairs) from
            // the warp's first, a multiple of 8, none of which moves the
            // swizzle (row / 2) % 4: its addresses are one per operand and
            // 16 of k plus constants (offsetPointer), which ptxas folds into
            // the instructions (as indices, an IMAD, a LOP3 and a LEA each).
            static_assert(kMmaRows % 8 == 0 && (2 * kMmaCols) % 8 == 0);
            assert(warpRows % 8 == 0 && warpCols % 8 == 0);
            const int64_t rowBytes = kStep * 2;
            auto lanePointer = [&](Value tile, Value firstRow, Value rowHalf, Value chunkHalf,
                                   int64_t ks) {
              Value row = g.add(firstRow, g.add(matrixRow, rowHalf));
              return mh.sharedPointer(
                  tile, mh.elementOf(tile, swizzled(stage, row, g.add(chunkHalf, ks / 8))));
            };
            for (int64_t ks = 0; ks < kStep; ks += kMmaK) {
              Value aLane = lanePointer(tileA, warpRow, aRowHalf, aChunkHalf, ks);
              Value bLane = lanePointer(tileB, warpCol, bRowHalf, bChunkHalf, ks);
              SmallVector<SmallVector<Value, 4>> a(rowTiles), bOps(colTiles);
              for (int64_t mt = 0; mt < rowTiles; ++mt)
                a[mt] = mh.loadMatricesAt(mh.offsetPointer(aLane, mt * kMmaRows * rowBytes));
              for (int64_t nt = 0; nt < colTiles; nt += 2) {
                SmallVector<Value, 4> pair =
                    mh.loadMatricesAt(mh.offsetPointer(bLane, nt * kMmaCols * rowBytes));
                bOps[nt] = {pair[0], pair[1]};
                bOps[nt + 1] = {pair[2], pair[3]};
              }
              for (int64_t mt = 0; mt < rowTiles; ++mt)
                for (int64_t nt = 0; nt < colTiles; ++nt) {
                  int64_t at = (mt * colTiles + nt) * 4;
                  SmallVector<Value> c =
                      mh.mma(a[mt], bOps[nt], ArrayRef<Value>(acc).slice(at, 4));
                  std::copy(c.begin(), c.end(), acc.begin() + at);
                }
            }
            return acc;
          });
      // The last multiplies are done, the copies past the last step land
      // before the ring is reused (the next row tile's first steps), and
      // every warp is done with it.
      if (inFlight)
        NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
      NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
      gpu::BarrierOp::create(b, loc);

      // Epilogue: accumulators 2r and 2r + 1 of tile (mt, nt) are row
      // group + 8 r of row tile mt, slots 2 quad and 2 quad + 1 of column
      // tile nt: a pair (slotRow). A loop over the lane's 2 rowTiles rows;
      // unrolled, a RoPE epilogue's sin/cos 32 times over made the kernel
      // 7000 lines of PTX and `tbc compile` of an 8B model take seconds.
      // The rows' norm statistics from the staging launch (f32 past K).
      auto rowStatistics = [&](Value t) -> std::pair<Value, Value> {
        if (!e.norm)
          return {Value(), Value()};
        auto load = vector::LoadOp::create(b, loc, VectorType::get({8}, halfType()), x,
                                           ValueRange{t, g.idx(K)});
        load.setAlignment(16);
        Value stats = vector::BitCastOp::create(b, loc, VectorType::get({4}, b.getF32Type()),
                                                load.getResult());
        Value rstd = vector::ExtractOp::create(b, loc, stats, ArrayRef<int64_t>{1});
        Value mean = *e.norm == NormKind::layer
                         ? Value(vector::ExtractOp::create(b, loc, stats, ArrayRef<int64_t>{0}))
                         : Value();
        return {mean, rstd};
      };
      // Row t's outputs of slots s0 and s0 + 1, whose accumulators accOf(0)
      // and accOf(1) are.
      auto storePair = [&](Value t, Value s0, Value mean, Value rstd,
                           llvm::function_ref<Value(int64_t)> accOf) {
        Value s1 = g.add(s0, 1);
        if (e.glu) { // gate and up of output column s0 / 2
          Value col = g.div(s0, 2);
          g.ifThen(g.lt(s0, S), [&] {
            storeOutput(e, epilogue(e, col, mean, rstd, accOf), out, t, col);
          });
          return;
        }
        Value row0 = slotRow(g.min(s0, g.idx(S - 1)), e, rope);
        Value row1 = slotRow(g.min(s1, g.idx(S - 1)), e, rope);
        Value y0 = epilogue(e, row0, mean, rstd, [&](int64_t) { return accOf(0); });
        Value y1 = epilogue(e, row1, mean, rstd, [&](int64_t) { return accOf(1); });
        if (rope) {
          RopeLanes l = rope->lanes(b, loc, row0);
          auto [first, second] = rope->rotatePair(g, b, loc, y0, y1, l, t);
          y0 = g.select(l.inRot, first, y0);
          y1 = g.select(l.inRot, second, y1);
        }
        g.ifThen(g.lt(s0, S), [&] { storeOutput(e, y0, out, t, row0); });
        g.ifThen(g.lt(s1, S), [&] { storeOutput(e, y1, out, t, row1); });
      };
      // The lane's row i (of 2 rowTiles) of the tile.
      auto rowOf = [&](Value i) {
        Value inTile = g.add(g.add(warpRow, group),
                             g.add(g.mul(g.div(i, 2), kMmaRows), g.mul(g.rem(i, 2), 8)));
        return g.add(t0, inTile);
      };
      if (accTile) {
        // wgmma: the accumulators to shared memory (the ring is free: the
        // barrier above), each thread's own, read back by it alone; then
        // the column tiles in a loop too, each accumulator loaded where the
        // epilogue takes it (KernelABI.h, TiledGemm::accumulatorBytes).
        assert(cast<MemRefType>(accTile.getType()).getShape()[0] == accs &&
               "TiledGemm::accumulatorBytes holds every thread's accumulators");
        for (int64_t j = 0; j < accs; ++j)
          memref::StoreOp::create(b, loc, state[j], accTile, ValueRange{g.idx(j), thread});
        g.loop(g.idx(0), g.idx(2 * rowTiles), g.idx(1), [&](Value i) {
          Value t = rowOf(i);
          g.ifThen(g.lt(t, T), [&] {
            // Not a structured binding: the column loop's lambda captures
            // them, which C++17 forbids (clang rejects it, GCC accepts).
            Value mean, rstd;
            std::tie(mean, rstd) = rowStatistics(t);
            // Accumulator h of row i in column tile nt: (i / 2 colTiles +
            // nt) 4 + 2 (i % 2) + h.
            Value rowAcc = g.add(g.mul(g.div(i, 2), colTiles * 4), g.mul(g.rem(i, 2), 2));
            g.loop(g.idx(0), g.idx(colTiles), g.idx(1), [&](Value nt) {
              Value first = g.add(rowAcc, g.mul(nt, 4));
              Value s0 = g.add(g.add(n0, warpCol), g.add(g.mul(quad, 2), g.mul(nt, kMmaCols)));
              storePair(t, s0, mean, rstd, [&](int64_t h) -> Value {
                return memref::LoadOp::create(b, loc, accTile,
                                              ValueRange{g.add(first, h), thread});
              });
            });
          });
        });
        // Every thread is done with the ring's bytes before the next row
        // tile's copies write them.
        gpu::BarrierOp::create(b, loc);
        return;
      }
      g.loop(g.idx(0), g.idx(2 * rowTiles), g.idx(1), [&](Value i) {
        Value t = rowOf(i);
        SmallVector<Value> isRow;
        for (int64_t j = 0; j < 2 * rowTiles; ++j)
          isRow.push_back(g.eq(i, j));
        g.ifThen(g.lt(t, T), [&] {
          auto [mean, rstd] = rowStatistics(t);
          for (int64_t nt = 0; nt < colTiles; ++nt) {
            Value s0 = g.add(g.add(n0, warpCol), g.add(g.mul(quad, 2), nt * kMmaCols));
            // Row j = 2 mt + r's accumulator h of this column tile, picked
            // by selects (registers).
            storePair(t, s0, mean, rstd, [&](int64_t h) {
              auto at = [&](int64_t j) {
                return state[(j / 2 * colTiles + nt) * 4 + 2 * (j % 2) + h];
              };
              Value v = at(0);
              for (int64_t j = 1; j < 2 * rowTiles; ++j)
                v = g.select(isRow[j], at(j), v);
              return v;
            });
          }
        });
      });
    }, firstRowTile);
    return success();
  }

  /// The attend launches: the flash kernel (FlashAttention.h) where the op
  /// and the module's weight type allow it, else the split-KV kernel, and
  /// for decoding (a few rows) the split-KV kernel over slices of the cache,
  /// which append to the caches and merge themselves. Decoding never runs
  /// the flash kernel: a flash
  /// block's 64 rows would be mostly idle, and it would read the cache with
  /// one block per head.
  LogicalResult attention(AttentionOp a, cuda::Body body, Value q, Value k, Value v,
                          Value relativeTable, ValueRange caches, Value out) {
    PositionBias bias(b, loc, a, gpuModule, "attention_" + std::to_string(index),
                      relativeTable);
    if (body == cuda::Body::flash)
      cuda::emitFlashAttention(g, half(), a, bias,
                               {q, caches[0], caches[1], out, T, past, window, flashKeys,
                                flashValues, flashQueries},
                               cuda::flashOverlaps(a.getHeadDim(), flashTile));
    else
      splitKvAttention(a, q, k, v, bias, caches, out,
                       body == cuda::Body::decodeSlice ? decodeSlices(a) : 1);
    return success();
  }

  /// The head dims a lane of a warp owns in attention's split-KV and
  /// combine kernels. Where D fills the warp evenly they are contiguous, d =
  /// perLane lane + i, and each key and value is one vector load (8 bytes a
  /// lane of a bf16 cache at D = 128); else d = lane + 32 i, masked past D
  /// (`valid`) and clamped to D - 1 (`dims`).
  struct LaneDims {
    int64_t perLane;
    bool contiguous;
    SmallVector<Value> dims, valid;
  };
  LaneDims laneDims(int64_t D, Value lane) {
    LaneDims l{ceilDiv(D, 32), false, {}, {}};
    l.contiguous = D == 32 * l.perLane && (l.perLane == 2 || l.perLane == 4 || l.perLane == 8);
    for (int64_t i = 0; i < l.perLane; ++i) {
      Value d = l.contiguous ? g.add(g.mul(lane, l.perLane), i) : g.add(lane, 32 * i);
      l.valid.push_back(g.lt(d, D));
      l.dims.push_back(g.min(d, g.idx(D - 1)));
    }
    return l;
  }

  /// Where slice `slice` of (row t, head h) keeps its partial softmax in
  /// the scratch array: max, sum, then the D unnormalised values.
  /// (cuda::scratchFloats has the layout.)
  Value sliceBase(AttentionOp a, Value t, Value h, Value slice) {
    return g.add(g.add(g.idx(partialsOffset),
                       g.mul(g.add(g.mul(t, a.getNumHeads()), h), decodePartialsStride(a))),
                 g.mul(slice, 2 + a.getHeadDim()));
  }

  /// Split-KV attention, a block per (query row, the n = headsPerBlock(a)
  /// query heads h0 .. h0 + n - 1 of one GQA group, slice of the visible
  /// positions; `slices` of them): warp w runs an online softmax per head
  /// over the slice in runs of P = kSplitKvPositions, the runs starting at
  /// start + P w, start + P (w + S), ... (S = kSplitKvWarps), each key and
  /// value it loads serving all n heads, then warp i < n merges head h0 + i's
  /// S partial (max, sum, weighted values) from shared memory: max M = max
  /// m_w, sum = sum l_w e^(m_w - M), values likewise. With one slice it
  /// writes the output; with several (decoding), the merged partial goes to
  /// the scratch array (mergeIfLast), and the block first appends the
  /// chunk's keys and values `k`, `v` that fall in its slice to the caches
  /// (appendSlice).
  void splitKvAttention(AttentionOp a, Value q, Value k, Value v, const PositionBias &bias,
                        ValueRange caches, Value out, int64_t slices) {
    constexpr int64_t S = cuda::kSplitKvWarps, P = cuda::kSplitKvPositions;
    int64_t D = a.getHeadDim(), group = a.getNumHeads() / a.getNumKvHeads(),
            n = headsPerBlock(a);
    double scale = a.getScale().convertToDouble();
    std::optional<double> cap;
    if (a.getSoftcap())
      cap = a.getSoftcap()->convertToDouble();
    Value parts = workgroup; // attentionPartsType(a)
    Value lane = g.tid(gpu::Dimension::x), warp = g.tid(gpu::Dimension::y);
    Value headBlock = g.bid(gpu::Dimension::x), slice;
    if (slices > 1) {
      slice = g.rem(headBlock, slices);
      headBlock = g.div(headBlock, slices);
    }
    // n divides the group: the block's heads share one KV head.
    Value h0 = g.mul(headBlock, n);
    Value kvCol = g.mul(g.div(h0, group), D);
    SmallVector<Value> heads;
    for (int64_t i = 0; i < n; ++i)
      heads.push_back(g.add(h0, i));
    LaneDims l = laneDims(D, lane);
    int64_t perLane = l.perLane, width = 2 + perLane; // a head's state: max, sum, values
    SmallVector<Value> &dims = l.dims, &valid = l.valid;
    forRowTiles(1, [&](Value t) {
      Value p, lo, hi; // plain variables: C++17 lambdas cannot capture bindings
      std::tie(p, lo, hi) = visibleRange(a, t);
      // The online softmaxes over [start, end), merged across the warps.
      auto attendRange = [&](Value start, Value end) {
        SmallVector<Value> qv; // head i's dims at i * perLane
        SmallVector<Value> init;
        for (int64_t i = 0; i < n; ++i) {
          Value qCol = g.mul(heads[i], D);
          for (int64_t d = 0; d < perLane; ++d) {
            Value v = g.fmul(g.load(q, {t, g.add(qCol, dims[d])}), g.f32(scale));
            qv.push_back(g.select(valid[d], v, g.f32(0.0)));
          }
          init.append({g.f32(-std::numeric_limits<float>::infinity()), g.f32(0.0)});
          init.append(perLane, g.f32(0.0));
        }
        SmallVector<Value> state = g.loop(
            g.add(start, g.mul(warp, P)), end, g.idx(S * P), init, [&](Value j0, ValueRange s) {
              // Positions j0 .. j0 + P - 1, those at end or past it read the
              // last of the block's and weigh 0 (score -inf); j0 < end, so the
              // run's max is finite and no weight is e^(-inf + inf).
              Value last = g.sub(end, g.idx(1));
              SmallVector<Value> j(P), visible(P), keys, values;
              for (int64_t r = 0; r < P; ++r) {
                Value jr = g.add(j0, r);
                visible[r] = g.lt(jr, end);
                j[r] = g.min(jr, last);
              }
              // Every load of the run first, so that they are in flight together.
              auto lanes = VectorType::get({perLane}, cacheType);
              for (int64_t r = 0; r < P; ++r) {
                if (!l.contiguous) {
                  for (int64_t d = 0; d < perLane; ++d) {
                    keys.push_back(fromCache(g.load(caches[0], {j[r], g.add(kvCol, dims[d])})));
                    values.push_back(fromCache(g.load(caches[1], {j[r], g.add(kvCol, dims[d])})));
                  }
                  continue;
                }
                for (auto [cache, into] :
                     {std::pair{caches[0], &keys}, std::pair{caches[1], &values}}) {
                  // Row offsets and kvCol are multiples of D: the lane's
                  // perLane values are naturally aligned.
                  auto v = vector::LoadOp::create(b, loc, lanes, cache,
                                                  ValueRange{j[r], g.add(kvCol, dims[0])});
                  v.setAlignment(perLane * cacheType.getIntOrFloatBitWidth() / 8);
                  for (int64_t d = 0; d < perLane; ++d)
                    into->push_back(
                        fromCache(vector::ExtractOp::create(b, loc, v, ArrayRef<int64_t>{d})));
                }
              }
              SmallVector<Value> next;
              for (int64_t i = 0; i < n; ++i) {
                ValueRange si = s.slice(i * width, width);
                SmallVector<Value> score(P);
                Value m = si[0];
                for (int64_t r = 0; r < P; ++r) {
                  Value part = g.f32(0.0);
                  for (int64_t d = 0; d < perLane; ++d)
                    part = g.fma(qv[i * perLane + d], keys[r * perLane + d], part);
                  score[r] = g.warpSum(part);
                  if (cap)
                    score[r] = emitSoftcap(b, loc, *cap, score[r]);
                  if (Value term = bias.at(b, loc, heads[i], p, j[r]))
                    score[r] = g.fadd(score[r], term);
                  score[r] = g.select(visible[r], score[r],
                                      g.f32(-std::numeric_limits<float>::infinity()));
                  m = g.fmax(m, score[r]);
                }
                Value corr = g.exp(g.fsub(si[0], m));
                SmallVector<Value> weight(P);
                Value sum = g.fmul(si[1], corr);
                for (int64_t r = 0; r < P; ++r) {
                  weight[r] = g.exp(g.fsub(score[r], m));
                  sum = g.fadd(sum, weight[r]);
                }
                next.append({m, sum});
                for (int64_t d = 0; d < perLane; ++d) {
                  Value acc = g.fmul(si[2 + d], corr);
                  for (int64_t r = 0; r < P; ++r)
                    acc = g.fma(weight[r], values[r * perLane + d], acc);
                  next.push_back(acc);
                }
              }
              return next;
            });
        // A warp that saw no position keeps max -inf and sums 0: its weight
        // e^(-inf - M) is 0 (warp 0 always sees position start, so M is
        // finite).
        for (int64_t i = 0; i < n; ++i) {
          Value at = g.idx(i);
          g.ifThen(g.eq(lane, 0), [&] {
            g.store(state[i * width], parts, {at, warp, g.idx(0)});
            g.store(state[i * width + 1], parts, {at, warp, g.idx(1)});
          });
          for (int64_t d = 0; d < perLane; ++d)
            g.store(state[i * width + 2 + d], parts, {at, warp, g.add(lane, 2 + 32 * d)});
        }
        gpu::BarrierOp::create(b, loc);
        // Warp i merges head h0 + i.
        g.ifThen(g.lt(warp, n), [&] {
          Value h = g.add(h0, warp);
          Value M = g.load(parts, {warp, g.idx(0), g.idx(0)});
          for (int64_t w = 1; w < S; ++w)
            M = g.fmax(M, g.load(parts, {warp, g.idx(w), g.idx(0)}));
          Value L = g.f32(0.0);
          SmallVector<Value> acc(perLane, g.f32(0.0));
          for (int64_t w = 0; w < S; ++w) {
            Value f = g.exp(g.fsub(g.load(parts, {warp, g.idx(w), g.idx(0)}), M));
            L = g.fma(g.load(parts, {warp, g.idx(w), g.idx(1)}), f, L);
            for (int64_t d = 0; d < perLane; ++d)
              acc[d] = g.fma(g.load(parts, {warp, g.idx(w), g.add(lane, 2 + 32 * d)}), f,
                             acc[d]);
          }
          auto writeOutput = [&] { storeHeadRow(a, l, out, t, h, acc, L); };
          if (slices == 1)
            return writeOutput();
          // Where one slice holds every visible position (at most one
          // sweep of the block's warps, 64: a short prompt's first decode
          // steps, as the benchmark's whole-model step), this block
          // has the whole softmax and writes the output itself, without
          // the partials' round trips (fences, the counter, the partials
          // read back in L2) that cost a short cache most of its time.
          Value used = usedSlices(a, lo, hi);
          g.ifThenElse(g.eq(used, 1), writeOutput, [&] {
            Value at = sliceBase(a, t, h, slice);
            g.ifThen(g.eq(lane, 0), [&] {
              g.store(M, scratch, {at});
              g.store(L, scratch, {g.add(at, 1)});
            });
            for (int64_t d = 0; d < perLane; ++d)
              g.ifThen(valid[d],
                       [&] { g.store(acc[d], scratch, {g.add(at, g.add(dims[d], 2))}); });
            mergeIfLast(a, t, h, lane, used, out);
          });
        });
        // The next row's partials must not overwrite these before the
        // merging warps have read them.
        gpu::BarrierOp::create(b, loc);
      };
      // This block's positions [start, end): all of [lo, hi), or its
      // slice (sliceLength). A block whose slice is empty has nothing to
      // do: the combine reads only the slices that hold positions. (The
      // branch is the whole block's: its barriers stay uniform.)
      Value start = lo, end = hi;
      if (slices > 1) {
        Value per = sliceLength(lo, hi, slices);
        start = g.min(hi, g.add(lo, g.mul(slice, per)));
        end = g.min(hi, g.add(start, per));
        g.ifThen(g.lt(start, end), [&] {
          appendSlice(a, k, v, caches, start, end, kvCol);
          gpu::BarrierOp::create(b, loc);
          attendRange(start, end);
        });
      } else {
        attendRange(start, end);
      }
    });
  }

  /// A decoding block's share of the append (no launch of its own, where it
  /// was one of three a layer): the chunk's keys and values at the new
  /// positions [past, past + T) that lie in the block's slice [start, end),
  /// for its KV head's columns, written to the caches before the block
  /// reads them (after a barrier, which orders the block's global memory
  /// too). Every new position past + r lies in a slice of row r, so all
  /// reach the caches; the blocks of a GQA group's heads and of later rows
  /// write the same values to the same places.
  void appendSlice(AttentionOp a, Value k, Value v, ValueRange caches, Value start, Value end,
                   Value kvCol) {
    int64_t D = a.getHeadDim();
    Value first = g.max(start, past), stop = g.min(end, g.add(past, T));
    Value thread = g.add(g.mul(g.tid(gpu::Dimension::y), 32), g.tid(gpu::Dimension::x));
    g.loop(thread, g.mul(g.sub(stop, first), D), g.idx(32 * cuda::kSplitKvWarps), [&](Value i) {
      Value j = g.add(first, g.div(i, D)), c = g.add(kvCol, g.rem(i, D));
      Value t = g.sub(j, past);
      g.store(toCache(g.load(k, {t, c})), caches[0], {j, c});
      g.store(toCache(g.load(v, {t, c})), caches[1], {j, c});
    });
  }

  /// The visible cached positions [lo, hi) of chunk row t, at position p.
  std::tuple<Value, Value, Value> visibleRange(AttentionOp a, Value t) {
    Value p = g.add(past, t);
    Value hi = a.getCausal() ? g.add(p, 1) : g.add(past, T);
    Value lo = g.firstVisible(p, window);
    return {p, lo, hi};
  }

  /// Positions a decoding slice of [lo, hi) holds: ceil((hi - lo) / slices)
  /// rounded up to whole sweeps of the block's warps (kSplitKvWarps runs of
  /// kSplitKvPositions), so that a short cache fills few slices and leaves
  /// no warp of them idle. The first slice is never empty (hi > lo).
  Value sliceLength(Value lo, Value hi, int64_t slices) {
    constexpr int64_t sweep = cuda::kSplitKvWarps * cuda::kSplitKvPositions;
    return g.mul(g.div(g.add(g.sub(hi, lo), g.idx(slices * sweep - 1)), slices * sweep), sweep);
  }
  /// The slices of [lo, hi) that hold positions (the first `used`).
  Value usedSlices(AttentionOp a, Value lo, Value hi) {
    Value per = sliceLength(lo, hi, decodeSlices(a));
    return arith::DivUIOp::create(b, loc, g.add(g.sub(hi, lo), g.sub(per, g.idx(1))), per);
  }

  /// Decoding's merge without a launch of its own, run by the warp of every
  /// block that wrote a partial of (row t, head h), of the `used` slices:
  /// each lane makes its stores visible to the GPU (membar.gl), the warp
  /// meets (bar.warp.sync), and lane 0 counts the block in (an atomic add
  /// on the (row, head)'s counter, cuda::scratchFloats). The block that
  /// counts last sees every other's partial (each was fenced before its
  /// count; this block fences after its own, and reads them in L2) and
  /// merges them (combineSlices), then sets the counter back to 0 for the
  /// next launch.
  void mergeIfLast(AttentionOp a, Value t, Value h, Value lane, Value used, Value out) {
    NVVM::MembarOp::create(b, loc, NVVM::MemScopeKind::GPU);
    NVVM::SyncWarpOp::create(b, loc, g.i32(-1));
    Value counter = g.add(g.mul(t, a.getNumHeads()), h);
    Value before = g.ifElse(
        g.eq(lane, 0), {b.getF32Type()},
        [&] {
          return SmallVector<Value>{memref::AtomicRMWOp::create(
              b, loc, arith::AtomicRMWKind::addf, g.f32(1.0), scratch, ValueRange{counter})};
        },
        [&] { return SmallVector<Value>{g.f32(0.0)}; })[0];
    // Lane 0's count, in every lane (the others add 0).
    Value counted = g.warpSum(before);
    Value others = g.toF32(arith::IndexCastOp::create(b, loc, b.getI32Type(),
                                                      g.sub(used, g.idx(1))));
    g.ifThen(arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, counted, others), [&] {
      NVVM::MembarOp::create(b, loc, NVVM::MemScopeKind::GPU);
      combineSlices(a, t, h, lane, used, out);
      g.ifThen(g.eq(lane, 0), [&] { g.store(g.f32(0.0), scratch, {counter}); });
    });
  }

  /// One warp merges the partial softmaxes of (row t, head h)'s first `used`
  /// slices, those that hold positions (the rest were not written), into the
  /// output row, as a block's warp merges its warps' for its head. Every
  /// slice read is non-empty, so every max is finite.
  void combineSlices(AttentionOp a, Value t, Value h, Value lane, Value used, Value out) {
    LaneDims l = laneDims(a.getHeadDim(), lane);
    Value one = g.idx(1);
    auto at = [&](Value s) { return sliceBase(a, t, h, s); };
    // The other blocks' partials are read where their stores went, in L2,
    // by atomic adds of 0 (an SM's L1 is not coherent with other SMs'
    // stores within a launch; the memref loads have no volatile form).
    auto partial = [&](Value i) -> Value {
      return memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addf, g.f32(0.0), scratch,
                                         ValueRange{i});
    };
    Value M = g.loop(one, used, one, ValueRange{partial(at(g.idx(0)))},
                     [&](Value s, ValueRange m) {
                       return SmallVector<Value>{g.fmax(m[0], partial(at(s)))};
                     })[0];
    SmallVector<Value> init(1 + l.perLane, g.f32(0.0));
    SmallVector<Value> sums = g.loop(g.idx(0), used, one, init, [&](Value s, ValueRange acc) {
      Value base = at(s);
      Value f = g.exp(g.fsub(partial(base), M));
      SmallVector<Value> next{g.fma(partial(g.add(base, 1)), f, acc[0])};
      for (int64_t i = 0; i < l.perLane; ++i)
        next.push_back(g.fma(partial(g.add(base, g.add(l.dims[i], 2))), f, acc[1 + i]));
      return next;
    });
    storeHeadRow(a, l, out, t, h, ArrayRef<Value>(sums).drop_front(), sums[0]);
  }

  /// Head h's output in row t: the lane's unnormalised values `acc` (its
  /// dims `l`) over the softmax's sum.
  void storeHeadRow(AttentionOp a, const LaneDims &l, Value out, Value t, Value h,
                    ArrayRef<Value> acc, Value sum) {
    Value invL = g.fdiv(g.f32(1.0), sum);
    Value qCol = g.mul(h, a.getHeadDim());
    for (int64_t d = 0; d < l.perLane; ++d)
      g.ifThen(l.valid[d], [&] {
        g.store(g.fmul(acc[d], invL), out, {t, g.add(qCol, l.dims[d])});
      });
  }

  LogicalResult rope(RopeOp r, Value x, Value pos, Value lengths, Value out) {
    RopeMath math(b, loc, r, gpuModule, "rope_inv_freq_" + std::to_string(index));
    int64_t headDim = r.getHeadDim(), rot = r.getRotaryDim();
    bool gptj = r.getStyle() == RopeStyle::gptj;
    return pointwise(width(out), [&](Value t, Value f) {
      auto [inRot, first, i, partner] = emitRopeLanes(b, loc, f, headDim, rot, gptj);
      Value v = g.load(x, {t, f});
      Value inv = math.inverseFrequency(b, loc, i, lengths ? g.load(lengths, t) : Value());
      Value rotated = math.rotate(b, loc, v, g.load(x, {t, partner}), first, g.load(pos, t), inv);
      g.store(g.select(inRot, rotated, v), out, {t, f});
    });
  }
};

struct TbcLowerToGPUPass : tbc::impl::TbcLowerToGPUBase<TbcLowerToGPUPass> {
  using TbcLowerToGPUBase::TbcLowerToGPUBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto [option, value] : {std::pair{"weight-type", &weightType},
                                 std::pair{"kv-cache-type", &kvCacheType}})
      if (!isStorageType(*value)) {
        module.emitError(option) << " must be f32, bf16 or f16, not '" << *value << "'";
        return signalPassFailure();
      }
    cuda::TiledGemm tiled{tiledStages, tiledWarps, tiledWgmma, tiledCols, tiledK};
    if (std::string why = tiled.check(); !why.empty()) {
      module.emitError("tiled-") << why;
      return signalPassFailure();
    }
    cuda::FlashTile flashTile{flashKeys, flashRows, flashPasses, flashWgmma, flashOverlap};
    if (std::string why = flashTile.check(); !why.empty()) {
      module.emitError("flash-") << why;
      return signalPassFailure();
    }
    if (flashWgmma && kvCacheType != weightType) {
      module.emitError("flash-wgmma reads the KV cache from a ring of cp.async copies: "
                       "kv-cache-type must be the weight-type");
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> kernels, others;
    for (auto fn : module.getOps<func::FuncOp>())
      (fn->hasAttr(TbcDialect::KernelAttrHelper::getNameStr()) ? kernels : others).push_back(fn);
    for (func::FuncOp fn : kernels)
      for (Type t : llvm::concat<const Type>(fn.getArgumentTypes(), fn.getResultTypes())) {
        if (isScalarOperand(t))
          continue;
        Type e = cast<ShapedType>(t).getElementType();
        if (!e.isF32() && !e.isInteger(32)) {
          fn.emitError("the CUDA backend computes in f32 so far; kernel @")
              << fn.getSymName() << " uses " << t << ": compile with --dtype f32";
          return signalPassFailure();
        }
      }
    // The schedule (non-kernel functions) was recorded by the module writer;
    // what it says of the kernels' operands is read before it goes.
    RowAlignment alignment(module);
    for (func::FuncOp fn : others)
      fn.erase();
    OpBuilder b(module.getContext());
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(), b.getUnitAttr());
    b.setInsertionPointToEnd(module.getBody());
    auto gpuModule = gpu::GPUModuleOp::create(b, module.getLoc(), "tbc_kernels");
    int index = 0;
    for (func::FuncOp kernel : kernels) {
      Emitter emitter(b, kernel.getLoc(), gpuModule, index++, weightType, flashAttention,
                      flashTile, tiled, kvCacheType, alignment);
      if (failed(emitter.lower(kernel)))
        return signalPassFailure();
      kernel.erase();
    }
  }
};
} // namespace
