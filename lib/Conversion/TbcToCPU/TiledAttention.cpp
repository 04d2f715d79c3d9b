//===- TiledAttention.cpp - a prompt's attention in register tiles --------===//
//
// A chunk of kTiledMinRows queries or more (a prompt) whose logits have no
// position bias attends as a matrix product would, in register tiles of
// kTileRows rows: the query heads of a group that share each key and value
// (up to four), times consecutive query rows where the group is smaller.
// Per key/value head of the call's share, its cached keys are first packed
// transposed in blocks of a tile's 3v positions (v the vector's floats):
// Kp[b][d][i] = K[b * 3v + i][d], so that scores come out vectorised over
// keys, with no horizontal sums, and a tile reads one contiguous block. The
// tiles then go in passes of up to kPassTiles (the group's tiles at a few
// consecutive query steps); per tile of a pass:
//   scores  S[r][j, j + 3v) = scale * sum_d q_r[d] Kp[j / 3v][d][0, 3v):
//           three vectors of keys for each of the tile's rows in 12
//           accumulators, a d step one broadcast of q_r[d] a row and three
//           loads of Kp, over the blocks of the positions any row sees;
//   softmax for each row over the positions it sees (max, exp, sum); the
//           probabilities of positions the tile computed but the row does
//           not see are zeroed;
// and then for the whole pass, a block of kValueBlockKeys positions at a
// time, for each tile:
//   output  o_r += sum_j p_r[j] v_j over the block, in 12 vector
//           accumulators: three chunks of head_dim for every row, in as
//           many sweeps over the block as head_dim takes, carried in O from
//           block to block; finally o_r / sum_r.
// A block's values (64 positions of one head: 16 KiB at head_dim 64) are
// read from memory once for the pass's tiles and sweeps, where a tile that
// swept all positions alone read them from L3 each sweep (hidden 1024,
// head_dim 64, 2048-token prefill on Zen 3: attention 0.86x the time,
// value loops ~50 -> ~80 % of the FMA peak; bench/NOTES.md 2026-12-04).
// Each row adds its positions in the same order either way, so the outputs
// are the same to the bit.
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

namespace {
/// A tile's geometry: its queryRows query rows (ts), the positions each
/// sees ([jBegins, jEnds)), the span of positions it computes ([begin,
/// end)) — all its query step's — and for each of its kTileRows rows, the
/// query row, the first column of its head in q and out, and its row of the
/// pass's buffers.
struct Tile {
  SmallVector<Value> ts, jBegins, jEnds;
  Value begin, end;
  SmallVector<Value> rowTs, rowCols, rows;
};
} // namespace

// Rows of a score tile (with three vectors of keys: 12 accumulators, three
// key vectors and a broadcast query element, AVX2's 16 registers).
static constexpr int64_t kTileRows = 4;
static constexpr int64_t kKeyVectors = 3;
// Value chunks a row per sweep (kTileRows of them: 12 accumulators).
static constexpr int64_t kValueChunks = 3;
// Tiles whose value sums go through the values together, a block of
// kValueBlockKeys positions at a time (a pass), and that block: each block
// of values is read from memory once for the pass and then from L1.
static constexpr int64_t kPassTiles = 8;
static constexpr int64_t kValueBlockKeys = 64;

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
  // A pass: stepsPerPass steps of queryRows query rows, each of the
  // group's tilesPerGroup tiles.
  const int64_t tilesPerGroup = group / heads;
  const int64_t stepsPerPass = std::max<int64_t>(1, kPassTiles / tilesPerGroup);
  const int64_t passRows = stepsPerPass * tilesPerGroup * kTileRows;
  const int64_t vf = vectorFloats, tileKeys = kKeyVectors * vf;
  int64_t width = vf;
  while (D % width != 0)
    width /= 2;
  const int64_t chunks = D / width;
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
  // The pass's scores (then probabilities), value sums and 1 / sums of
  // probabilities, a row for each row of its tiles.
  Value S = memref::AllocOp::create(b, loc, MemRefType::get({passRows, ShapedType::kDynamic}, f32),
                                    ValueRange{padded});
  Value O = memref::AllocOp::create(b, loc, MemRefType::get({passRows, D}, f32));
  Value invs = memref::AllocOp::create(b, loc, MemRefType::get({passRows}, f32));
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
    // Position by position: the cache's rows are read in order, a vector
    // at a time. (A loop over the row, not D unrolled copies: at head_dim
    // 256 those were a basic block of 512 memory ops, a third of LLVM's
    // time on the whole attention kernel, bench/NOTES.md 2026-12-04.)
    forLoop(hb, zero, L, one, [&](OpBuilder &jb, Value j) {
      SmallVector<Value> at = packedAt(jb, j, zero);
      Value headDim = idx(jb, D);
      forLoop(jb, zero, headDim, idx(jb, width), [&](OpBuilder &db, Value d0) {
        Value k = vector::LoadOp::create(db, loc, valueType, kCache, ValueRange{j, add(db, kvCol, d0)});
        // One op a statement (an argument list's order is the compiler's).
        for (int64_t i = 0; i < width; ++i) {
          Value ki = vector::ExtractOp::create(db, loc, k, i);
          Value d = add(db, d0, idx(db, i));
          memref::StoreOp::create(db, loc, ki, Kp, ValueRange{at[0], d, at[2]});
        }
      });
    });
    Value headBegin = mul(hb, kvHead, idx(hb, group));
    // Query step s of the pass from query row t0: its rows and their
    // positions, the same for each of the group's tiles (no row geometry).
    auto stepAt = [&](OpBuilder &tb, Value t0, Value s) {
      Tile step;
      Value tq = add(tb, t0, mul(tb, s, idx(tb, queryRows)));
      // Query row i of the step: tq + i, the last row repeated where T is
      // no multiple of queryRows (its output is written twice, the same).
      // The positions it sees: [jBegins[i], jEnds[i]), both growing with i.
      for (int64_t i = 0; i < queryRows; ++i) {
        Value t = arith::MinUIOp::create(tb, loc, add(tb, tq, idx(tb, i)), lastRow);
        Value p = add(tb, past, t);
        step.ts.push_back(t);
        step.jEnds.push_back(causal ? add(tb, p, one) : L);
        step.jBegins.push_back(causal && window ? emitWindowStart(tb, loc, p, window) : zero);
      }
      // The span: from the block of the first row's first position to the
      // last row's last.
      step.begin = mul(tb, arith::DivUIOp::create(tb, loc, step.jBegins.front(), idx(tb, tileKeys)),
                       idx(tb, tileKeys));
      step.end = step.jEnds.back();
      return step;
    };
    // Tile g of the group at query step s of the pass from query row t0.
    auto tileAt = [&](OpBuilder &tb, Value t0, Value s, Value g) {
      Tile tile = stepAt(tb, t0, s);
      // Row r: head h0 + r % heads, query row ts[r / heads].
      Value h0 = add(tb, headBegin, mul(tb, g, idx(tb, heads)));
      Value row0 = mul(tb, add(tb, mul(tb, s, idx(tb, tilesPerGroup)), g), idx(tb, kTileRows));
      for (int64_t r = 0; r < kTileRows; ++r) {
        tile.rowTs.push_back(tile.ts[r / heads]);
        tile.rowCols.push_back(mul(tb, add(tb, h0, idx(tb, r % heads)), idx(tb, D)));
        tile.rows.push_back(add(tb, row0, idx(tb, r)));
      }
      return tile;
    };
    auto forTiles = [&](OpBuilder &ob, Value t0, Value steps,
                        function_ref<void(OpBuilder &, const Tile &)> body) {
      forLoop(ob, zero, steps, one, [&](OpBuilder &sb, Value s) {
        forLoop(sb, zero, idx(sb, tilesPerGroup), one,
                [&](OpBuilder &gb, Value g) { body(gb, tileAt(gb, t0, s, g)); });
      });
    };
    forLoop(hb, zero, T, idx(hb, queryRows * stepsPerPass), [&](OpBuilder &pb, Value t0) {
      // The pass's query steps: stepsPerPass, fewer at the end of the chunk.
      Value steps = arith::MinUIOp::create(
          pb, loc, idx(pb, stepsPerPass),
          arith::CeilDivUIOp::create(pb, loc, arith::SubIOp::create(pb, loc, T, t0),
                                     idx(pb, queryRows)));
      // Each tile of the pass: scores, softmax, 1 / sum of each row.
      forTiles(pb, t0, steps, [&](OpBuilder &rb, const Tile &tile) {
        // Scores.
        forLoop(rb, tile.begin, tile.end, idx(rb, tileKeys), [&](OpBuilder &jb, Value j0) {
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
                      db, loc, q, ValueRange{zero, tile.rowTs[r], add(db, tile.rowCols[r], d)});
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
              vector::StoreOp::create(jb, loc, s, S, ValueRange{tile.rows[r], keyCols[c]});
            }
        });
        // Softmax, row by row over the positions it sees; zero elsewhere
        // in the tile's span. A loop over the rows (one copy of the
        // exponentials' loops, not kTileRows): row r is the tile's first
        // row + r, and sees the positions of its query row, r / heads.
        forLoop(rb, zero, idx(rb, kTileRows), one, [&](OpBuilder &sb, Value r) {
          Value row = add(sb, tile.rows.front(), r);
          Value i = arith::DivUIOp::create(sb, loc, r, idx(sb, heads));
          Value jBegin = tile.jBegins.front(), jEnd = tile.jEnds.front();
          for (int64_t k = 1; k < queryRows; ++k) {
            Value isK = arith::CmpIOp::create(sb, loc, arith::CmpIPredicate::eq, i, idx(sb, k));
            jBegin = arith::SelectOp::create(sb, loc, isK, tile.jBegins[k], jBegin);
            jEnd = arith::SelectOp::create(sb, loc, isK, tile.jEnds[k], jEnd);
          }
          // A soft-cap, elementwise, over the row's scores a vector at a
          // time (one copy of tanh's polynomial, not one a score vector of
          // the tile): the same bits as capping each as it was stored.
          if (cap) {
            Value span = arith::SubIOp::create(sb, loc, tile.end, tile.begin);
            Value vectors = arith::CeilDivUIOp::create(sb, loc, span, idx(sb, vf));
            Value capEnd = add(sb, tile.begin, mul(sb, vectors, idx(sb, vf)));
            forLoop(sb, tile.begin, capEnd, idx(sb, vf), [&](OpBuilder &cb, Value j) {
              Value x = vector::LoadOp::create(cb, loc, keyType, S, ValueRange{row, j});
              vector::StoreOp::create(cb, loc, emitSoftcap(cb, loc, *cap, x), S, ValueRange{row, j});
            });
          }
          Value m = emitRowMax(sb, loc, S, row, jBegin, jEnd, vf);
          Value sum = emitExpAndSum(sb, loc, S, row, jBegin, jEnd, m, vf);
          Value inv = arith::DivFOp::create(
              sb, loc, arith::ConstantOp::create(sb, loc, sb.getF32FloatAttr(1.0f)), sum);
          memref::StoreOp::create(sb, loc, inv, invs, ValueRange{row});
          for (auto [lo, hi] : {std::pair{tile.begin, jBegin}, std::pair{jEnd, tile.end}})
            forLoop(sb, lo, hi, one, [&](OpBuilder &zb, Value j) {
              memref::StoreOp::create(zb, loc, scalarZero, S, ValueRange{row, j});
            });
        });
      });
      // Weighted sums of the values, a block of keys at a time for all the
      // pass's tiles: kValueChunks chunks of every row of a tile a sweep,
      // the sums carried from block to block in O. Each row still adds its
      // positions in order, so the sums are the unblocked ones to the bit.
      Tile first = stepAt(pb, t0, zero);
      Tile last = stepAt(pb, t0, arith::SubIOp::create(pb, loc, steps, one));
      forLoop(pb, first.begin, last.end, idx(pb, kValueBlockKeys), [&](OpBuilder &kb, Value j0) {
        Value j1 = arith::MinUIOp::create(kb, loc, add(kb, j0, idx(kb, kValueBlockKeys)), last.end);
        forTiles(kb, t0, steps, [&](OpBuilder &vb, const Tile &tile) {
          // The block's positions in the tile's span (none: an empty loop,
          // the sums stored back as they were, or zeros before the span).
          Value lo = arith::MaxUIOp::create(vb, loc, j0, tile.begin);
          Value hi = arith::MinUIOp::create(vb, loc, j1, tile.end);
          Value fresh = arith::CmpIOp::create(vb, loc, arith::CmpIPredicate::eq, lo, tile.begin);
          // One sweep: m chunks of every row from chunk c0 (an index).
          auto sweep = [&](OpBuilder &sb, Value c0, int64_t m) {
            Value col0 = mul(sb, c0, idx(sb, width));
            SmallVector<Value> cols, inits;
            for (int64_t c = 0; c < m; ++c)
              cols.push_back(add(sb, col0, idx(sb, c * width)));
            for (int64_t r = 0; r < kTileRows; ++r)
              for (int64_t c = 0; c < m; ++c) {
                Value held = vector::LoadOp::create(sb, loc, valueType, O,
                                                    ValueRange{tile.rows[r], cols[c]});
                inits.push_back(arith::SelectOp::create(sb, loc, fresh, zeros(sb, valueType), held));
              }
            SmallVector<Value> sums = emitValueLoop(sb, loc, S, tile.rows, lo, hi, vCache,
                                                    add(sb, kvCol, col0), width, m, inits);
            for (int64_t r = 0; r < kTileRows; ++r)
              for (int64_t c = 0; c < m; ++c)
                vector::StoreOp::create(sb, loc, sums[r * m + c], O,
                                        ValueRange{tile.rows[r], cols[c]});
          };
          emitSweeps(vb, loc, zero, chunks, kValueChunks, sweep);
        });
      });
      // The outputs: the sums over the rows' sums of probabilities.
      forTiles(pb, t0, steps, [&](OpBuilder &ob, const Tile &tile) {
        SmallVector<Value> rowInvs;
        for (int64_t r = 0; r < kTileRows; ++r)
          rowInvs.push_back(vector::BroadcastOp::create(
              ob, loc, valueType, memref::LoadOp::create(ob, loc, invs, ValueRange{tile.rows[r]})));
        Value headDim = idx(ob, D);
        forLoop(ob, zero, headDim, idx(ob, width), [&](OpBuilder &cb, Value col) {
          for (int64_t r = 0; r < kTileRows; ++r) {
            Value sum = vector::LoadOp::create(cb, loc, valueType, O, ValueRange{tile.rows[r], col});
            Value o = arith::MulFOp::create(cb, loc, sum, rowInvs[r]);
            vector::StoreOp::create(cb, loc, o, out,
                                    ValueRange{zero, tile.rowTs[r], add(cb, tile.rowCols[r], col)});
          }
        });
      });
    });
  });
  memref::DeallocOp::create(b, loc, invs);
  memref::DeallocOp::create(b, loc, O);
  memref::DeallocOp::create(b, loc, S);
  memref::DeallocOp::create(b, loc, Kp);
}
