//===- LaunchPlan.cpp - the launches of each kernel (KernelABI.h) ---------===//
//
// How each outlined kernel is launched: its variants by chunk size (a GEMV,
// 8 rows, tensor-core tiles; split-KV, decoding's slices or the flash
// kernel), their grids and blocks, shared memory and register bounds, and
// the scratch and staging arrays they need.
//
//===----------------------------------------------------------------------===//

#include "LaunchPlan.h"

#include "tbc/Conversion/TbcToCUDA/KernelABI.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>

using namespace mlir;
using namespace tbc;
using llvm::divideCeilSigned;
using cuda::lastDim;

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
  const int64_t group = heads / kvHeads, d = divideCeilSigned(headDim, 32), P = kSplitKvPositions;
  for (int64_t n = group; n > 1; --n)
    if (group % n == 0 &&
        2 * n * d + 2 * n + 2 * P * d + int64_t(llvm::PowerOf2Ceil(n * P)) <= kSplitKvLaneRegisters)
      return n;
  return 1;
}
int64_t cuda::headsPerBlock(AttentionOp a) {
  return cuda::splitKvHeadsPerBlock(a.getNumHeads(), a.getNumKvHeads(), a.getHeadDim());
}

int64_t cuda::decodeSplits(int64_t headBlocks, int64_t requested) {
  int64_t splits = requested ? requested : divideCeilSigned(kDecodeBlocks, headBlocks);
  return std::clamp<int64_t>(splits, 1, kDecodeMaxSplits);
}
int64_t cuda::decodeSlices(AttentionOp a, int64_t requested) {
  return cuda::decodeSplits(a.getNumHeads() / cuda::headsPerBlock(a), requested);
}

int64_t cuda::decodePartialsOffset(AttentionOp a) {
  int64_t heads = a.getNumHeads();
  if (auto module = a->getParentOfType<ModuleOp>())
    module.walk([&](AttentionOp other) { heads = std::max<int64_t>(heads, other.getNumHeads()); });
  return llvm::alignTo(cuda::kDecodeMaxRows * heads, 32);
}
int64_t cuda::decodePartialsStride(AttentionOp a, int64_t requested) {
  return llvm::alignTo(decodeSlices(a, requested) * (2 + a.getHeadDim()), 32);
}

int64_t cuda::scratchFloats(Operation *op, int64_t decodeSplits) {
  auto a = dyn_cast<AttentionOp>(op);
  if (!a)
    return 0;
  return decodePartialsOffset(a) +
         kDecodeMaxRows * a.getNumHeads() * decodePartialsStride(a, decodeSplits);
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
                                               FlashTile flash, int64_t decodeSplits) {
  auto pointwise = [](int64_t width, Body body = Body::op) {
    return Launch{"", kPointwiseBlock, 1, divideCeilSigned(width, kPointwiseBlock), 1, body};
  };
  if (auto a = dyn_cast<AttentionOp>(op)) {
    int64_t H = a.getNumHeads(), headBlocks = H / cuda::headsPerBlock(a);
    // Decoding chunks append their keys and values in the slices' kernel
    // (splitKvAttention): the append launch serves longer chunks only.
    Launch append = pointwise(a.getNumKvHeads() * a.getHeadDim(), Body::cacheAppend);
    append.minRows = kDecodeMaxRows + 1;
    Launch slices{"_attend_decode", 32, kSplitKvWarps, headBlocks * decodeSlices(a, decodeSplits), 1,
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
    int64_t fmaGrid = divideCeilSigned(p.getResultWidth(), kWarpsPerBlock);
    bool mma = usesTensorCores(op, weightType);
    SmallVector<Launch, 4> variants{
        Launch{"_row1", 32, kWarpsPerBlock, fmaGrid, 1, Body::fma, 1, 1},
        Launch{mma ? "_rows8" : "", 32, kWarpsPerBlock, fmaGrid, kProjectionRows, Body::fma, 2,
               mma ? kMmaRows - 1 : 0}};
    if (!mma)
      return variants;
    bool tiled = usesTiledProjection(op, weightType);
    variants.push_back(Launch{"", 32, kMmaWarps,
                              divideCeilSigned(divideCeilSigned(p.getResultWidth(), kMmaCols),
                                               kMmaWarps),
                              kMmaRows, Body::mma, kMmaRows, tiled ? kTiledMinRows - 1 : 0});
    if (tiled) {
      // A GLU's GEMM columns are its gate and up columns (tiledProjection).
      auto f = dyn_cast<FusedLinearOp>(op);
      int64_t columns = p.getResultWidth() * (f && f.getGlu() ? 2 : 1);
      // Its activations first, rounded to 16 bits with their norm
      // statistics beside them (KernelABI.h).
      variants.push_back(Launch{"_tiles_stage", 32, kWarpsPerBlock, 1, kWarpsPerBlock,
                                Body::tiledStage, kTiledMinRows});
      variants.push_back(Launch{"_tiles", 32, gemm.warps, divideCeilSigned(columns, gemm.cols),
                                kTiledRows, Body::tiledMma, kTiledMinRows, 0,
                                gemm.sharedBytes(gemm.kStep(lastDim(p.getInput().getType())))});
    }
    return variants;
  }
  if (auto n = dyn_cast<NormOpInterface>(op))
    return {Launch{"", 32, kWarpsPerBlock, divideCeilSigned(n.getNumGroups(), kWarpsPerBlock), 1}};
  if (isa<AddNormOp, NormAddOp>(op))
    return {Launch{"", 32, kWarpsPerBlock, 1, 1}};
  if (auto s = dyn_cast<SplitOp>(op))
    return {pointwise(lastDim(s.getInput().getType()))};
  return {pointwise(lastDim(op->getResult(0).getType()))};
}

bool cuda::pairsRopeWarps(RotaryEpilogueAttr rope, const cuda::Launch &launch) {
  if (!rope || launch.body != cuda::Body::fma || launch.maxRows != 1)
    return false;
  return rope.getStyle() == RopeStyle::gptj ||
         (rope.getRotaryDim() == rope.getHeadDim() && rope.getRotaryDim() % 8 == 0);
}

int64_t cuda::minBlocksPerSM(Operation *op, const cuda::Launch &launch, bool halfWeights,
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
  // llama-dynamic fixture's f32 QKV and spilled 8 bytes. So too a
  // LayerNorm prologue with a GLU epilogue (8 rows of mean, rstd and two
  // halves' sums and corrections): at 128 registers Command R's and
  // StableLM 2's bf16 gate/up kernels spilled 52-76 bytes.
  if (launch.body == Body::fma && launch.rowsPerBlock > 1)
    return rope || (layerNorm && fused.getGlu()) ? 1 : layerNorm ? 2 : 0;
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
