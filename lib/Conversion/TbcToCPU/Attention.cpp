//===- Attention.cpp - causal attention over the KV cache, vectorised -----===//
//
// One kernel call handles the key/value heads [kvBegin, kvEnd) (a core's
// share) and every query head of their groups. It first appends the chunk's
// keys and values of those heads to the caches (rows [L - T, L)), then for
// each query row and head:
//   scores  s_j = scale * q . k_j (soft-capped, plus the position bias of
//           ALiBi or a relative-position table) for the positions j the row
//           may see: j <= p for causal attention, and j > p - window with a
//           sliding window; masked positions are skipped, not computed;
//   softmax p_j = exp(s_j - max) / sum;
//   output  o = sum_j p_j v_j, accumulated in head_dim / 16 vector registers.
// Dot products and the value sums are 16-wide (or the widest of 8, 4, 1
// that divides head_dim).
//
//===----------------------------------------------------------------------===//

#include "Attention.h"
#include "KernelBuilder.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

using namespace mlir;

void tbc::emitAttention(OpBuilder &b, Location loc, AttentionOp a, Value q,
                        Value kNew, Value vNew, Value out, Value kCache,
                        Value vCache, Value kvBegin, Value kvEnd,
                        const PositionBias &bias) {
  KernelBuilder kb(b, loc);
  int64_t kvHeads = a.getNumKvHeads(), D = a.getHeadDim(),
          group = a.getNumHeads() / kvHeads;
  double scale = a.getScale().convertToDouble();
  std::optional<double> cap;
  if (a.getSoftcap())
    cap = a.getSoftcap()->convertToDouble();
  int64_t window = a.getWindow().value_or(0);
  bool causal = a.getCausal();
  int64_t width = 16;
  while (D % width != 0)
    width /= 2;
  int64_t chunks = D / width;
  auto vecType = VectorType::get({width}, b.getF32Type());
  auto idx = [&](OpBuilder &ob, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(ob, loc, v);
  };
  auto f32 = [&](OpBuilder &ob, double v) -> Value {
    return arith::ConstantOp::create(ob, loc, ob.getF32FloatAttr(float(v)));
  };
  Value zero = idx(b, 0), one = idx(b, 1);
  Value T = memref::DimOp::create(b, loc, q, 1);
  Value L = memref::DimOp::create(b, loc, kCache, 0);
  Value past = arith::SubIOp::create(b, loc, L, T);

  // Append this share's columns of the new keys and values.
  Value colBegin = arith::MulIOp::create(b, loc, kvBegin, idx(b, D));
  Value colCount = arith::MulIOp::create(
      b, loc, arith::SubIOp::create(b, loc, kvEnd, kvBegin), idx(b, D));
  for (auto [src, cache] : {std::pair{kNew, kCache}, std::pair{vNew, vCache}}) {
    Value from = kb.slice(src, 2, colBegin, colCount);
    Value to = kb.slice(kb.slice(cache, 0, past, T), 1, colBegin, colCount);
    kb.generic(from, to,
               {kb.map(2, {b.getAffineConstantExpr(0), kb.d(0), kb.d(1)}),
                kb.identity(2)},
               KernelBuilder::iterators(2),
               [&](OpBuilder &nb, Location l, ValueRange v) {
                 linalg::YieldOp::create(nb, l, v[0]);
               });
  }

  // One row of scores (then probabilities) per call.
  Value S = memref::AllocOp::create(
      b, loc, MemRefType::get({ShapedType::kDynamic}, b.getF32Type()), ValueRange{L});
  Value headBegin = arith::MulIOp::create(b, loc, kvBegin, idx(b, group));
  Value headEnd = arith::MulIOp::create(b, loc, kvEnd, idx(b, group));
  scf::ForOp::create(b, loc, zero, T, one, ValueRange{}, [&](OpBuilder &tb, Location,
                                                              Value t, ValueRange) {
    // The positions this row sees: [jBegin, jEnd).
    Value p = arith::AddIOp::create(tb, loc, past, t);
    Value jEnd = causal ? arith::AddIOp::create(tb, loc, p, one).getResult() : L;
    Value jBegin = zero;
    if (causal && window > 0) {
      // j > p - window  <=>  j >= p + 1 - window (clamped at 0).
      Value pw = arith::AddIOp::create(tb, loc, p, idx(tb, 1));
      Value w = idx(tb, window);
      jBegin = arith::SelectOp::create(
          tb, loc, arith::CmpIOp::create(tb, loc, arith::CmpIPredicate::ugt, pw, w),
          arith::SubIOp::create(tb, loc, pw, w), zero);
    }
    scf::ForOp::create(tb, loc, headBegin, headEnd, one, ValueRange{}, [&](OpBuilder &hb,
                                                                           Location, Value h,
                                                                           ValueRange) {
      Value kvCol = arith::MulIOp::create(
          hb, loc, arith::DivUIOp::create(hb, loc, h, idx(hb, group)), idx(hb, D));
      Value qCol = arith::MulIOp::create(hb, loc, h, idx(hb, D));
      auto at = [&](OpBuilder &ob, Value base, int64_t c) -> Value {
        return arith::AddIOp::create(ob, loc, base, idx(ob, c * width));
      };
      SmallVector<Value> qs;
      for (int64_t c = 0; c < chunks; ++c)
        qs.push_back(vector::LoadOp::create(hb, loc, vecType, q,
                                            ValueRange{zero, t, at(hb, qCol, c)}));
      // Scores and their maximum.
      Value negInf = f32(hb, -std::numeric_limits<double>::infinity());
      auto maxLoop = scf::ForOp::create(
          hb, loc, jBegin, jEnd, one, ValueRange{negInf},
          [&](OpBuilder &jb, Location, Value j, ValueRange m) {
            Value acc = arith::ConstantOp::create(
                jb, loc, vecType, DenseElementsAttr::get(vecType, 0.0f));
            for (int64_t c = 0; c < chunks; ++c) {
              Value k = vector::LoadOp::create(jb, loc, vecType, kCache,
                                               ValueRange{j, at(jb, kvCol, c)});
              acc = vector::FMAOp::create(jb, loc, qs[c], k, acc);
            }
            // Summed as a tree (reassoc): in order, the 16 adds were one
            // latency chain per score.
            Value s = vector::ReductionOp::create(jb, loc, vector::CombiningKind::ADD, acc,
                                                  arith::FastMathFlags::reassoc);
            s = arith::MulFOp::create(jb, loc, s, f32(jb, scale));
            if (cap)
              s = emitSoftcap(jb, loc, *cap, s);
            if (Value term = bias.at(jb, loc, h, p, j))
              s = arith::AddFOp::create(jb, loc, s, term);
            memref::StoreOp::create(jb, loc, s, S, ValueRange{j});
            // maxnumf: maximumf's signed-zero order took two branches a
            // score. A NaN score still makes the row NaN (through its exp).
            scf::YieldOp::create(jb, loc,
                                 ValueRange{arith::MaxNumFOp::create(jb, loc, m[0], s)});
          });
      Value m = maxLoop.getResult(0);
      // Probabilities (unnormalised) and their sum: `width` at a time (the
      // polynomial exp vectorised; scalar, it cost as much as the scores),
      // then the rest one by one.
      Value jVecEnd = arith::AddIOp::create(
          hb, loc, jBegin,
          arith::MulIOp::create(
              hb, loc,
              arith::DivUIOp::create(hb, loc, arith::SubIOp::create(hb, loc, jEnd, jBegin),
                                     idx(hb, width)),
              idx(hb, width)));
      Value mVec = vector::BroadcastOp::create(hb, loc, vecType, m);
      auto vecSumLoop = scf::ForOp::create(
          hb, loc, jBegin, jVecEnd, idx(hb, width),
          ValueRange{arith::ConstantOp::create(hb, loc, vecType,
                                               DenseElementsAttr::get(vecType, 0.0f))},
          [&](OpBuilder &jb, Location, Value j, ValueRange sum) {
            Value s = vector::LoadOp::create(jb, loc, vecType, S, ValueRange{j});
            Value e = math::ExpOp::create(jb, loc, arith::SubFOp::create(jb, loc, s, mVec));
            vector::StoreOp::create(jb, loc, e, S, ValueRange{j});
            scf::YieldOp::create(jb, loc, ValueRange{arith::AddFOp::create(jb, loc, sum[0], e)});
          });
      Value vecSum = vector::ReductionOp::create(hb, loc, vector::CombiningKind::ADD,
                                                 vecSumLoop.getResult(0),
                                                 arith::FastMathFlags::reassoc);
      auto sumLoop = scf::ForOp::create(
          hb, loc, jVecEnd, jEnd, one, ValueRange{vecSum},
          [&](OpBuilder &jb, Location, Value j, ValueRange sum) {
            Value s = memref::LoadOp::create(jb, loc, S, ValueRange{j});
            Value e = math::ExpOp::create(jb, loc, arith::SubFOp::create(jb, loc, s, m));
            memref::StoreOp::create(jb, loc, e, S, ValueRange{j});
            scf::YieldOp::create(jb, loc, ValueRange{arith::AddFOp::create(jb, loc, sum[0], e)});
          });
      // Weighted sum of the values, then one division per output element.
      Value init = arith::ConstantOp::create(hb, loc, vecType,
                                             DenseElementsAttr::get(vecType, 0.0f));
      auto valueLoop = scf::ForOp::create(
          hb, loc, jBegin, jEnd, one, SmallVector<Value>(chunks, init),
          [&](OpBuilder &jb, Location, Value j, ValueRange accs) {
            Value pj = vector::BroadcastOp::create(
                jb, loc, vecType, memref::LoadOp::create(jb, loc, S, ValueRange{j}));
            SmallVector<Value> next;
            for (int64_t c = 0; c < chunks; ++c) {
              Value v = vector::LoadOp::create(jb, loc, vecType, vCache,
                                               ValueRange{j, at(jb, kvCol, c)});
              next.push_back(vector::FMAOp::create(jb, loc, pj, v, accs[c]));
            }
            scf::YieldOp::create(jb, loc, next);
          });
      Value inv = vector::BroadcastOp::create(
          hb, loc, vecType,
          arith::DivFOp::create(hb, loc, f32(hb, 1.0), sumLoop.getResult(0)));
      for (int64_t c = 0; c < chunks; ++c)
        vector::StoreOp::create(hb, loc,
                                arith::MulFOp::create(hb, loc, valueLoop.getResult(c), inv),
                                out, ValueRange{zero, t, at(hb, qCol, c)});
      scf::YieldOp::create(hb, loc);
    });
    scf::YieldOp::create(tb, loc);
  });
  memref::DeallocOp::create(b, loc, S);
}
