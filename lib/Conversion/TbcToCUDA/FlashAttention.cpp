//===- FlashAttention.cpp - tensor-core attention for prefill -------------===//
//
// FlashAttention-2's schedule on mma.sync m16n8k16 (f32 accumulation):
//
// * a block of 4 warps owns 64 query rows of one head, a warp 16 of them;
//   each lane holds its two rows' (group, group + 8) query fragments, scaled
//   and rounded to 16 bits, for the whole walk. With --cuda-flash-rows 128
//   (head dims up to 128) a block owns 128 rows, a warp two 16-row MMA
//   tiles (m-tiles) of them, as FlashAttention-2 runs head dim 128: each
//   key and value fragment feeds both m-tiles' MMAs, and a tile's copies,
//   wait, barrier and loop serve twice the rows. Two m-tiles' query
//   fragments would take 64 registers beside 128 output accumulators, so
//   the block stages its queries, scaled and rounded, in shared memory once
//   a row block and the walk reads them by ldmatrix.x4;
// * the block walks the positions its rows can see in tiles of 32, whose
//   keys and values ([position][dim]) all 128 threads copy from the caches
//   into a ring of 3 stages of shared memory by cp.async, two tiles ahead
//   of the one the warps work on (flashStages: past head dim 128, and for
//   caches of another type than the weights', one stage staged through
//   registers instead); each warp computes its 16 x 32
//   scores S = Q K^T, applies the soft-cap, position bias and (on tiles
//   some row of the warp sees only in part) the causal / window / length
//   masks, and folds them into a running (max, sum, output) per row: the
//   accumulators of S are already the A fragments of P V (two adjacent
//   8-column tiles make one 16-wide k step), so P never leaves registers;
//   V's B fragments come transposed by ldmatrix;
// * past head dim 128 (Gemma's 256) the walk runs twice, once per half of
//   the output dims (flashPassDims), recomputing the scores: a lane's query
//   fragments (64 registers at 256) and a whole row of output accumulators
//   (128) spilled at 255 registers, as did 16-position tiles; a half holds
//   64. It costs the scores' half of the work once more (1.5x the FLOPs).
//   With --cuda-flash-passes 1 the block stages its queries in shared
//   memory instead (as for 128-row blocks) and walks once, the whole row
//   of accumulators in registers, keys and values in a ring of 2 stages;
// * a warp skips tiles none of its rows can see (causal blocks walk up to
//   their last row; the first warps of a block stop earlier);
// * with --cuda-flash-wgmma (sm_90a; head dims 64 and 128) both products
//   run on wgmma.mma_async, the block's 4 warps one warpgroup: S = Q K^T
//   from the staged queries and the ring's keys, P V from each warp's P
//   (registers, as mma.sync's A fragments) and the ring's values, read
//   N-major as stored; queries, keys and values in wgmma's 128-byte
//   swizzle. The walk is pipelined (FlashAttention-3's overlap within a
//   warpgroup): a tile's loop issues the next tile's scores before its own
//   softmax, in a ring of 4 stages; every warp takes part in a tile's
//   multiplies, a warp that sees none of it with P = 0. With
//   --cuda-flash-overlap the previous tile's P V is issued beside the next
//   tile's scores, both in flight through the tile's softmax, and O is
//   rescaled after them (a ring of 5 stages keeps the values P V reads).
//
// Masked scores are -inf. A row whose positions so far are all masked has
// max -inf; it exponentiates against 0 instead, so that its (zero) sums stay
// finite. Row sums are kept per lane and added across the 4 lanes of a row
// at the end.
//
//===----------------------------------------------------------------------===//

#include "FlashAttention.h"

#include "tbc/Conversion/TbcToCUDA/KernelABI.h"

#include <array>
#include <limits>

using namespace mlir;

namespace tbc::cuda {

/// A ring of flashStages [positions, cols + 8] tiles (paddedSharedTile).
static MemRefType flashRing(MLIRContext *ctx, Type half, int64_t headDim, FlashTile flash,
                            int64_t cols) {
  const int64_t positions = flashTileKeys(headDim, flash);
  MemRefType tile = paddedSharedTile(ctx, half, positions, cols);
  return MemRefType::get({flashStages(headDim, flash), positions, tile.getDimSize(1)}, half,
                         MemRefLayoutAttrInterface{}, tile.getMemorySpace());
}

/// wgmma's 128-byte swizzle rows: 64 16-bit values.
static constexpr int64_t kSwizzleRow = 64;

MemRefType flashKeyTileType(MLIRContext *ctx, Type half, int64_t headDim, FlashTile flash) {
  MemRefType padded = flashRing(ctx, half, headDim, flash, headDim);
  if (!flashOnWgmma(headDim, flash))
    return padded;
  return MemRefType::get({padded.getDimSize(0), headDim / kSwizzleRow, padded.getDimSize(1),
                          kSwizzleRow},
                         half, MemRefLayoutAttrInterface{}, padded.getMemorySpace());
}

MemRefType flashValueTileType(MLIRContext *ctx, Type half, int64_t headDim, FlashTile flash) {
  if (flashOnWgmma(headDim, flash)) // one pass: the keys' shape
    return flashKeyTileType(ctx, half, headDim, flash);
  return flashRing(ctx, half, headDim, flash, flashPassDims(headDim, flash));
}

MemRefType flashQueryTileType(MLIRContext *ctx, Type half, int64_t headDim, FlashTile flash) {
  MemRefType padded = paddedSharedTile(ctx, half, flashBlockRows(headDim, flash), headDim);
  if (!flashOnWgmma(headDim, flash))
    return padded;
  return MemRefType::get({headDim / kSwizzleRow, padded.getDimSize(0), kSwizzleRow}, half,
                         MemRefLayoutAttrInterface{}, padded.getMemorySpace());
}

void emitFlashAttention(GpuBuilder &g, MmaHalf half, AttentionOp a, const PositionBias &bias,
                        const FlashAttentionOperands &o, bool overlap) {
  OpBuilder &b = g.b;
  Location loc = g.loc;
  const int64_t H = a.getNumHeads(), D = a.getHeadDim(), group = H / a.getNumKvHeads();
  // The tile's positions and the ring's stages (flashTileKeys,
  // flashStages), and the dims of a walk (flashPassDims): the shared
  // tiles' shapes.
  auto keyRing = cast<MemRefType>(o.keyTile.getType());
  // On wgmma (flashOnWgmma): the key and value rings are [stages, D / 64,
  // Bc, 64] and the query tile [D / 64, rows, 64], in wgmma's swizzle.
  const bool wgmma = keyRing.getRank() == 4;
  const int64_t Bc = keyRing.getDimSize(wgmma ? 2 : 1), stages = keyRing.getDimSize(0);
  const int64_t passDims =
                    wgmma ? D : cast<MemRefType>(o.valueTile.getType()).getDimSize(2) - 8,
                passes = D / passDims;
  const int64_t kSteps = D / kMmaK, keyTiles = Bc / kMmaCols, dimTiles = passDims / kMmaCols;
  // A block's query rows, and the 16-row MMA tiles (m-tiles) of a warp's:
  // one with the lanes' query fragments in registers, two where the block
  // stages its queries in shared memory (flashStagesQueries).
  const bool stagedQueries = static_cast<bool>(o.queryTile);
  const int64_t blockRows =
      stagedQueries ? cast<MemRefType>(o.queryTile.getType()).getDimSize(wgmma ? 1 : 0)
                    : kFlashRows;
  // On wgmma a warp always has one m-tile: a warpgroup's m64 is its 4
  // warps' 16 rows each, and a block of 128 rows is two warpgroups
  // (flashBlockWarps).
  assert((!wgmma || blockRows % kWarpgroupRows == 0) && "wgmma's m64: whole warpgroups");
  const int64_t M = wgmma ? 1 : blockRows / kFlashRows, warpRows = M * kMmaRows;
  const int64_t threads = 32 * (blockRows / warpRows);
  std::optional<double> cap;
  if (a.getSoftcap())
    cap = a.getSoftcap()->convertToDouble();
  const double scale = a.getScale().convertToDouble();
  // exp(x - m) as exp2(x log2(e) - m log2(e)): one fma and one ex2.approx a
  // score where expf's range reduction took 7 instructions (18 exps a lane
  // a tile). The logits stay in natural units up to there: log2(e) folded
  // into the query scale instead changed the rounding of Q to 16 bits and
  // took cuda-flash-window.test's worst row from 1.3e-2 to 1.9e-2.
  const double log2e = 1.4426950408889634;
  const Value window = o.window;
  const bool causal = a.getCausal();
  Value negInf = g.f32(-std::numeric_limits<float>::infinity());
  Type cacheType = cast<MemRefType>(o.keyCache.getType()).getElementType();
  auto cacheRun = VectorType::get({8}, cacheType); // 8 dims of a cache row
  Value cacheZero = arith::ConstantOp::create(b, loc, b.getZeroAttr(cacheRun));

  Value lane = g.tid(gpu::Dimension::x), warp = g.tid(gpu::Dimension::y);
  Value rowInGroup = g.div(lane, 4), quad = g.rem(lane, 4);
  Value thread = g.add(g.mul(warp, 32), lane);
  Value h = g.bid(gpu::Dimension::x);
  Value kvCol = g.mul(g.div(h, group), D), qCol = g.mul(h, D);
  Value kvLen = g.add(o.past, o.T);
  Value lastRow = g.sub(o.T, g.idx(1));
  Value lastPosition = g.sub(kvLen, g.idx(1));
  Value quadCol = g.mul(quad, 2); // this lane's first column in an 8-wide tile
  // The tile row this lane addresses in an ldmatrix.x4: row l % 8 of
  // matrix l / 8, whose matrices step by 8 in one direction (oddMatrix:
  // matrices 1 and 3), then in the other (upperPair: matrices 2 and 3).
  // Values (.trans): down 8 positions, then across a dim tile; keys: across
  // the 8 dims of a k step's second half, then down a key tile.
  static_assert(kMmaRows == 16 && kMmaCols == 8 && kMmaK == 16 && kFlashKeys % 16 == 0 &&
                kFlashWideKeys % 16 == 0);
  Value matrix = g.div(lane, 8), matrixRow = g.rem(lane, 8);
  Value oddMatrix = g.mul(g.rem(matrix, 2), 8), upperPair = g.mul(g.div(matrix, 2), 8);
  // Where a run of 8 dims (row j, dims d to d + 7, d a multiple of 8) goes
  // in the query tile (runIn): [j, d], or on wgmma in its 128-byte swizzle
  // [d / 64, j, chunk], 16-byte chunk c of a 64-value row at c ^ j % 8;
  // in a stage of a ring (runAt), the same after the stage.
  auto runIn = [&](Value j, Value d) -> SmallVector<Value, 3> {
    if (!wgmma)
      return {j, d};
    Value chunk = g.rem(g.div(d, 8), kSwizzleRow / 8);
    return {g.div(d, kSwizzleRow), j, g.mul(g.xori(chunk, g.rem(j, 8)), 8)};
  };
  auto runAt = [&](Value stage, Value j, Value d) {
    SmallVector<Value, 4> at{stage};
    llvm::append_range(at, runIn(j, d));
    return at;
  };

  // Row blocks from the last: a GPU starts blocks in the order of their
  // index, and with a causal mask the last rows see the most positions, so
  // the longest blocks start first and the short ones fill in behind them
  // (longest first: no long block left to start as the others finish).
  // Every block computes what it did in the order of the rows.
  Value lastBlock = g.mul(g.div(g.sub(o.T, g.idx(1)), blockRows), blockRows);
  Value first = g.mul(g.bid(gpu::Dimension::y), blockRows);
  Value stride = g.mul(g.gridDim(gpu::Dimension::y), blockRows);
  g.loop(first, o.T, stride, [&](Value fromLast) {
    Value r0 = g.sub(lastBlock, fromLast);
    // This warp's warpRows rows and this lane's two of each m-tile's 16
    // (clamped for loads; rows past T compute what row T - 1 does and are
    // never stored).
    Value w0 = g.add(r0, g.mul(warp, warpRows));
    SmallVector<std::array<Value, 2>> row, position;
    for (int64_t m = 0; m < M; ++m) {
      Value top = g.add(g.add(w0, m * kMmaRows), rowInGroup);
      row.push_back({top, g.add(top, 8)});
      position.push_back({g.add(o.past, row[m][0]), g.add(o.past, row[m][1])});
    }
    // The query fragments of m-tile m at k step ks (MmaHalf's A layout: rows
    // group and group + 8, dims 2 quad (+1) and 2 quad + 8 (+1)), scaled
    // and rounded to 16 bits: a lane's own registers (one m-tile), or by
    // ldmatrix.x4 from the block's query tile, which every thread fills
    // here in runs of 8 dims (the previous row block's readers are done:
    // the barrier first).
    auto scaledQuery = [&](Value t, Value d) {
      return g.fmul(g.load(o.queries, {t, d}), g.f32(scale));
    };
    SmallVector<Value> q;
    Value queryLane;
    if (!stagedQueries) {
      for (int64_t ks = 0; ks < kSteps; ++ks)
        for (int64_t reg = 0; reg < 4; ++reg) {
          Value t = g.min(row[0][reg % 2], lastRow);
          Value d = g.add(g.add(qCol, quadCol), ks * kMmaK + (reg / 2) * 8);
          q.push_back(half.pack(scaledQuery(t, d), scaledQuery(t, g.add(d, 1))));
        }
    } else {
      gpu::BarrierOp::create(b, loc);
      const int64_t perRow = D / 8;
      assert(blockRows * perRow % threads == 0 && "whole rounds of runs");
      auto run = VectorType::get({8}, half.type());
      for (int64_t e0 = 0; e0 < blockRows * perRow; e0 += threads) {
        Value e = g.add(thread, e0);
        Value j = g.div(e, perRow), d = g.mul(g.rem(e, perRow), 8);
        Value t = g.min(g.add(r0, j), lastRow);
        SmallVector<Value> halves;
        for (int64_t i = 0; i < 8; ++i)
          halves.push_back(arith::TruncFOp::create(b, loc, half.type(),
                                                   scaledQuery(t, g.add(g.add(qCol, d), i))));
        vector::StoreOp::create(b, loc, vector::FromElementsOp::create(b, loc, run, halves),
                                o.queryTile, runIn(j, d))
            .setAlignment(16);
      }
      // Matrices (rows 0-7 | 8-15) x (dims 0-7 | 8-15) of an A fragment.
      if (!wgmma)
        queryLane = half.sharedPointer(
            o.queryTile,
            half.elementOf(o.queryTile,
                           {g.add(g.add(g.mul(warp, warpRows), matrixRow), oddMatrix), upperPair}));
    }
    auto queryFragment = [&](int64_t m, int64_t ks) -> SmallVector<Value, 4> {
      if (!stagedQueries)
        return SmallVector<Value, 4>(ArrayRef<Value>(q).slice(4 * ks, 4));
      return half.loadMatricesAt(half.offsetPointer(
          queryLane, m * kMmaRows * MmaHalf::rowBytes(o.queryTile) + ks * kMmaK * 2));
    };

    // Positions some row of the block sees: [lowest(r0), blockHi), walked
    // from tileLo (that rounded down to a tile); some row of the warp:
    // [warpLo, warpHi).
    auto lowest = [&](Value rowBegin) {
      return g.firstVisible(g.add(o.past, rowBegin), window);
    };
    auto highest = [&](Value rowEnd) {
      return causal ? g.add(o.past, g.min(rowEnd, o.T)) : kvLen;
    };
    Value blockHi = highest(g.add(r0, blockRows));
    Value tileLo = g.mul(g.div(lowest(r0), Bc), Bc);
    Value warpLo = lowest(w0), warpHi = highest(g.add(w0, warpRows));

    // Without the ring (head dims past 128, or caches of another type than
    // the weights'): the tile's keys [Bc, D] and the pass's values [Bc,
    // passDims] into the first stage, as runs of 8 dims, one 128-bit load
    // each (a 16-bit cache; two for an f32 one), all of a thread's loads
    // issued before any is stored: one wait on memory per tile. (A loop of
    // 4-byte loads, each stored before the next was asked for, left the
    // block waiting on 16 of them in turn at D = 128.) Positions past the
    // cache are zeros: its rows beyond may hold anything, and a NaN there
    // times a zero weight would still be NaN.
    auto stageThroughRegisters = [&](Value j0, Value dimBase) {
      struct Run {
        Value j, d, v, active;
      };
      auto loadRuns = [&](Value cache, Value colBase, int64_t width) {
        const int64_t perRow = width / 8, runs = Bc * perRow;
        SmallVector<Run> loaded;
        for (int64_t e0 = 0; e0 < runs; e0 += threads) {
          Value e = g.add(thread, e0), active;
          if (e0 + threads > runs) { // the last round's threads past the tile
            active = g.lt(e, g.idx(runs));
            e = g.min(e, g.idx(runs - 1));
          }
          Value j = g.div(e, perRow), d = g.mul(g.rem(e, perRow), 8);
          Value pos = g.add(j0, j);
          auto v = vector::LoadOp::create(b, loc, cacheRun, cache,
                                          ValueRange{g.min(pos, lastPosition), g.add(colBase, d)});
          v.setAlignment(16); // runs of 8 from a row of a multiple of 16
          Value x = g.select(g.lt(pos, kvLen), v, cacheZero);
          if (cacheType != half.type()) {
            if (!cacheType.isF32())
              x = arith::ExtFOp::create(b, loc, VectorType::get({8}, b.getF32Type()), x);
            x = arith::TruncFOp::create(b, loc, VectorType::get({8}, half.type()), x);
          }
          loaded.push_back({j, d, x, active});
        }
        return loaded;
      };
      SmallVector<Run> keys = loadRuns(o.keyCache, kvCol, D);
      SmallVector<Run> values = loadRuns(o.valueCache, g.add(kvCol, dimBase), passDims);
      // The previous tile's readers are done (the loads above were asked
      // for before the wait): stage this one.
      gpu::BarrierOp::create(b, loc);
      // Both tiles as the caches hold them, [position][dim], a 128-bit
      // store a run (a warp's stores run along whole rows: no bank
      // conflicts); P V reads the values' B fragments transposed by
      // ldmatrix .trans. (Stored transposed, a 16-bit store each, they
      // were 32 stores a thread a tile, and 16-way bank conflicts while a
      // warp's lanes went along a row.)
      Value first = g.idx(0);
      for (auto [runs, tile] : {std::pair{&keys, o.keyTile}, std::pair{&values, o.valueTile}})
        for (const Run &r : *runs) {
          auto store = [&, tile = tile] {
            vector::StoreOp::create(b, loc, r.v, tile, runAt(first, r.j, r.d))
                .setAlignment(16);
          };
          if (r.active)
            g.ifThen(r.active, store);
          else
            store();
        }
      gpu::BarrierOp::create(b, loc);
    };

    // The last tile the block walks: copies of tiles past it copy it again
    // (into a stage nobody reads after), so that every thread commits one
    // group a tile and waiting for all but the newest ahead - 1 is always
    // the tile's own.
    Value lastTile = g.add(tileLo, g.mul(g.div(g.sub(g.max(blockHi, g.add(tileLo, 1)),
                                                        g.add(tileLo, 1)),
                                                  Bc),
                                            Bc));
    const bool ring = stages > 1 && cacheType == half.type();
    assert((!overlap || wgmma) && "overlap orders wgmma's products");
    // How many tiles ahead of the one the warps work on a copy goes: all
    // but that tile's stage, or with overlap all but the previous tile's
    // too (its values feed the P V in flight).
    const int64_t ahead = overlap ? stages - 2 : stages - 1;

    // Output dims [dimBase, dimBase + passDims) of this lane's rows.
    auto walk = [&](Value dimBase) {
      // The ring: the keys [Bc, D] and the pass's values [Bc, passDims] of
      // the tile at position j0 into stage `stage`, as the caches hold them
      // ([position][dim]), in runs of 8 dims copied by cp.async as one
      // group. Positions past the cache copy its last row: the rows beyond
      // may hold anything (a NaN there times the mask's zero weight would
      // still be NaN), the last is a real key and value.
      //
      // A tile wholly inside the cache (every one but the last) copies
      // without the clamp, and where a round of the threads covers whole
      // rows (threads a multiple of a row's runs: head dims 16-128 but 80
      // and 96) each thread's copies are one shared and one global pointer
      // plus constant offsets, which ptxas folds into the instructions
      // (clamped, each copy cost a 64-bit min and its own 64-bit address).
      auto copyRuns = [&](Value j0, Value stage, bool clamp) {
        for (auto [cache, tile, colBase, width] :
             {std::tuple{o.keyCache, o.keyTile, kvCol, D},
              std::tuple{o.valueCache, o.valueTile, g.add(kvCol, dimBase), passDims}}) {
          const int64_t perRow = width / 8, runs = Bc * perRow;
          const bool wholeRows = !clamp && threads % perRow == 0;
          Value to, from; // this thread's first run's, with wholeRows
          if (wholeRows) {
            Value j = g.div(thread, perRow), d = g.mul(g.rem(thread, perRow), 8);
            to = half.sharedPointer(tile, half.elementOf(tile, runAt(stage, j, d)));
            from = half.globalPointer(cache, {g.add(j0, j), g.add(colBase, d)});
          }
          for (int64_t e0 = 0; e0 < runs; e0 += threads) {
            Value e = g.add(thread, e0);
            auto copy = [&, cache = cache, tile = tile, colBase = colBase] {
              if (wholeRows) {
                const int64_t rows = e0 / perRow;
                // Source first, a statement each (see copyAsync16).
                Value src = half.offsetPointer(from, rows * MmaHalf::rowBytes(cache));
                half.copyAsync16At(half.offsetPointer(to, rows * MmaHalf::rowBytes(tile)), src);
                return;
              }
              Value j = g.div(e, perRow), d = g.mul(g.rem(e, perRow), 8);
              Value position = g.add(j0, j);
              half.copyAsync16(tile, runAt(stage, j, d), cache,
                               {clamp ? g.min(position, lastPosition) : position,
                                g.add(colBase, d)});
            };
            if (e0 + threads > runs) // the last round's threads past the tile
              g.ifThen(g.lt(e, g.idx(runs)), copy);
            else
              copy();
          }
        }
      };
      auto copyTile = [&](Value j0, Value stage) {
        g.ifThenElse(
            g.le(g.add(j0, Bc), kvLen), [&] { copyRuns(j0, stage, /*clamp=*/false); },
            [&] { copyRuns(j0, stage, /*clamp=*/true); });
        NVVM::CpAsyncCommitGroupOp::create(b, loc);
      };
      // With overlap the first tile's loop issues P V of the tile before
      // it, with P = 0, from the last stage: zeros there, since 0 times a
      // NaN in memory nobody wrote would still be NaN. (The previous row
      // block's P V, which read it, has finished: its walk waited.)
      if (overlap) {
        const int64_t perRow = D / 8;
        assert(Bc * perRow % threads == 0 && "whole rounds of runs");
        Value zeros = arith::ConstantOp::create(
            b, loc, b.getZeroAttr(VectorType::get({8}, half.type())));
        for (int64_t e0 = 0; e0 < Bc * perRow; e0 += threads) {
          Value e = g.add(thread, e0);
          Value j = g.div(e, perRow), d = g.mul(g.rem(e, perRow), 8);
          vector::StoreOp::create(b, loc, zeros, o.valueTile, runAt(g.idx(stages - 1), j, d))
              .setAlignment(16);
        }
      }
      if (ring)
        for (int64_t s = 0; s < ahead; ++s)
          copyTile(g.min(g.add(tileLo, s * Bc), lastTile), g.idx(s));
      // Scores on wgmma: the warpgroup's 64 x Bc scores of the tile in
      // `stage`, k 16 at a time, from the query tile and the stage's keys,
      // issued as one group (wgmma.wait_group makes them the registers').
      // Every warp takes part (wgmma is the whole warpgroup's), whether its
      // rows see the tile or not. The accumulators' layout is mma.sync's, key
      // tile after key tile: 4 nt + i is score[0][nt][i] below.
      auto issueScoresOf = [&](int64_t firstRow, Value stage) {
        NVVM::WgmmaFenceAlignedOp::create(b, loc);
        SmallVector<Value> acc(Bc / 2, g.f32(0.0));
        // The warpgroup's 64 rows of the query tile, and the stage's keys.
        // A k step's operands start 32 bytes on in a swizzle row, or at the
        // next 64-dim block: its descriptors are the first ones plus that.
        Value zero = g.idx(0);
        MmaHalf::Descriptor qDesc = half.swizzledDescriptor(
            half.byteAddress(o.queryTile,
                             half.elementOf(o.queryTile, {zero, g.idx(firstRow), zero})),
            kSwizzleRow * 2);
        MmaHalf::Descriptor kDesc = half.swizzledDescriptor(
            half.byteAddress(o.keyTile, half.elementOf(o.keyTile, {stage, zero, zero, zero})),
            kSwizzleRow * 2);
        for (int64_t ks = 0; ks < kSteps; ++ks) {
          const int64_t k = ks * kMmaK % kSwizzleRow * 2, block = ks * kMmaK / kSwizzleRow;
          acc = half.warpgroupMma(
              half.descriptorAt(qDesc, block * blockRows * kSwizzleRow * 2 + k),
              half.descriptorAt(kDesc, block * Bc * kSwizzleRow * 2 + k), acc);
        }
        NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
        return acc;
      };
      // In a block of two warpgroups each issues its own copy, a branch
      // on the warpgroup: its query rows are then a constant, and ptxas
      // keeps their descriptors on the uniform datapath (from `tid.y / 4`
      // they were 16 registers held through the walk and 16 R2UR a tile).
      auto issueScores = [&](Value stage) {
        if (blockRows == kWarpgroupRows)
          return issueScoresOf(0, stage);
        assert(blockRows == 2 * kWarpgroupRows && "one or two warpgroups");
        Value firstWarpgroup = g.lt(warp, g.idx(kWarpgroupRows / kMmaRows));
        return g.ifElse(
            firstWarpgroup, SmallVector<Type>(Bc / 2, b.getF32Type()),
            [&] { return issueScoresOf(0, stage); },
            [&] { return issueScoresOf(kWarpgroupRows, stage); });
      };
      // O += P V on wgmma, k over a tile's positions 16 at a time: A is each
      // warp's P fragments, B the values of the tile in `stage` as stored,
      // N-major (their 64-dim blocks Bc rows of 128 bytes apart), all D
      // output dims in one m64nDk16; issued as one group.
      auto issueProduct = [&](ValueRange p, Value stage, ValueRange out) {
        NVVM::WgmmaFenceAlignedOp::create(b, loc);
        Value zero = g.idx(0);
        MmaHalf::Descriptor vDesc = half.swizzledDescriptor(
            half.byteAddress(o.valueTile, half.elementOf(o.valueTile, {stage, zero, zero, zero})),
            kSwizzleRow * 2, Bc * kSwizzleRow * 2);
        SmallVector<Value> acc(out);
        for (int64_t kt = 0; kt < Bc / kMmaK; ++kt)
          acc = half.warpgroupMmaRegisterA(
              p.slice(4 * kt, 4), half.descriptorAt(vDesc, kt * kMmaK * kSwizzleRow * 2), acc);
        NVVM::WgmmaGroupSyncAlignedOp::create(b, loc);
        return acc;
      };
      // On wgmma the walk is software-pipelined, as
      // FlashAttention-3 overlaps its two products within a warpgroup: a
      // tile's loop issues the next tile's scores before it works on its
      // own, which the tile before issued (here, the first tile's), so that
      // the tensor cores compute them while the warps run the softmax and
      // P V. The ring then holds the tile the warps work on, the next one
      // (whose keys the scores read), with overlap the one before (whose
      // values P V reads), and the copies in flight (ahead - 1 tiles).
      SmallVector<Value> firstScores;
      if (wgmma) {
        NVVM::CpAsyncWaitGroupOp::create(b, loc, ahead - 1);
        half.fenceSharedForWgmma(); // wgmma reads through the async proxy
        gpu::BarrierOp::create(b, loc);
        firstScores = issueScores(g.idx(0));
        NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
      }
      // State per lane: max and partial sum of its two rows of each m-tile,
      // its 16 x passDims output accumulators of each (dimTiles x 4) and,
      // with the ring, the tile's stage as an i32 counted round it (`tile %
      // stages` in the 64-bit index type had cost ~10 SASS instructions a
      // tile). State index of row r of m-tile m: max 2 m + r, sum 2 M +
      // 2 m + r; accumulator i of its dim tile dt: 4 M + 4 (m dimTiles + dt)
      // + i.
      auto maxAt = [&](int64_t m, int64_t r) { return 2 * m + r; };
      auto sumAt = [&](int64_t m, int64_t r) { return 2 * M + 2 * m + r; };
      auto outAt = [&](int64_t m, int64_t dt) { return 4 * M + 4 * (m * dimTiles + dt); };
      SmallVector<Value> init(2 * M, negInf);
      init.append(2 * M, g.f32(0.0));
      init.append(M * dimTiles * 4, g.f32(0.0));
      const int64_t carried = init.size();
      if (ring)
        init.push_back(g.i32(0));
      llvm::append_range(init, firstScores); // the tile's scores (on wgmma)
      // With overlap, the previous tile's P, whose P V the loop issues.
      const int64_t pRegisters = wgmma ? Bc / kMmaK * 4 : 0;
      init.append(overlap ? pRegisters : 0, g.i32(0));
      // The stage before `counter` in the ring.
      auto stageBefore = [&](Value counter) {
        return g.select(g.eq(counter, 0), g.i32(stages - 1), g.add(counter, g.i32(-1)));
      };
      SmallVector<Value> state = g.loop(tileLo, blockHi, g.idx(Bc), init, [&](Value j0,
                                                                              ValueRange all) {
        ValueRange s = all.take_front(carried);
        assert((!wgmma || ring) && "wgmma reads the keys and values from the ring");
        ValueRange wgmmaScores =
            all.slice(carried + (ring ? 1 : 0), wgmma ? Bc / 2 : 0);
        ValueRange previousP = all.take_back(overlap ? pRegisters : 0);
        SmallVector<Value> inFlight; // with overlap, O + the previous tile's P V
        Value stage = g.idx(0), nextStage;
        SmallVector<Value> nextScores;
        if (ring) {
          // This tile's copies have landed, every thread's (the barrier),
          // and every warp is done with the previous tile's stage, which the
          // copies issued next overwrite: the stage before this one, where
          // the tile stages - 1 ahead goes.
          // Pipelined (on wgmma): the next tile's copies instead, for
          // its scores, which the next tile's loop then works on (none past
          // the block's last tile: a block-uniform branch).
          Value counter = all[carried];
          stage = g.toIndex(counter);
          Value before = stageBefore(counter), copyStage = before;
          if (ahead != stages - 1) {
            Value at = g.add(counter, g.i32(ahead));
            copyStage = g.select(g.lt(at, g.i32(stages)), at, g.add(at, g.i32(-stages)));
          }
          nextStage = g.select(g.eq(counter, stages - 1), g.i32(0), g.add(counter, g.i32(1)));
          NVVM::CpAsyncWaitGroupOp::create(b, loc, wgmma ? ahead - 2 : ahead - 1);
          if (wgmma) // wgmma reads the keys (and queries) through the async proxy
            half.fenceSharedForWgmma();
          gpu::BarrierOp::create(b, loc);
          copyTile(g.min(g.add(j0, ahead * Bc), lastTile), g.toIndex(copyStage));
          if (wgmma)
            nextScores = g.ifElse(
                g.lt(g.add(j0, Bc), blockHi), wgmmaScores.getTypes(),
                [&] { return issueScores(g.toIndex(nextStage)); },
                [&] { return SmallVector<Value>(wgmmaScores.size(), g.f32(0.0)); });
          if (overlap) // the previous tile's P V (P = 0 before the first)
            inFlight = issueProduct(previousP, g.toIndex(before), s.drop_front(4 * M));
        } else {
          stageThroughRegisters(j0, dimBase);
        }

        // O = O * corr (the rows' new max), only where some row of the warp
        // has a new one (a warp-uniform branch, vote.sync.any): elsewhere
        // corr is exp2(0) = 1 in every lane, and its dimTiles x 4 multiplies
        // a lane and m-tile (64 at head dim 128, a tenth of the tile's
        // instructions) change nothing. Past the first tiles a row's max
        // rarely grows.
        auto rescale = [&](ValueRange out, ArrayRef<std::array<Value, 2>> corr, Value grew) {
          return g.ifElse(
              g.warpAny(grew), out.getTypes(),
              [&] {
                SmallVector<Value> scaled;
                for (int64_t m = 0; m < M; ++m)
                  for (int64_t dt = 0; dt < dimTiles; ++dt)
                    for (int64_t i = 0; i < 4; ++i)
                      scaled.push_back(g.fmul(out[outAt(m, dt) - 4 * M + i], corr[m][i / 2]));
                return scaled;
              },
              [&] { return SmallVector<Value>(out); });
        };
        // On wgmma P V is the warpgroup's too: the warp's branch yields its
        // max and sums, corr and whether a max grew, and its P (zeros where
        // it does not see the tile); O is rescaled and P V added after it
        // (with overlap, P V in the next tile's loop). With mma.sync the
        // branch updates O itself.
        SmallVector<Type> stepTypes(wgmma ? s.take_front(4 * M).getTypes() : s.getTypes());
        stepTypes.append(wgmma ? 2 * M : 0, b.getF32Type());
        stepTypes.append(wgmma ? 1 : 0, b.getI1Type());
        stepTypes.append(pRegisters, b.getI32Type());
        Value seen = g.andi(g.lt(j0, warpHi), g.lt(warpLo, g.add(j0, Bc)));
        auto step = scf::IfOp::create(b, loc, stepTypes, seen, /*withElse=*/true);
        {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(&step.getElseRegion().front());
          SmallVector<Value> unseen(wgmma ? s.take_front(4 * M) : s);
          unseen.append(wgmma ? 2 * M : 0, g.f32(1.0)); // corr 1, no max grew
          unseen.append(wgmma ? 1 : 0, g.i1(false));
          unseen.append(pRegisters, g.i32(0)); // P = 0: P V adds nothing
          scf::YieldOp::create(b, loc, unseen);
          b.setInsertionPointToStart(&step.getThenRegion().front());
          // S = Q K^T: score[m][nt][i] is row (i < 2 ? 0 : 1) of this lane in
          // m-tile m, position j0 + 8 nt + quadCol + i % 2. With the ring
          // (head dims up to 128) the keys' B fragments come by ldmatrix.x4,
          // two key tiles x (dims 0-7 | 8-15) of a k step each: 16 a warp a
          // tile at head dim 128 where 4-byte pair loads were 64, each
          // feeding the MMAs of every m-tile. (The register-staged stage,
          // past head dim 128 or for a cache of another type, keeps the
          // pair loads: by ldmatrix ptxas spilled 56 bytes at head dim 256.)
          auto scorePos = [&](int64_t nt, int64_t i) {
            return g.add(g.add(j0, quadCol), nt * kMmaCols + i % 2);
          };
          SmallVector<SmallVector<SmallVector<Value>>> score(
              M, SmallVector<SmallVector<Value>>(keyTiles, SmallVector<Value>(4, g.f32(0.0))));
          Value keyLane;
          if (ring && !wgmma)
            keyLane = half.sharedPointer(
                o.keyTile,
                half.elementOf(o.keyTile, {stage, g.add(matrixRow, upperPair), oddMatrix}));
          static_assert(kFlashKeys % (2 * kMmaCols) == 0 && kFlashWideKeys % (2 * kMmaCols) == 0,
                        "key tiles in pairs");
          if (wgmma)
            for (int64_t nt = 0; nt < keyTiles; ++nt)
              score[0][nt].assign(wgmmaScores.begin() + 4 * nt, wgmmaScores.begin() + 4 * nt + 4);
          for (int64_t ks = 0; ks < (wgmma ? 0 : kSteps); ++ks) {
            SmallVector<SmallVector<Value, 4>> qf;
            for (int64_t m = 0; m < M; ++m)
              qf.push_back(queryFragment(m, ks));
            for (int64_t nt = 0; nt < keyTiles; nt += 2) {
              SmallVector<Value, 4> kf;
              if (ring) {
                kf = half.loadMatricesAt(half.offsetPointer(
                    keyLane, nt * kMmaCols * MmaHalf::rowBytes(o.keyTile) + ks * kMmaK * 2));
              } else {
                for (int64_t t = 0; t < 2; ++t) {
                  Value kr = g.add(rowInGroup, (nt + t) * kMmaCols);
                  Value k = g.add(quadCol, ks * kMmaK);
                  kf.push_back(half.loadPair(o.keyTile, {stage, kr, k}));
                  kf.push_back(half.loadPair(o.keyTile, {stage, kr, g.add(k, 8)}));
                }
              }
              for (int64_t m = 0; m < M; ++m)
                for (int64_t t = 0; t < 2; ++t)
                  score[m][nt + t] =
                      half.mma(qf[m], {kf[2 * t], kf[2 * t + 1]}, score[m][nt + t]);
            }
          }
          for (int64_t m = 0; m < M; ++m)
            for (int64_t nt = 0; nt < keyTiles; ++nt) {
              SmallVector<Value> &acc = score[m][nt];
              for (int64_t i = 0; i < 4; ++i) {
                Value v = acc[i];
                if (cap)
                  v = emitSoftcap(b, loc, *cap, v, /*byReciprocal=*/true); // P is 16-bit
                if (Value term = bias.at(b, loc, h, position[m][i / 2], scorePos(nt, i)))
                  v = g.fadd(v, term);
                acc[i] = v;
              }
            }
          // The causal / window / length masks, only where some row of the
          // warp does not see the whole tile (the diagonal, the window's
          // edge, the cache's end; a warp-uniform branch): elsewhere their
          // index arithmetic and selects were ~5 instructions a score.
          Value firstPosition = g.add(o.past, w0), tileEnd = g.add(j0, Bc);
          Value whole = g.andi(g.le(tileEnd, kvLen),
                               causal ? g.le(tileEnd, g.add(firstPosition, 1)) : g.i1(true));
          if (window) // j0 >= firstPosition + warpRows - window, for the warp's last row
            whole = g.andi(whole, g.le(g.add(firstPosition, warpRows), g.add(j0, window)));
          SmallVector<Value> flat;
          for (const auto &tiles : score)
            for (const SmallVector<Value> &t : tiles)
              llvm::append_range(flat, t);
          SmallVector<Value> masked = g.ifElse(
              whole, ValueRange(flat).getTypes(), [&] { return flat; },
              [&] {
                SmallVector<Value> mk(flat);
                for (int64_t m = 0; m < M; ++m)
                  for (int64_t nt = 0; nt < keyTiles; ++nt)
                    for (int64_t i = 0; i < 4; ++i) {
                      Value pos = scorePos(nt, i), p = position[m][i / 2];
                      Value visible = g.lt(pos, kvLen);
                      if (causal)
                        visible = g.andi(visible, g.lt(pos, g.add(p, 1)));
                      if (window)
                        visible = g.andi(visible, g.lt(p, g.add(pos, window)));
                      Value &v = mk[4 * (m * keyTiles + nt) + i];
                      v = g.select(visible, v, negInf);
                    }
                return mk;
              });
          for (int64_t m = 0; m < M; ++m)
            for (int64_t nt = 0; nt < keyTiles; ++nt)
              for (int64_t i = 0; i < 4; ++i)
                score[m][nt][i] = masked[4 * (m * keyTiles + nt) + i];
          // Online softmax of each m-tile's two rows; the 4 lanes of a row
          // agree on its max.
          SmallVector<Value> next(s.take_front(4 * M));
          SmallVector<std::array<Value, 2>> corr(M);
          Value grew = g.i1(false);
          for (int64_t m = 0; m < M; ++m) {
            Value base[2], sum[2];
            for (int r = 0; r < 2; ++r) {
              Value mx = negInf;
              for (int64_t nt = 0; nt < keyTiles; ++nt)
                mx = g.fmax(mx, g.fmax(score[m][nt][2 * r], score[m][nt][2 * r + 1]));
              Value old = s[maxAt(m, r)];
              Value mNew = g.fmax(old, g.rowQuadMax(mx));
              Value allMasked =
                  arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, mNew, negInf);
              base[r] = g.select(allMasked, g.f32(0.0), mNew);
              corr[m][r] = g.exp2Ftz(g.fmul(g.fsub(old, base[r]), g.f32(log2e)));
              next[maxAt(m, r)] = mNew;
              sum[r] = g.fmul(s[sumAt(m, r)], corr[m][r]);
              grew = g.ori(grew,
                           arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, mNew, old));
            }
            Value baseLog2[2] = {g.fmul(base[0], g.f32(-log2e)), g.fmul(base[1], g.f32(-log2e))};
            for (int64_t nt = 0; nt < keyTiles; ++nt)
              for (int64_t i = 0; i < 4; ++i) {
                score[m][nt][i] =
                    g.exp2Ftz(g.fma(score[m][nt][i], g.f32(log2e), baseLog2[i / 2]));
                sum[i / 2] = g.fadd(sum[i / 2], score[m][nt][i]);
              }
            next[sumAt(m, 0)] = sum[0];
            next[sumAt(m, 1)] = sum[1];
          }
          // O = O * corr + P V, k over the tile's positions 16 at a time
          // (on wgmma after the branch).
          SmallVector<Value> out;
          if (!wgmma)
            out = rescale(s.drop_front(4 * M), corr, grew);
          // The A fragments of P: two adjacent 8-column score tiles a k step.
          auto pFragment = [&](int64_t m, int64_t kt) -> SmallVector<Value> {
            const SmallVector<Value> &lo = score[m][2 * kt], &hi = score[m][2 * kt + 1];
            return {half.pack(lo[0], lo[1]), half.pack(lo[2], lo[3]), half.pack(hi[0], hi[1]),
                    half.pack(hi[2], hi[3])};
          };
          SmallVector<Value> pRegs; // with P V on wgmma, after the branch
          for (int64_t kt = 0; kt < (wgmma ? Bc / kMmaK : 0); ++kt)
            for (Value pair : pFragment(0, kt))
              pRegs.push_back(half.asI32(pair));
          Value valueLane = wgmma ? Value() : half.sharedPointer(
              o.valueTile,
              half.elementOf(o.valueTile, {stage, g.add(matrixRow, oddMatrix), upperPair}));
          for (int64_t kt = 0; kt < (wgmma ? 0 : Bc / kMmaK); ++kt) {
            SmallVector<SmallVector<Value>> p;
            for (int64_t m = 0; m < M; ++m)
              p.push_back(pFragment(m, kt));
            // The values' B fragments by ldmatrix.x4.trans from the
            // [position][dim] tile: (positions 0-7 | 8-15) x (dim tiles dt
            // | dt + 1), each feeding every m-tile's MMAs.
            for (int64_t dt = 0; dt < dimTiles; dt += 2) {
              SmallVector<Value, 4> vf = half.loadMatricesAt(
                  half.offsetPointer(valueLane,
                                     kt * kMmaK * MmaHalf::rowBytes(o.valueTile) +
                                         dt * kMmaCols * 2),
                  /*transposed=*/true);
              for (int64_t m = 0; m < M; ++m)
                for (int64_t h = 0; h < 2; ++h) {
                  const int64_t at = outAt(m, dt + h) - 4 * M;
                  SmallVector<Value> acc = half.mma(p[m], {vf[2 * h], vf[2 * h + 1]},
                                                    ArrayRef<Value>(out).slice(at, 4));
                  std::copy(acc.begin(), acc.end(), out.begin() + at);
                }
            }
          }
          next.append(out);
          if (wgmma) {
            for (const std::array<Value, 2> &c : corr)
              next.append({c[0], c[1]});
            next.push_back(grew);
          }
          next.append(pRegs);
          scf::YieldOp::create(b, loc, next);
        }
        SmallVector<Value> results(step.getResults().take_front(wgmma ? 4 * M : carried));
        SmallVector<Value> p;
        if (wgmma) {
          ValueRange r = step.getResults().drop_front(4 * M);
          SmallVector<std::array<Value, 2>> corr;
          for (int64_t m = 0; m < M; ++m)
            corr.push_back({r[2 * m], r[2 * m + 1]});
          Value grew = r[2 * M];
          p.assign(r.begin() + 2 * M + 1, r.end());
          // With overlap, the scores of the next tile and the previous
          // tile's P V land here; then O takes the new max.
          if (overlap)
            half.waitForWarpgroupMma(0, previousP);
          SmallVector<Value> out =
              rescale(overlap ? ValueRange(inFlight) : s.drop_front(4 * M), corr, grew);
          if (!overlap)
            out = issueProduct(p, stage, out);
          llvm::append_range(results, out);
        }
        if (ring)
          results.push_back(nextStage);
        if (wgmma) { // the next tile's scores are the registers' from here on
          if (!overlap)
            NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
          llvm::append_range(results, nextScores);
        }
        if (overlap)
          llvm::append_range(results, p);
        return results;
      });
      // With overlap, the last tile's P V.
      if (overlap) {
        SmallVector<Value> out =
            issueProduct(ArrayRef<Value>(state).take_back(pRegisters),
                         g.toIndex(stageBefore(state[carried])),
                         ArrayRef<Value>(state).slice(4 * M, carried - 4 * M));
        NVVM::WgmmaWaitGroupSyncOp::create(b, loc, 0);
        std::copy(out.begin(), out.end(), state.begin() + 4 * M);
      }
      // The copies past the last tile land before the ring is reused (the
      // next row block's first tiles), and every warp is done with it.
      if (ring) {
        NVVM::CpAsyncWaitGroupOp::create(b, loc, 0);
        gpu::BarrierOp::create(b, loc);
      }

      // out = O / (the row's sum over its 4 lanes).
      for (int64_t m = 0; m < M; ++m) {
        Value inv[2];
        for (int r = 0; r < 2; ++r) {
          Value l = g.rowQuadSum(state[sumAt(m, r)]);
          // An approximate reciprocal (rcp.approx, ~1 ulp) for the 16-bit
          // products' result: IEEE division calls a slow-path subroutine
          // whose calling convention spilled registers on sm_90.
          inv[r] = arith::DivFOp::create(b, loc, g.f32(1.0), l, arith::FastMathFlags::afn);
        }
        for (int r = 0; r < 2; ++r)
          g.ifThen(g.lt(row[m][r], o.T), [&] {
            for (int64_t dt = 0; dt < dimTiles; ++dt)
              for (int64_t c = 0; c < 2; ++c) {
                Value d = g.add(g.add(g.add(qCol, dimBase), quadCol), dt * kMmaCols + c);
                g.store(g.fmul(state[outAt(m, dt) + 2 * r + c], inv[r]), o.out,
                        {row[m][r], d});
              }
          });
      }
    };
    if (passes == 1)
      walk(g.idx(0));
    else
      g.loop(g.idx(0), g.idx(D), g.idx(passDims), walk);
  });
}

} // namespace tbc::cuda
