//===- KernelABI.h - how the CUDA kernels are launched ----------*- C++ -*-===//
//
// One definition, shared by the lowering (`--tbc-lower-to-gpu`, which writes
// the gpu.func bodies for this geometry) and the module writer (which records
// it in the manifest for the runtime's CUDA executor):
//
// * Every outlined tbc kernel becomes one or more `gpu.func`s, launched in
//   order (attention: append the chunk to the key/value caches, then attend),
//   each for the chunk sizes in its row range: an op can have variants by
//   chunk size, of which the runtime launches the one serving the chunk.
// * Each takes the kernel's operands, its results, the key/value caches
//   (attention), a scratch array where the kernel has one (attention:
//   memref<N x f32>, N = scratchFloats, the session's, reused by every
//   step), a staging array where the kernel has one (the tiled projection:
//   memref<? x width x bf16|f16>, the chunk's rows; stagingWidth), then two i64 scalars: T (rows of the chunk) and the number of
//   positions cached before it, then the kernel's scalar operands (i64: an
//   attention's `window(%w)`; the manifest steps' `scalars`, the same in
//   every decode step). Only attention (the kernels with caches)
//   reads the latter; the runtime passes 0 to the others, so that their
//   parameters are the same in every decode step (a CUDA graph's nodes for
//   them need no update: the runtime's CudaLaunchGraph.h), and the
//   lowering refuses a cacheless kernel that reads it. Activations are [T, width] memrefs with a
//   dynamic row stride and offset (views of a fused projection's output);
//   weights are their static shapes; token ids and positions are [T] i32.
// * Grid x is fixed per function; grid y counts blocks of `rowsPerBlock`
//   rows, at most kMaxGridY (kernels stride over the rest).
//
//===----------------------------------------------------------------------===//

#ifndef TBC_CONVERSION_TBCTOCUDA_KERNELABI_H
#define TBC_CONVERSION_TBCTOCUDA_KERNELABI_H

#include "tbc/Support/Limits.h"

#include "mlir/IR/Operation.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <algorithm>
#include <string>

namespace tbc::cuda {

constexpr int64_t kMaxGridY = 65535;
/// Threads of a block in the pointwise kernels.
constexpr int64_t kPointwiseBlock = 256;
/// Warps of a block in row-reduction and projection kernels.
constexpr int64_t kWarpsPerBlock = 8;
/// Token rows a projection warp computes at once (each weight row it reads
/// serves this many tokens) in the FMA kernel; a chunk of one row (decoding
/// a token) has its own variant computing one, as a GEMV: the weight is read
/// once either way, and the 7 clamped rows would only cost loads and FMAs.
constexpr int64_t kProjectionRows = 8;
/// With dependent launch (--cuda-pdl), an FMA projection's warp (the decode
/// GEMV's, the 8-row kernel's) asks L2 for the first
/// kGemvPrefetchBytes of each weight row it streams, one kPrefetchLineBytes
/// line a lane, before it waits for the kernel before it: the part of its
/// weight stream that can be in flight while that kernel drains. 4 KB of a
/// row (half of one at Llama-3-8B's K = 4096 in bf16) over the warps an SM
/// holds is a few MB over the GPU: L2 (50 MB on an H100) keeps it.
constexpr int64_t kPrefetchLineBytes = 128;
constexpr int64_t kGemvPrefetchBytes = 32 * kPrefetchLineBytes;
/// Split-KV attention (decoding, and f32 modules): kSplitKvWarps warps
/// share one (query row, head), each taking kSplitKvPositions consecutive
/// cached positions of every kSplitKvWarps * kSplitKvPositions, their partial
/// softmaxes combined in shared memory. Decoding has a block per head only,
/// so a long cache is read by that many warps at once, and each warp has the
/// loads of kSplitKvPositions positions in flight before it reduces.
constexpr int64_t kSplitKvWarps = 16, kSplitKvPositions = 4;
/// The query heads a split-KV block attends with (splitKvHeadsPerBlock): the
/// heads of a GQA group share their KV head's keys and values, so a block
/// that takes several reads each cached row once for all of them instead of
/// once a head. A lane holds, for n heads of d = ceil(D / 32) dims a lane,
/// n queries of d dims and n running softmaxes (max, sum, d values), the
/// run's P keys and P values of d dims, and the run's n P partial scores
/// (padded to a power of 2 for their transposed warp sum): 2 n d + 2 n +
/// 2 P d + pow2(n P) registers of f32, at most kSplitKvLaneRegisters of the
/// 128 a thread has at 16 warps a block (one block an SM), or one head.
/// Head dim 64: 8 heads (96); 128: 4 (88); 256: 2 (108; ptxas took 113-124
/// registers, no spill, in Gemma-2-9B's and Gemma-3-1B's kernels). Qwen2.5's
/// group of 7 at head dim 128 would take 134: 7 heads spilled 12-40 bytes
/// at 128 registers.
constexpr int64_t kSplitKvLaneRegisters = 112;
/// The largest divisor of the GQA group (heads / kvHeads) that keeps within
/// kSplitKvLaneRegisters (1 where none but 1 does: MHA, or a group of 7).
int64_t splitKvHeadsPerBlock(int64_t heads, int64_t kvHeads, int64_t headDim);
/// Decoding (chunks of at most kDecodeMaxRows rows): a (row, head)'s
/// visible positions are split into decodeSplits(heads / heads per block)
/// slices, each read by a block of kSplitKvWarps warps (flash-decoding) for
/// splitKvHeadsPerBlock heads at once, whose partial softmax per head
/// (max, sum, unnormalised values) goes to the scratch array; the last of a
/// (row, head)'s blocks to finish, found by a counter at the head of the
/// scratch array (back at 0 after), merges them. At batch 1 a block per
/// head would leave most of the GPU idle (32 blocks on 132 SMs at
/// Llama-3-8B's shapes), and a long cache would be read by that few warps.
constexpr int64_t kDecodeMaxRows = 15;
/// Blocks a decoding head's positions are spread over, given the blocks a
/// row's heads take (heads / splitKvHeadsPerBlock): `requested` where it is
/// not 0 (`--cuda-decode-splits`, 1 to kDecodeMaxSplits), else enough for
/// about kDecodeBlocks blocks in all, at most kDecodeMaxSplits.
constexpr int64_t kDecodeBlocks = 256, kDecodeMaxSplits = 16;
int64_t decodeSplits(int64_t headBlocks, int64_t requested = 0);
/// Tensor-core projections (bf16 weights): each warp computes a tile of
/// kMmaRows token rows x kMmaCols output columns with mma.sync m16n8k16
/// (f32 accumulation); a block holds kMmaWarps such warps side by side.
/// Chunks of fewer than kMmaRows rows (decoding) would leave most of each
/// tile idle: they run the FMA kernel's variants, reading the same 16-bit
/// weights with 128-bit loads.
constexpr int64_t kMmaRows = 16, kMmaCols = 8, kMmaK = 16, kMmaWarps = 4;
/// Tensor-core projections of long chunks (prefill: kTiledMinRows rows and
/// up, inputs of a multiple of kTiledK): a block of kTiledWarpsM x warpsN
/// warps computes kTiledRows token rows x kTiledCols GEMM columns, walking
/// k in steps of kTiledK whose 16-bit activation and weight tiles
/// `cp.async` copies into a ring of stages in dynamic shared memory
/// (kTiledStageBytes each; stages - 1 steps in flight while the warps
/// multiply one), each warp a tile of (kTiledRows / kTiledWarpsM) x
/// (kTiledCols / warpsN) from there (TiledGemm: `--tbc-lower-to-gpu`'s
/// tiled-stages and tiled-warps, tbc compile --cuda-gemm-stages and
/// --cuda-gemm-warps). The per-warp kernel above reads its 16 rows of
/// activations from global memory for every 8 columns; this one reads a
/// block's rows once for 128 columns and its weights once for 128 rows.
constexpr int64_t kTiledRows = 128, kTiledCols = 128, kTiledK = 32, kTiledWarpsM = 2,
                  kTiledMinRows = 64;
/// Stages of the tiled projection's ring: the default, and the range the
/// option takes (2: one step in flight; 8: 128 KB at 128 columns, 192 KB at
/// 256 (TiledGemm::cols), near the 227 KB a block may have).
constexpr int64_t kTiledStagesDefault = 4, kTiledStagesMin = 2, kTiledStagesMax = 8;
/// The tiled projection's shape where a build may choose: its ring's
/// stages, and its warps, 8 (2 x 4, a 64 x 32 tile a warp: one block an SM
/// at the registers they take) or 4 (2 x 2, 64 x 64 a warp, 128
/// accumulators: two blocks an SM, whose barriers then overlap, and 32
/// mma.sync per 8 ldmatrix.x4 where 8 warps have 16 per 6).
///
/// `wgmma` (modules for sm_90a alone, where it exists): each warpgroup of
/// the 8 warps multiplies 64 rows x all 128 columns with wgmma.mma_async
/// straight from the ring (its swizzle is wgmma's 64-byte one), where
/// mma.sync needs every fragment loaded by ldmatrix first. The hardware
/// swizzles absolute addresses, so the ring is placed at a multiple of
/// its swizzle's period (8 rows: ringAlign), up to that many bytes past
/// the dynamic shared memory's start (aligned to 16 bytes only).
///
/// `cols` (wgmma only): the block's GEMM columns, kTiledCols or
/// kTiledWideCols. At 256 each warpgroup runs m64n256k16 on 128
/// accumulators a thread (one block an SM), and a block reads 384 rows of
/// operands a k step for 128 x 256 outputs where two blocks of 128 x 128
/// read 512: a quarter less L2 traffic a multiply, which at 128 x 128
/// would take ~15 TB/s of L2 to keep an H100's tensor cores fed.
///
/// `k` (wgmma only): the k step, kTiledK or kTiledWideK. At 64 a stage's
/// rows are 128 bytes in wgmma's 128-byte swizzle (chunk c of row r at c ^
/// r % 8), and a step's fence, barrier and wait serve twice the multiplies.
/// A projection whose input width is not a multiple of it walks kTiledK.
///
/// On wgmma the epilogue reads the accumulators from shared memory: once the
/// k walk is done each thread stores its own into the ring's bytes
/// (accumulatorBytes: [accumulator, thread] f32, a warp's stores and loads
/// 32 consecutive floats) and the epilogue walks its column tiles in a loop.
/// In registers they stayed live through the epilogue's loads, norm,
/// activation and RoPE (sin, cos), and at the 128 registers of two blocks an
/// SM every example's kernels spilled 4-764 bytes (ptxas -v, sm_90a).
constexpr int64_t kWarpgroupRows = 64; // wgmma's M
constexpr int64_t kTiledWideCols = 256, kTiledWideK = 64;
struct TiledGemm {
  int64_t stages = kTiledStagesDefault;
  int64_t warps = 8;
  bool wgmma = false;
  int64_t cols = kTiledCols;
  int64_t k = kTiledK;
  int64_t warpsN() const { return warps / kTiledWarpsM; }
  /// The k step of a projection of input width K.
  int64_t kStep(int64_t K) const { return K % k == 0 ? k : kTiledK; }
  /// A stage of the ring: kTiledRows activation rows and `cols` weight
  /// rows of `kStep` 16-bit values.
  int64_t stageBytes(int64_t kStep) const { return (kTiledRows + cols) * kStep * 2; }
  /// wgmma's swizzle repeats every 8 rows: the ring starts at a multiple
  /// of that (0: mma.sync, whose ldmatrix addresses need no alignment).
  int64_t ringAlign(int64_t kStep) const { return wgmma ? 8 * kStep * 2 : 0; }
  /// The epilogue's accumulators in shared memory (wgmma; else 0): an f32
  /// for each of the block's kTiledRows x cols outputs, over the ring.
  int64_t accumulatorBytes() const { return wgmma ? kTiledRows * cols * 4 : 0; }
  int64_t sharedBytes(int64_t kStep) const {
    return std::max(stages * stageBytes(kStep) + ringAlign(kStep), accumulatorBytes());
  }
  /// Why a choice is not one the kernel takes ("" if it is).
  std::string check() const;
};
/// The tiled projection reads its activations as 16-bit values from a
/// staging array of the session ([T, K + kStagingStatsSlots],
/// stagingWidth): a first launch (`_tiles_stage`, a warp per row,
/// kWarpsPerBlock rows a block) writes each row there times the input gain,
/// rounded once (the bits the GEMM rounded itself before), and after it,
/// where the projection fuses a norm, the row's mean and rstd as two f32 in
/// the slots past K, which the GEMM's epilogue applies as before. The GEMM
/// then reads 2 bytes an activation where it read 4 (f32) once per column
/// block, and copies them into shared memory as they are: no conversion,
/// no norm statistics in its k walk. The staging launch reads each row two
/// or three times (statistics, then values): at 8B shapes ~1 % of the
/// GEMM's bytes.
constexpr int64_t kStagingStatsSlots = 8; // 16 bytes: rows stay 16-byte aligned
/// The tiled projection's blocks are numbered down groups of this many row
/// tiles, then across the column blocks (tiledBlockOrder), so that the
/// blocks an H100/H200 runs at once read weights that fit its L2.
constexpr int64_t kTiledRowGroup = 8;
/// Flash attention (modules with 16-bit weights, head dims a multiple of 16
/// up to kFlashMaxHeadDim): a block of kFlashWarps warps takes
/// kFlashRows query rows of one head, kMmaRows per warp (or kFlashTallRows,
/// FlashTile below), and walks the
/// visible cached positions in tiles of kFlashKeys staged in shared memory,
/// both products (QK^T and PV) on tensor cores with an online softmax in
/// registers. A chunk of fewer than kFlashMinRows rows (decoding) runs the
/// split-KV kernel, a variant of its own.
constexpr int64_t kFlashWarps = 4, kFlashRows = kMmaRows * kFlashWarps, kFlashKeys = 32,
                  kFlashMaxHeadDim = 256, kFlashMinRows = kMmaRows;
/// Tiles of kFlashWideKeys positions where a build asks for them
/// (`--cuda-flash-keys 64`, the flash-keys option: flashTileKeys): twice
/// the tensor-core work for a tile's fixed costs (its wait, barrier,
/// running-max shuffles, rescale and loop control), at 249 registers (228
/// at 32) and twice the shared memory (104 KB at head dim 128: still two
/// blocks an SM).
constexpr int64_t kFlashWideKeys = 64;
/// Blocks of kFlashTallRows query rows where a build asks for them
/// (`--cuda-flash-rows 128`, the flash-rows option: flashBlockRows): two
/// 16-row MMA tiles a warp, as FlashAttention-2 runs hd128, so that every
/// key and value fragment a warp loads from shared memory feeds twice the
/// MMAs, and a tile's fixed costs (copies, wait, barrier, loop) serve twice
/// the rows. A lane's query fragments of two tiles would take 64 registers
/// at head dim 128 beside 128 output accumulators: the block stages its
/// queries, scaled and rounded, in shared memory instead, and the walk
/// reads them by ldmatrix (flashSharedBytes).
constexpr int64_t kFlashTallRows = 2 * kFlashRows;
/// The flash kernel's tile shape a build asks for (`--cuda-flash-keys`,
/// `--cuda-flash-rows`, `--cuda-flash-passes`; the pass options of those
/// names).
struct FlashTile {
  int64_t keys = kFlashKeys;
  int64_t rows = kFlashRows;
  /// Walks over the positions past head dim 128: 2 (each half of the
  /// output dims, the scores computed twice) or 1 (flashPassDims).
  int64_t passes = 2;
  /// Both products on sm_90a's wgmma.mma_async (`--cuda-flash-wgmma`,
  /// modules for sm_90a alone; flashOnWgmma): every 4 warps of the block
  /// are a warpgroup (flashBlockWarps), whose m64nBck16 multiplies read
  /// the staged queries and the ring's keys by descriptor, and whose
  /// m64nDk16 ones take each warp's P from registers (mma.sync's A
  /// fragments) and the ring's values as stored (N-major), all in wgmma's
  /// 128-byte swizzle, where mma.sync loads every key and value fragment
  /// by ldmatrix (and holds a lane's query fragments). The next tile's
  /// scores run while the warps work on a tile's softmax
  /// (FlashAttention.cpp).
  bool wgmma = false;
  /// On wgmma, FlashAttention-3's order within a warpgroup
  /// (`--cuda-flash-overlap`): a tile's loop issues the next tile's
  /// scores and then the previous tile's P V, so that both run while the
  /// warps work on the tile's softmax, and waits for them after it (the
  /// rescale of O by the new max then follows P V). The ring keeps the tile
  /// whose values P V reads (flashStages).
  bool overlap = false;
  /// Why a choice is not one the kernel takes ("" if it is): "keys must be
  /// ...", "rows ..." or "passes ...", which the pass options and `tbc
  /// compile` (--cuda-flash-) prefix.
  std::string check() const;
};
/// Output dims a flash walk over the positions accumulates: the whole head
/// up to 128; past that (Gemma's 256) half of it, one walk per half, each
/// computing the scores again (FlashAttention.cpp), unless the build asks
/// for one pass (`--cuda-flash-passes 1`: the queries in shared memory
/// leave room for a whole row of accumulators). A half of a multiple of 16
/// is a whole number of 8-wide MMA tiles.
constexpr int64_t flashPassDims(int64_t headDim, FlashTile tile) {
  return headDim > 128 && tile.passes > 1 ? headDim / 2 : headDim;
}
/// Whether a flash kernel at `headDim` runs its products on wgmma
/// (FlashTile::wgmma): head dims of whole 128-byte swizzle rows (64 16-bit
/// values) up to 128 (one walk, a ring; P V's N up to wgmma's 256).
constexpr bool flashOnWgmma(int64_t headDim, FlashTile tile) {
  return tile.wgmma && headDim % 64 == 0 && headDim <= 128;
}
/// Whether a flash kernel at `headDim` takes FlashAttention-3's order of
/// its wgmma products (FlashTile::overlap): where it runs on wgmma.
constexpr bool flashOverlaps(int64_t headDim, FlashTile tile) {
  return tile.overlap && flashOnWgmma(headDim, tile);
}
/// The flash kernel's tiles of keys and values sit in a ring of
/// flashStages stages of dynamic shared memory, each row padded by 8
/// elements (flashSharedBytes). Up to head dim 128, 3 stages, which
/// cp.async fills 2 tiles ahead of the one the warps work on (16-bit caches
/// of the weights' type; others are staged through registers into the first
/// stage); past it in one pass 2 (67 KB of tiles at head dim 256, with the
/// queries 101 KB: still two blocks an SM); in two passes one, staged
/// through registers (Gemma-2's two-pass kernel at head dim 256 had 252
/// registers, and copies ahead spilled 44-84 bytes).
/// On wgmma (flashOnWgmma) the walk is pipelined: the ring holds the tile
/// the warps work on and the next, whose scores are in flight, so 4 stages
/// (81 KB with the queries at head dim 128: two blocks an SM) keep two
/// tiles' copies in flight as 3 do without; with overlap (flashOverlaps)
/// it holds the tile before too, whose values P V reads, so 5 (97 KB: still
/// two blocks an SM).
constexpr int64_t flashStages(int64_t headDim, FlashTile tile) {
  if (flashPassDims(headDim, tile) != headDim)
    return 1;
  if (flashOnWgmma(headDim, tile))
    return flashOverlaps(headDim, tile) ? 5 : 4;
  return headDim > 128 ? 2 : 3;
}
/// The query rows of a flash block at `headDim` where the build asks
/// `tile.rows`: as asked up to head dim 128, else kFlashRows (a row of
/// accumulators at 256 takes 128 registers a lane and m-tile).
constexpr int64_t flashBlockRows(int64_t headDim, FlashTile tile) {
  return headDim <= 128 ? tile.rows : kFlashRows;
}
/// The positions of a flash tile at `headDim` where the build asks
/// `tile.keys`: as asked up to head dim 128, else kFlashKeys (Gemma-2's
/// two-pass kernel at 256, 252-255 registers at 32 positions, spilled
/// 212-252 bytes at 64). Blocks of 128 rows take 64 only on wgmma (two
/// warpgroups; FlashTile::check): mma.sync's two m-tiles a warp spilled
/// ~200 bytes with them, so a head dim that keeps mma.sync takes 32.
constexpr int64_t flashTileKeys(int64_t headDim, FlashTile tile) {
  if (headDim > 128 || (flashBlockRows(headDim, tile) > kFlashRows && !flashOnWgmma(headDim, tile)))
    return kFlashKeys;
  return tile.keys;
}
/// wgmma's 128-byte swizzle repeats every 8 rows of 128 bytes, and the
/// hardware swizzles absolute addresses: on wgmma the rings and the query
/// tile start at multiples of this, the first up to this many bytes past
/// the dynamic shared memory's start (aligned to 16 bytes only).
constexpr int64_t kFlashSwizzleBytes = 8 * 128;
/// The warps of a flash block: kFlashWarps, or on wgmma with 128 rows two
/// warpgroups (a warp's 16 rows as ever): each key and value tile the
/// block copies feeds twice the rows, whose registers (200 a thread at head
/// dim 128) leave room for one such block an SM: the 8 warps that two
/// 4-warp blocks have.
constexpr int64_t flashBlockWarps(int64_t headDim, FlashTile tile) {
  return flashOnWgmma(headDim, tile) ? flashBlockRows(headDim, tile) / kMmaRows : kFlashWarps;
}
/// Whether the block stages its queries in shared memory (two MMA tiles a
/// warp, kFlashTallRows, one pass past head dim 128, or products on wgmma);
/// else each lane keeps its fragments in registers.
constexpr bool flashStagesQueries(int64_t headDim, FlashTile tile) {
  return flashBlockRows(headDim, tile) > kFlashRows ||
         (headDim > 128 && flashPassDims(headDim, tile) == headDim) ||
         flashOnWgmma(headDim, tile);
}
/// The rings of key and value tiles, then (flashStagesQueries) the query
/// tile [rows, headDim + 8]. On wgmma (flashOnWgmma) the key ring
/// [stages, headDim / 64, positions, 64], the query tile [headDim / 64,
/// rows, 64] and the value ring (the keys' shape), unpadded in wgmma's
/// 128-byte swizzle, from the next multiple of kFlashSwizzleBytes.
constexpr int64_t flashSharedBytes(int64_t headDim, FlashTile tile) {
  const int64_t stages = flashStages(headDim, tile), keys = flashTileKeys(headDim, tile);
  const int64_t queries = flashBlockRows(headDim, tile) * headDim * 2;
  if (flashOnWgmma(headDim, tile))
    return kFlashSwizzleBytes + 2 * stages * keys * headDim * 2 + queries;
  return stages * keys * (headDim + 8 + flashPassDims(headDim, tile) + 8) * 2 +
         (flashStagesQueries(headDim, tile)
              ? flashBlockRows(headDim, tile) * (headDim + 8) * 2
              : 0);
}

/// What a gpu.func of an op computes, where the op has more than one.
enum class Body {
  op,          // the op itself, the only function (norms, pointwise ops)
  cacheAppend, // attention: the chunk's keys and values into the caches
  splitKv,     // attention: kSplitKvWarps warps per (query row, heads of a group)
  decodeSlice, // attention: a block per (row, heads, slice), partials to scratch
  flash,       // attention: the flash kernel on tensor cores
  fma,         // projection: a warp per output column, rowsPerBlock rows
  mma,         // projection: tensor-core tiles, a warp each
  tiledStage,  // projection: the chunk's activations, normalised, as 16-bit rows
  tiledMma,    // projection: tensor-core tiles, a block staging shared memory
};

struct Launch {
  std::string suffix; // appended to the kernel's symbol
  int64_t blockX = 1, blockY = 1;
  int64_t gridX = 1;
  int64_t rowsPerBlock = 1;
  Body body = Body::op;
  int64_t minRows = 1, maxRows = 0; // the chunks it serves (0: no bound)
  int64_t sharedBytes = 0;          // dynamic shared memory a block takes
};

/// Whether the projection `op` runs on tensor cores when weights are stored
/// as `weightType` ("f32", "bf16" or "f16"): 16-bit weights in [out, in]
/// layout with an input width that is a multiple of kMmaK. Such a kernel
/// reads its weight as memref<out x in x bf16|f16> (the runtime converts it
/// at bind time); every other projection reads f32 and runs on the FMA units.
bool usesTensorCores(mlir::Operation *op, llvm::StringRef weightType);

/// Whether the tensor-core projection `op` also has the block-tiled variant
/// for long chunks (kTiledRows above): its input width is a multiple of
/// kTiledK.
bool usesTiledProjection(mlir::Operation *op, llvm::StringRef weightType);

/// Whether the attention `op` runs the flash kernel (kFlashRows above) in a
/// module whose weights are stored as `weightType`. Its products round Q, K,
/// P and V to that 16-bit type, as a bf16 model's attention does, so f32
/// modules keep the f32 kernel. `allowed`: the flash-attention option of
/// --tbc-lower-to-gpu (tbc compile --cuda-attention).
bool usesFlashAttention(mlir::Operation *op, llvm::StringRef weightType, bool allowed = true);

/// The gpu.funcs the outlined op `op` becomes, in launch order.
/// `gemm`: the tiled projection's shape (TiledGemm above); `decodeSplits`:
/// decodeSplits' `requested`.
llvm::SmallVector<Launch, 4> launchesFor(mlir::Operation *op, llvm::StringRef weightType,
                                         bool flashAttention = true, TiledGemm gemm = {},
                                         FlashTile flash = {}, int64_t decodeSplits = 0);

/// f32 values of scratch the kernels of `op` take (0: no scratch operand):
/// attention's decode slices, [kDecodeMaxRows][heads][splits][2 + head dim]
/// (max, sum, values).
int64_t scratchFloats(mlir::Operation *op, int64_t decodeSplits = 0);

/// The width of the 16-bit [T, width] staging array the kernels of `op` take
/// (0: none): the tiled projection's activations, K of them, then its
/// statistics' kStagingStatsSlots (kTiledRows above). The element type is
/// the module's 16-bit weight type.
int64_t stagingWidth(mlir::Operation *op, llvm::StringRef weightType);

/// Whether `op` reads its weight operand transposed to [out, in] (GPT-2's
/// [in, out] Conv1D weights: the runtime transposes them at bind time as a
/// `pack` with a panel width of 1).
bool transposesWeight(mlir::Operation *op);

} // namespace tbc::cuda

#endif // TBC_CONVERSION_TBCTOCUDA_KERNELABI_H
