//===- AmxAttention.cpp - a prompt's attention on AMX tiles ---------------===//
//
// With --cpu-dot amx, a chunk of queries (a prompt) attends on AMX tiles: a
// flash-attention loop per query head and block of 16 queries, over the keys
// in steps of 64, computed transposed (keys or dims in a tile's rows, the 16
// queries in its columns) so that the softmax's per-query maxima and sums
// are lane-wise vector ops, with no horizontal reductions:
//   scores  S^T = K Q^T: four 16 x 16 f32 tiles (16 keys x 16 queries),
//           tdpbf16ps over 32 dims a step (K's rows a bf16 tile as they are,
//           Q^T in pairs of dims);
//   softmax over each step's 64 rows of 16 queries: scaled, soft-capped,
//           masked (causal, window, past the cache), the running maxima and
//           sums updated, the output rescaled where a maximum grew, the
//           probabilities rounded to bf16 in pairs of keys;
//   output  O^T += V^T P^T: O^T (head_dim x 16 queries, f32) loaded from a
//           buffer four tiles at a time, tdpbf16ps over 32 keys a step,
//           stored back; at the end O / sum scattered to the output's rows.
// Q, K, V and P are rounded to bf16 (as the projections' activations are
// with --cpu-dot amx; torch's bf16 attention rounds the same); scores, sums
// and the output accumulate in f32. A key/value head's keys (bf16 rows) and
// values (bf16, transposed) are packed once a call, shared by its group's
// query heads. Decoding (fewer than kAmxMinRows queries) keeps the vector
// kernel (Attention.cpp): one query would leave 15 of a tile's 16 columns
// idle.
//
//===----------------------------------------------------------------------===//

#include "Attention.h"
#include "KernelBuilder.h"
#include "Matmul.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

using namespace mlir;

// Keys a step: four score tiles of 16 keys (with K's and Q's tiles, six of
// the eight registers).
static constexpr int64_t kKeyStep = 64;
// Output tiles a pass over a step's values (with V's and P's tiles, six).
static constexpr int64_t kOutputTiles = 4;

bool tbc::amxAttends(AttentionOp a, const PositionBias &bias) {
  return a.getHeadDim() % kAmxTileK == 0 && bias.empty();
}

void tbc::emitAmxAttention(OpBuilder &b, Location loc, AttentionOp a, Value q, Value window,
                           Value out, Value kCache, Value vCache, Value kvBegin, Value kvEnd) {
  const int64_t D = a.getHeadDim(), group = a.getNumHeads() / a.getNumKvHeads();
  const int64_t R = kAmxTileRows;
  const float scale = float(a.getScale().convertToDouble());
  const float log2e = 1.4426950408889634f;
  std::optional<double> cap;
  if (a.getSoftcap())
    cap = a.getSoftcap()->convertToDouble();
  const bool causal = a.getCausal();
  const float negInf = -std::numeric_limits<float>::infinity();
  Type f32 = b.getF32Type(), bf16 = b.getBF16Type(), i32 = b.getI32Type();
  auto vecType = VectorType::get({R}, f32);
  auto halfType = VectorType::get({R}, bf16);
  auto laneType = VectorType::get({R}, i32);
  auto bf16Tile = amx::TileType::get({R, kAmxTileK}, bf16);
  auto f32Tile = amx::TileType::get({R, R}, f32);
  auto idx = [&](OpBuilder &ob, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(ob, loc, v);
  };
  auto splat = [&](OpBuilder &ob, float v) -> Value {
    return arith::ConstantOp::create(ob, loc, vecType,
                                     DenseElementsAttr::get(vecType, ob.getF32FloatAttr(v)));
  };
  auto add = [&](OpBuilder &ob, Value x, Value y) -> Value {
    return arith::AddIOp::create(ob, loc, x, y);
  };
  auto mul = [&](OpBuilder &ob, Value x, Value y) -> Value {
    return arith::MulIOp::create(ob, loc, x, y);
  };
  auto div = [&](OpBuilder &ob, Value x, int64_t y) -> Value {
    return arith::DivUIOp::create(ob, loc, x, idx(ob, y));
  };
  auto forLoop = [&](OpBuilder &ob, Value lo, Value hi, int64_t step,
                     function_ref<void(OpBuilder &, Value)> body) {
    emitForLoop(ob, loc, lo, hi, idx(ob, step), body);
  };
  auto toBf16 = [&](OpBuilder &ob, Value v) -> Value {
    return arith::TruncFOp::create(ob, loc, halfType, v);
  };
  // An index broadcast to the 16 lanes as i32.
  auto toLanes = [&](OpBuilder &ob, Value v) -> Value {
    return vector::BroadcastOp::create(ob, loc, laneType,
                                       arith::IndexCastOp::create(ob, loc, i32, v));
  };
  // max(x, y) lane-wise as x > y ? x : y (one vmaxps): a NaN score leaves
  // the maximum as it was and still makes its query's row NaN through exp.
  auto maxOf = [&](OpBuilder &ob, Value x, Value y) -> Value {
    Value greater = arith::CmpFOp::create(ob, loc, arith::CmpFPredicate::OGT, x, y);
    return arith::SelectOp::create(ob, loc, greater, x, y);
  };
  // 2^x for x <= 0 (or NaN), lane-wise: a degree-4 Taylor polynomial of
  // 2^f, |f| <= 1/2 (relative error 4e-5, 1% of the bf16 rounding the
  // probabilities get; the sums add the same values), times 2^n, n = x - f
  // rounded to nearest by adding 1.5 * 2^23 (n then sits in the low bits,
  // shifted into the exponent; NaN's bits shift to zero: NaN stays NaN).
  // x is clamped at -126: exp(-inf) is 2^-126, which adds nothing to a sum
  // that holds the maximum's 1. ~11 instructions a vector where math.exp's
  // polynomial took ~20 (the exponentials were most of a step's work).
  auto exp2 = [&](OpBuilder &ob, Value x) -> Value {
    Value floor = splat(ob, -126.0f);
    Value below = arith::CmpFOp::create(ob, loc, arith::CmpFPredicate::OLT, x, floor);
    x = arith::SelectOp::create(ob, loc, below, floor, x);
    Value magic = splat(ob, 12582912.0f);
    Value shifted = arith::AddFOp::create(ob, loc, x, magic);
    Value n = arith::SubFOp::create(ob, loc, shifted, magic);
    Value f = arith::SubFOp::create(ob, loc, x, n);
    const double ln2 = 0.6931471805599453;
    Value p = splat(ob, float(ln2 * ln2 * ln2 * ln2 / 24));
    for (double c : {ln2 * ln2 * ln2 / 6, ln2 * ln2 / 2, ln2, 1.0})
      p = math::FmaOp::create(ob, loc, p, f, splat(ob, float(c)));
    Value shift = arith::ConstantOp::create(
        ob, loc, laneType, DenseElementsAttr::get(laneType, ob.getI32IntegerAttr(23)));
    Value exponent =
        arith::ShLIOp::create(ob, loc, arith::BitcastOp::create(ob, loc, laneType, shifted), shift);
    Value bits = arith::BitcastOp::create(ob, loc, laneType, p);
    return arith::BitcastOp::create(ob, loc, vecType,
                                    arith::AddIOp::create(ob, loc, bits, exponent));
  };
  // Two rows of 16 interleaved: the pair layout of a right-hand tile.
  SmallVector<int64_t> interleave;
  for (int64_t e = 0; e < R; ++e)
    interleave.append({e, R + e});
  auto pairUp = [&](OpBuilder &ob, Value even, Value odd) -> Value {
    // One op a statement: in an argument list the order would be the
    // compiler's, and the IR would differ between gcc and clang builds.
    Value low = toBf16(ob, even);
    Value high = toBf16(ob, odd);
    return vector::ShuffleOp::create(ob, loc, low, high, interleave);
  };
  // Lane n's element offset n * stride, for gathers down a column of `m`
  // (its dimension `dim` strided).
  SmallVector<int32_t> iotaValues;
  for (int64_t e = 0; e < R; ++e)
    iotaValues.push_back(int32_t(e));
  Value iota = arith::ConstantOp::create(
      b, loc, laneType, DenseElementsAttr::get(laneType, ArrayRef<int32_t>(iotaValues)));
  auto columnOffsets = [&](Value m, unsigned dim) -> Value {
    auto meta = memref::ExtractStridedMetadataOp::create(b, loc, m);
    return arith::MulIOp::create(b, loc, iota, toLanes(b, meta.getStrides()[dim]));
  };
  Value qOffsets = columnOffsets(q, 1), vOffsets = columnOffsets(vCache, 0);
  // Down a column of O^T (rows of 16).
  Value dimOffsets = arith::MulIOp::create(
      b, loc, iota,
      arith::ConstantOp::create(b, loc, laneType,
                                DenseElementsAttr::get(laneType, b.getI32IntegerAttr(R))));

  Value zero = idx(b, 0), one = idx(b, 1);
  Value T = memref::DimOp::create(b, loc, q, 1);
  Value L = memref::DimOp::create(b, loc, kCache, 0);
  Value past = arith::SubIOp::create(b, loc, L, T);
  Value lastRow = arith::SubIOp::create(b, loc, L, one);
  // The caches' rows rounded up to whole steps (zeros past L).
  Value padded =
      mul(b, arith::CeilDivUIOp::create(b, loc, L, idx(b, kKeyStep)), idx(b, kKeyStep));
  auto alloc = [&](ArrayRef<int64_t> shape, Type element, ValueRange sizes) -> Value {
    return memref::AllocOp::create(b, loc, MemRefType::get(shape, element), sizes,
                                   b.getI64IntegerAttr(64));
  };
  const int64_t dyn = ShapedType::kDynamic;
  Value keys = alloc({dyn, D}, bf16, padded);           // K, bf16 rows
  Value valuesT = alloc({D, dyn}, bf16, padded);        // V^T
  Value queriesT = alloc({D / 2, 2 * R}, bf16, {});     // Q^T, pairs of dims
  Value scores = alloc({kKeyStep, R}, f32, {});         // S^T of a step
  Value probs = alloc({kKeyStep / 2, 2 * R}, bf16, {}); // P^T, pairs of keys
  Value outT = alloc({D, R}, f32, {});                  // O^T

  forLoop(b, kvBegin, kvEnd, 1, [&](OpBuilder &gb, Value g) {
    Value kvCol = mul(gb, g, idx(gb, D));
    // The head's keys rounded, a row at a time; rows past L zeros.
    forLoop(gb, zero, padded, 1, [&](OpBuilder &jb, Value j) {
      Value live = arith::CmpIOp::create(jb, loc, arith::CmpIPredicate::ult, j, L);
      Value row = arith::MinUIOp::create(jb, loc, j, lastRow);
      forLoop(jb, zero, idx(jb, D), R, [&](OpBuilder &db, Value d) {
        Value k =
            vector::LoadOp::create(db, loc, vecType, kCache, ValueRange{row, add(db, kvCol, d)});
        k = arith::SelectOp::create(db, loc, live, k, splat(db, 0.0f));
        vector::StoreOp::create(db, loc, toBf16(db, k), keys, ValueRange{j, d});
      });
    });
    // Its values transposed: 16 keys of a dim gathered at a time.
    forLoop(gb, zero, padded, R, [&](OpBuilder &jb, Value j) {
      Value live = arith::CmpIOp::create(jb, loc, arith::CmpIPredicate::slt,
                                         arith::AddIOp::create(jb, loc, toLanes(jb, j), iota),
                                         toLanes(jb, L));
      // Row min(j, L - 1): a real one even where the whole step is past L.
      Value row = arith::MinUIOp::create(jb, loc, j, lastRow);
      forLoop(jb, zero, idx(jb, D), 1, [&](OpBuilder &db, Value d) {
        Value v =
            vector::GatherOp::create(db, loc, vecType, vCache, ValueRange{row, add(db, kvCol, d)},
                                     vOffsets, live, splat(db, 0.0f));
        vector::StoreOp::create(db, loc, toBf16(db, v), valuesT, ValueRange{d, j});
      });
    });

    forLoop(
        gb, mul(gb, g, idx(gb, group)), mul(gb, add(gb, g, one), idx(gb, group)), 1,
        [&](OpBuilder &hb, Value h) {
          Value qCol = mul(hb, h, idx(hb, D));
          forLoop(hb, zero, T, R, [&](OpBuilder &tb, Value t0) {
            // The block's queries: lanes past the chunk's last are zeros (they
            // attend like any other and are never stored).
            Value rows =
                arith::MinUIOp::create(tb, loc, arith::SubIOp::create(tb, loc, T, t0), idx(tb, R));
            Value live =
                arith::CmpIOp::create(tb, loc, arith::CmpIPredicate::slt, iota, toLanes(tb, rows));
            forLoop(tb, zero, idx(tb, D / 2), 1, [&](OpBuilder &db, Value dp) {
              SmallVector<Value, 2> dims;
              for (int64_t e = 0; e < 2; ++e) {
                Value d = add(db, mul(db, dp, idx(db, 2)), idx(db, e));
                dims.push_back(vector::GatherOp::create(db, loc, vecType, q,
                                                        ValueRange{zero, t0, add(db, qCol, d)},
                                                        qOffsets, live, splat(db, 0.0f)));
              }
              vector::StoreOp::create(db, loc, pairUp(db, dims[0], dims[1]), queriesT,
                                      ValueRange{dp, zero});
            });
            forLoop(tb, zero, idx(tb, D), 1, [&](OpBuilder &db, Value d) {
              vector::StoreOp::create(db, loc, splat(db, 0.0f), outT, ValueRange{d, zero});
            });

            // The keys the block's queries see: up to its last one's position
            // (causal), from its first one's window on, in whole steps.
            Value firstPos = add(tb, past, t0);
            Value positions = arith::AddIOp::create(tb, loc, toLanes(tb, firstPos), iota);
            Value keyEnd = causal ? add(tb, firstPos, rows) : L;
            Value keyBegin = zero, lowest;
            if (causal && window) {
              Value from = add(tb, firstPos, one);
              Value inWindow =
                  arith::CmpIOp::create(tb, loc, arith::CmpIPredicate::ugt, from, window);
              Value first = arith::SelectOp::create(
                  tb, loc, inWindow, arith::SubIOp::create(tb, loc, from, window), zero);
              keyBegin = mul(tb, div(tb, first, kKeyStep), idx(tb, kKeyStep));
              // Key j is seen by query position p where j >= p + 1 - window.
              Value oneLane = toLanes(tb, one);
              lowest = arith::SubIOp::create(
                  tb, loc, arith::AddIOp::create(tb, loc, positions, oneLane), toLanes(tb, window));
            }
            // Causal: key j <= p; otherwise j < L.
            Value limit = causal ? positions : toLanes(tb, lastRow);

            auto steps = scf::ForOp::create(
                tb, loc, keyBegin, keyEnd, idx(tb, kKeyStep),
                ValueRange{splat(tb, negInf), splat(tb, 0.0f)},
                [&](OpBuilder &kb, Location, Value j0, ValueRange state) {
                  Value oldMax = state[0], oldSum = state[1];
                  // S^T: the step's 64 keys times Q^T, 32 dims a tile.
                  SmallVector<Value> inits;
                  for (int64_t c = 0; c < kKeyStep / R; ++c)
                    inits.push_back(amx::TileZeroOp::create(kb, loc, f32Tile));
                  auto dims = scf::ForOp::create(
                      kb, loc, zero, idx(kb, D), idx(kb, kAmxTileK), inits,
                      [&](OpBuilder &db, Location, Value d, ValueRange s) {
                        Value qt = amx::TileLoadOp::create(db, loc, bf16Tile, queriesT,
                                                           ValueRange{div(db, d, 2), zero});
                        SmallVector<Value> next;
                        for (int64_t c = 0; c < kKeyStep / R; ++c) {
                          Value kt = amx::TileLoadOp::create(
                              db, loc, bf16Tile, keys, ValueRange{add(db, j0, idx(db, c * R)), d});
                          next.push_back(amx::TileMulFOp::create(db, loc, f32Tile, kt, qt, s[c]));
                        }
                        scf::YieldOp::create(db, loc, next);
                      });
                  for (int64_t c = 0; c < kKeyStep / R; ++c)
                    amx::TileStoreOp::create(kb, loc, scores, ValueRange{idx(kb, c * R), zero},
                                             dims.getResult(c));

                  // Logits (scaled, capped, masked) back in place, and their
                  // maxima: four chains of 16 rows.
                  constexpr int64_t kChains = 4;
                  auto logits = scf::ForOp::create(
                      kb, loc, zero, idx(kb, kKeyStep), idx(kb, kChains),
                      SmallVector<Value>(kChains, splat(kb, negInf)),
                      [&](OpBuilder &rb, Location, Value r0, ValueRange maxima) {
                        SmallVector<Value> next;
                        for (int64_t u = 0; u < kChains; ++u) {
                          Value r = add(rb, r0, idx(rb, u));
                          Value x =
                              vector::LoadOp::create(rb, loc, vecType, scores, ValueRange{r, zero});
                          // In base 2: the softmax's exp(x - m) is 2^(x log2 e - m').
                          if (cap) {
                            x = arith::MulFOp::create(rb, loc, x, splat(rb, scale));
                            x = emitSoftcap(rb, loc, *cap, x);
                            x = arith::MulFOp::create(rb, loc, x, splat(rb, log2e));
                          } else {
                            x = arith::MulFOp::create(rb, loc, x, splat(rb, scale * log2e));
                          }
                          Value j = toLanes(rb, add(rb, j0, r));
                          Value seen =
                              arith::CmpIOp::create(rb, loc, arith::CmpIPredicate::sle, j, limit);
                          if (lowest)
                            seen = arith::AndIOp::create(
                                rb, loc, seen,
                                arith::CmpIOp::create(rb, loc, arith::CmpIPredicate::sge, j,
                                                      lowest));
                          x = arith::SelectOp::create(rb, loc, seen, x, splat(rb, negInf));
                          vector::StoreOp::create(rb, loc, x, scores, ValueRange{r, zero});
                          next.push_back(maxOf(rb, x, maxima[u]));
                        }
                        scf::YieldOp::create(rb, loc, next);
                      });
                  Value stepMax = maxOf(kb, maxOf(kb, logits.getResult(0), logits.getResult(1)),
                                        maxOf(kb, logits.getResult(2), logits.getResult(3)));
                  Value newMax = maxOf(kb, stepMax, oldMax);
                  // A query that has seen no key yet: exp(-inf - 0) = 0, not NaN.
                  Value none = arith::CmpFOp::create(kb, loc, arith::CmpFPredicate::OEQ, newMax,
                                                     splat(kb, negInf));
                  Value base = arith::SelectOp::create(kb, loc, none, splat(kb, 0.0f), newMax);
                  Value alpha = exp2(kb, arith::SubFOp::create(kb, loc, oldMax, base));

                  // Probabilities, in pairs of keys, and their sums.
                  auto sums = scf::ForOp::create(
                      kb, loc, zero, idx(kb, kKeyStep / 2), one, ValueRange{splat(kb, 0.0f)},
                      [&](OpBuilder &rb, Location, Value pr, ValueRange sum) {
                        Value r = mul(rb, pr, idx(rb, 2));
                        SmallVector<Value, 2> e;
                        for (int64_t u = 0; u < 2; ++u) {
                          Value x = vector::LoadOp::create(
                              rb, loc, vecType, scores, ValueRange{add(rb, r, idx(rb, u)), zero});
                          e.push_back(exp2(rb, arith::SubFOp::create(rb, loc, x, base)));
                        }
                        vector::StoreOp::create(rb, loc, pairUp(rb, e[0], e[1]), probs,
                                                ValueRange{pr, zero});
                        Value s = arith::AddFOp::create(rb, loc, sum[0], e[0]);
                        scf::YieldOp::create(rb, loc,
                                             ValueRange{arith::AddFOp::create(rb, loc, s, e[1])});
                      });
                  Value newSum = arith::AddFOp::create(
                      kb, loc, arith::MulFOp::create(kb, loc, oldSum, alpha), sums.getResult(0));

                  // O^T rescaled where a query's maximum grew (once the maxima
                  // settle, alpha is exactly 1 in every lane).
                  Value grew = vector::ReductionOp::create(
                      kb, loc, vector::CombiningKind::OR,
                      arith::CmpFOp::create(kb, loc, arith::CmpFPredicate::UNE, alpha,
                                            splat(kb, 1.0f)));
                  scf::IfOp::create(kb, loc, grew, [&](OpBuilder &ob, Location) {
                    forLoop(ob, zero, idx(ob, D), 1, [&](OpBuilder &db, Value d) {
                      Value o = vector::LoadOp::create(db, loc, vecType, outT, ValueRange{d, zero});
                      vector::StoreOp::create(db, loc, arith::MulFOp::create(db, loc, o, alpha),
                                              outT, ValueRange{d, zero});
                    });
                    scf::YieldOp::create(ob, loc);
                  });

                  // O^T += V^T P^T, four tiles of 16 dims a pass over the 64 keys.
                  for (int64_t c0 = 0; c0 < D / R; c0 += kOutputTiles) {
                    int64_t n = std::min(kOutputTiles, D / R - c0);
                    SmallVector<Value> o;
                    for (int64_t c = 0; c < n; ++c)
                      o.push_back(amx::TileLoadOp::create(kb, loc, f32Tile, outT,
                                                          ValueRange{idx(kb, (c0 + c) * R), zero}));
                    for (int64_t k = 0; k < kKeyStep; k += kAmxTileK) {
                      Value pt = amx::TileLoadOp::create(kb, loc, bf16Tile, probs,
                                                         ValueRange{idx(kb, k / 2), zero});
                      Value key = add(kb, j0, idx(kb, k));
                      for (int64_t c = 0; c < n; ++c) {
                        Value vt = amx::TileLoadOp::create(kb, loc, bf16Tile, valuesT,
                                                           ValueRange{idx(kb, (c0 + c) * R), key});
                        o[c] = amx::TileMulFOp::create(kb, loc, f32Tile, vt, pt, o[c]);
                      }
                    }
                    for (int64_t c = 0; c < n; ++c)
                      amx::TileStoreOp::create(kb, loc, outT,
                                               ValueRange{idx(kb, (c0 + c) * R), zero}, o[c]);
                  }
                  scf::YieldOp::create(kb, loc, ValueRange{newMax, newSum});
                });

            // out = O / sum, a query's row at a time: its column of O^T
            // gathered 16 dims at a time from L1 (a scatter to the output's
            // rows, 16 lines a vector, took 28% of the attention's time).
            Value inv = arith::DivFOp::create(tb, loc, splat(tb, 1.0f), steps.getResult(1));
            Value allLanes = arith::ConstantOp::create(
                tb, loc, DenseElementsAttr::get(VectorType::get({R}, tb.getI1Type()), true));
            forLoop(tb, zero, rows, 1, [&](OpBuilder &ib, Value i) {
              Value scaleRow = vector::BroadcastOp::create(
                  ib, loc, vecType,
                  vector::ExtractOp::create(ib, loc, inv, ArrayRef<OpFoldResult>{i}));
              Value t = add(ib, t0, i);
              for (int64_t c = 0; c < D / R; ++c) {
                Value o =
                    vector::GatherOp::create(ib, loc, vecType, outT, ValueRange{idx(ib, c * R), i},
                                             dimOffsets, allLanes, splat(ib, 0.0f));
                Value scaled = arith::MulFOp::create(ib, loc, o, scaleRow);
                vector::StoreOp::create(ib, loc, scaled, out,
                                        ValueRange{zero, t, add(ib, qCol, idx(ib, c * R))});
              }
            });
          });
        });
  });
  for (Value buffer : {keys, valuesT, queriesT, scores, probs, outT})
    memref::DeallocOp::create(b, loc, buffer);
}
