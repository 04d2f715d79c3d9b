//===- Emitter.h - the kernel bodies of --tbc-lower-to-gpu ------*- C++ -*-===//
//
// An Emitter writes the gpu.funcs of one outlined tbc kernel, one per
// launch of its plan (LaunchPlan.cpp), op by op with GpuBuilder. Its
// members are defined by kernel family: LowerToGPU.cpp (the functions'
// signatures, shared memory and dispatch), RowKernels.cpp (pointwise ops,
// norms and their statistics, RoPE), Projection.cpp (GEMVs, the 8-row FMA
// kernel and the warp-tile mma.sync kernel), TiledProjection.cpp (the
// staging launch and the block-tiled GEMM), SplitKvAttention.cpp (split-KV
// attention and decoding's slices); the flash kernel is FlashAttention.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_LIB_CONVERSION_TBCTOCUDA_EMITTER_H
#define TBC_LIB_CONVERSION_TBCTOCUDA_EMITTER_H

#include "GpuBuilder.h"
#include "LaunchPlan.h"

#include "tbc/Analysis/RowAlignment.h"
#include "tbc/Conversion/TbcToCUDA/KernelABI.h"

#include "../Common/KernelMath.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"

#include <optional>
#include <tuple>

namespace tbc::cuda {

using mlir::ArrayRef;
using mlir::DenseSet;
using mlir::LogicalResult;
using mlir::MemRefType;
using mlir::Operation;
using mlir::StringRef;
using mlir::success;
using llvm::cast;
using llvm::dyn_cast;
namespace func = mlir::func;

/// Writes the gpu.funcs of one outlined kernel: the state of the function
/// being written (its operands, shared memory views, the chunk's rows T and
/// cached positions) and the kernel bodies, which read it.
class Emitter {
public:
  Emitter(OpBuilder &b, Location loc, gpu::GPUModuleOp gpuModule, int index,
          StringRef weightType, bool flash, cuda::FlashTile flashTile, cuda::TiledGemm tiled,
          StringRef kvCacheType, bool dependentLaunch, int64_t decodeSplits,
          const RowAlignment &alignment)
      : g{b, loc}, b(b), loc(loc), gpuModule(gpuModule), index(index),
        weightType(weightType), flash(flash), flashTile(flashTile), tiled(tiled),
        cacheType(storageElementType(b, kvCacheType)), dependentLaunch(dependentLaunch),
        decodeSplits(decodeSplits), alignment(alignment) {}

  /// Builds the gpu.funcs of `kernel` (an outlined tbc.kernel function).
  LogicalResult lower(func::FuncOp kernel);

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
  bool dependentLaunch; // the pass's dependent-launch option
  int64_t decodeSplits; // its decode-splits option (0: cuda::decodeSplits chooses)
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

  //===--- Shared by the kernels ------------------------------------------===//

  /// Whether x's rows start 16 bytes aligned: true where the schedule says
  /// so for every call (no branch in the kernel, and no element-wise copy
  /// of each load for NVPTX's loop strength reduction to work through:
  /// bench/NOTES.md), else tested at run time (GpuBuilder::rowsAligned16).
  Value rowsAligned16(Value x) {
    if (alignedRows.contains(x))
      return arith::ConstantOp::create(b, loc, b.getBoolAttr(true));
    return g.rowsAligned16(x);
  }

  static int64_t width(Value v) { return cast<MemRefType>(v.getType()).getShape().back(); }

  /// The body of `launch`'s function for `op` (LowerToGPU.cpp).
  LogicalResult emit(Operation *op, const cuda::Launch &launch, ValueRange in,
                     ValueRange out, ValueRange caches);

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

  //===--- RowKernels.cpp: a thread per element, a warp per row -----------===//

  LogicalResult appendToCaches(Value k, Value v, ValueRange caches);

  /// A row's norm statistics over its n values: {mean (LayerNorm only,
  /// else null), rstd}. `rowSum(term)` sums term(v) over the row for the
  /// values v its caller loads (scalars or vectors) across the threads
  /// that share the row; the mean reaches a vector term broadcast.
  std::pair<Value, Value>
  rowStatistics(NormKind norm, int64_t n, double eps,
                llvm::function_ref<Value(llvm::function_ref<Value(Value)>)> rowSum);
  /// The same for several rows summed side by side: `rowSums(term)` sums
  /// term(r, v) over each row r.
  SmallVector<std::pair<Value, Value>>
  rowsStatistics(NormKind norm, int64_t n, double eps,
                 llvm::function_ref<SmallVector<Value>(
                     llvm::function_ref<Value(int64_t, Value)>)> rowSums);

  /// sum over i in [lane, n) step 32 of f(i), summed over the warp.
  Value warpReduce(Value lane, int64_t n, llvm::function_ref<Value(Value)> f);

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
                      int64_t maxLoads, llvm::function_ref<Value(Value)> term);

  /// Row `row`'s norm statistics over all of x's width, summed by the warp:
  /// two passes for LayerNorm, 128-bit loads with 4 in flight where
  /// `aligned` is given (rowPartialSum: the value, or the run-time test, of
  /// x's rows starting 16-byte aligned; x's width a multiple of 4), else a
  /// float at a time.
  std::pair<Value, Value> warpRowStatistics(NormKind norm, Value x, Value row, double eps,
                                            Value aligned);

  /// One warp per row (per group): RMSNorm, LayerNorm, or with `lhs` the
  /// residual add first (`sum` receives it), or with `residual` that added
  /// to the normalised row as it is stored (tbc.norm_add).
  LogicalResult rowNorm(NormKind kind, Value lhs, Value x, Value w, Value bias, Value sum,
                        Value out, double eps, double offset, int64_t groups,
                        Value residual = Value());

  /// A RoPE op on its own (not fused into a projection): a thread per
  /// output element, rotated against its partner column.
  LogicalResult rope(RopeOp r, Value x, Value pos, Value lengths, Value out);

  //===--- Projection.cpp: GEMVs, 8 rows, a warp per 16 x 8 tile ----------===//

  /// The projection epilogue for one output element: accumulator `z(h)`
  /// of half h (gate, up) -> mean correction, rstd, bias, then GLU or the
  /// activation, then the scale and the soft-cap, exactly as
  /// tbc.fused_linear says; the
  /// residual, when there is one, is added as the element is stored
  /// (`storeOutput`), where its token row is known.
  struct Epilogue {
    Value bias, corr;
    std::optional<NormKind> norm;
    std::optional<Activation> act;
    bool glu;
    std::optional<double> scale, cap;
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
                 llvm::function_ref<Value(int64_t)> acc);

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
  std::pair<Value, int64_t> pairedRopeColumn(RotaryEpilogueAttr attr);

  /// The output column of this warp of an FMA projection launch, and for
  /// RoPE pairs split over two warps (pairsRopeWarps) how far apart their
  /// warps are (else 0).
  std::pair<Value, int64_t> warpColumn(RotaryEpilogueAttr rope, const cuda::Launch &launch);

  /// With dependent launch, before the wait: an FMA projection launch (the
  /// decode GEMV, the 8-row kernel; else nothing) asks L2 for the first
  /// kGemvPrefetchBytes of each weight row its warp is about to stream (a
  /// GLU's up row too), a line a lane. Weights are never written, so this
  /// may run while the kernel before it still does: the weight stream
  /// starts as that one drains.
  void prefetchWeightRows(Operation *op, const cuda::Launch &launch, ValueRange in,
                           ValueRange out);

  /// A projection: on tensor cores (Body::mma), or on the FMA units with one
  /// warp per output column o and launch.rowsPerBlock token rows:
  /// z = prologue(x W[o]^T) + b[o], then the epilogue.
  LogicalResult projection(const cuda::Launch &launch, Value x, Value w, Value bias, Value corr,
                           const InputGain &gain, Value out, std::optional<NormKind> norm,
                           double eps, std::optional<Activation> act, bool glu,
                           std::optional<double> scale, std::optional<double> cap,
                           const Rotary *rope, Value residual);

  /// The 16-bit type the tensor-core kernels read weights in, and their
  /// mma.sync operands.
  MmaHalf half() { return MmaHalf{b, loc, weightType == "f16"}; }
  Type halfType() { return half().type(); }

  /// A projection on tensor cores: a warp computes kMmaRows token rows x
  /// kMmaCols output columns (and, for a GLU, the matching up columns) with
  /// mma.sync m16n8k16, bf16 weights [out, in] and activations rounded to
  /// bf16, accumulating in f32 (fragment layout: MmaHalf in GpuBuilder.h).
  LogicalResult mmaProjection(Value x, Value w, Value out, const Epilogue &e,
                              const InputGain &gain, double eps, const Rotary *rope);

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
                 WeightRow &weightRow);

  //===--- TiledProjection.cpp: staging and the block-tiled GEMM ----------===//

  /// The weight row GEMM column ("slot") `s` of a tiled projection reads:
  /// a GLU's gate and up rows interleaved (slot 2j gate j, 2j + 1 up j), a
  /// NeoX RoPE's pair halves interleaved in each head's rotary dims (slot
  /// 2j of a head its dim j, 2j + 1 its dim j + rotary_dim / 2), every other
  /// column itself. Either way the two values of every pair land in one
  /// lane's adjacent accumulators (mma columns 2 quad and 2 quad + 1), as
  /// GPT-J's adjacent pairs already do, so the epilogue is the same for all
  /// tiles and needs no branch by warp.
  Value slotRow(Value s, const Epilogue &e, const Rotary *rope);

  /// A projection's norm statistics summed in its main loop from the f32
  /// activations it loads there (the GEMV's x, 4 or 8 a lane a step; the
  /// tiled kernel did the same until its staging launch took the norm):
  /// per row the sum of d^2
  /// and, for a LayerNorm, of d, where d is x less the row's first value.
  /// The shift keeps the one-pass variance E[d^2] - E[d]^2 from cancelling
  /// where a row's mean is large against its spread (the prologues of the
  /// other kernels take the mean first, then the centred squares).
  struct WalkRowStats;

  /// The (column block, first row tile) of this block of a tiled
  /// projection's grid (x: column blocks, y: row tiles), renumbered so that
  /// blocks that run at once share their weights: the GPU starts blocks in
  /// the order of x + y gridDim.x, which took a whole row of column blocks
  /// first (for an 8B model's gate/up, 132 blocks at once read 132 MB of
  /// weights, more than L2 holds, and every row tile read them all again
  /// from memory). Numbered down groups of kTiledRowGroup row tiles
  /// instead, a wave of 132 blocks reads 8 row tiles and 17 column blocks
  /// (16 + 17 MB); a bijection, as Triton's grouped ordering.
  std::pair<Value, Value> tiledBlockOrder();

  /// The tiled projection's first launch: each row of x (a warp a row) into
  /// the staging array as the GEMM's 16-bit A operand, times the input gain
  /// and rounded once, as the GEMM rounded it itself before; then, where the
  /// projection fuses a norm, the row's (mean, rstd) as two f32 in its
  /// kStagingStatsSlots slots past K (statistics in two passes over the row,
  /// as the norm kernels take them), which the GEMM's epilogue applies.
  /// Rows whose activations are not 16-byte aligned load a float at a time
  /// (GpuBuilder::loadRows).
  LogicalResult stageActivations(Value x, const InputGain &gain, std::optional<NormKind> norm,
                                 double eps);

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
  LogicalResult tiledProjection(Value w, Value out, Epilogue e, const Rotary *rope);

  //===--- SplitKvAttention.cpp: split-KV attention, decoding's slices ----===//

  /// Shared memory of an attention block: per head of the block and warp,
  /// its running max, its sum and its 32 * ceil(D / 32) weighted values.
  MemRefType attentionPartsType(AttentionOp a);

  /// The attend launches: the flash kernel (FlashAttention.h) where the op
  /// and the module's weight type allow it, else the split-KV kernel, and
  /// for decoding (a few rows) the split-KV kernel over slices of the cache,
  /// which append to the caches and merge themselves. Decoding never runs
  /// the flash kernel: a flash
  /// block's 64 rows would be mostly idle, and it would read the cache with
  /// one block per head.
  LogicalResult attention(AttentionOp a, cuda::Body body, Value q, Value k, Value v,
                          Value relativeTable, ValueRange caches, Value out);

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
  LaneDims laneDims(int64_t D, Value lane);

  /// Where slice `slice` of (row t, head h) keeps its partial softmax in
  /// the scratch array: max, sum, then the D unnormalised values.
  /// (cuda::scratchFloats has the layout.)
  Value sliceBase(AttentionOp a, Value t, Value h, Value slice);

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
                        ValueRange caches, Value out, int64_t slices);

  /// A decoding block's share of the append (no launch of its own, where it
  /// was one of three a layer): the chunk's keys and values at the new
  /// positions [past, past + T) that lie in the block's slice [start, end),
  /// for its KV head's columns, written to the caches before the block
  /// reads them (after a barrier, which orders the block's global memory
  /// too). Every new position past + r lies in a slice of row r, so all
  /// reach the caches; the blocks of a GQA group's heads and of later rows
  /// write the same values to the same places.
  void appendSlice(AttentionOp a, Value k, Value v, ValueRange caches, Value start, Value end,
                   Value kvCol);

  /// The visible cached positions [lo, hi) of chunk row t, at position p.
  std::tuple<Value, Value, Value> visibleRange(AttentionOp a, Value t);

  /// Positions a decoding slice of [lo, hi) holds: ceil((hi - lo) / slices)
  /// rounded up to whole sweeps of the block's warps (kSplitKvWarps runs of
  /// kSplitKvPositions), so that a short cache fills few slices and leaves
  /// no warp of them idle. The first slice is never empty (hi > lo).
  Value sliceLength(Value lo, Value hi, int64_t slices);
  /// The slices of [lo, hi) that hold positions (the first `used`).
  Value usedSlices(AttentionOp a, Value lo, Value hi);

  /// Decoding's merge without a launch of its own, run by the warp of every
  /// block that wrote a partial of (row t, head h), of the `used` slices:
  /// each lane makes its stores visible to the GPU (membar.gl), the warp
  /// meets (bar.warp.sync), and lane 0 counts the block in (an atomic add
  /// on the (row, head)'s counter, cuda::scratchFloats). The block that
  /// counts last sees every other's partial (each was fenced before its
  /// count; this block fences after its own, and reads them in L2) and
  /// merges them (combineSlices), then sets the counter back to 0 for the
  /// next launch.
  void mergeIfLast(AttentionOp a, Value t, Value h, Value lane, Value used, Value out);

  /// One warp merges the partial softmaxes of (row t, head h)'s first `used`
  /// slices, those that hold positions (the rest were not written), into the
  /// output row, as a block's warp merges its warps' for its head. Every
  /// slice read is non-empty, so every max is finite.
  void combineSlices(AttentionOp a, Value t, Value h, Value lane, Value used, Value out);

  /// Head h's output in row t: the lane's unnormalised values `acc` (its
  /// dims `l`) over the softmax's sum.
  void storeHeadRow(AttentionOp a, const LaneDims &l, Value out, Value t, Value h,
                    ArrayRef<Value> acc, Value sum);
};

} // namespace tbc::cuda

#endif // TBC_LIB_CONVERSION_TBCTOCUDA_EMITTER_H
