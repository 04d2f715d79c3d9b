//===- Attention.cpp - causal attention over the KV cache, vectorised -----===//
//
// One kernel call handles the key/value heads [kvBegin, kvEnd) (a core's
// share) and every query head of their groups. It first appends the chunk's
// keys and values of those heads to the caches (rows [L - T, L)), then for
// each query row and each pass of up to four query heads of one group (they
// share each key and value row loaded):
//   scores  s_j = scale * q . k_j (soft-capped, plus the position bias of
//           ALiBi or a relative-position table) for the positions j the row
//           may see: j <= p for causal attention, and j > p - window with a
//           sliding window; masked positions are skipped, not computed;
//   softmax p_j = exp(s_j - max) / sum;
//   output  o = sum_j p_j v_j, accumulated in eight vector registers: as
//           many of the pass's heads' chunks of 16 columns as fit, in as
//           many sweeps over the values as that takes.
// Dot products and the value sums are 16-wide (or the widest of 8, 4, 1
// that divides head_dim). This is decoding's kernel: with --cpu-dot amx, a
// chunk of kAmxMinRows queries or more attends on AMX tiles instead
// (AmxAttention.cpp), and otherwise a chunk of kTiledMinRows or more whose
// logits have no position bias in register tiles (TiledAttention.cpp).
//
//===----------------------------------------------------------------------===//

#include "Attention.h"
#include "KernelBuilder.h"
#include "Matmul.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

using namespace mlir;

// The most query heads of a group that share a pass over the keys and
// values (AVX2, Zen 3: 4 ran faster than 2 or 8).
static constexpr int64_t kMaxHeadsPerPass = 4;

/// The sum of each vector's lanes. Four 16-wide vectors are summed together
/// (halves added, then two rounds of shuffles pairing the vectors' lanes,
/// then the halves again: 13 instructions for the 4 sums on AVX2, where four
/// separate reductions took 35 of the score loop's 100); anything else one
/// tree (reassoc) each: in order, the 16 adds were one latency chain.
static SmallVector<Value> horizontalSums(OpBuilder &b, Location loc, ArrayRef<Value> vs) {
  auto type = cast<VectorType>(vs.front().getType());
  SmallVector<Value> sums;
  if (vs.size() != 4 || type.getNumElements() != 16) {
    for (Value v : vs)
      sums.push_back(vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, v,
                                                 arith::FastMathFlags::reassoc));
    return sums;
  }
  auto half = [&](Value v, int64_t offset, int64_t size) -> Value {
    return vector::ExtractStridedSliceOp::create(b, loc, v, ArrayRef<int64_t>{offset},
                                                 ArrayRef<int64_t>{size}, ArrayRef<int64_t>{1});
  };
  auto add = [&](Value x, Value y) -> Value { return arith::AddFOp::create(b, loc, x, y); };
  // The sum of v's two halves. Each op in a statement of its own, here and
  // below: an argument list's order is the compiler's (gcc right to left,
  // clang left to right), and the IR would differ between them.
  auto halves = [&](Value v, int64_t size) {
    Value high = half(v, size, size);
    Value low = half(v, 0, size);
    return add(low, high);
  };
  // 16 -> 8 lanes each.
  SmallVector<Value> v8;
  for (Value v : vs)
    v8.push_back(halves(v, 8));
  // Lanes (0, 2), (1, 3), ... of a pair: [x02 x13 y02 y13 x46 x57 y46 y57].
  auto pairSums = [&](Value x, Value y, ArrayRef<int64_t> even, ArrayRef<int64_t> odd) {
    Value o = vector::ShuffleOp::create(b, loc, x, y, odd);
    Value e = vector::ShuffleOp::create(b, loc, x, y, even);
    return add(e, o);
  };
  Value ab = pairSums(v8[0], v8[1], {0, 1, 8, 9, 4, 5, 12, 13}, {2, 3, 10, 11, 6, 7, 14, 15});
  Value cd = pairSums(v8[2], v8[3], {0, 1, 8, 9, 4, 5, 12, 13}, {2, 3, 10, 11, 6, 7, 14, 15});
  // [a b c d a' b' c' d']: lanes 0-3 of each vector summed, then lanes 4-7.
  Value abcd = pairSums(ab, cd, {0, 2, 8, 10, 4, 6, 12, 14}, {1, 3, 9, 11, 5, 7, 13, 15});
  Value total = halves(abcd, 4);
  for (int64_t r = 0; r < 4; ++r)
    sums.push_back(vector::ExtractOp::create(b, loc, total, ArrayRef<int64_t>{r}));
  return sums;
}

Value tbc::emitWindowStart(OpBuilder &b, Location loc, Value p, Value window) {
  // j > p - window  <=>  j >= p + 1 - window (clamped at 0).
  Value pw = arith::AddIOp::create(b, loc, p, arith::ConstantIndexOp::create(b, loc, 1));
  Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, pw, window);
  Value start = arith::SubIOp::create(b, loc, pw, window);
  return arith::SelectOp::create(b, loc, inside, start,
                                 arith::ConstantIndexOp::create(b, loc, 0));
}

/// The end of the `width`-wide steps from jBegin towards jEnd.
static Value vectorStepsEnd(OpBuilder &b, Location loc, Value jBegin, Value jEnd,
                            int64_t width) {
  Value w = arith::ConstantIndexOp::create(b, loc, width);
  Value steps = arith::DivUIOp::create(b, loc, arith::SubIOp::create(b, loc, jEnd, jBegin), w);
  return arith::AddIOp::create(b, loc, jBegin, arith::MulIOp::create(b, loc, steps, w));
}

Value tbc::emitRowMax(OpBuilder &b, Location loc, Value S, Value row, Value jBegin, Value jEnd,
                      int64_t width) {
  auto vecType = VectorType::get({width}, b.getF32Type());
  float negInf = -std::numeric_limits<float>::infinity();
  Value jVecEnd = vectorStepsEnd(b, loc, jBegin, jEnd, width);
  // maxnumf, as the one-row kernel's score loop: a NaN score still makes
  // the row NaN through its exp.
  auto vecLoop = scf::ForOp::create(
      b, loc, jBegin, jVecEnd, arith::ConstantIndexOp::create(b, loc, width),
      ValueRange{arith::ConstantOp::create(b, loc, vecType,
                                           DenseElementsAttr::get(vecType, negInf))},
      [&](OpBuilder &jb, Location, Value j, ValueRange m) {
        Value s = vector::LoadOp::create(jb, loc, vecType, S, ValueRange{row, j});
        scf::YieldOp::create(jb, loc, ValueRange{arith::MaxNumFOp::create(jb, loc, m[0], s)});
      });
  Value vecMax = vector::ReductionOp::create(b, loc, vector::CombiningKind::MAXNUMF,
                                             vecLoop.getResult(0));
  auto loop = scf::ForOp::create(
      b, loc, jVecEnd, jEnd, arith::ConstantIndexOp::create(b, loc, 1), ValueRange{vecMax},
      [&](OpBuilder &jb, Location, Value j, ValueRange m) {
        Value s = memref::LoadOp::create(jb, loc, S, ValueRange{row, j});
        scf::YieldOp::create(jb, loc, ValueRange{arith::MaxNumFOp::create(jb, loc, m[0], s)});
      });
  return loop.getResult(0);
}

Value tbc::emitExpAndSum(OpBuilder &b, Location loc, Value S, Value row, Value jBegin,
                         Value jEnd, Value max, int64_t width) {
  // `width` at a time (the polynomial exp vectorised; scalar, it cost as
  // much as the scores), then the rest one by one.
  auto vecType = VectorType::get({width}, b.getF32Type());
  Value jVecEnd = vectorStepsEnd(b, loc, jBegin, jEnd, width);
  Value maxVec = vector::BroadcastOp::create(b, loc, vecType, max);
  Value step = arith::ConstantIndexOp::create(b, loc, width);
  // The exponentials, then their sum in a loop of its own: the polynomial's
  // constants, the max and a running sum are more values than AVX2's 16
  // registers, and in one loop LLVM shuffled them through ~22 register moves
  // a vector (53 instructions) with the max on the stack.
  emitForLoop(b, loc, jBegin, jVecEnd, step, [&](OpBuilder &jb, Value j) {
    Value s = vector::LoadOp::create(jb, loc, vecType, S, ValueRange{row, j});
    Value e = math::ExpOp::create(jb, loc, arith::SubFOp::create(jb, loc, s, maxVec));
    vector::StoreOp::create(jb, loc, e, S, ValueRange{row, j});
  });
  auto vecLoop = scf::ForOp::create(
      b, loc, jBegin, jVecEnd, step,
      ValueRange{arith::ConstantOp::create(b, loc, vecType, DenseElementsAttr::get(vecType, 0.0f))},
      [&](OpBuilder &jb, Location, Value j, ValueRange sum) {
        Value e = vector::LoadOp::create(jb, loc, vecType, S, ValueRange{row, j});
        scf::YieldOp::create(jb, loc, ValueRange{arith::AddFOp::create(jb, loc, sum[0], e)});
      });
  Value vecSum = vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD,
                                             vecLoop.getResult(0), arith::FastMathFlags::reassoc);
  auto loop = scf::ForOp::create(
      b, loc, jVecEnd, jEnd, arith::ConstantIndexOp::create(b, loc, 1), ValueRange{vecSum},
      [&](OpBuilder &jb, Location, Value j, ValueRange sum) {
        Value s = memref::LoadOp::create(jb, loc, S, ValueRange{row, j});
        Value e = math::ExpOp::create(jb, loc, arith::SubFOp::create(jb, loc, s, max));
        memref::StoreOp::create(jb, loc, e, S, ValueRange{row, j});
        scf::YieldOp::create(jb, loc, ValueRange{arith::AddFOp::create(jb, loc, sum[0], e)});
      });
  return loop.getResult(0);
}

SmallVector<Value> tbc::emitValueLoop(OpBuilder &b, Location loc, Value S, ArrayRef<Value> rows,
                                      Value jBegin, Value jEnd, Value vCache, Value colBegin,
                                      int64_t width, int64_t chunks, ValueRange inits) {
  auto vecType = VectorType::get({width}, b.getF32Type());
  const int64_t n = static_cast<int64_t>(rows.size());
  assert(static_cast<int64_t>(inits.size()) == n * chunks && "an accumulator a row and chunk");
  auto valueLoop = scf::ForOp::create(
      b, loc, jBegin, jEnd, arith::ConstantIndexOp::create(b, loc, 1), inits,
      [&](OpBuilder &jb, Location, Value j, ValueRange accs) {
        SmallVector<Value> vs, next;
        for (int64_t c = 0; c < chunks; ++c) {
          Value col = arith::AddIOp::create(
              jb, loc, colBegin, arith::ConstantIndexOp::create(jb, loc, c * width));
          vs.push_back(vector::LoadOp::create(jb, loc, vecType, vCache, ValueRange{j, col}));
        }
        for (int64_t r = 0; r < n; ++r) {
          Value pj = vector::BroadcastOp::create(
              jb, loc, vecType, memref::LoadOp::create(jb, loc, S, ValueRange{rows[r], j}));
          for (int64_t c = 0; c < chunks; ++c)
            next.push_back(vector::FMAOp::create(jb, loc, pj, vs[c], accs[r * chunks + c]));
        }
        scf::YieldOp::create(jb, loc, next);
      });
  return SmallVector<Value>(valueLoop.getResults());
}

void tbc::emitValueSums(OpBuilder &b, Location loc, Value S, ArrayRef<Value> rows, Value jBegin,
                        Value jEnd, Value vCache, Value kvCol, int64_t headDim, int64_t width,
                        int64_t chunksPerSweep, ArrayRef<Value> invs, Value out,
                        ArrayRef<Value> ts, ArrayRef<Value> cols) {
  auto vecType = VectorType::get({width}, b.getF32Type());
  auto idx = [&](OpBuilder &ob, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(ob, loc, v);
  };
  // base + chunk c's first column.
  auto at = [&](OpBuilder &ob, Value base, int64_t c) -> Value {
    return arith::AddIOp::create(ob, loc, base, idx(ob, c * width));
  };
  const int64_t chunks = headDim / width, n = static_cast<int64_t>(rows.size());
  Value zero = idx(b, 0);
  Value init = arith::ConstantOp::create(b, loc, vecType, DenseElementsAttr::get(vecType, 0.0f));
  // One sweep: m chunks of every row from chunk c0 (an index).
  auto sweep = [&](OpBuilder &sb, Value c0, int64_t m) {
    Value col0 = arith::MulIOp::create(sb, loc, c0, idx(sb, width));
    Value colBegin = arith::AddIOp::create(sb, loc, kvCol, col0);
    SmallVector<Value> sums = emitValueLoop(sb, loc, S, rows, jBegin, jEnd, vCache, colBegin,
                                            width, m, SmallVector<Value>(n * m, init));
    // One op a statement: in an argument list the order would be the
    // compiler's, and the IR would differ between gcc and clang builds.
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < m; ++c) {
        Value o = arith::MulFOp::create(sb, loc, sums[r * m + c], invs[r]);
        Value first = arith::AddIOp::create(sb, loc, cols[r], col0);
        Value col = at(sb, first, c);
        vector::StoreOp::create(sb, loc, o, out, ValueRange{zero, ts[r], col});
      }
  };
  emitSweeps(b, loc, zero, chunks, chunksPerSweep, sweep);
}

void tbc::emitSweeps(OpBuilder &b, Location loc, Value zero, int64_t chunks, int64_t perSweep,
                     function_ref<void(OpBuilder &, Value, int64_t)> sweep) {
  auto idx = [&](int64_t v) -> Value { return arith::ConstantIndexOp::create(b, loc, v); };
  const int64_t full = chunks / perSweep, rest = chunks % perSweep;
  if (full > 1) {
    Value fullChunks = idx(full * perSweep);
    emitForLoop(b, loc, zero, fullChunks, idx(perSweep),
                [&](OpBuilder &sb, Value c0) { sweep(sb, c0, perSweep); });
  } else if (full == 1) {
    sweep(b, zero, perSweep);
  }
  if (rest)
    sweep(b, idx(full * perSweep), rest);
}

void tbc::emitAttention(OpBuilder &b, Location loc, AttentionOp a, Value q,
                        Value kNew, Value vNew, Value windowSize, Value out, Value kCache,
                        Value vCache, Value kvBegin, Value kvEnd,
                        const PositionBias &bias, int64_t vectorFloats, bool amx,
                        bool tiles) {
  OpBuilder::InsertionGuard guard(b);
  KernelBuilder kb(b, loc);
  int64_t kvHeads = a.getNumKvHeads(), D = a.getHeadDim(),
          group = a.getNumHeads() / kvHeads;
  double scale = a.getScale().convertToDouble();
  std::optional<double> cap;
  if (a.getSoftcap())
    cap = a.getSoftcap()->convertToDouble();
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
  Value window = emitAttentionWindow(b, loc, a, windowSize);
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

  // A chunk of many queries (a prompt) on AMX tiles; fewer (decoding) below.
  if (amx && amxAttends(a, bias)) {
    Value many = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, T, idx(b, kAmxMinRows));
    auto branch = scf::IfOp::create(b, loc, many, /*withElseRegion=*/true);
    b.setInsertionPointToStart(branch.thenBlock());
    emitAmxAttention(b, loc, a, q, window, out, kCache, vCache, kvBegin, kvEnd);
    b.setInsertionPointToStart(branch.elseBlock());
  } else if (tiles && bias.empty()) {
    Value many = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, T, idx(b, kTiledMinRows));
    auto branch = scf::IfOp::create(b, loc, many, /*withElseRegion=*/true);
    b.setInsertionPointToStart(branch.thenBlock());
    emitTiledAttention(b, loc, a, q, window, out, kCache, vCache, kvBegin, kvEnd, vectorFloats);
    b.setInsertionPointToStart(branch.elseBlock());
  }

  // The query heads of a key/value head's group read the same keys and
  // values: `heads` of them at a time share each key and value row loaded
  // (from L2: a key/value head's cache of 512 positions is 128 KiB at
  // head_dim 64), where one head at a time loaded every row once per head.
  // (AVX2, Zen 3, a 512-token prefill of 16 heads over 2 KV heads, head_dim
  // 64: attention 43-61 -> 27-38 ms over 4 layers; 2 or 8 heads a pass were
  // slower than 4.)
  int64_t heads = 1;
  while (heads < kMaxHeadsPerPass && group % (heads * 2) == 0)
    heads *= 2;
  // The value sums of a pass accumulate in eight vector registers (half of
  // AVX2's 16; on AVX-512 as many floats as one head of head_dim 128 had
  // before): a sweep over the values takes `chunksPerPass` chunks of
  // head_dim of each of the pass's heads, and the sweeps repeat.
  const int64_t accFloats = 8 * vectorFloats;
  const int64_t chunksPerPass =
      std::max<int64_t>(1, std::min(chunks, accFloats / (heads * width)));

  // One row of scores (then probabilities) per head of a pass.
  Value S = memref::AllocOp::create(
      b, loc, MemRefType::get({heads, ShapedType::kDynamic}, b.getF32Type()), ValueRange{L});
  Value headBegin = arith::MulIOp::create(b, loc, kvBegin, idx(b, group));
  Value headEnd = arith::MulIOp::create(b, loc, kvEnd, idx(b, group));
  scf::ForOp::create(b, loc, zero, T, one, ValueRange{}, [&](OpBuilder &tb, Location,
                                                              Value t, ValueRange) {
    // The positions this row sees: [jBegin, jEnd).
    Value p = arith::AddIOp::create(tb, loc, past, t);
    Value jEnd = causal ? arith::AddIOp::create(tb, loc, p, one).getResult() : L;
    Value jBegin = causal && window ? emitWindowStart(tb, loc, p, window) : zero;
    scf::ForOp::create(tb, loc, headBegin, headEnd, idx(tb, heads), ValueRange{},
                       [&](OpBuilder &hb, Location, Value h0, ValueRange) {
      Value kvCol = arith::MulIOp::create(
          hb, loc, arith::DivUIOp::create(hb, loc, h0, idx(hb, group)), idx(hb, D));
      auto at = [&](OpBuilder &ob, Value base, int64_t c) -> Value {
        return arith::AddIOp::create(ob, loc, base, idx(ob, c * width));
      };
      SmallVector<Value> hs, qCols, rs;
      for (int64_t r = 0; r < heads; ++r) {
        hs.push_back(arith::AddIOp::create(hb, loc, h0, idx(hb, r)));
        qCols.push_back(arith::MulIOp::create(hb, loc, hs[r], idx(hb, D)));
        rs.push_back(idx(hb, r));
      }
      SmallVector<SmallVector<Value>> qs(heads);
      for (int64_t r = 0; r < heads; ++r)
        for (int64_t c = 0; c < chunks; ++c)
          qs[r].push_back(vector::LoadOp::create(hb, loc, vecType, q,
                                                 ValueRange{zero, t, at(hb, qCols[r], c)}));
      // Scores and their maxima: each key row loaded once for the pass's heads.
      Value negInf = f32(hb, -std::numeric_limits<double>::infinity());
      auto maxLoop = scf::ForOp::create(
          hb, loc, jBegin, jEnd, one, SmallVector<Value>(heads, negInf),
          [&](OpBuilder &jb, Location, Value j, ValueRange m) {
            SmallVector<Value> ks, next;
            for (int64_t c = 0; c < chunks; ++c)
              ks.push_back(vector::LoadOp::create(jb, loc, vecType, kCache,
                                                  ValueRange{j, at(jb, kvCol, c)}));
            SmallVector<Value> accs;
            for (int64_t r = 0; r < heads; ++r) {
              Value acc = arith::ConstantOp::create(
                  jb, loc, vecType, DenseElementsAttr::get(vecType, 0.0f));
              for (int64_t c = 0; c < chunks; ++c)
                acc = vector::FMAOp::create(jb, loc, qs[r][c], ks[c], acc);
              accs.push_back(acc);
            }
            SmallVector<Value> sums = horizontalSums(jb, loc, accs);
            for (int64_t r = 0; r < heads; ++r) {
              Value s = arith::MulFOp::create(jb, loc, sums[r], f32(jb, scale));
              if (cap)
                s = emitSoftcap(jb, loc, *cap, s);
              if (Value term = bias.at(jb, loc, hs[r], p, j))
                s = arith::AddFOp::create(jb, loc, s, term);
              memref::StoreOp::create(jb, loc, s, S, ValueRange{rs[r], j});
              // maxnumf: maximumf's signed-zero order took two branches a
              // score. A NaN score still makes the row NaN (through its exp).
              next.push_back(arith::MaxNumFOp::create(jb, loc, m[r], s));
            }
            scf::YieldOp::create(jb, loc, next);
          });
      // Probabilities (unnormalised) and their sum, head by head.
      SmallVector<Value> invs;
      for (int64_t r = 0; r < heads; ++r) {
        Value sum = emitExpAndSum(hb, loc, S, rs[r], jBegin, jEnd, maxLoop.getResult(r), width);
        invs.push_back(vector::BroadcastOp::create(
            hb, loc, vecType, arith::DivFOp::create(hb, loc, f32(hb, 1.0), sum)));
      }
      // Weighted sums of the values, `chunksPerPass` chunks of every head
      // a pass.
      emitValueSums(hb, loc, S, rs, jBegin, jEnd, vCache, kvCol, D, width, chunksPerPass, invs,
                    out, SmallVector<Value>(heads, t), qCols);
      scf::YieldOp::create(hb, loc);
    });
    scf::YieldOp::create(tb, loc);
  });
  memref::DeallocOp::create(b, loc, S);
}
