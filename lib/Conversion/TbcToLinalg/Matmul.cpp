//===- Matmul.cpp - register-tiled, vectorised projections ----------------===//
//
// acc[0, t, n] += sum_k x[0, t, k] * W[n, k] for torch-layout ([out, in])
// weights, over a range of output columns n (a core's share when decoding):
// 4 rows x 4 output columns per tile, 16-wide FMAs along k (both x rows and
// W rows are contiguous in k), 16 vector accumulators, one horizontal sum
// per output. This is where a transformer spends its time.
//
//===----------------------------------------------------------------------===//

#include "Matmul.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

static constexpr int64_t kVector = 16, kCols = 4, kRows = 4;

bool tbc::emitTiledMatmul(OpBuilder &b, Location loc, Value x, Value w,
                          Value acc, bool inOut, Value colBegin,
                          Value colEnd) {
  auto wType = cast<MemRefType>(w.getType());
  if (inOut || wType.getRank() != 2)
    return false;
  int64_t k = wType.getShape()[1];
  // A reduction that is not a whole number of vectors goes to the generic
  // loop nest.
  if (k % kVector != 0)
    return false;
  auto vecType = VectorType::get({kVector}, b.getF32Type());
  auto idx = [&](OpBuilder &ob, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(ob, loc, v);
  };
  Value zero = idx(b, 0);
  Value rows = memref::DimOp::create(b, loc, x, 1);
  Value blocked = arith::MulIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, rows, idx(b, kRows)), idx(b, kRows));

  // One tile: `r` rows from `t`, `cols` output columns from `col`.
  auto tile = [&](OpBuilder &cb, Value t, Value col, int64_t r, int64_t cols) {
    Value init = arith::ConstantOp::create(
        cb, loc, vecType, DenseElementsAttr::get(vecType, 0.0f));
    SmallVector<Value> inits(r * cols, init);
    auto kLoop = scf::ForOp::create(
        cb, loc, zero, idx(cb, k), idx(cb, kVector), inits,
        [&](OpBuilder &kb, Location, Value kk, ValueRange accs) {
          SmallVector<Value> xs, ws, next;
          for (int64_t i = 0; i < r; ++i) {
            Value row = arith::AddIOp::create(kb, loc, t, idx(kb, i));
            xs.push_back(vector::LoadOp::create(kb, loc, vecType, x,
                                                ValueRange{zero, row, kk}));
          }
          for (int64_t j = 0; j < cols; ++j) {
            Value c = arith::AddIOp::create(kb, loc, col, idx(kb, j));
            ws.push_back(vector::LoadOp::create(kb, loc, vecType, w,
                                                ValueRange{c, kk}));
          }
          for (int64_t i = 0; i < r; ++i)
            for (int64_t j = 0; j < cols; ++j)
              next.push_back(vector::FMAOp::create(kb, loc, xs[i], ws[j],
                                                   accs[i * cols + j]));
          scf::YieldOp::create(kb, loc, next);
        });
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        Value sum = vector::ReductionOp::create(
            cb, loc, vector::CombiningKind::ADD, kLoop.getResult(i * cols + j));
        Value row = arith::AddIOp::create(cb, loc, t, idx(cb, i));
        Value c = arith::AddIOp::create(cb, loc, col, idx(cb, j));
        Value old = memref::LoadOp::create(cb, loc, acc, ValueRange{zero, row, c});
        memref::StoreOp::create(cb, loc, arith::AddFOp::create(cb, loc, old, sum),
                                acc, ValueRange{zero, row, c});
      }
  };
  // Output columns outermost: a tile's weight rows stay in cache while
  // every token row streams past them.
  auto columns = [&](Value from, Value to, int64_t cols) {
    scf::ForOp::create(
        b, loc, from, to, idx(b, cols), ValueRange{},
        [&](OpBuilder &ob, Location, Value col, ValueRange) {
          scf::ForOp::create(ob, loc, zero, blocked, idx(ob, kRows), ValueRange{},
                             [&](OpBuilder &rb, Location, Value t, ValueRange) {
                               tile(rb, t, col, kRows, cols);
                               scf::YieldOp::create(rb, loc);
                             });
          scf::ForOp::create(ob, loc, blocked, rows, idx(ob, 1), ValueRange{},
                             [&](OpBuilder &rb, Location, Value t, ValueRange) {
                               tile(rb, t, col, 1, cols);
                               scf::YieldOp::create(rb, loc);
                             });
          scf::YieldOp::create(ob, loc);
        });
  };
  // Columns that do not fill a tile (a vocabulary of 50257, or the end of
  // a core's share) get one-column tiles.
  Value span = arith::SubIOp::create(b, loc, colEnd, colBegin);
  Value blockedEnd = arith::AddIOp::create(
      b, loc, colBegin,
      arith::MulIOp::create(b, loc,
                            arith::DivUIOp::create(b, loc, span, idx(b, kCols)),
                            idx(b, kCols)));
  columns(colBegin, blockedEnd, kCols);
  columns(blockedEnd, colEnd, 1);
  return true;
}
