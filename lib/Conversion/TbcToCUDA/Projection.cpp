//===- Projection.cpp - GEMVs and the warp-tile projections ---------------===//
//
// The projection kernels that read each weight row straight from global
// memory: the GEMV (decoding one token; a warp per output column, its loads
// issued steps ahead, the norm statistics summed in its walk), the 8-row FMA
// kernel, and the tensor-core kernel of a warp per 16 x 8 tile (16-63
// rows), with their epilogues (bias, GLU, activation, soft-cap, RoPE).
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

using namespace mlir;

namespace tbc::cuda {

struct Emitter::WalkRowStats {
  Emitter &em;
  NormKind norm;
  int64_t K, n;             // the row length; the rows a thread stages
  SmallVector<Value> shift; // LayerNorm: x[row, 0] of each staged row

  WalkRowStats(Emitter &em, NormKind norm, Value x, ArrayRef<Value> rows)
      : em(em), norm(norm), K(em.width(x)), n(rows.size()) {
    if (norm == NormKind::layer)
      for (Value row : rows)
        shift.push_back(em.g.load(x, {row, em.g.idx(0)}));
  }
  int64_t sums() const { return norm == NormKind::layer ? 2 * n : n; }
  /// `sums` ([sum d^2 per row, then sum d per row]) with this step's
  /// `staged` vectors added.
  SmallVector<Value> add(ValueRange sums, ValueRange staged) {
    GpuBuilder &g = em.g;
    auto sum = [&](Value v) {
      return vector::ReductionOp::create(em.b, em.loc, vector::CombiningKind::ADD, v)
          .getResult();
    };
    SmallVector<Value> next(sums.begin(), sums.end());
    for (size_t r = 0; r < staged.size(); ++r) {
      Value d = staged[r];
      if (norm == NormKind::layer) {
        d = g.fsub(d, vector::BroadcastOp::create(em.b, em.loc, d.getType(), shift[r]));
        next[n + r] = g.fadd(next[n + r], sum(d));
      }
      next[r] = g.fadd(next[r], sum(g.fmul(d, d)));
    }
    return next;
  }
  /// Each row's (mean, or null for an RMSNorm, and rstd) from `sums`
  /// added over the row's `lanes` lanes (adjacent threads, a power of 2).
  SmallVector<std::pair<Value, Value>> statistics(ArrayRef<Value> sums, int64_t lanes,
                                                  double eps) {
    GpuBuilder &g = em.g;
    SmallVector<int32_t> offsets;
    for (int32_t o = 1; o < lanes; o *= 2)
      offsets.push_back(o);
    auto total = [&](Value v) {
      return g.butterfly(v, offsets, [&](Value p, Value q) { return g.fadd(p, q); });
    };
    Value inv = g.f32(1.0 / double(K));
    SmallVector<std::pair<Value, Value>> stats;
    for (int64_t r = 0; r < n; ++r) {
      Value mean, ms = g.fmul(total(sums[r]), inv); // E[d^2]
      if (norm == NormKind::layer) {
        Value md = g.fmul(total(sums[n + r]), inv); // E[d]
        mean = g.fadd(shift[r], md);
        ms = g.fmax(g.fsub(ms, g.fmul(md, md)), g.f32(0.0));
      }
      stats.push_back({mean, g.rsqrt(g.fadd(ms, g.f32(eps)))});
    }
    return stats;
  }
};

Value Emitter::epilogue(const Epilogue &e, Value col, Value mean, Value rstd,
                        llvm::function_ref<Value(int64_t)> acc) {
  auto z = [&](int64_t h) {
    Value v = acc(h);
    Value c = g.add(col, h * e.N);
    if (e.corr)
      v = g.fsub(v, g.fmul(mean, g.load(e.corr, c)));
    if (e.norm)
      v = g.fmul(v, rstd);
    if (e.bias)
      v = g.fadd(v, g.load(e.bias, c));
    return v;
  };
  Value v = z(0);
  if (e.glu)
    v = g.fmul(emitActivation(b, loc, *e.act, v), z(1));
  else if (e.act)
    v = emitActivation(b, loc, *e.act, v);
  if (e.scale)
    v = g.fmul(v, g.f32(*e.scale));
  if (e.cap)
    v = emitSoftcap(b, loc, *e.cap, v);
  return v;
}

std::pair<Value, int64_t> Emitter::pairedRopeColumn(RotaryEpilogueAttr attr) {
  Value bid = g.bid(gpu::Dimension::x), warp = g.tid(gpu::Dimension::y);
  Value plain = g.add(g.mul(bid, cuda::kWarpsPerBlock), warp);
  if (attr.getStyle() == RopeStyle::gptj)
    return {plain, 1};
  int64_t half = attr.getRotaryDim() / 2;
  Value pair = g.add(g.mul(bid, cuda::kWarpsPerBlock / 2), g.rem(warp, 4));
  Value paired = g.add(g.add(g.mul(g.div(pair, half), attr.getHeadDim()), g.rem(pair, half)),
                       g.mul(g.div(warp, 4), half));
  return {g.select(g.lt(plain, attr.getColumns()), paired, plain), 4};
}

std::pair<Value, int64_t> Emitter::warpColumn(RotaryEpilogueAttr rope,
                                              const cuda::Launch &launch) {
  if (rope && pairsRopeWarps(rope, launch))
    return pairedRopeColumn(rope);
  return {g.add(g.mul(g.bid(gpu::Dimension::x), cuda::kWarpsPerBlock), g.tid(gpu::Dimension::y)),
          0};
}

void Emitter::prefetchWeightRows(Operation *op, const cuda::Launch &launch, ValueRange in,
                                  ValueRange out) {
  if (launch.body != cuda::Body::fma)
    return;
  bool glu = false;
  RotaryEpilogueAttr rope;
  if (auto f = dyn_cast<FusedLinearOp>(op)) {
    glu = f.getGlu();
    rope = f.getRopeAttr();
  } else if (!isa<LinearOp>(op)) {
    return;
  }
  // Row r of the weight starts at element r K, [out, in] or GPT-2's
  // transposed [out, in, 1] alike; a GLU's up row is o + N.
  Value w = in[1];
  const int64_t K = width(in[0]), N = width(out[0]);
  const int64_t rowBytes = K * (cast<MemRefType>(w.getType()).getElementType().isF32() ? 4 : 2);
  const int64_t bytes = std::min(rowBytes, cuda::kGemvPrefetchBytes);
  Value o = warpColumn(rope, launch).first;
  Value at = g.mul(g.tid(gpu::Dimension::x), cuda::kPrefetchLineBytes);
  g.ifThen(g.andi(g.lt(o, N), g.lt(at, bytes)), [&] {
    g.prefetchL2(w, g.add(g.mul(o, rowBytes), at));
    if (glu)
      g.prefetchL2(w, g.add(g.mul(g.add(o, N), rowBytes), at));
  });
}

LogicalResult Emitter::projection(const cuda::Launch &launch, Value x, Value w, Value bias,
                                  Value corr, const InputGain &gain, Value out,
                                  std::optional<NormKind> norm, double eps,
                                  std::optional<Activation> act, bool glu,
                                  std::optional<double> scale, std::optional<double> cap,
                                  const Rotary *rope, Value residual) {
  Epilogue e{bias, corr, norm, act, glu, scale, cap, width(out), residual};
  // A transposed 16-bit weight ([out, in, 1], made from GPT-2's [in, out]
  // at bind time) is an [out, in] matrix to every variant.
  if (auto t = cast<MemRefType>(w.getType());
      t.getRank() == 3 && !t.getElementType().isF32())
    w = memref::CollapseShapeOp::create(b, loc, w,
                                        ArrayRef<ReassociationIndices>{{0}, {1, 2}});
  if (launch.body == cuda::Body::mma)
    return mmaProjection(x, w, out, e, gain, eps, rope);
  if (launch.body == cuda::Body::tiledStage)
    return stageActivations(x, gain, norm, eps);
  if (launch.body == cuda::Body::tiledMma)
    return tiledProjection(w, out, e, rope);
  const int64_t R = launch.rowsPerBlock;
  auto wType = cast<MemRefType>(w.getType());
  bool transposed = wType.getRank() == 3;
  // 16-bit weights (those the tensor-core variant reads: K % kMmaK == 0)
  // come 8 per 128-bit load, widened to f32 in registers; f32 weights 4.
  bool halfWeights = !wType.getElementType().isF32();
  int64_t K = width(x), N = width(out);
  int64_t V = halfWeights ? 8 : K % 4 == 0 ? 4 : 1; // weights per lane per step
  int64_t A = std::min<int64_t>(V, 4);               // accumulator width
  auto vec = VectorType::get({A}, b.getF32Type());
  Value lane = g.tid(gpu::Dimension::x);
  const bool pairedRope = rope && pairsRopeWarps(rope->attr, launch);
  Value o;
  int64_t pairApart; // pairedRope: partner warp = warp ^ pairApart
  std::tie(o, pairApart) = warpColumn(rope ? rope->attr : RotaryEpilogueAttr(), launch);
  // Paired warps meet at barriers: every warp of the block runs (one past
  // N reads row N - 1 and stores nothing).
  Value inRange = g.lt(o, N);
  if (pairedRope)
    o = g.min(o, g.idx(N - 1));
  Value zero = arith::ConstantOp::create(b, loc, vec, DenseElementsAttr::get(vec, 0.0f));
  if (transposed && V == 4) {
    // View [out, in, 1] as [out, in] for the vector loads.
    w = memref::CollapseShapeOp::create(b, loc, w,
                                        ArrayRef<ReassociationIndices>{{0}, {1, 2}});
    transposed = false;
  }
  // W[row, k .. k + V) as V / A vectors of A floats.
  auto loadW = [&](Value row, Value k) -> SmallVector<Value, 2> {
    if (V == 1) {
      SmallVector<Value> at{row, k};
      if (transposed) // [out, in, 1]: row-major with a unit trailing dim
        at.push_back(g.idx(0));
      return {vector::BroadcastOp::create(b, loc, vec, g.load(w, at))};
    }
    auto raw = VectorType::get({V}, wType.getElementType());
    auto load = vector::LoadOp::create(b, loc, raw, w, ValueRange{row, k});
    load.setAlignment(16); // rows of K % V == 0 elements from a 256-byte base
    if (!halfWeights)
      return {load};
    Value wide =
        arith::ExtFOp::create(b, loc, VectorType::get({V}, b.getF32Type()), load.getResult());
    SmallVector<Value, 2> parts;
    for (int64_t s = 0; s < V; s += A)
      parts.push_back(vector::ExtractStridedSliceOp::create(
          b, loc, wide, ArrayRef<int64_t>{s}, ArrayRef<int64_t>{A}, ArrayRef<int64_t>{1}));
    return parts;
  };
  // x[t, k + s * A .. + A) times the input gain, for every part s < n of
  // loadW (k % A == 0). The 16-bit GEMV reads them 128 bits at a time
  // where x's rows are aligned (its loads of x outnumbered the weight's 8
  // to 1); the 8-row kernel and the f32-weight GEMV keep one path (two
  // spilled 4 bytes: rows8 on sm_90, GPT-J's LayerNorm+RoPE f32 GEMV on
  // sm_80).
  Value xAligned = halfWeights && R == 1 ? rowsAligned16(x) : Value();
  // The GEMV sums its row's norm statistics in the k walk (WalkRowStats)
  // from the x it loads there anyway: the warp's lanes load each of the
  // row's K values once (V at a time; K % V == 0). A prologue before the
  // walk was a chain of dependent loads (4 rounds of x from L2 at K =
  // 4096) that every warp waited out before its first weight load.
  const bool statsInWalk = norm && R == 1 && V > 1;
  // Elsewhere the statistics' loads (rowPartialSum) come before the main
  // loop: 4 in flight for several rows, whose kernels with a LayerNorm and
  // the run-time alignment test spilled 8 bytes at 8 (BLOOM, the
  // parallel GPT-J spec).
  Value statsAligned = !norm || statsInWalk || K % 4 ? Value()
                       : xAligned                     ? xAligned
                                                      : rowsAligned16(x);
  // x's parts as loaded go to `raw` as well, if asked for.
  auto loadX = [&](Value t, Value k, int64_t n,
                   SmallVector<Value> *raw = nullptr) -> SmallVector<Value> {
    if (V == 1)
      return {vector::BroadcastOp::create(b, loc, vec,
                                          gain.apply(g, b, loc, g.load(x, {t, k}), k))};
    SmallVector<Value> parts;
    if (xAligned)
      parts = g.loadRow(x, t, k, n, vec, xAligned);
    else
      for (int64_t s = 0; s < n; ++s)
        parts.push_back(vector::LoadOp::create(b, loc, vec, x, ValueRange{t, g.add(k, s * A)}));
    if (raw)
      *raw = parts;
    for (int64_t s = 0; s < n; ++s)
      parts[s] = gain.apply(g, b, loc, parts[s], g.add(k, s * A), /*aligned=*/true);
    return parts;
  };
  g.ifThen(pairedRope ? g.i1(true) : inRange, [&] {
    forRowTiles(R, [&](Value t0) {
      SmallVector<Value> rows;
      Value last = g.sub(T, g.idx(1));
      for (int64_t r = 0; r < R; ++r)
        rows.push_back(g.min(g.add(t0, r), last)); // reads stay in bounds
      // Prologue: each row's statistics (warpRowStatistics; the scalar
      // loop where K % 4 != 0). Llama-3-8B's GEMVs on an H200, scalar ->
      // vector: norm+QKV 0.055 -> 0.025 ms, norm+gate/up 0.12 -> 0.064 ms.
      SmallVector<Value> mean(R), rstd(R);
      for (int64_t r = 0; r < R && norm && !statsInWalk; ++r)
        std::tie(mean[r], rstd[r]) = warpRowStatistics(*norm, x, rows[r], eps, statsAligned);
      // Main loop: R dot products per weight row read (a GLU's gate and
      // up rows, a RoPE pair's two rows).
      // Decoding reads each weight once per token: the GEMV (R == 1)
      // issues U steps' loads before their FMAs, so that more of the
      // weight is in flight per warp (the loop is not unrolled otherwise).
      // A RoPE pair's two weight rows on 16-bit weights take 2 steps, as
      // many weight bytes in flight as 4 steps of one row: at 4 its
      // registers, with the epilogue's sine and cosine, outgrew even 128
      // at K = 1024 (bench-llama-1k's QKV spilled 16 bytes).
      // With statsInWalk it leaves the row's statistics in mean and rstd.
      auto dot = [&](ArrayRef<Value> weightRows) {
        int64_t U = 1, maxU = halfWeights && rope && weightRows.size() == 2 ? 2 : 4;
        while (R == 1 && U < maxU && K % (2 * U * 32 * V) == 0)
          U *= 2;
        SmallVector<Value> init(R * weightRows.size(), zero);
        const size_t accs = init.size();
        std::optional<WalkRowStats> walkStats;
        if (statsInWalk) {
          walkStats.emplace(*this, *norm, x, ArrayRef<Value>{rows[0]});
          init.append(walkStats->sums(), g.f32(0.0));
        }
        SmallVector<Value> state = g.loop(
            g.mul(lane, V), g.idx(K), g.idx(32 * V * U), init, [&](Value k0, ValueRange a) {
              SmallVector<Value> ks;
              SmallVector<SmallVector<SmallVector<Value, 2>>> wv(U); // [u][row][part]
              for (int64_t u = 0; u < U; ++u) {
                ks.push_back(u ? g.add(k0, u * 32 * V) : k0);
                for (Value row : weightRows)
                  wv[u].push_back(loadW(row, ks[u]));
              }
              SmallVector<Value> next(a.begin(), a.end());
              for (int64_t u = 0; u < U; ++u)
                for (int64_t r = 0; r < R; ++r) {
                  SmallVector<Value> raw;
                  SmallVector<Value> xv = loadX(rows[r], ks[u], int64_t(wv[u][0].size()),
                                                walkStats ? &raw : nullptr);
                  for (size_t s = 0; s < xv.size(); ++s)
                    for (size_t h = 0; h < weightRows.size(); ++h)
                      next[h * R + r] =
                          vector::FMAOp::create(b, loc, xv[s], wv[u][h][s], next[h * R + r]);
                  for (Value part : raw) {
                    SmallVector<Value> sums =
                        walkStats->add(ArrayRef<Value>(next).drop_front(accs), part);
                    std::copy(sums.begin(), sums.end(), next.begin() + accs);
                  }
                }
              return next;
            });
        if (walkStats)
          std::tie(mean[0], rstd[0]) =
              walkStats->statistics(ArrayRef<Value>(state).drop_front(accs), 32, eps)[0];
        state.resize(accs);
        return state;
      };
      auto sum = [&](ArrayRef<Value> acc, int64_t h, int64_t r) {
        return g.warpSum(
            vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, acc[h * R + r]));
      };
      // After the butterfly every lane holds every row's sums: lane r keeps
      // row r's (a select per row) and runs the epilogue, RoPE's sine and
      // cosine included, for that row alone rather than for all R rows.
      auto mineOf = [&](ArrayRef<Value> perRow) {
        Value m = perRow[0];
        for (int64_t r = 1; r < R && m; ++r)
          m = g.select(g.eq(lane, r), perRow[r], m);
        return m;
      };
      // The lane's sums of the H weight rows, taken row by row (taking
      // them weight row by weight row had ptxas spill on sm_80).
      auto mySums = [&](ArrayRef<Value> acc, int64_t H) {
        SmallVector<Value> m(H);
        for (int64_t r = 0; r < R; ++r)
          for (int64_t h = 0; h < H; ++h) {
            Value s = sum(acc, h, r);
            m[h] = r ? g.select(g.eq(lane, r), s, m[h]) : s;
          }
        return m;
      };
      // Lane r writes row t0 + r of column `col`.
      auto store = [&](Value col, Value y) {
        Value t = g.add(t0, lane);
        g.ifThen(g.andi(g.andi(g.lt(lane, R), g.lt(t, T)), inRange),
                 [&] { storeOutput(e, y, out, t, col); });
      };
      auto plain = [&] {
        SmallVector<Value> weightRows{o};
        if (glu)
          weightRows.push_back(g.add(o, N));
        SmallVector<Value> acc = dot(weightRows);
        SmallVector<Value> sums = mySums(acc, int64_t(weightRows.size()));
        Value myMean = mineOf(mean), myRstd = mineOf(rstd);
        store(o, epilogue(e, o, myMean, myRstd, [&](int64_t h) { return sums[h]; }));
      };
      if (!rope)
        return plain();
      if (pairedRope) {
        // Each warp its own column; the pair's two results meet in shared
        // memory, and each warp rotates and stores its own.
        SmallVector<Value> acc = dot({o});
        Value sum = mySums(acc, 1)[0];
        Value z = epilogue(e, o, mean[0], rstd[0], [&](int64_t) { return sum; });
        Value warp = g.tid(gpu::Dimension::y);
        g.ifThen(g.eq(lane, 0), [&] { g.store(z, workgroup, {warp}); });
        gpu::BarrierOp::create(b, loc);
        RopeLanes l = rope->lanes(b, loc, o);
        Value zp = g.load(workgroup, {arith::XOrIOp::create(b, loc, warp, g.idx(pairApart))});
        // The next row's results must not overwrite these before they are read.
        gpu::BarrierOp::create(b, loc);
        auto [first, second] = rope->rotatePair(g, b, loc, g.select(l.first, z, zp),
                                                g.select(l.first, zp, z), l, rows[0]);
        store(o, g.select(l.inRot, g.select(l.first, first, second), z));
        return;
      }
      // RoPE: the warp of a pair's first column computes both columns and
      // writes both rotated, the second's has nothing to do, so each
      // weight row is still read once; other columns pass through.
      RopeLanes l = rope->lanes(b, loc, o);
      g.ifThen(negate(l.inRot), plain);
      g.ifThen(g.andi(l.inRot, l.first), [&] {
        SmallVector<Value> acc = dot({o, l.partner});
        SmallVector<Value> sums = mySums(acc, 2);
        Value myMean = mineOf(mean), myRstd = mineOf(rstd);
        Value z0 = epilogue(e, o, myMean, myRstd, [&](int64_t) { return sums[0]; });
        Value z1 = epilogue(e, l.partner, myMean, myRstd, [&](int64_t) { return sums[1]; });
        auto [first, second] = rope->rotatePair(g, b, loc, z0, z1, l, mineOf(rows));
        store(o, first);
        store(l.partner, second);
      });
    });
  });
  return success();
}

template <typename MmaLoop, typename ForEach, typename WeightRow>
void Emitter::ropeTiles(const Rotary &rope, const Epilogue &e, Value n0, Value ownRow,
                        Value mean[2], Value rstd[2], Value rows[2], Value out,
                        llvm::function_ref<void()> plain, MmaLoop &mmaLoop,
                        ForEach &forEachAccumulator, WeightRow &weightRow) {
  auto z = [&](SmallVector<Value> &acc, int64_t i, int r, Value col) {
    return epilogue(e, col, mean[r], rstd[r], [&](int64_t) { return acc[i]; });
  };
  int64_t half = rope.attr.getRotaryDim() / 2;
  if (rope.attr.getStyle() == RopeStyle::gptj) {
    SmallVector<Value> acc = mmaLoop({ownRow});
    forEachAccumulator([&](int64_t i, int r, Value t, Value col) {
      RopeLanes l = rope.lanes(b, loc, col);
      Value partner = weightRow(g.add(g.sub(col, g.idx(i % 2)), 1 - i % 2));
      Value z0 = z(acc, i, r, col), z1 = z(acc, i ^ 1, r, partner);
      Value y = rope.rotate(g, b, loc, z0, z1, boolean(i % 2 == 0), l, rows[r]);
      g.store(g.select(l.inRot, y, z0), out, {t, col});
    });
    return;
  }
  RopeLanes tile = rope.lanes(b, loc, n0);
  g.ifThen(negate(tile.inRot), plain);
  g.ifThen(g.andi(tile.inRot, tile.first), [&] {
    SmallVector<Value> acc = mmaLoop({ownRow, g.add(ownRow, half)});
    forEachAccumulator([&](int64_t i, int r, Value t, Value col) {
      RopeLanes l = rope.lanes(b, loc, col);
      Value partner = g.add(col, half);
      Value z0 = z(acc, i, r, col), z1 = z(acc, 4 + i, r, partner);
      auto [first, second] = rope.rotatePair(g, b, loc, z0, z1, l, rows[r]);
      g.store(first, out, {t, col});
      g.store(second, out, {t, partner});
    });
  });
}

LogicalResult Emitter::mmaProjection(Value x, Value w, Value out, const Epilogue &e,
                                     const InputGain &gain, double eps, const Rotary *rope) {
  using namespace cuda;
  int64_t K = width(x), N = e.N;
  Value lane = g.tid(gpu::Dimension::x);
  Value group = g.div(lane, 4), quad = g.rem(lane, 4);
  Value n0 = g.mul(g.add(g.mul(g.bid(gpu::Dimension::x), kMmaWarps), g.tid(gpu::Dimension::y)),
                   kMmaCols);
  MmaHalf mh = half();
  // The weight row this lane's B registers read for output column `col`
  // (clamped: columns past N compute garbage that is never stored).
  auto weightRow = [&](Value col) { return g.min(col, g.idx(N - 1)); };
  g.ifThen(g.lt(n0, N), [&] {
    forRowTiles(kMmaRows, [&](Value t0) {
      Value last = g.sub(T, g.idx(1));
      // This lane's two rows (clamped for loads; stores are masked).
      Value rows[2] = {g.min(g.add(t0, group), last), g.min(g.add(g.add(t0, group), 8), last)};
      // Prologue: the statistics of the lane's two rows, shared by the 4
      // lanes of its group (each sums its 4 of every 16 values in 128-bit
      // loads, 4 in flight: rowPartialSum; every 4th value one at a time
      // where K % 4 != 0; then the group adds its partial sums).
      Value mean[2], rstd[2];
      Value statsAligned = e.norm && K % 4 == 0 ? rowsAligned16(x) : Value();
      for (int r = 0; r < 2 && e.norm; ++r)
        std::tie(mean[r], rstd[r]) = rowStatistics(*e.norm, K, eps, [&](auto term) {
          if (statsAligned)
            return g.rowQuadSum(
                rowPartialSum(x, rows[r], K, statsAligned, g.mul(quad, 4), 4, 4, term));
          Value part = g.loop(quad, g.idx(K), g.idx(4), ValueRange{g.f32(0.0)},
                              [&](Value k, ValueRange acc) {
                                return SmallVector<Value>{
                                    g.fadd(acc[0], term(g.load(x, {rows[r], k})))};
                              })[0];
          return g.rowQuadSum(part);
        });
      // Main loop over k in steps of 16: one mma per weight tile (the
      // B registers of tile h read weight row wRow[h]).
      auto mmaLoop = [&](ArrayRef<Value> wRow) {
        SmallVector<Value> init(4 * wRow.size(), g.f32(0.0));
        auto body = [&](Value k0, ValueRange c) -> SmallVector<Value> {
          Value kLo = g.add(k0, g.mul(quad, 2)), kHi = g.add(kLo, 8);
          auto aReg = [&](Value row, Value k) {
            Value k1 = g.add(k, 1);
            Value lo = gain.apply(g, b, loc, g.load(x, {row, k}), k);
            Value hi = gain.apply(g, b, loc, g.load(x, {row, k1}), k1);
            return mh.pack(lo, hi);
          };
          SmallVector<Value> a{aReg(rows[0], kLo), aReg(rows[1], kLo), aReg(rows[0], kHi),
                               aReg(rows[1], kHi)};
          SmallVector<Value> next;
          for (size_t h = 0; h < wRow.size(); ++h) {
            auto bReg = [&](Value k) { return mh.loadPair(w, {wRow[h], k}); };
            // k is even and rows hold K % 16 == 0 elements: 4-byte aligned.
            llvm::append_range(next, mh.mma(a, {bReg(kLo), bReg(kHi)}, c.slice(4 * h, 4)));
          }
          return next;
        };
        // Rolled: unrolled by LLVM and without LSR (CudaBackend.cpp), a
        // RoPE QKV's copies kept 20-56 bytes of addresses in local memory
        // even at 128 registers; rolled it takes 56-80 and spills none.
        return g.rolledLoop(g.idx(0), g.idx(K), g.idx(kMmaK), init, body);
      };
      // Epilogue: accumulator i is row (i < 2 ? group : group + 8),
      // column n0 + 2 * quad + i % 2 (of tile 0; tile h's at the same
      // place of its own columns).
      auto forEachAccumulator = [&](llvm::function_ref<void(int64_t i, int r, Value t,
                                                            Value col)> body) {
        for (int64_t i = 0; i < 4; ++i) {
          int r = i < 2 ? 0 : 1;
          Value t = g.add(g.add(t0, group), r * 8);
          Value col = g.add(g.add(n0, g.mul(quad, 2)), i % 2);
          g.ifThen(g.andi(g.lt(t, T), g.lt(col, N)), [&] { body(i, r, t, col); });
        }
      };
      Value ownRow = weightRow(g.add(n0, group));
      auto plain = [&] {
        SmallVector<Value> wRow{ownRow};
        if (e.glu)
          wRow.push_back(g.add(ownRow, N));
        SmallVector<Value> acc = mmaLoop(wRow);
        forEachAccumulator([&](int64_t i, int r, Value t, Value col) {
          Value y =
              epilogue(e, col, mean[r], rstd[r], [&](int64_t h) { return acc[4 * h + i]; });
          storeOutput(e, y, out, t, col);
        });
      };
      if (!rope)
        return plain();
      ropeTiles(*rope, e, n0, ownRow, mean, rstd, rows, out, plain, mmaLoop,
                forEachAccumulator, weightRow);
    });
  });
  return success();
}

} // namespace tbc::cuda
