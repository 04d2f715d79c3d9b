//===- Matmul.cpp - register-tiled, vectorised projections ----------------===//
//
// acc[0, t, n] += sum_k x[0, t, k] * W[n, k] over a range of output columns
// n (a core's share when decoding), with W packed in panels of 32 columns
// contiguous along k (KernelABI.h). A tile is 8 token rows (or 1) x one
// panel: per k, two 16-wide loads of the panel and one broadcast of x per
// row feed 2 FMAs per row into 16 vector accumulators that stay in
// registers through a block of 128 k; no horizontal sums. Panels are
// outermost, so a panel streams from L2 once per 8 token rows. This is
// where a transformer spends its time.
//
// With bf16 dot products (tile.bf16Dot) the panels hold bf16 weights in k
// pairs and the activations are rounded to bf16 once, into pairs of k
// packed in an i32 each: per pair of k, two 32-wide loads of the panel and
// one broadcast pair per row feed vdpbf16ps, which multiplies and sums both
// k of a column at once, twice the FMA's work per instruction.
//
//===----------------------------------------------------------------------===//

#include "Matmul.h"

#include "tbc/Conversion/TbcToCPU/KernelABI.h"

#include "mlir/Dialect/LLVMIR/LLVMAttrs.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"

using namespace mlir;

// The reduction runs in blocks of this many k, each summed from zero in
// registers and then added to the output: rounding error grows with the
// block length plus the number of blocks, not with the whole reduction
// (a sequential sum over 5632 products drifts by ~1e-5 relative).
static constexpr int64_t kBlockK = 128;
// Independent accumulator sets of a single-row (decode) tile.
static constexpr int64_t kDecodeUnroll = 4;

// Padding at the end of an activation row, in pairs (64 bytes).
static constexpr int64_t kRowPadPairs = 16;

/// The activations rounded to bf16 for bf16 dot products, in one buffer
/// (`bytes`, freed by the caller) seen two ways: `pairs`, xp[t, q] = x[0, t,
/// 2q] | x[0, t, 2q + 1] << 16 (vdpbf16ps takes the even element of a pair
/// from the low half), and `halves`, the same bytes as bf16 [rows, k] (an AMX
/// tile's rows). `allocRows` >= the call's rows; rows past them are zeros
/// (AMX blocks of 32 rows read them). With `terms` > 1 the buffer holds that
/// many such row sets, term j's row t at j * allocRows + t: x's bf16
/// rounding, then the rounding of what it left, and so on (x - term 0 is
/// exact in f32, and so on down: three terms sum to x exactly).
Value tbc::activationTermRow(OpBuilder &b, Location loc, Value row, Value termRows,
                            int64_t term) {
  if (term == 0)
    return row;
  Value offset = arith::MulIOp::create(b, loc, termRows,
                                       arith::ConstantIndexOp::create(b, loc, term));
  return arith::AddIOp::create(b, loc, row, offset);
}

struct ActivationPairs {
  Value bytes, pairs, halves;
};
static ActivationPairs packActivationPairs(OpBuilder &b, Location loc, Value x, int64_t k,
                                           Value allocRows, bool padded, int64_t terms) {
  auto idx = [&](OpBuilder &ob, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(ob, loc, v);
  };
  Value rows = memref::DimOp::create(b, loc, x, 1);
  Value zero = idx(b, 0);
  Value setRows = arith::MulIOp::create(b, loc, allocRows, idx(b, terms));
  // Rows a cache line longer than k: at a multiple of 4 KiB (k = 2048,
  // 4096, ...) the 16 rows of an AMX tile all fell into one L1 set (12
  // ways), and three activation terms' 96 rows of a block thrashed it
  // (--cpu-dot amx-f32 ran at a fifth of one term's rate; bench/NOTES.md).
  const int64_t rowPairs = k / 2 + kRowPadPairs;
  Value size = arith::MulIOp::create(b, loc, setRows, idx(b, 4 * rowPairs));
  // On a cache line: an AMX tile row is 64 bytes, and rows that straddle
  // two lines load at half the speed (malloc's 16-byte alignment put every
  // row across two: the tiles ran at 0.5x).
  Value bytes = memref::AllocOp::create(
      b, loc, MemRefType::get({ShapedType::kDynamic}, b.getI8Type()), ValueRange{size},
      b.getI64IntegerAttr(64));
  Value paddedPairs = memref::ViewOp::create(
      b, loc, MemRefType::get({ShapedType::kDynamic, rowPairs}, b.getI32Type()), bytes, zero,
      ValueRange{setRows});
  Value paddedHalves = memref::ViewOp::create(
      b, loc, MemRefType::get({ShapedType::kDynamic, 2 * rowPairs}, b.getBF16Type()), bytes,
      zero, ValueRange{setRows});
  // The rows' first k (k / 2 pairs), the padding never read.
  auto firstColumns = [&](Value full, int64_t width) -> Value {
    SmallVector<OpFoldResult> at{b.getIndexAttr(0), b.getIndexAttr(0)},
        size{OpFoldResult(setRows), b.getIndexAttr(width)},
        step{b.getIndexAttr(1), b.getIndexAttr(1)};
    return memref::SubViewOp::create(b, loc, full, at, size, step);
  };
  Value pairs = firstColumns(paddedPairs, k / 2);
  Value halves = firstColumns(paddedHalves, k);
  scf::ForOp::create(
      b, loc, zero, rows, idx(b, 1), ValueRange{},
      [&](OpBuilder &rb, Location, Value t, ValueRange) {
        // Row t of each term's set.
        SmallVector<Value, 3> termRow;
        for (int64_t j = 0; j < terms; ++j)
          termRow.push_back(tbc::activationTermRow(rb, loc, t, allocRows, j));
        scf::ForOp::create(
            rb, loc, zero, idx(rb, k / 2), idx(rb, 1), ValueRange{},
            [&](OpBuilder &qb, Location, Value q, ValueRange) {
              Value k0 = arith::MulIOp::create(qb, loc, q, idx(qb, 2));
              // Term j of element e: the bf16 rounding of what terms 0..j-1
              // left of it, as the low or high half of an i32.
              Value left[2];
              auto term = [&](int e) -> Value {
                if (!left[e]) {
                  Value kk = e ? arith::AddIOp::create(qb, loc, k0, idx(qb, 1)).getResult() : k0;
                  left[e] = memref::LoadOp::create(qb, loc, x, ValueRange{zero, t, kk});
                }
                Value h = arith::TruncFOp::create(qb, loc, qb.getBF16Type(), left[e]);
                if (terms > 1)
                  left[e] = arith::SubFOp::create(
                      qb, loc, left[e], arith::ExtFOp::create(qb, loc, qb.getF32Type(), h));
                return arith::ExtUIOp::create(
                    qb, loc, qb.getI32Type(),
                    arith::BitcastOp::create(qb, loc, qb.getI16Type(), h));
              };
              for (int64_t j = 0; j < terms; ++j) {
                Value lo = term(0);
                Value hi = term(1);
                Value sixteen = arith::ConstantOp::create(qb, loc, qb.getI32IntegerAttr(16));
                Value pair = arith::OrIOp::create(
                    qb, loc, lo, arith::ShLIOp::create(qb, loc, hi, sixteen));
                memref::StoreOp::create(qb, loc, pair, pairs, ValueRange{termRow[j], q});
              }
              scf::YieldOp::create(qb, loc);
            });
        scf::YieldOp::create(rb, loc);
      });
  if (padded) {
    for (int64_t j = 0; j < terms; ++j) {
      Value begin = tbc::activationTermRow(b, loc, rows, allocRows, j);
      Value end = tbc::activationTermRow(b, loc, allocRows, allocRows, j);
      scf::ForOp::create(
          b, loc, begin, end, idx(b, 1), ValueRange{},
          [&](OpBuilder &rb, Location, Value t, ValueRange) {
            Value none = arith::ConstantOp::create(rb, loc, rb.getI32IntegerAttr(0));
            scf::ForOp::create(rb, loc, zero, idx(rb, k / 2), idx(rb, 1), ValueRange{},
                               [&](OpBuilder &qb, Location, Value q, ValueRange) {
                                 memref::StoreOp::create(qb, loc, none, pairs,
                                                         ValueRange{t, q});
                                 scf::YieldOp::create(qb, loc);
                               });
            scf::YieldOp::create(rb, loc);
          });
    }
  }
  return {bytes, pairs, halves};
}

tbc::ColumnMask::ColumnMask(OpBuilder &b, Location loc, int64_t width, Value colBegin,
                           Value colEnd)
    : laneType(VectorType::get({width}, b.getI64Type())) {
  SmallVector<int64_t> lanes;
  for (int64_t i = 0; i < width; ++i)
    lanes.push_back(i);
  iota = arith::ConstantOp::create(b, loc, laneType,
                                   DenseElementsAttr::get(laneType, ArrayRef<int64_t>(lanes)));
  Value begin = arith::IndexCastOp::create(b, loc, b.getI64Type(), colBegin);
  lo = vector::BroadcastOp::create(b, loc, laneType, begin);
  Value end = arith::IndexCastOp::create(b, loc, b.getI64Type(), colEnd);
  hi = vector::BroadcastOp::create(b, loc, laneType, end);
}

Value tbc::ColumnMask::at(OpBuilder &b, Location loc, Value col) const {
  // One op a statement, in the order the IR has always had.
  Value first = arith::IndexCastOp::create(b, loc, b.getI64Type(), col);
  Value lanes = vector::BroadcastOp::create(b, loc, laneType, first);
  Value cols = arith::AddIOp::create(b, loc, lanes, iota);
  Value below = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, cols, hi);
  Value atLeast = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, cols, lo);
  return arith::AndIOp::create(b, loc, atLeast, below);
}

/// Asks LLVM not to unroll the scf.for carrying it as `loop_annotation`:
/// scf-to-cf copies the loop's attributes onto its latch branch, where the
/// name is llvm.br's own loop metadata, translated to
/// `!llvm.loop !{!"llvm.loop.unroll.disable"}`.
static Attribute noUnroll(MLIRContext *ctx) {
  auto unroll = LLVM::LoopUnrollAttr::get(ctx, BoolAttr::get(ctx, true), {}, {}, {}, {}, {}, {});
  return LLVM::LoopAnnotationAttr::get(ctx, {}, {}, {}, unroll, {}, {}, {}, {}, {}, {}, {}, {}, {},
                                       {}, {});
}

void tbc::emitPanelMatmul(OpBuilder &b, Location loc, Value x, Value packed,
                          Value acc, Value colBegin, Value colEnd, const CpuTile &shape,
                          bool accumulate) {
  const int64_t kVector = shape.vector, kPanelWidth = shape.panel,
                kVectorsPerPanel = shape.panel / shape.vector;
  int64_t k = cast<MemRefType>(packed.getType()).getShape()[1];
  // With bf16 dot products the k loops count pairs of k and a 32-wide
  // bf16 load of the panel holds 16 columns of two k (KernelABI.h).
  const bool dot = shape.bf16Dot;
  // With bf16 dot products, the activation terms each k step multiplies.
  const int64_t terms = dot ? shape.activationTerms : 1;
  assert((!dot || (k % 2 == 0 && kPanelWidth == 2 * kVector)) &&
         "bf16 dot products need an even reduction and panels of two vectors");
  const int64_t kSteps = dot ? k / 2 : k, kStepsPerBlock = dot ? kBlockK / 2 : kBlockK;
  auto pairVec = VectorType::get({2 * kVector}, b.getBF16Type());
  auto pairLanes = VectorType::get({kVector}, b.getI32Type());
  auto vecType = VectorType::get({kVector}, b.getF32Type());
  auto weightVec =
      VectorType::get({kVector}, cast<MemRefType>(packed.getType()).getElementType());
  const int64_t elementBytes = weightVec.getElementType().getIntOrFloatBitWidth() / 8;
  // bf16 panels of two vectors (without dot products) are widened a panel
  // row at a time: one 2 x kVector load as i32 lanes, whose low halves
  // shifted up are the even columns as f32 and whose high halves masked are
  // the odd ones (bf16 is f32's upper half). That is 3 instructions for the
  // row where zero-extending each half and shifting took 4 and two loads
  // (AVX2: vpmovzxwd, vpslld). The accumulators then hold even and odd
  // columns, interleaved back once per block of k (evenOddToColumns).
  const bool evenOdd = !dot && weightVec.getElementType().isBF16() && kVectorsPerPanel == 2;
  // AVX2's decode loop over 16-bit panels, unrolled by LLVM, keeps two k
  // steps of widened rows in flight: with the accumulators that is more than
  // 16 ymm registers, and it spilled (2 stores and 2 reloads an iteration
  // in a bf16 four-stream loop; bench/NOTES.md 2026-12-02). f32 rows are FMA
  // memory operands and AVX-512 has 32 registers: both stay unrolled.
  const bool keepDecodeLoopRolled = !dot && elementBytes == 2 && kVector == 8;
  auto rowLanes = VectorType::get({kVector}, b.getI32Type());
  auto panelRowVec = VectorType::get({2 * kVector}, b.getBF16Type());
  // A single row's kDecodeUnroll accumulator sets each sum every
  // kDecodeUnroll-th k, so its blocks can be that much longer for the same
  // error per sum as a full tile's. With 16-bit weights, where a block is
  // half the bytes, its epilogue (sums, loads, stores) then comes 4x less
  // often: bf16 decode +3-7% at hidden 2048-4096; f32 decode gained nothing
  // (-2-4% at hidden 1024) and keeps 128 (bench/NOTES.md).
  const int64_t kStepsPerRowBlock =
      elementBytes == 2 ? kDecodeUnroll * kStepsPerBlock : kStepsPerBlock;
  auto idx = [&](OpBuilder &ob, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(ob, loc, v);
  };
  Value zero = idx(b, 0);
  Value rows = memref::DimOp::create(b, loc, x, 1);
  auto roundDownIn = [&](OpBuilder &ob, Value v, int64_t m) -> Value {
    return arith::MulIOp::create(
        ob, loc, arith::DivUIOp::create(ob, loc, v, idx(ob, m)), idx(ob, m));
  };
  // Token rows in tiles of shape.rows (two tile shapes, not more: each is a
  // big unrolled loop, and LLVM's time grows with them). A remainder of
  // rows % shape.rows is one more full tile ending at the last row, which
  // adds only its new rows: 4 rows left of a 64-token prompt on AVX2's 6-row
  // tile then cost 6 tile rows instead of 4 single-row passes over the
  // panel, each loading it again for 2 FMAs per load (h1024 prefill of 64
  // tokens: 9% slower than of 66). Fewer rows than a tile (decoding) go one
  // at a time.
  // AMX tiles (below) take 4 rows or more: a batch of 4 decodes reads each
  // weight once on a padded block, faster than 4 single-row passes (985
  // against 821 tok/s, hidden 1024; at 2 rows the passes win).
  const bool amxTiles = dot && shape.amx && k % kAmxTileK == 0;
  Value rowsAtLeastTile = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, rows,
                                                idx(b, amxTiles ? kAmxMinRows : shape.rows));
  Value tiledEnd = arith::SelectOp::create(b, loc, rowsAtLeastTile, rows, zero);
  Value lastTileStart = arith::SelectOp::create(
      b, loc, rowsAtLeastTile, arith::SubIOp::create(b, loc, rows, idx(b, shape.rows)), zero);
  // Multi-row tiles on AMX (AmxMatmul.cpp) where the reduction is whole
  // tiles of k: blocks of 32 rows, the activation buffer padded to them.
  Value amxEnd = amxTiles ? arith::MulIOp::create(
                                b, loc,
                                arith::CeilDivUIOp::create(b, loc, tiledEnd,
                                                           idx(b, kAmxBlockRows)),
                                idx(b, kAmxBlockRows))
                                .getResult()
                          : Value();
  ActivationPairs packedX;
  Value termRows; // rows between one activation term's and the next's
  if (dot) {
    termRows = amxTiles ? arith::MaxUIOp::create(b, loc, rows, amxEnd).getResult() : rows;
    packedX = packActivationPairs(b, loc, x, k, termRows, amxTiles, terms);
  }
  Value xPairs = packedX.pairs;
  // Panels that hold a column of [colBegin, colEnd); stores are masked to it.
  Value panelBegin = arith::DivUIOp::create(b, loc, colBegin, idx(b, kPanelWidth));
  Value panelEnd = arith::CeilDivUIOp::create(b, loc, colEnd, idx(b, kPanelWidth));
  const ColumnMask columnMask(b, loc, kVector, colBegin, colEnd);

  // One tile: `r` rows from `t`, all columns of each panel of `ps` (one, or
  // for a single row up to shape.decodeStreams read side by side), k steps in
  // [k0, k1) (pairs of k with bf16 dot products); only rows from `firstNew`
  // on (when given) add their sums to the output.
  auto tile = [&](OpBuilder &cb, Value t, ArrayRef<Value> ps, int64_t r, Value k0, Value k1,
                  Value firstNew) {
    Value firstBlock =
        accumulate ? Value()
                   : arith::CmpIOp::create(cb, loc, arith::CmpIPredicate::eq, k0, zero).getResult();
    Value init = arith::ConstantOp::create(
        cb, loc, vecType, DenseElementsAttr::get(vecType, 0.0f));
    SmallVector<Value> inits(r * kVectorsPerPanel, init);
    // Each token row and the panel as 1-D/2-D views hoisted out of the k
    // loop: addresses inside it are invariant bases plus k, which keeps
    // LLVM's loop strength reduction (and so compile time) cheap.
    SmallVector<Value> tokenRows, xRows;
    auto unit = [&](int64_t n) {
      return SmallVector<OpFoldResult>(n, cb.getIndexAttr(1));
    };
    for (int64_t i = 0; i < r; ++i) {
      tokenRows.push_back(arith::AddIOp::create(cb, loc, t, idx(cb, i)));
      if (dot) {
        continue;
      }
      auto rowType = memref::SubViewOp::inferRankReducedResultType(
          {k}, cast<MemRefType>(x.getType()),
          ArrayRef<OpFoldResult>{cb.getIndexAttr(0), tokenRows.back(), cb.getIndexAttr(0)},
          ArrayRef<OpFoldResult>{cb.getIndexAttr(1), cb.getIndexAttr(1), cb.getIndexAttr(k)},
          unit(3));
      xRows.push_back(memref::SubViewOp::create(
          cb, loc, cast<MemRefType>(rowType), x,
          ArrayRef<OpFoldResult>{cb.getIndexAttr(0), tokenRows.back(), cb.getIndexAttr(0)},
          ArrayRef<OpFoldResult>{cb.getIndexAttr(1), cb.getIndexAttr(1), cb.getIndexAttr(k)},
          unit(3)));
    }
    // With bf16 dot products: term j of row i is xRows[j * r + i].
    for (int64_t j = 0; dot && j < terms; ++j)
      for (int64_t i = 0; i < r; ++i) {
        Value row = activationTermRow(cb, loc, tokenRows[i], termRows, j);
        SmallVector<OpFoldResult> at{row, cb.getIndexAttr(0)},
            size{cb.getIndexAttr(1), cb.getIndexAttr(kSteps)};
        auto rowType = memref::SubViewOp::inferRankReducedResultType(
            {kSteps}, cast<MemRefType>(xPairs.getType()), at, size, unit(2));
        xRows.push_back(memref::SubViewOp::create(cb, loc, cast<MemRefType>(rowType), xPairs,
                                                  at, size, unit(2)));
      }
    SmallVector<Value> panels;
    for (Value p : ps) {
      auto panelType = memref::SubViewOp::inferRankReducedResultType(
          {k, kPanelWidth}, cast<MemRefType>(packed.getType()),
          ArrayRef<OpFoldResult>{p, cb.getIndexAttr(0), cb.getIndexAttr(0)},
          ArrayRef<OpFoldResult>{cb.getIndexAttr(1), cb.getIndexAttr(k),
                                 cb.getIndexAttr(kPanelWidth)},
          unit(3));
      panels.push_back(memref::SubViewOp::create(
          cb, loc, cast<MemRefType>(panelType), packed,
          ArrayRef<OpFoldResult>{p, cb.getIndexAttr(0), cb.getIndexAttr(0)},
          ArrayRef<OpFoldResult>{cb.getIndexAttr(1), cb.getIndexAttr(k),
                                 cb.getIndexAttr(kPanelWidth)},
          unit(3)));
    }
    // One k step of the tile over `panel` into the accumulators `accs`
    // (r x vectors).
    auto kStep = [&](OpBuilder &kb, Value panel, Value kk, ValueRange accs) {
      SmallVector<Value> ws, next;
      if (dot) {
        // kk is a pair of k: the panel's rows 2 kk and 2 kk + 1 are the
        // pairs of its two 16-column halves.
        for (int64_t h = 0; h < kVectorsPerPanel; ++h) {
          Value row = arith::AddIOp::create(
              kb, loc, arith::MulIOp::create(kb, loc, kk, idx(kb, 2)), idx(kb, h));
          ws.push_back(
              vector::LoadOp::create(kb, loc, pairVec, panel, ValueRange{row, idx(kb, 0)}));
        }
        next.assign(accs.begin(), accs.end());
        for (int64_t j = 0; j < terms; ++j)
          for (int64_t i = 0; i < r; ++i) {
            Value pair = memref::LoadOp::create(kb, loc, xRows[j * r + i], ValueRange{kk});
            Value xb = vector::BitCastOp::create(
                kb, loc, pairVec, vector::BroadcastOp::create(kb, loc, pairLanes, pair));
            for (int64_t h = 0; h < kVectorsPerPanel; ++h)
              next[i * kVectorsPerPanel + h] = x86vector::DotBF16Op::create(
                  kb, loc, vecType, next[i * kVectorsPerPanel + h], xb, ws[h]);
          }
        return next;
      }
      if (evenOdd) {
        Value row = vector::BitCastOp::create(
            kb, loc, rowLanes,
            vector::LoadOp::create(kb, loc, panelRowVec, panel, ValueRange{kk, idx(kb, 0)}));
        auto splat = [&](int32_t v) -> Value {
          return arith::ConstantOp::create(kb, loc, rowLanes,
                                           DenseElementsAttr::get(rowLanes, v));
        };
        Value even = arith::ShLIOp::create(kb, loc, row, splat(16));
        Value odd = arith::AndIOp::create(kb, loc, row, splat(int32_t(0xFFFF0000u)));
        ws.push_back(vector::BitCastOp::create(kb, loc, vecType, even));
        ws.push_back(vector::BitCastOp::create(kb, loc, vecType, odd));
      }
      for (int64_t h = 0; h < kVectorsPerPanel && !evenOdd; ++h) {
        // bf16 panels are widened in registers: half the bytes from memory.
        Value w = vector::LoadOp::create(kb, loc, weightVec, panel,
                                         ValueRange{kk, idx(kb, h * kVector)});
        if (weightVec != vecType)
          w = arith::ExtFOp::create(kb, loc, vecType, w);
        ws.push_back(w);
      }
      for (int64_t i = 0; i < r; ++i) {
        Value xs = memref::LoadOp::create(kb, loc, xRows[i], ValueRange{kk});
        Value xb = vector::BroadcastOp::create(kb, loc, vecType, xs);
        for (int64_t h = 0; h < kVectorsPerPanel; ++h)
          next.push_back(vector::FMAOp::create(kb, loc, xb, ws[h],
                                               accs[i * kVectorsPerPanel + h]));
      }
      return next;
    };
    // The block's sums of panel `p` (r x vectors) into the output.
    auto addToOutput = [&](Value p, SmallVector<Value> sums) {
      // evenOddToColumns: each row's even- and odd-column sums back to columns
      // [0, kVector) and [kVector, 2 kVector).
      if (evenOdd) {
        SmallVector<int64_t> low, high;
        for (int64_t j = 0; j < kVector / 2; ++j) {
          low.append({j, kVector + j});
          high.append({kVector / 2 + j, kVector + kVector / 2 + j});
        }
        for (int64_t i = 0; i < r; ++i) {
          Value e = sums[2 * i], o = sums[2 * i + 1];
          sums[2 * i] = vector::ShuffleOp::create(cb, loc, e, o, low);
          sums[2 * i + 1] = vector::ShuffleOp::create(cb, loc, e, o, high);
        }
      }
      // The block's sums are added to the output. A panel inside the call's
      // columns (all but the edges of a core's share) does it with plain
      // loads and stores: AVX2's masked store (vmaskmovps) is microcoded on
      // AMD's Zen, dozens of cycles each, 12 of them every kBlockK k.
      Value panelCol = arith::MulIOp::create(cb, loc, p, idx(cb, kPanelWidth));
      Value inside = arith::AndIOp::create(
          cb, loc, arith::CmpIOp::create(cb, loc, arith::CmpIPredicate::uge, panelCol, colBegin),
          arith::CmpIOp::create(cb, loc, arith::CmpIPredicate::ule,
                                arith::AddIOp::create(cb, loc, panelCol, idx(cb, kPanelWidth)),
                                colEnd));
      auto addSums = [&](OpBuilder &sb, bool masked) {
        for (int64_t h = 0; h < kVectorsPerPanel; ++h) {
          Value col = arith::AddIOp::create(sb, loc, panelCol, idx(sb, h * kVector));
          Value mask = masked ? columnMask.at(sb, loc, col) : Value();
          for (int64_t i = 0; i < r; ++i) {
            SmallVector<Value, 3> at{zero, tokenRows[i], col};
            Value old = masked ? vector::MaskedLoadOp::create(sb, loc, vecType, acc, at, mask, init)
                                     .getResult()
                               : vector::LoadOp::create(sb, loc, vecType, acc, at).getResult();
            Value add = sums[i * kVectorsPerPanel + h];
            Value isNew = firstNew ? arith::CmpIOp::create(sb, loc, arith::CmpIPredicate::uge,
                                                           tokenRows[i], firstNew)
                                         .getResult()
                                   : Value();
            if (isNew)
              add = arith::SelectOp::create(sb, loc, isNew, add, init);
            if (firstBlock) {
              // The first block of a row defines it: whatever the buffer held
              // before is dropped by the select (never added, so not even a
              // NaN survives), and no zero-fill pass over acc is needed.
              Value fresh = isNew ? arith::AndIOp::create(sb, loc, firstBlock, isNew).getResult()
                                  : firstBlock;
              old = arith::SelectOp::create(sb, loc, fresh, init, old);
            }
            Value sum = arith::AddFOp::create(sb, loc, old, add);
            if (masked)
              vector::MaskedStoreOp::create(sb, loc, acc, at, mask, sum);
            else
              vector::StoreOp::create(sb, loc, sum, acc, at);
          }
        }
      };
      scf::IfOp::create(
          cb, loc, inside,
          [&](OpBuilder &sb, Location) {
            addSums(sb, /*masked=*/false);
            scf::YieldOp::create(sb, loc);
          },
          [&](OpBuilder &sb, Location) {
            addSums(sb, /*masked=*/true);
            scf::YieldOp::create(sb, loc);
          });
    };
    SmallVector<SmallVector<Value>> sums(panels.size()); // per panel
    if (r == 1) {
      // A single row (decode) has only kVectorsPerPanel accumulators: each
      // k step would wait on the previous one's FMA (4 cycles) and cap the
      // weight stream well below memory bandwidth. kDecodeUnroll k steps
      // go to their own accumulators, summed after the loop.
      int64_t n = kVectorsPerPanel;
      // Decoding streams each weight once: on Intel's cores software
      // prefetches shape.decodePrefetch bytes ahead of the loads keep more
      // of the stream in flight than the hardware prefetcher alone did. Into
      // L2 (prefetcht1), whose queue holds more misses than L1's fill
      // buffers: bf16 decode +12% over prefetcht0 (bench/NOTES.md,
      // 2026-11-25). On AMD's Zen 3 f32 panels stream faster without them
      // (2026-11-26): the target picks the distance, 0 for none.
      // With several panels (streams) the unrolled k steps are shared
      // among them: as many loads in flight, from separate streams.
      const int64_t P = panels.size(), U = kDecodeUnroll / P;
      assert(kDecodeUnroll % P == 0 && "kDecodeUnroll k steps shared by the streams");
      const int64_t panelRowBytes = kPanelWidth * elementBytes;
      const int64_t stepBytes = (dot ? 2 : 1) * panelRowBytes; // a k step's panel rows
      const int64_t prefetchBytes = shape.decodePrefetch;
      const int64_t prefetchRows = std::max<int64_t>(1, prefetchBytes / panelRowBytes);
      Value kMain = arith::AddIOp::create(
          cb, loc, k0, roundDownIn(cb, arith::SubIOp::create(cb, loc, k1, k0), U));
      SmallVector<Value> unrolledInits(U * P * n, init);
      auto unrolled = scf::ForOp::create(
          cb, loc, k0, kMain, idx(cb, U), unrolledInits,
          [&](OpBuilder &kb, Location, Value kk, ValueRange accs) {
            SmallVector<Value> next;
            // One prefetch per cache line of the iteration's panel rows,
            // prefetchBytes ahead (clamped to the panel's last row), to L2.
            Value firstRow = dot ? arith::MulIOp::create(kb, loc, kk, idx(kb, 2)).getResult() : kk;
            for (Value panel : panels)
              for (int64_t off = 0; prefetchBytes > 0 && off < U * stepBytes; off += 64) {
                // One op a statement (an argument list's order is the
                // compiler's: the IR would differ between gcc and clang).
                Value lastRow = idx(kb, k - 1);
                Value row = arith::AddIOp::create(kb, loc, firstRow,
                                                  idx(kb, off / panelRowBytes + prefetchRows));
                Value ahead = arith::MinUIOp::create(kb, loc, row, lastRow);
                memref::PrefetchOp::create(
                    kb, loc, panel,
                    ValueRange{ahead, idx(kb, off % panelRowBytes / elementBytes)},
                    /*isWrite=*/false, /*localityHint=*/2, /*isDataCache=*/true);
              }
            // Accumulator set (u, j): k step u of panel j.
            for (int64_t u = 0; u < U; ++u) {
              Value ku = arith::AddIOp::create(kb, loc, kk, idx(kb, u));
              for (int64_t j = 0; j < P; ++j)
                llvm::append_range(next,
                                   kStep(kb, panels[j], ku, accs.slice((u * P + j) * n, n)));
            }
            scf::YieldOp::create(kb, loc, next);
          });
      if (keepDecodeLoopRolled)
        unrolled->setAttr("loop_annotation", noUnroll(cb.getContext()));
      SmallVector<Value> partial(unrolled.getResults().take_front(P * n));
      auto tail = scf::ForOp::create(
          cb, loc, kMain, k1, idx(cb, 1), partial,
          [&](OpBuilder &kb, Location, Value kk, ValueRange accs) {
            SmallVector<Value> next;
            for (int64_t j = 0; j < P; ++j)
              llvm::append_range(next, kStep(kb, panels[j], kk, accs.slice(j * n, n)));
            scf::YieldOp::create(kb, loc, next);
          });
      for (int64_t j = 0; j < P; ++j)
        for (int64_t h = 0; h < n; ++h) {
          Value sum = tail.getResult(j * n + h);
          for (int64_t u = 1; u < U; ++u)
            sum = arith::AddFOp::create(cb, loc, sum, unrolled.getResult((u * P + j) * n + h));
          sums[j].push_back(sum);
        }
    } else {
      auto kLoop = scf::ForOp::create(
          cb, loc, k0, k1, idx(cb, 1), inits,
          [&](OpBuilder &kb, Location, Value kk, ValueRange accs) {
            scf::YieldOp::create(kb, loc, kStep(kb, panels[0], kk, accs));
          });
      llvm::append_range(sums[0], kLoop.getResults());
    }
    for (size_t j = 0; j < panels.size(); ++j)
      addToOutput(ps[j], sums[j]);
  };
  // Multi-row tiles read their panel from L2 after the first tile has
  // brought it in; left alone, that first tile waits on memory for the
  // whole panel at once (64 KiB of f32 weights in one tile's time, twice
  // the bandwidth two cores get) and the cores idle. Instead every tile
  // prefetches its share of the next panel, one chunk of cache lines per
  // k block, so the next panel arrives spread over all of this panel's
  // tiles. (A microbenchmark of the AVX2 tile on weights cold in cache,
  // 66 x 1024 x 1024 and 66 x 2816 x 1024: 150 -> 195 GFLOP/s.)
  auto packedShape = cast<MemRefType>(packed.getType()).getShape();
  const int64_t panelRowBytes = packedShape[2] * elementBytes;
  const int64_t panelLines = packedShape[1] * panelRowBytes / 64;
  const int64_t blocksPerTile = llvm::divideCeil(kSteps, kStepsPerBlock);
  Value tilesPerPanel = arith::CeilDivUIOp::create(b, loc, tiledEnd, idx(b, shape.rows));
  Value linesPerChunk = arith::CeilDivUIOp::create(
      b, loc, idx(b, panelLines),
      arith::MaxUIOp::create(b, loc, idx(b, 1),
                             arith::MulIOp::create(b, loc, tilesPerPanel, idx(b, blocksPerTile))));
  // Chunk `tileIndex * blocksPerTile + k0 / block` of panel `next`'s lines,
  // none when `hasNext` is false.
  auto prefetchChunk = [&](OpBuilder &pb, Value next, Value hasNext, Value tileIndex, Value k0) {
    Value chunk = arith::AddIOp::create(
        pb, loc, arith::MulIOp::create(pb, loc, tileIndex, idx(pb, blocksPerTile)),
        arith::DivUIOp::create(pb, loc, k0, idx(pb, kStepsPerBlock)));
    Value first = arith::MulIOp::create(pb, loc, chunk, linesPerChunk);
    Value last = arith::MinUIOp::create(
        pb, loc, arith::AddIOp::create(pb, loc, first, linesPerChunk), idx(pb, panelLines));
    last = arith::SelectOp::create(pb, loc, hasNext, last, first);
    scf::ForOp::create(
        pb, loc, first, last, idx(pb, 1), ValueRange{},
        [&](OpBuilder &lb, Location, Value line, ValueRange) {
          Value byte = arith::MulIOp::create(lb, loc, line, idx(lb, 64));
          Value row = arith::DivUIOp::create(lb, loc, byte, idx(lb, panelRowBytes));
          Value col = arith::DivUIOp::create(
              lb, loc, arith::RemUIOp::create(lb, loc, byte, idx(lb, panelRowBytes)),
              idx(lb, elementBytes));
          memref::PrefetchOp::create(lb, loc, packed, ValueRange{next, row, col},
                                     /*isWrite=*/false, /*localityHint=*/3,
                                     /*isDataCache=*/true);
          scf::YieldOp::create(lb, loc);
        });
  };
  // k in blocks of `block` steps: body(k0, k1) for each.
  auto forKBlocks = [&](OpBuilder &rb, int64_t block,
                        llvm::function_ref<void(OpBuilder &, Value, Value)> body) {
    scf::ForOp::create(rb, loc, zero, idx(rb, kSteps), idx(rb, block), ValueRange{},
                       [&](OpBuilder &kb, Location, Value k0, ValueRange) {
                         Value k1 = arith::MinUIOp::create(
                             kb, loc, arith::AddIOp::create(kb, loc, k0, idx(kb, block)),
                             idx(kb, kSteps));
                         body(kb, k0, k1);
                         scf::YieldOp::create(kb, loc);
                       });
  };
  // Whole tiles of rows, panel after panel.
  if (amxTiles) {
    emitAmxPanelTiles(b, loc, packedX.halves, packed, acc, rows, amxEnd, panelBegin, panelEnd,
                      colBegin, colEnd, accumulate, terms, termRows);
  } else {
    scf::ForOp::create(
        b, loc, panelBegin, panelEnd, idx(b, 1), ValueRange{},
        [&](OpBuilder &ob, Location, Value p, ValueRange) {
          Value next = arith::AddIOp::create(ob, loc, p, idx(ob, 1));
          Value hasNext = arith::CmpIOp::create(ob, loc, arith::CmpIPredicate::ult, next, panelEnd);
          scf::ForOp::create(
              ob, loc, zero, tiledEnd, idx(ob, shape.rows), ValueRange{},
              [&](OpBuilder &rb, Location, Value t, ValueRange) {
                // A tile past the last whole one starts early (see tiledEnd).
                Value start = arith::MinUIOp::create(rb, loc, t, lastTileStart);
                forKBlocks(rb, kStepsPerBlock, [&](OpBuilder &kb, Value k0, Value k1) {
                  prefetchChunk(kb, next, hasNext,
                                arith::DivUIOp::create(kb, loc, t, idx(kb, shape.rows)), k0);
                  tile(kb, start, {p}, shape.rows, k0, k1, t);
                });
                scf::YieldOp::create(rb, loc);
              });
          scf::YieldOp::create(ob, loc);
        });
  }
  // Single rows (decoding; none when there are whole tiles): a core's
  // panels cut into shape.decodeStreams runs read side by side, panel i of
  // every run at once, so that its prefetchers follow as many streams.
  auto singleRows = [&](OpBuilder &ob, ArrayRef<Value> ps) {
    scf::ForOp::create(
        ob, loc, tiledEnd, rows, idx(ob, 1), ValueRange{},
        [&](OpBuilder &rb, Location, Value t, ValueRange) {
          forKBlocks(rb, kStepsPerRowBlock, [&](OpBuilder &kb, Value k0, Value k1) {
            tile(kb, t, ps, 1, k0, k1, Value());
          });
          scf::YieldOp::create(rb, loc);
        });
  };
  // Run j holds base + 1 panels when j < extra, base otherwise; the runs'
  // first `base` panels go in groups of `streams` (one stream: every panel
  // in order), the extra ones alone.
  const int64_t streams = shape.decodeStreams;
  assert(kDecodeUnroll % streams == 0 && "the unrolled k steps shared by the streams");
  Value panelCount = arith::SubIOp::create(b, loc, panelEnd, panelBegin);
  Value base = arith::DivUIOp::create(b, loc, panelCount, idx(b, streams));
  Value extra = arith::RemUIOp::create(b, loc, panelCount, idx(b, streams));
  // The first panel of run j: j base + min(j, extra) after panelBegin.
  auto runStart = [&](OpBuilder &ob, Value j) -> Value {
    Value whole = arith::MulIOp::create(ob, loc, base, j);
    Value longer = arith::MinUIOp::create(ob, loc, extra, j); // runs with an extra panel
    return arith::AddIOp::create(ob, loc, panelBegin,
                                 arith::AddIOp::create(ob, loc, whole, longer));
  };
  SmallVector<Value> runStarts;
  for (int64_t j = 0; j < streams; ++j)
    runStarts.push_back(runStart(b, idx(b, j)));
  scf::ForOp::create(b, loc, zero, base, idx(b, 1), ValueRange{},
                     [&](OpBuilder &ob, Location, Value i, ValueRange) {
                       SmallVector<Value> group;
                       for (Value start : runStarts)
                         group.push_back(arith::AddIOp::create(ob, loc, start, i));
                       singleRows(ob, group);
                       scf::YieldOp::create(ob, loc);
                     });
  // Run j's last panel, for each j < extra (none with one stream: not
  // emitted, rather than a second copy of the tile behind an empty loop).
  if (streams > 1)
    scf::ForOp::create(b, loc, zero, extra, idx(b, 1), ValueRange{},
                       [&](OpBuilder &ob, Location, Value j, ValueRange) {
                         singleRows(ob, {arith::AddIOp::create(ob, loc, runStart(ob, j), base)});
                         scf::YieldOp::create(ob, loc);
                       });
  if (packedX.bytes)
    memref::DeallocOp::create(b, loc, packedX.bytes);
}
