//===- RowKernels.cpp - pointwise ops, norms and their statistics ---------===//
//
// The kernels of a thread per element (the KV-cache append, RoPE) and of a
// warp per row (RMSNorm, LayerNorm, add+norm), and the row statistics the
// norm-fused projections' prologues share with them.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

using namespace mlir;

namespace tbc::cuda {

LogicalResult Emitter::appendToCaches(Value k, Value v, ValueRange caches) {
  return pointwise(width(k), [&](Value t, Value c) {
    Value row = g.add(past, t);
    g.store(toCache(g.load(k, {t, c})), caches[0], {row, c});
    g.store(toCache(g.load(v, {t, c})), caches[1], {row, c});
  });
}

std::pair<Value, Value>
Emitter::rowStatistics(NormKind norm, int64_t n, double eps,
                       llvm::function_ref<Value(llvm::function_ref<Value(Value)>)> rowSum) {
  return rowsStatistics(norm, n, eps, [&](auto term) {
    return SmallVector<Value>{rowSum([&](Value v) { return term(0, v); })};
  })[0];
}

SmallVector<std::pair<Value, Value>> Emitter::rowsStatistics(
    NormKind norm, int64_t n, double eps,
    llvm::function_ref<SmallVector<Value>(llvm::function_ref<Value(int64_t, Value)>)> rowSums) {
  Value inv = g.f32(1.0 / double(n));
  SmallVector<Value> mean;
  if (norm == NormKind::layer)
    for (Value s : rowSums([](int64_t, Value v) { return v; }))
      mean.push_back(g.fmul(s, inv));
  SmallVector<Value> ss = rowSums([&](int64_t r, Value v) {
    if (!mean.empty()) {
      Value m = mean[r];
      if (auto vec = dyn_cast<VectorType>(v.getType()))
        m = vector::BroadcastOp::create(b, loc, vec, m);
      v = g.fsub(v, m);
    }
    return g.fmul(v, v);
  });
  SmallVector<std::pair<Value, Value>> stats;
  for (size_t r = 0; r < ss.size(); ++r)
    stats.push_back({mean.empty() ? Value() : mean[r],
                     g.rsqrt(g.fadd(g.fmul(ss[r], inv), g.f32(eps)))});
  return stats;
}

Value Emitter::warpReduce(Value lane, int64_t n, llvm::function_ref<Value(Value)> f) {
  Value part = g.loop(lane, g.idx(n), g.idx(32), ValueRange{g.f32(0.0)},
                      [&](Value i, ValueRange acc) {
                        return SmallVector<Value>{g.fadd(acc[0], f(i))};
                      })[0];
  return g.warpSum(part);
}

Value Emitter::rowPartialSum(Value x, Value row, int64_t n, Value aligned, Value first,
                             int64_t lanes, int64_t maxLoads,
                             llvm::function_ref<Value(Value)> term) {
  auto f32x4 = VectorType::get({4}, b.getF32Type());
  const int64_t round = lanes * 4;
  int64_t P = 1;
  while (P < maxLoads && n % (2 * P * round) == 0)
    P *= 2;
  Value zero = arith::ConstantOp::create(b, loc, f32x4, DenseElementsAttr::get(f32x4, 0.0f));
  Value part = g.loop(first, g.idx(n), g.idx(round * P), ValueRange{zero},
                      [&](Value k, ValueRange acc) {
                        SmallVector<std::pair<Value, Value>> at;
                        for (int64_t p = 0; p < P; ++p)
                          at.push_back({row, p ? g.add(k, p * round) : k});
                        Value s = acc[0];
                        for (Value v : g.loadRows(x, at, f32x4, aligned))
                          s = g.fadd(s, term(v));
                        return SmallVector<Value>{s};
                      })[0];
  return vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, part);
}

std::pair<Value, Value> Emitter::warpRowStatistics(NormKind norm, Value x, Value row, double eps,
                                                   Value aligned) {
  const int64_t K = width(x);
  Value lane = g.tid(gpu::Dimension::x);
  return rowStatistics(norm, K, eps, [&](auto term) {
    if (aligned)
      return g.warpSum(rowPartialSum(x, row, K, aligned, g.mul(lane, 4), 32, 4, term));
    return warpReduce(lane, K, [&](Value k) { return term(g.load(x, {row, k})); });
  });
}

LogicalResult Emitter::rowNorm(NormKind kind, Value lhs, Value x, Value w, Value bias, Value sum,
                               Value out, double eps, double offset, int64_t groups,
                               Value residual) {
  int64_t glen = width(x) / groups;
  Value lane = g.tid(gpu::Dimension::x);
  Value grp = g.add(g.mul(g.bid(gpu::Dimension::x), cuda::kWarpsPerBlock),
                    g.tid(gpu::Dimension::y));
  g.ifThen(g.lt(grp, groups), [&] {
    forRowTiles(1, [&](Value t) {
      Value base = g.mul(grp, glen);
      Value src = x;
      if (lhs) { // sum = lhs + x, then normalise the sum
        g.loop(lane, g.idx(glen), g.idx(32), [&](Value i) {
          Value c = g.add(base, i);
          g.store(g.fadd(g.load(lhs, {t, c}), g.load(x, {t, c})), sum, {t, c});
        });
        src = sum;
      }
      auto at = [&](Value i) { return g.load(src, {t, g.add(base, i)}); };
      Value mean, rstd; // captured below: not a structured binding (C++17)
      std::tie(mean, rstd) = rowStatistics(kind, glen, eps, [&](auto term) {
        return warpReduce(lane, glen, [&](Value i) { return term(at(i)); });
      });
      // Element i of this group's gain (or bias): one for every group
      // ([glen]), or the group's own ([groups * glen] or [groups, glen]).
      auto groupElement = [&](Value vec, Value i) {
        auto type = cast<MemRefType>(vec.getType());
        if (type.getNumElements() == glen)
          return g.load(vec, i);
        if (type.getRank() == 2)
          return g.load(vec, {grp, i});
        return g.load(vec, g.add(base, i));
      };
      g.loop(lane, g.idx(glen), g.idx(32), [&](Value i) {
        Value v = at(i);
        Value gain = groupElement(w, i);
        if (offset != 0.0)
          gain = g.fadd(g.f32(offset), gain);
        Value y;
        if (kind == NormKind::rms) {
          y = g.fmul(g.fmul(v, rstd), gain);
        } else {
          y = g.fmul(g.fmul(g.fsub(v, mean), rstd), gain);
          if (bias)
            y = g.fadd(y, groupElement(bias, i));
        }
        Value c = g.add(base, i);
        if (residual)
          y = g.fadd(g.load(residual, {t, c}), y);
        g.store(y, out, {t, c});
      });
    });
  });
  return success();
}

LogicalResult Emitter::rope(RopeOp r, Value x, Value pos, Value lengths, Value out) {
  RopeMath math(b, loc, r, gpuModule, "rope_inv_freq_" + std::to_string(index));
  int64_t headDim = r.getHeadDim(), rot = r.getRotaryDim();
  bool gptj = r.getStyle() == RopeStyle::gptj;
  return pointwise(width(out), [&](Value t, Value f) {
    auto [inRot, first, i, partner] = emitRopeLanes(b, loc, f, headDim, rot, gptj);
    Value v = g.load(x, {t, f});
    Value inv = math.inverseFrequency(b, loc, i, lengths ? g.load(lengths, t) : Value());
    Value rotated = math.rotate(b, loc, v, g.load(x, {t, partner}), first, g.load(pos, t), inv);
    g.store(g.select(inRot, rotated, v), out, {t, f});
  });
}

} // namespace tbc::cuda
