//===- AmxMatmul.cpp - projections on AMX tiles ---------------------------===//
//
// The multi-row tiles of a projection with bf16 dot products (Matmul.cpp) on
// Intel's AMX: eight tile registers of 16 rows x 64 bytes and tdpbf16ps,
// which multiplies a 16 x 32 bf16 tile by a 32 x 16 one (k in pairs) into a
// 16 x 16 f32 tile, 16x the work of a vdpbf16ps. A block is 32 token rows x
// one 32-column panel: four accumulator tiles, two of activations and two of
// weights, all eight registers. The panels are already in AMX's layout for
// the right-hand tile (KernelABI.h's k pairs: a 16-column half of the pair
// rows 2q + h is row q of tile h, 128 bytes apart). Whole blocks keep their
// sums in the output, the reduction in chunks (below); a block at an edge
// runs the whole reduction, stores its sums to a 32 x 32 scratch and adds
// them to the output a row at a time, masked to the call's columns. The
// tiles accumulate in f32; only the weights and activations are bf16.
//
//===----------------------------------------------------------------------===//

#include "Matmul.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

void tbc::emitAmxPanelTiles(OpBuilder &b, Location loc, Value xb, Value packed, Value acc,
                            Value rows, Value blockEnd, Value panelBegin, Value panelEnd,
                            Value colBegin, Value colEnd, bool accumulate, int64_t terms,
                            Value termRows) {
  const int64_t k = cast<MemRefType>(packed.getType()).getShape()[1];
  const int64_t panel = cast<MemRefType>(packed.getType()).getShape()[2];
  assert(panel == 2 * kAmxTileRows && k % kAmxTileK == 0 && "AMX blocks: 32-column panels, "
                                                             "whole 32-k steps");
  auto idx = [&](OpBuilder &ob, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(ob, loc, v);
  };
  auto bf16Tile = amx::TileType::get({kAmxTileRows, kAmxTileK}, b.getBF16Type());
  auto f32Tile = amx::TileType::get({kAmxTileRows, kAmxTileRows}, b.getF32Type());
  auto vecType = VectorType::get({kAmxTileRows}, b.getF32Type());
  // An edge block's sums, stored from the tiles. On the heap: an alloca
  // here (inside the kernel's loops) would grow the stack with every pass.
  Value sums = memref::AllocOp::create(
      b, loc, MemRefType::get({kAmxBlockRows, panel}, b.getF32Type()), b.getI64IntegerAttr(64));
  Value zero = idx(b, 0);
  const ColumnMask columnMask(b, loc, kAmxTileRows, colBegin, colEnd);
  Value none = arith::ConstantOp::create(b, loc, vecType, DenseElementsAttr::get(vecType, 0.0f));

  // A block at an edge (rows past the last, columns outside the call's):
  // its sums through the scratch, added to (or defining) the output's
  // columns of this call a row at a time, masked.
  auto emitEdge = [&](OpBuilder &mb, Value m, Value panelCol, ValueRange blockSums) {
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t h = 0; h < 2; ++h) {
        Value r0 = idx(mb, i * kAmxTileRows);
        Value c0 = idx(mb, h * kAmxTileRows);
        amx::TileStoreOp::create(mb, loc, sums, ValueRange{r0, c0}, blockSums[2 * i + h]);
      }
    Value left = arith::SubIOp::create(mb, loc, rows, m);
    Value count = arith::MinUIOp::create(mb, loc, left, idx(mb, kAmxBlockRows));
    scf::ForOp::create(
        mb, loc, zero, count, idx(mb, 1), ValueRange{},
        [&](OpBuilder &rb, Location, Value r, ValueRange) {
          Value t = arith::AddIOp::create(rb, loc, m, r);
          for (int64_t h = 0; h < 2; ++h) {
            Value col = arith::AddIOp::create(rb, loc, panelCol, idx(rb, h * kAmxTileRows));
            Value mask = columnMask.at(rb, loc, col);
            Value sum = vector::LoadOp::create(rb, loc, vecType, sums,
                                               ValueRange{r, idx(rb, h * kAmxTileRows)});
            SmallVector<Value, 3> at{zero, t, col};
            if (accumulate) {
              Value old = vector::MaskedLoadOp::create(rb, loc, vecType, acc, at, mask, none);
              sum = arith::AddFOp::create(rb, loc, old, sum);
            }
            vector::MaskedStoreOp::create(rb, loc, acc, at, mask, sum);
          }
          scf::YieldOp::create(rb, loc);
        });
  };
  // Half h of panel p: its pair rows 2q + h, a [k / 2, 32] view with rows
  // 2 * 32 elements apart.
  auto halvesOf = [&](OpBuilder &pb, Value p) {
    SmallVector<Value, 2> halves;
    for (int64_t h = 0; h < 2; ++h) {
      SmallVector<OpFoldResult> at{p, pb.getIndexAttr(h), pb.getIndexAttr(0)},
          size{pb.getIndexAttr(1), pb.getIndexAttr(k / 2), pb.getIndexAttr(panel)},
          step{pb.getIndexAttr(1), pb.getIndexAttr(2), pb.getIndexAttr(1)};
      auto type = memref::SubViewOp::inferRankReducedResultType(
          {k / 2, panel}, cast<MemRefType>(packed.getType()), at, size, step);
      halves.push_back(
          memref::SubViewOp::create(pb, loc, cast<MemRefType>(type), packed, at, size, step));
    }
    return halves;
  };
  // Whether panel p's columns all lie in [colBegin, colEnd).
  auto panelInside = [&](OpBuilder &pb, Value panelCol) -> Value {
    Value panelEndCol = arith::AddIOp::create(pb, loc, panelCol, idx(pb, panel));
    Value startsIn = arith::CmpIOp::create(pb, loc, arith::CmpIPredicate::uge, panelCol, colBegin);
    Value endsIn = arith::CmpIOp::create(pb, loc, arith::CmpIPredicate::ule, panelEndCol, colEnd);
    return arith::AndIOp::create(pb, loc, startsIn, endsIn);
  };
  // A block's k loop over pairs [q0, q1) from the accumulators `inits`:
  // (i, h) holds rows 16 i, columns 16 h of the block.
  auto kLoop = [&](OpBuilder &mb, ArrayRef<Value> halves, Value m, ValueRange inits, Value q0,
                   Value q1) {
    // The block's first row in each term's row set.
    SmallVector<Value, 3> bases;
    for (int64_t j = 0; j < terms; ++j)
      bases.push_back(activationTermRow(mb, loc, m, termRows, j));
    return scf::ForOp::create(
        mb, loc, q0, q1, idx(mb, kAmxTileK / 2), inits,
        [&](OpBuilder &kb, Location, Value q, ValueRange accs) {
          Value kk = arith::MulIOp::create(kb, loc, q, idx(kb, 2));
          // The activation tiles of term j (two row tiles).
          auto activations = [&](int64_t j) {
            SmallVector<Value, 2> as;
            for (int64_t i = 0; i < 2; ++i) {
              Value row = arith::AddIOp::create(kb, loc, bases[j], idx(kb, i * kAmxTileRows));
              as.push_back(amx::TileLoadOp::create(kb, loc, bf16Tile, xb, ValueRange{row, kk}));
            }
            return as;
          };
          SmallVector<Value, 2> as = activations(0), ws;
          for (int64_t h = 0; h < 2; ++h)
            ws.push_back(amx::TileLoadOp::create(kb, loc, bf16Tile, halves[h],
                                                 ValueRange{q, idx(kb, 0)}));
          SmallVector<Value, 4> next(accs.begin(), accs.end());
          // Each term's products onto the same sums, the weight tiles loaded
          // once for all (three terms still take ~3x one's time: the tile
          // products bound it; bench/NOTES.md).
          for (int64_t j = 0; j < terms; ++j) {
            if (j > 0)
              as = activations(j);
            for (int64_t i = 0; i < 2; ++i)
              for (int64_t h = 0; h < 2; ++h)
                next[2 * i + h] =
                    amx::TileMulFOp::create(kb, loc, f32Tile, as[i], ws[h], next[2 * i + h]);
          }
          scf::YieldOp::create(kb, loc, next);
        });
  };
  auto zeros = [&](OpBuilder &mb) {
    SmallVector<Value, 4> inits;
    for (int64_t i = 0; i < 4; ++i)
      inits.push_back(amx::TileZeroOp::create(mb, loc, f32Tile));
    return inits;
  };

  // Whole blocks (32 rows that exist, a panel inside the call's columns)
  // keep their sums in the output itself: a block starts from the output's
  // values (a projection onto its residual, or a chunk after the first) or
  // zeros and is stored straight back, with no scratch and no masks (the
  // edge path cost ~20% of a projection's time where it was the only one).
  // The reduction runs in chunks of kAmxChunkK, the outermost loop, so that
  // a chunk of the activations (32 rows x 4 KB a block) stays in L2 while
  // every panel streams past it; with the whole reduction per block, a
  // 14336-wide one re-read the activations from L3 for every panel (a C
  // microbenchmark of the 2 x 2 block, 256 x 14336 x 4096 a thread: 525 ->
  // 830 GFLOP/s; +3% at 1024 wide, +10% at 4096; bench/NOTES.md).
  Value wholeEnd = arith::MulIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, rows, idx(b, kAmxBlockRows)), idx(b, kAmxBlockRows));
  // With more activation terms a chunk is that much shorter, so that a
  // group's chunk of all terms still fits L2 (three terms of 2048 k: 3 MiB,
  // and the projections ran at a fifth of one term's rate).
  const int64_t chunkK = terms == 1 ? kAmxChunkK : terms == 2 ? kAmxChunkK / 2 : kAmxChunkK / 4;
  const int64_t chunkPairs = chunkK / 2;
  // The rows in groups of kAmxRowGroup, each through every chunk and panel
  // before the next: a group's chunk of activations (256 rows x 4 KB) stays
  // in L2 while the panels stream past; all of a long prompt's rows (a
  // core's 1024 of 2048) re-read theirs from L3 for every panel (a
  // 2048-token prefill at hidden 1024: +12%; bench/NOTES.md).
  scf::ForOp::create(
      b, loc, zero, wholeEnd, idx(b, kAmxRowGroup), ValueRange{},
      [&](OpBuilder &gb, Location, Value groupBegin, ValueRange) {
        Value groupEnd = arith::MinUIOp::create(
            gb, loc, arith::AddIOp::create(gb, loc, groupBegin, idx(gb, kAmxRowGroup)), wholeEnd);
        scf::ForOp::create(
            gb, loc, zero, idx(gb, k / 2), idx(gb, chunkPairs), ValueRange{},
            [&](OpBuilder &cb, Location, Value q0, ValueRange) {
              Value q1 = arith::MinUIOp::create(
                  cb, loc, arith::AddIOp::create(cb, loc, q0, idx(cb, chunkPairs)), idx(cb, k / 2));
              Value firstChunk = arith::CmpIOp::create(cb, loc, arith::CmpIPredicate::eq, q0, zero);
              scf::ForOp::create(
                  cb, loc, panelBegin, panelEnd, idx(cb, 1), ValueRange{},
                  [&](OpBuilder &pb, Location, Value p, ValueRange) {
                    Value panelCol = arith::MulIOp::create(pb, loc, p, idx(pb, panel));
                    scf::IfOp::create(
                        pb, loc, panelInside(pb, panelCol), [&](OpBuilder &ib, Location) {
                          SmallVector<Value, 2> halves = halvesOf(ib, p);
                          scf::ForOp::create(
                              ib, loc, groupBegin, groupEnd, idx(ib, kAmxBlockRows), ValueRange{},
                              [&](OpBuilder &mb, Location, Value m, ValueRange) {
                                auto outputAt = [&](OpBuilder &ob, int64_t i,
                                                    int64_t h) -> SmallVector<Value, 3> {
                                  Value row =
                                      arith::AddIOp::create(ob, loc, m, idx(ob, i * kAmxTileRows));
                                  Value col = arith::AddIOp::create(ob, loc, panelCol,
                                                                    idx(ob, h * kAmxTileRows));
                                  return {zero, row, col};
                                };
                                auto loadOutput = [&](OpBuilder &ob) {
                                  SmallVector<Value, 4> tiles;
                                  for (int64_t i = 0; i < 2; ++i)
                                    for (int64_t h = 0; h < 2; ++h)
                                      tiles.push_back(amx::TileLoadOp::create(ob, loc, f32Tile, acc,
                                                                              outputAt(ob, i, h)));
                                  return tiles;
                                };
                                SmallVector<Value, 4> inits;
                                if (accumulate) {
                                  inits = loadOutput(mb);
                                } else {
                                  // The first chunk defines the output: whatever it
                                  // held (NaN included) is never read.
                                  SmallVector<Type, 4> types(4, f32Tile);
                                  auto start =
                                      scf::IfOp::create(mb, loc, TypeRange(types), firstChunk,
                                                        /*withElseRegion=*/true);
                                  OpBuilder zb = start.getThenBodyBuilder();
                                  scf::YieldOp::create(zb, loc, zeros(zb));
                                  OpBuilder lb = start.getElseBodyBuilder();
                                  scf::YieldOp::create(lb, loc, loadOutput(lb));
                                  inits.assign(start.getResults().begin(),
                                               start.getResults().end());
                                }
                                auto loop = kLoop(mb, halves, m, inits, q0, q1);
                                for (int64_t i = 0; i < 2; ++i)
                                  for (int64_t h = 0; h < 2; ++h)
                                    amx::TileStoreOp::create(mb, loc, acc, outputAt(mb, i, h),
                                                             loop.getResult(2 * i + h));
                                scf::YieldOp::create(mb, loc);
                              });
                          scf::YieldOp::create(ib, loc);
                        });
                    scf::YieldOp::create(pb, loc);
                  });
              scf::YieldOp::create(cb, loc);
            });
        scf::YieldOp::create(gb, loc);
      });
  // Then the blocks at an edge, each over the whole reduction: the last
  // rows' block of every panel, and every block of a panel that straddles
  // the call's columns.
  scf::ForOp::create(
      b, loc, panelBegin, panelEnd, idx(b, 1), ValueRange{},
      [&](OpBuilder &pb, Location, Value p, ValueRange) {
        Value panelCol = arith::MulIOp::create(pb, loc, p, idx(pb, panel));
        Value inside = panelInside(pb, panelCol);
        Value firstEdge = arith::SelectOp::create(pb, loc, inside, wholeEnd, zero);
        SmallVector<Value, 2> halves = halvesOf(pb, p);
        scf::ForOp::create(
            pb, loc, firstEdge, blockEnd, idx(pb, kAmxBlockRows), ValueRange{},
            [&](OpBuilder &mb, Location, Value m, ValueRange) {
              auto loop = kLoop(mb, halves, m, zeros(mb), zero, idx(mb, k / 2));
              emitEdge(mb, m, panelCol, loop.getResults());
              scf::YieldOp::create(mb, loc);
            });
        scf::YieldOp::create(pb, loc);
      });
  memref::DeallocOp::create(b, loc, sums);
}
