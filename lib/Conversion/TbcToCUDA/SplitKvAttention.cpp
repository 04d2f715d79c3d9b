//===- SplitKvAttention.cpp - split-KV attention and decoding -------------===//
//
// Attention without tensor cores: a block per (query row, heads of one GQA
// group, slice of the visible positions), each warp an online softmax over
// its runs of the slice, merged in shared memory; decoding's slices append
// the new keys and values and merge across blocks through the scratch
// array. The flash kernel (prefill in 16-bit modules) is FlashAttention.cpp.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include "FlashAttention.h"

#include <limits>

using namespace mlir;

namespace tbc::cuda {

MemRefType Emitter::attentionPartsType(AttentionOp a) {
  int64_t stride = 2 + 32 * llvm::divideCeilSigned(a.getHeadDim(), 32);
  return MemRefType::get(
      {headsPerBlock(a), cuda::kSplitKvWarps, stride}, b.getF32Type(),
      MemRefLayoutAttrInterface(),
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup));
}

LogicalResult Emitter::attention(AttentionOp a, cuda::Body body, Value q, Value k, Value v,
                                 Value relativeTable, ValueRange caches, Value out) {
  PositionBias bias(b, loc, a, gpuModule, "attention_" + std::to_string(index),
                    relativeTable);
  if (body == cuda::Body::flash)
    cuda::emitFlashAttention(g, half(), a, bias,
                             {q, caches[0], caches[1], out, T, past, window, flashKeys,
                              flashValues, flashQueries},
                             cuda::flashOverlaps(a.getHeadDim(), flashTile));
  else
    splitKvAttention(a, q, k, v, bias, caches, out,
                     body == cuda::Body::decodeSlice ? decodeSlices(a, decodeSplits) : 1);
  return success();
}

Emitter::LaneDims Emitter::laneDims(int64_t D, Value lane) {
  LaneDims l{llvm::divideCeilSigned(D, 32), false, {}, {}};
  l.contiguous = D == 32 * l.perLane && (l.perLane == 2 || l.perLane == 4 || l.perLane == 8);
  for (int64_t i = 0; i < l.perLane; ++i) {
    Value d = l.contiguous ? g.add(g.mul(lane, l.perLane), i) : g.add(lane, 32 * i);
    l.valid.push_back(g.lt(d, D));
    l.dims.push_back(g.min(d, g.idx(D - 1)));
  }
  return l;
}

Value Emitter::sliceBase(AttentionOp a, Value t, Value h, Value slice) {
  return g.add(g.add(g.idx(partialsOffset),
                     g.mul(g.add(g.mul(t, a.getNumHeads()), h),
                                   decodePartialsStride(a, decodeSplits))),
               g.mul(slice, 2 + a.getHeadDim()));
}

void Emitter::splitKvAttention(AttentionOp a, Value q, Value k, Value v, const PositionBias &bias,
                               ValueRange caches, Value out, int64_t slices) {
  constexpr int64_t S = cuda::kSplitKvWarps, P = cuda::kSplitKvPositions;
  static_assert(llvm::isPowerOf2_64(P), "a head's run max is a butterfly over its scores' lanes");
  int64_t D = a.getHeadDim(), group = a.getNumHeads() / a.getNumKvHeads(),
          n = headsPerBlock(a);
  double scale = a.getScale().convertToDouble();
  std::optional<double> cap;
  if (a.getSoftcap())
    cap = a.getSoftcap()->convertToDouble();
  Value parts = workgroup; // attentionPartsType(a)
  Value lane = g.tid(gpu::Dimension::x), warp = g.tid(gpu::Dimension::y);
  Value headBlock = g.bid(gpu::Dimension::x), slice;
  if (slices > 1) {
    slice = g.rem(headBlock, slices);
    headBlock = g.div(headBlock, slices);
  }
  // n divides the group: the block's heads share one KV head.
  Value h0 = g.mul(headBlock, n);
  Value kvCol = g.mul(g.div(h0, group), D);
  SmallVector<Value> heads;
  for (int64_t i = 0; i < n; ++i)
    heads.push_back(g.add(h0, i));
  LaneDims l = laneDims(D, lane);
  int64_t perLane = l.perLane, width = 2 + perLane; // a head's state: max, sum, values
  SmallVector<Value> &dims = l.dims, &valid = l.valid;
  forRowTiles(1, [&](Value t) {
    Value p, lo, hi; // plain variables: C++17 lambdas cannot capture bindings
    std::tie(p, lo, hi) = visibleRange(a, t);
    // The online softmaxes over [start, end), merged across the warps.
    auto attendRange = [&](Value start, Value end) {
      SmallVector<Value> qv; // head i's dims at i * perLane
      SmallVector<Value> init;
      for (int64_t i = 0; i < n; ++i) {
        Value qCol = g.mul(heads[i], D);
        for (int64_t d = 0; d < perLane; ++d) {
          Value v = g.fmul(g.load(q, {t, g.add(qCol, dims[d])}), g.f32(scale));
          qv.push_back(g.select(valid[d], v, g.f32(0.0)));
        }
        init.append({g.f32(-std::numeric_limits<float>::infinity()), g.f32(0.0)});
        init.append(perLane, g.f32(0.0));
      }
      SmallVector<Value> state = g.loop(
          g.add(start, g.mul(warp, P)), end, g.idx(S * P), init, [&](Value j0, ValueRange s) {
            // Positions j0 .. j0 + P - 1, those at end or past it read the
            // last of the block's and weigh 0 (score -inf); j0 < end, so the
            // run's max is finite and no weight is e^(-inf + inf).
            Value last = g.sub(end, g.idx(1));
            SmallVector<Value> j(P), keys, values;
            for (int64_t r = 0; r < P; ++r)
              j[r] = g.min(g.add(j0, r), last);
            // Every load of the run first, so that they are in flight together.
            auto lanes = VectorType::get({perLane}, cacheType);
            for (int64_t r = 0; r < P; ++r) {
              if (!l.contiguous) {
                for (int64_t d = 0; d < perLane; ++d) {
                  keys.push_back(fromCache(g.load(caches[0], {j[r], g.add(kvCol, dims[d])})));
                  values.push_back(fromCache(g.load(caches[1], {j[r], g.add(kvCol, dims[d])})));
                }
                continue;
              }
              for (auto [cache, into] :
                   {std::pair{caches[0], &keys}, std::pair{caches[1], &values}}) {
                // Row offsets and kvCol are multiples of D: the lane's
                // perLane values are naturally aligned.
                auto v = vector::LoadOp::create(b, loc, lanes, cache,
                                                ValueRange{j[r], g.add(kvCol, dims[0])});
                v.setAlignment(perLane * cacheType.getIntOrFloatBitWidth() / 8);
                for (int64_t d = 0; d < perLane; ++d)
                  into->push_back(
                      fromCache(vector::ExtractOp::create(b, loc, v, ArrayRef<int64_t>{d})));
              }
            }
            // The run's n P scores are dot products whose terms lie across
            // the lanes (each holds perLane dims): one transposed sum
            // (GpuBuilder::transposedWarpSum) leaves score i P + r of head
            // i, position r in `spread` adjacent lanes, so that each lane
            // caps, biases, masks and exponentiates one score, not n P.
            SmallVector<Value> partials;
            for (int64_t i = 0; i < n; ++i)
              for (int64_t r = 0; r < P; ++r) {
                Value part = g.f32(0.0);
                for (int64_t d = 0; d < perLane; ++d)
                  part = g.fma(qv[i * perLane + d], keys[r * perLane + d], part);
                partials.push_back(part);
              }
            partials.resize(llvm::PowerOf2Ceil(n * P), g.f32(0.0)); // n = 3: 16 sums
            const int64_t spread = 32 / int64_t(partials.size());
            Value score = g.transposedWarpSum(partials, lane);
            Value mine = g.div(lane, spread); // i P + r
            Value myHead = g.min(g.div(mine, P), g.idx(n - 1)), myPos = g.rem(mine, P);
            Value jr = g.add(j0, myPos);
            if (cap)
              score = emitSoftcap(b, loc, *cap, score);
            if (Value term = bias.at(b, loc, g.add(h0, myHead), p, g.min(jr, last)))
              score = g.fadd(score, term);
            score = g.select(g.lt(jr, end), score,
                             g.f32(-std::numeric_limits<float>::infinity()));
            // Head i's max over the run: its P scores are the lanes i P
            // spread .. (i + 1) P spread - 1.
            SmallVector<int32_t> positionBits;
            for (int64_t o = spread; o < spread * P; o *= 2)
              positionBits.push_back(int32_t(o));
            Value runMax =
                g.butterfly(score, positionBits, [&](Value x, Value y) { return g.fmax(x, y); });
            SmallVector<Value> m(n), corr(n);
            Value myMax;
            for (int64_t i = 0; i < n; ++i) {
              ValueRange si = s.slice(i * width, width);
              m[i] = g.fmax(si[0], g.fromLane(runMax, int32_t(i * P * spread)));
              corr[i] = g.exp(g.fsub(si[0], m[i]));
              myMax = i ? g.select(g.eq(myHead, i), m[i], myMax) : m[i];
            }
            Value myWeight = g.exp(g.fsub(score, myMax));
            SmallVector<Value> next;
            for (int64_t i = 0; i < n; ++i) {
              ValueRange si = s.slice(i * width, width);
              SmallVector<Value> weight(P);
              Value sum = g.fmul(si[1], corr[i]);
              for (int64_t r = 0; r < P; ++r) {
                weight[r] = g.fromLane(myWeight, int32_t((i * P + r) * spread));
                sum = g.fadd(sum, weight[r]);
              }
              next.append({m[i], sum});
              for (int64_t d = 0; d < perLane; ++d) {
                Value acc = g.fmul(si[2 + d], corr[i]);
                for (int64_t r = 0; r < P; ++r)
                  acc = g.fma(weight[r], values[r * perLane + d], acc);
                next.push_back(acc);
              }
            }
            return next;
          });
      // A warp that saw no position keeps max -inf and sums 0: its weight
      // e^(-inf - M) is 0 (warp 0 always sees position start, so M is
      // finite).
      for (int64_t i = 0; i < n; ++i) {
        Value at = g.idx(i);
        g.ifThen(g.eq(lane, 0), [&] {
          g.store(state[i * width], parts, {at, warp, g.idx(0)});
          g.store(state[i * width + 1], parts, {at, warp, g.idx(1)});
        });
        for (int64_t d = 0; d < perLane; ++d)
          g.store(state[i * width + 2 + d], parts, {at, warp, g.add(lane, 2 + 32 * d)});
      }
      gpu::BarrierOp::create(b, loc);
      // Warp i merges head h0 + i.
      g.ifThen(g.lt(warp, n), [&] {
        Value h = g.add(h0, warp);
        Value M = g.load(parts, {warp, g.idx(0), g.idx(0)});
        for (int64_t w = 1; w < S; ++w)
          M = g.fmax(M, g.load(parts, {warp, g.idx(w), g.idx(0)}));
        Value L = g.f32(0.0);
        SmallVector<Value> acc(perLane, g.f32(0.0));
        for (int64_t w = 0; w < S; ++w) {
          Value f = g.exp(g.fsub(g.load(parts, {warp, g.idx(w), g.idx(0)}), M));
          L = g.fma(g.load(parts, {warp, g.idx(w), g.idx(1)}), f, L);
          for (int64_t d = 0; d < perLane; ++d)
            acc[d] = g.fma(g.load(parts, {warp, g.idx(w), g.add(lane, 2 + 32 * d)}), f,
                           acc[d]);
        }
        auto writeOutput = [&] { storeHeadRow(a, l, out, t, h, acc, L); };
        if (slices == 1)
          return writeOutput();
        // Where one slice holds every visible position (at most one
        // sweep of the block's warps, 64: a short prompt's first decode
        // steps, as the benchmark's whole-model step), this block
        // has the whole softmax and writes the output itself, without
        // the partials' round trips (fences, the counter, the partials
        // read back in L2) that cost a short cache most of its time.
        Value used = usedSlices(a, lo, hi);
        g.ifThenElse(g.eq(used, 1), writeOutput, [&] {
          Value at = sliceBase(a, t, h, slice);
          g.ifThen(g.eq(lane, 0), [&] {
            g.store(M, scratch, {at});
            g.store(L, scratch, {g.add(at, 1)});
          });
          for (int64_t d = 0; d < perLane; ++d)
            g.ifThen(valid[d],
                     [&] { g.store(acc[d], scratch, {g.add(at, g.add(dims[d], 2))}); });
          mergeIfLast(a, t, h, lane, used, out);
        });
      });
      // The next row's partials must not overwrite these before the
      // merging warps have read them.
      gpu::BarrierOp::create(b, loc);
    };
    // This block's positions [start, end): all of [lo, hi), or its
    // slice (sliceLength). A block whose slice is empty has nothing to
    // do: the combine reads only the slices that hold positions. (The
    // branch is the whole block's: its barriers stay uniform.)
    Value start = lo, end = hi;
    if (slices > 1) {
      Value per = sliceLength(lo, hi, slices);
      start = g.min(hi, g.add(lo, g.mul(slice, per)));
      end = g.min(hi, g.add(start, per));
      g.ifThen(g.lt(start, end), [&] {
        appendSlice(a, k, v, caches, start, end, kvCol);
        gpu::BarrierOp::create(b, loc);
        attendRange(start, end);
      });
    } else {
      attendRange(start, end);
    }
  });
}

void Emitter::appendSlice(AttentionOp a, Value k, Value v, ValueRange caches, Value start,
                          Value end, Value kvCol) {
  int64_t D = a.getHeadDim();
  Value first = g.max(start, past), stop = g.min(end, g.add(past, T));
  Value thread = g.add(g.mul(g.tid(gpu::Dimension::y), 32), g.tid(gpu::Dimension::x));
  g.loop(thread, g.mul(g.sub(stop, first), D), g.idx(32 * cuda::kSplitKvWarps), [&](Value i) {
    Value j = g.add(first, g.div(i, D)), c = g.add(kvCol, g.rem(i, D));
    Value t = g.sub(j, past);
    g.store(toCache(g.load(k, {t, c})), caches[0], {j, c});
    g.store(toCache(g.load(v, {t, c})), caches[1], {j, c});
  });
}

std::tuple<Value, Value, Value> Emitter::visibleRange(AttentionOp a, Value t) {
  Value p = g.add(past, t);
  Value hi = a.getCausal() ? g.add(p, 1) : g.add(past, T);
  Value lo = g.firstVisible(p, window);
  return {p, lo, hi};
}

Value Emitter::sliceLength(Value lo, Value hi, int64_t slices) {
  constexpr int64_t sweep = cuda::kSplitKvWarps * cuda::kSplitKvPositions;
  return g.mul(g.div(g.add(g.sub(hi, lo), g.idx(slices * sweep - 1)), slices * sweep), sweep);
}

Value Emitter::usedSlices(AttentionOp a, Value lo, Value hi) {
  Value per = sliceLength(lo, hi, decodeSlices(a, decodeSplits));
  return arith::DivUIOp::create(b, loc, g.add(g.sub(hi, lo), g.sub(per, g.idx(1))), per);
}

void Emitter::mergeIfLast(AttentionOp a, Value t, Value h, Value lane, Value used, Value out) {
  NVVM::MembarOp::create(b, loc, NVVM::MemScopeKind::GPU);
  NVVM::SyncWarpOp::create(b, loc, g.i32(-1));
  Value counter = g.add(g.mul(t, a.getNumHeads()), h);
  Value before = g.ifElse(
      g.eq(lane, 0), {b.getF32Type()},
      [&] {
        return SmallVector<Value>{memref::AtomicRMWOp::create(
            b, loc, arith::AtomicRMWKind::addf, g.f32(1.0), scratch, ValueRange{counter})};
      },
      [&] { return SmallVector<Value>{g.f32(0.0)}; })[0];
  // Lane 0's count, in every lane (the others add 0).
  Value counted = g.warpSum(before);
  Value others = g.toF32(arith::IndexCastOp::create(b, loc, b.getI32Type(),
                                                    g.sub(used, g.idx(1))));
  g.ifThen(arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, counted, others), [&] {
    NVVM::MembarOp::create(b, loc, NVVM::MemScopeKind::GPU);
    combineSlices(a, t, h, lane, used, out);
    g.ifThen(g.eq(lane, 0), [&] { g.store(g.f32(0.0), scratch, {counter}); });
  });
}

void Emitter::combineSlices(AttentionOp a, Value t, Value h, Value lane, Value used, Value out) {
  LaneDims l = laneDims(a.getHeadDim(), lane);
  Value one = g.idx(1);
  auto at = [&](Value s) { return sliceBase(a, t, h, s); };
  // The other blocks' partials are read where their stores went, in L2,
  // by atomic adds of 0 (an SM's L1 is not coherent with other SMs'
  // stores within a launch; the memref loads have no volatile form).
  auto partial = [&](Value i) -> Value {
    return memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addf, g.f32(0.0), scratch,
                                       ValueRange{i});
  };
  Value M = g.loop(one, used, one, ValueRange{partial(at(g.idx(0)))},
                   [&](Value s, ValueRange m) {
                     return SmallVector<Value>{g.fmax(m[0], partial(at(s)))};
                   })[0];
  SmallVector<Value> init(1 + l.perLane, g.f32(0.0));
  SmallVector<Value> sums = g.loop(g.idx(0), used, one, init, [&](Value s, ValueRange acc) {
    Value base = at(s);
    Value f = g.exp(g.fsub(partial(base), M));
    SmallVector<Value> next{g.fma(partial(g.add(base, 1)), f, acc[0])};
    for (int64_t i = 0; i < l.perLane; ++i)
      next.push_back(g.fma(partial(g.add(base, g.add(l.dims[i], 2))), f, acc[1 + i]));
    return next;
  });
  storeHeadRow(a, l, out, t, h, ArrayRef<Value>(sums).drop_front(), sums[0]);
}

void Emitter::storeHeadRow(AttentionOp a, const LaneDims &l, Value out, Value t, Value h,
                           ArrayRef<Value> acc, Value sum) {
  Value invL = g.fdiv(g.f32(1.0), sum);
  Value qCol = g.mul(h, a.getHeadDim());
  for (int64_t d = 0; d < l.perLane; ++d)
    g.ifThen(l.valid[d], [&] {
      g.store(g.fmul(acc[d], invL), out, {t, g.add(qCol, l.dims[d])});
    });
}

} // namespace tbc::cuda
