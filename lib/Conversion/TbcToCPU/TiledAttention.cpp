//===- TiledAttention.cpp - a prompt's attention in register tiles --------===//
//
// A chunk of kTiledMinRows queries or more (a prompt) whose logits have no
// position bias attends as a matrix product would, in register tiles of
// kTileRows rows: the query heads of a group that share each key and value
// (up to four), times consecutive query rows where the group is smaller.
// Per key/value head of the call's share, its cached keys are first packed
// transposed in blocks of a tile's 3v positions (v the vector's floats):
// Kp[b][d][i] = K[b * 3v + i][d], so that scores come out vectorised over
// keys, with no horizontal sums, and a tile reads one contiguous block; then
// per tile:
//   scores  S[r][j, j + 3v) = scale * sum_d q_r[d] Kp[j / 3v][d][0, 3v):
//           three vectors of keys for each of the tile's rows in 12
//           accumulators, a d step one broadcast of q_r[d] a row and three
//           loads of Kp, over the blocks of the positions any row sees;
//   softmax for each row over the positions it sees (max, exp, sum); the
//           probabilities of positions the tile computed but the row does
//           not see are zeroed;
//   output  o_r = sum_j p_r[j] v_j / sum_r, in 12 vector accumulators:
//           three chunks of head_dim for every row, in as many sweeps over
//           the values as head_dim takes.
// (AVX2, Zen 3, a 512-token prefill of 16 heads over 2 KV heads, head_dim
// 64: attention 0.65-0.78x the one-row kernel's time, whose score loop kept
// four heads' queries on the stack and summed each score's lanes; keys
// transposed as whole rows of the cache, 2 KiB apart, had the score loop
// wait on 64 strided streams: bench/NOTES.md, 2026-12-03, session 32.)
// Decoding keeps the one-row kernel (Attention.cpp): the packing would read
// the keys once more for one query row.
//
//===----------------------------------------------------------------------===//

#include "Attention.h"
#include "KernelBuilder.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

using namespace mlir;

// Rows of a score tile (with three vectors of keys: 12 accumulators, three
// key vectors and a broadcast query element, AVX2's 16 registers).
static constexpr int64_t kTileRows = 4;
static constexpr int64_t kKeyVectors = 3;
// Value chunks a row per sweep (kTileRows of them: 12 accumulators).
static constexpr int64_t kValueChunks = 3;

void tbc::emitTiledAttention(OpBuilder &b, Location loc, AttentionOp a, Value q,
                             Value window, Value out, Value kCache, Value vCache,
                             Value kvBegin, Value kvEnd, int64_t vectorFloats) {
  OpBuilder::InsertionGuard guard(b);
  const int64_t D = a.getHeadDim(), group = a.getNumHeads() / a.getNumKvHeads();
  const bool causal = a.getCausal();
  std::optional<double> cap;
  if (a.getSoftcap())
    cap = a.getSoftcap()->convertToDouble();
  // The tile's rows: `heads` heads of a group (sharing each key) times
  // `queryRows` consecutive query rows.
  int64_t heads = 1;
  while (heads < kTileRows && group % (heads * 2) == 0)
    heads *= 2;
  const int64_t queryRows = kTileRows / heads;
  const int64_t vf = vectorFloats, tileKeys = kKeyVectors * vf;
  int64_t width = vf;
  while (D % width != 0)
    width /= 2;
  Type f32 = b.getF32Type();
  auto keyType = VectorType::get({vf}, f32);
  auto valueType = VectorType::get({width}, f32);
  auto idx = [&](OpBuilder &ob, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(ob, loc, v);
  };
  auto add = [&](OpBuilder &ob, Value x, Value y) -> Value {
    return arith::AddIOp::create(ob, loc, x, y);
  };
  auto mul = [&](OpBuilder &ob, Value x, Value y) -> Value {
    return arith::MulIOp::create(ob, loc, x, y);
  };
  auto zeros = [&](OpBuilder &ob, VectorType type) -> Value {
    return arith::ConstantOp::create(ob, loc, type, DenseElementsAttr::get(type, 0.0f));
  };
  auto forLoop = [&](OpBuilder &ob, Value lo, Value hi, Value step,
                     function_ref<void(OpBuilder &, Value)> body) {
    emitForLoop(ob, loc, lo, hi, step, body);
  };
  Value zero = idx(b, 0), one = idx(b, 1);
  Value T = memref::DimOp::create(b, loc, q, 1);
  Value L = memref::DimOp::create(b, loc, kCache, 0);
  Value past = arith::SubIOp::create(b, loc, L, T);
  Value lastRow = arith::SubIOp::create(b, loc, T, one);
  // The keys packed transposed in blocks of a tile's positions (Kp, the
  // header). The last block's positions past the cache are zero (their
  // scores are never read). S is as long as the blocks.
  Value blocks = arith::DivUIOp::create(b, loc, add(b, L, idx(b, tileKeys - 1)), idx(b, tileKeys));
  Value padded = mul(b, blocks, idx(b, tileKeys));
  Value Kp = memref::AllocOp::create(
      b, loc, MemRefType::get({ShapedType::kDynamic, D, tileKeys}, f32), ValueRange{blocks});
  Value S = memref::AllocOp::create(b, loc, MemRefType::get({kTileRows, ShapedType::kDynamic}, f32),
                                    ValueRange{padded});
  Value scalarZero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
  auto packedAt = [&](OpBuilder &ob, Value j, Value d) -> SmallVector<Value> {
    Value block = arith::DivUIOp::create(ob, loc, j, idx(ob, tileKeys));
    Value i = arith::RemUIOp::create(ob, loc, j, idx(ob, tileKeys));
    return {block, d, i};
  };
  forLoop(b, L, padded, one, [&](OpBuilder &jb, Value j) {
    forLoop(jb, zero, idx(jb, D), one, [&](OpBuilder &db, Value d) {
      memref::StoreOp::create(db, loc, scalarZero, Kp, packedAt(db, j, d));
    });
  });

  forLoop(b, kvBegin, kvEnd, one, [&](OpBuilder &hb, Value kvHead) {
    Value kvCol = mul(hb, kvHead, idx(hb, D));
    // Position by position: the cache's rows are read in order.
    forLoop(hb, zero, L, one, [&](OpBuilder &jb, Value j) {
      SmallVector<Value> at = packedAt(jb, j, zero);
      for (int64_t d = 0; d < D; ++d) {
        Value k = memref::LoadOp::create(jb, loc, kCache, ValueRange{j, add(jb, kvCol, idx(jb, d))});
        memref::StoreOp::create(jb, loc, k, Kp, ValueRange{at[0], idx(jb, d), at[2]});
      }
    });
    Value headBegin = mul(hb, kvHead, idx(hb, group));
    Value headEnd = add(hb, headBegin, idx(hb, group));
    forLoop(hb, zero, T, idx(hb, queryRows), [&](OpBuilder &tb, Value t0) {
      // Query row i of the tile: t0 + i, the last row repeated where T is
      // no multiple of queryRows (its output is written twice, the same).
      // The positions it sees: [jBegins[i], jEnds[i]), both growing with i.
      SmallVector<Value> ts, jBegins, jEnds;
      for (int64_t i = 0; i < queryRows; ++i) {
        Value t = arith::MinUIOp::create(tb, loc, add(tb, t0, idx(tb, i)), lastRow);
        Value p = add(tb, past, t);
        ts.push_back(t);
        jEnds.push_back(causal ? add(tb, p, one) : L);
        jBegins.push_back(causal && window ? emitWindowStart(tb, loc, p, window) : zero);
      }
      // The tile's span: from the block of the first row's first position
      // to the last row's last.
      Value tileBegin = mul(tb, arith::DivUIOp::create(tb, loc, jBegins.front(), idx(tb, tileKeys)),
                            idx(tb, tileKeys));
      Value tileEnd = jEnds.back();
      forLoop(tb, headBegin, headEnd, idx(tb, heads), [&](OpBuilder &rb, Value h0) {
        // Row r: head h0 + r % heads, query row ts[r / heads].
        SmallVector<Value> rowTs, rowCols, rowIdx;
        for (int64_t r = 0; r < kTileRows; ++r) {
          rowTs.push_back(ts[r / heads]);
          rowCols.push_back(mul(rb, add(rb, h0, idx(rb, r % heads)), idx(rb, D)));
          rowIdx.push_back(idx(rb, r));
        }
        // Scores.
        forLoop(rb, tileBegin, tileEnd, idx(rb, tileKeys), [&](OpBuilder &jb, Value j0) {
          Value block = arith::DivUIOp::create(jb, loc, j0, idx(jb, tileKeys));
          SmallVector<Value> keyCols;
          for (int64_t c = 0; c < kKeyVectors; ++c)
            keyCols.push_back(add(jb, j0, idx(jb, c * vf)));
          auto dLoop = scf::ForOp::create(
              jb, loc, zero, idx(jb, D), one,
              SmallVector<Value>(kTileRows * kKeyVectors, zeros(jb, keyType)),
              [&](OpBuilder &db, Location, Value d, ValueRange accs) {
                SmallVector<Value> ks, next;
                for (int64_t c = 0; c < kKeyVectors; ++c)
                  ks.push_back(vector::LoadOp::create(db, loc, keyType, Kp,
                                                      ValueRange{block, d, idx(db, c * vf)}));
                for (int64_t r = 0; r < kTileRows; ++r) {
                  Value qd = memref::LoadOp::create(
                      db, loc, q, ValueRange{zero, rowTs[r], add(db, rowCols[r], d)});
                  Value qs = vector::BroadcastOp::create(db, loc, keyType, qd);
                  for (int64_t c = 0; c < kKeyVectors; ++c)
                    next.push_back(vector::FMAOp::create(db, loc, qs, ks[c],
                                                         accs[r * kKeyVectors + c]));
                }
                scf::YieldOp::create(db, loc, next);
              });
          Value scale = arith::ConstantOp::create(
              jb, loc, keyType,
              DenseElementsAttr::get(keyType, float(a.getScale().convertToDouble())));
          for (int64_t r = 0; r < kTileRows; ++r)
            for (int64_t c = 0; c < kKeyVectors; ++c) {
              Value s = arith::MulFOp::create(jb, loc, dLoop.getResult(r * kKeyVectors + c), scale);
              if (cap)
                s = emitSoftcap(jb, loc, *cap, s);
              vector::StoreOp::create(jb, loc, s, S, ValueRange{rowIdx[r], keyCols[c]});
            }
        });
        // Softmax, row by row over the positions it sees; zero elsewhere
        // in the tile's span.
        SmallVector<Value> invs;
        for (int64_t r = 0; r < kTileRows; ++r) {
          Value jBegin = jBegins[r / heads], jEnd = jEnds[r / heads];
          Value m = emitRowMax(rb, loc, S, rowIdx[r], jBegin, jEnd, vf);
          Value sum = emitExpAndSum(rb, loc, S, rowIdx[r], jBegin, jEnd, m, vf);
          invs.push_back(vector::BroadcastOp::create(
              rb, loc, valueType,
              arith::DivFOp::create(
                  rb, loc, arith::ConstantOp::create(rb, loc, rb.getF32FloatAttr(1.0f)), sum)));
          for (auto [lo, hi] : {std::pair{tileBegin, jBegin}, std::pair{jEnd, tileEnd}})
            forLoop(rb, lo, hi, one, [&](OpBuilder &zb, Value j) {
              memref::StoreOp::create(zb, loc, scalarZero, S, ValueRange{rowIdx[r], j});
            });
        }
        // Weighted sums of the values: kValueChunks chunks of every row a
        // sweep.
        emitValueSums(rb, loc, S, rowIdx, tileBegin, tileEnd, vCache, kvCol, D, width,
                      kValueChunks, invs, out, rowTs, rowCols);
      });
    });
  });
  memref::DeallocOp::create(b, loc, S);
  memref::DeallocOp::create(b, loc, Kp);
}
