//===- TiledProjection.cpp - the block-tiled GEMM of long chunks ----------===//
//
// Chunks of kTiledMinRows rows and up on tensor cores in two launches: the
// staging launch (activations rounded to 16 bits, norm statistics beside
// them), then a block per 128-row tile of the GEMM over a ring of cp.async
// stages, on mma.sync from ldmatrix fragments or, on sm_90a, on wgmma.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

using namespace mlir;

namespace tbc::cuda {

Value Emitter::slotRow(Value s, const Epilogue &e, const Rotary *rope) {
  // One op a statement: nested builder calls in one argument list run in
  // the compiler's order (right to left in gcc, left to right in clang), and
  // the IR read at --emit gpu would depend on it.
  if (e.glu) {
    Value up = g.mul(g.rem(s, 2), e.N);
    Value pairRow = g.div(s, 2);
    return g.add(pairRow, up);
  }
  if (!rope || rope->attr.getStyle() != RopeStyle::neox)
    return s;
  int64_t headDim = rope->attr.getHeadDim(), rot = rope->attr.getRotaryDim();
  Value dd = g.rem(s, headDim);
  Value halfOffset = g.mul(g.rem(dd, 2), rot / 2);
  Value inHead = g.add(g.div(dd, 2), halfOffset);
  Value permuted = g.add(g.sub(s, dd), inHead);
  Value inRotary = g.lt(dd, rot);
  Value rotated = g.andi(g.lt(s, rope->attr.getColumns()), inRotary);
  return g.select(rotated, permuted, s);
}

std::pair<Value, Value> Emitter::tiledBlockOrder() {
  Value columns = g.gridDim(gpu::Dimension::x), rows = g.gridDim(gpu::Dimension::y);
  Value id = g.add(g.mul(g.bid(gpu::Dimension::y), columns), g.bid(gpu::Dimension::x));
  Value perGroup = g.mul(columns, cuda::kTiledRowGroup);
  Value firstRow = g.mul(g.div(id, perGroup), cuda::kTiledRowGroup);
  Value rowsInGroup = g.min(g.sub(rows, firstRow), g.idx(cuda::kTiledRowGroup));
  Value inGroup = g.rem(id, perGroup);
  return {g.div(inGroup, rowsInGroup), g.add(firstRow, g.rem(inGroup, rowsInGroup))};
}

LogicalResult Emitter::stageActivations(Value x, const InputGain &gain,
                                        std::optional<NormKind> norm, double eps) {
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

LogicalResult Emitter::tiledProjection(Value w, Value out, Epilogue e, const Rotary *rope) {
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
      // Each round's source pointer, then its destination, a statement each
      // (in one argument list the order would be the compiler's).
      for (int64_t j = 0; j < aRounds; ++j) {
        Value from = mh.offsetPointer(aFrom, j * rowsPerRound * MmaHalf::rowBytes(x));
        mh.copyAsync16At(mh.offsetPointer(aTo, j * rowsPerRound * MmaHalf::rowBytes(tileA)), from);
      }
      auto weightRounds = [&](bool rotated) {
        for (int64_t j = 0; j < bRounds; ++j) {
          Value from =
              constantWeightRounds
                  ? mh.offsetPointer(bFrom, weightRoundRows(j, rotated) * MmaHalf::rowBytes(w))
                  : mh.globalPointer(w, {wRows[j], k});
          mh.copyAsync16At(mh.offsetPointer(bTo, j * rowsPerRound * MmaHalf::rowBytes(tileB)),
                           from);
        }
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

} // namespace tbc::cuda
