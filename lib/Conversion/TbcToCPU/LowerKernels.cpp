//===- LowerKernels.cpp - tbc kernels -> linalg on memrefs ----------------===//
//
// Each outlined kernel (one tbc op) becomes a destination-passing function
// on memrefs: operands, one output buffer per result, then for attention
// the key/value caches. Activations are [batch = 1, T, features]; operand
// activations may be strided views. All arithmetic is f32.
//
//===----------------------------------------------------------------------===//

#include "KernelBuilder.h"
#include "Attention.h"
#include "Matmul.h"
#include "tbc/Conversion/TbcToCPU/KernelABI.h"
#include "tbc/Conversion/Passes.h"
#include "tbc/Support/HalfFloats.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/X86Vector/X86VectorDialect.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/TypeSwitch.h"

#include <limits>

using namespace mlir;

namespace tbc {
#define GEN_PASS_DEF_TBCLOWERTOCPU
#include "tbc/TbcConversion.h.inc"
} // namespace tbc

using namespace tbc;

namespace {
using IT = utils::IteratorType;

/// Memref type for a kernel operand: activations (dynamic dims) are strided
/// views with a unit innermost stride; weights are contiguous.
MemRefType operandType(Type t) {
  auto tensor = cast<RankedTensorType>(t);
  if (tensor.hasStaticShape())
    return MemRefType::get(tensor.getShape(), tensor.getElementType());
  SmallVector<int64_t> strides(tensor.getRank(), ShapedType::kDynamic);
  strides.back() = 1;
  auto layout = StridedLayoutAttr::get(t.getContext(), ShapedType::kDynamic,
                                       strides);
  return MemRefType::get(tensor.getShape(), tensor.getElementType(), layout);
}

MemRefType resultType(Type t) {
  auto tensor = cast<RankedTensorType>(t);
  return MemRefType::get(tensor.getShape(), tensor.getElementType());
}

/// Emits the body of one kernel.
class Emitter {
public:
  Emitter(OpBuilder &b, Location loc, ModuleOp module, int kernelIndex, CpuTile tile)
      : kb(b, loc), b(b), loc(loc), module(module), kernelIndex(kernelIndex), tile(tile) {}

  /// The share of the work a kernel does (index values): the output
  /// columns [begin, end) of a projection, the key/value heads of an
  /// attention; its range operand, or everything.
  void setRange(Value begin, Value end) {
    rangeBegin = begin;
    rangeEnd = end;
  }

  LogicalResult emit(Operation *op, ValueRange in, ValueRange out,
                     ValueRange caches) {
    return llvm::TypeSwitch<Operation *, LogicalResult>(op)
        .Case([&](EmbeddingOp e) { return embedding(e, in, out[0]); })
        .Case([&](RMSNormOp n) {
          return rmsNorm(in[0], in[1], out[0], n.getEps().convertToDouble(),
                         n.getGainOffsetValue(), n.getNumGroups());
        })
        .Case([&](LayerNormOp n) {
          return layerNorm(in[0], in[1], n.getBias() ? in[2] : Value(), out[0],
                           n.getEps().convertToDouble(), n.getGainOffsetValue(),
                           n.getNumGroups());
        })
        .Case([&](AddNormOp n) { return addNorm(n, in, out); })
        .Case([&](NormAddOp n) { return normAdd(n, in, out[0]); })
        .Case([&](LinearOp l) {
          return linear(in[0], in[1], l.getBias() ? in[2] : Value(), out[0]);
        })
        .Case([&](FusedLinearOp f) { return fusedLinear(f, in, out[0]); })
        .Case([&](SplitOp s) { return groupedSplit(s, in[0], out); })
        .Case([&](RopeOp r) {
          return rope(r, in[0], in[1], r.getLengths() ? in[2] : Value(), out[0]);
        })
        .Case([&](AttentionOp a) { return attention(a, in, out[0], caches); })
        .Case([&](SinusoidalPositionsOp s) { return sinusoidal(s, in[0], out[0]); })
        .Case([&](GluOp g) {
          Activation act = g.getAct();
          return pointwise(in, out[0], [&](OpBuilder &nb, Location l, ValueRange a) {
            return arith::MulFOp::create(nb, l, emitActivation(nb, l, act, a[0]), a[1]);
          });
        })
        .Case([&](ActivationOp a) {
          Activation act = a.getAct();
          return pointwise(in, out[0], [&](OpBuilder &nb, Location l, ValueRange v) {
            return emitActivation(nb, l, act, v[0]);
          });
        })
        .Case([&](SoftcapOp s) {
          double cap = s.getCap().convertToDouble();
          return pointwise(in, out[0], [&](OpBuilder &nb, Location l, ValueRange v) {
            return emitSoftcap(nb, l, cap, v[0]);
          });
        })
        .Case([&](ScaleOp s) {
          auto factor = float(s.getFactor().convertToDouble());
          return pointwise(in, out[0], [&](OpBuilder &nb, Location l, ValueRange v) {
            return arith::MulFOp::create(
                nb, l, v[0], arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(factor)));
          });
        })
        .Case([&](ClipOp c) {
          double limit = c.getLimit().convertToDouble();
          return pointwise(in, out[0], [&](OpBuilder &nb, Location l, ValueRange v) {
            return emitClip(nb, l, limit, v[0]);
          });
        })
        .Case([&](AddOp) {
          return pointwise(in, out[0], [&](OpBuilder &nb, Location l, ValueRange v) {
            return arith::AddFOp::create(nb, l, v[0], v[1]);
          });
        })
        .Default([&](Operation *o) {
          return o->emitOpError("has no CPU lowering");
        });
  }

private:
  KernelBuilder kb;
  OpBuilder &b;
  Location loc;
  ModuleOp module;
  int kernelIndex;
  CpuTile tile;
  Value rangeBegin, rangeEnd;

  Value addIndex(Value a, int64_t c) {
    return c == 0 ? a : arith::AddIOp::create(b, loc, a, kb.idx(c)).getResult();
  }

  Value T(Value activation) { return kb.dim(activation, 1); }
  Value B(Value activation) { return kb.dim(activation, 0); }
  static int64_t width(Value v) {
    return cast<MemRefType>(v.getType()).getShape().back();
  }

  using PointFn = llvm::function_ref<Value(OpBuilder &, Location, ValueRange)>;

  /// out[b, t, f] = fn(in_0[b, t, f], ...).
  LogicalResult pointwise(ValueRange in, Value out, PointFn fn) {
    SmallVector<AffineMap> maps(in.size() + 1, kb.identity(3));
    kb.generic(in, out, maps, KernelBuilder::iterators(3),
               [&](OpBuilder &nb, Location l, ValueRange a) {
                 linalg::YieldOp::create(nb, l, fn(nb, l, a.drop_back()));
               });
    return success();
  }

  LogicalResult embedding(EmbeddingOp e, ValueRange in, Value out) {
    Value table = in[0], ids = in[1];
    std::optional<double> scale;
    if (e.getScale())
      scale = e.getScale()->convertToDouble();
    kb.generic(ids, out, {kb.map(3, {kb.d(0), kb.d(1)}), kb.identity(3)},
               KernelBuilder::iterators(3),
               [&](OpBuilder &nb, Location l, ValueRange a) {
                 // Row r of the table is column r % P of panel r / P; its
                 // element k lies at (k, r % P) of the panel, or with k pairs
                 // at (2 (k / 2) + i / P, i % P), i = 2 (r % P) + k % 2.
                 Value row = arith::IndexCastOp::create(nb, l, nb.getIndexType(), a[0]);
                 auto c = [&](int64_t v) { return arith::ConstantIndexOp::create(nb, l, v); };
                 Value panelWidth = c(tile.panel);
                 Value col = linalg::IndexOp::create(nb, l, 2);
                 Value panel = arith::DivUIOp::create(nb, l, row, panelWidth);
                 Value at[2] = {col, arith::RemUIOp::create(nb, l, row, panelWidth)};
                 if (tile.bf16Dot) {
                   Value i = arith::AddIOp::create(
                       nb, l, arith::MulIOp::create(nb, l, at[1], c(2)),
                       arith::RemUIOp::create(nb, l, col, c(2)));
                   at[0] = arith::AddIOp::create(
                       nb, l,
                       arith::MulIOp::create(nb, l, arith::DivUIOp::create(nb, l, col, c(2)), c(2)),
                       arith::DivUIOp::create(nb, l, i, panelWidth));
                   at[1] = arith::RemUIOp::create(nb, l, i, panelWidth);
                 }
                 Value v = memref::LoadOp::create(nb, l, table, ValueRange{panel, at[0], at[1]});
                 if (!v.getType().isF32()) // a bf16 or f16 table
                   v = arith::ExtFOp::create(nb, l, nb.getF32Type(), v);
                 if (scale)
                   v = arith::MulFOp::create(
                       nb, l, v,
                       arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(float(*scale))));
                 linalg::YieldOp::create(nb, l, v);
               });
    return success();
  }

  /// Per-row (per-group) sum of squares of x[b, t, G, glen] -> ss[b, t, G].
  Value sumSquares(Value x4, Value x) {
    int64_t groups = cast<MemRefType>(x4.getType()).getShape()[2];
    Value ss = kb.alloc({ShapedType::kDynamic, ShapedType::kDynamic, groups},
                        {B(x), T(x)});
    kb.fill(ss, 0.0);
    kb.generic(x4, ss,
               {kb.identity(4), kb.map(4, {kb.d(0), kb.d(1), kb.d(2)})},
               KernelBuilder::iterators(3, 1),
               [&](OpBuilder &nb, Location l, ValueRange a) {
                 Value sq = arith::MulFOp::create(nb, l, a[0], a[0]);
                 linalg::YieldOp::create(nb, l, arith::AddFOp::create(nb, l, a[1], sq).getResult());
               });
    return ss;
  }

  /// A grouped norm's gain (or bias) `w` over the [b, t, G, len] view of
  /// its input, and its indexing map: one gain for every group ([len]: d3)
  /// or each group its own ([G * len], viewed [G, len], or [G, len]: d2, d3).
  std::pair<Value, AffineMap> groupVector(Value w, int64_t groups, int64_t glen) {
    auto type = cast<MemRefType>(w.getType());
    if (type.getNumElements() == glen)
      return {w, kb.map(4, {kb.d(3)})};
    Value view = type.getRank() == 1 ? kb.splitLastDim(w, groups) : w;
    return {view, kb.map(4, {kb.d(2), kb.d(3)})};
  }

  LogicalResult rmsNorm(Value x, Value w, Value out, double eps, double offset,
                        int64_t groups) {
    int64_t glen = width(x) / groups;
    Value x4 = kb.splitLastDim(x, groups), out4 = kb.splitLastDim(out, groups);
    Value ss = sumSquares(x4, x);
    float inv = 1.0f / float(glen);
    auto [gain, gainMap] = groupVector(w, groups, glen);
    kb.generic(ValueRange{x4, ss, gain}, out4,
               {kb.identity(4), kb.map(4, {kb.d(0), kb.d(1), kb.d(2)}),
                gainMap, kb.identity(4)},
               KernelBuilder::iterators(4),
               [&](OpBuilder &nb, Location l, ValueRange a) {
                 auto c = [&](float v) {
                   return arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(v));
                 };
                 Value mean = arith::MulFOp::create(nb, l, a[1], c(inv));
                 Value r = emitRsqrt(nb, l, arith::AddFOp::create(nb, l, mean, c(float(eps))));
                 Value n = arith::MulFOp::create(nb, l, a[0], r);
                 Value g = offset != 0.0
                               ? arith::AddFOp::create(nb, l, c(float(offset)), a[2]).getResult()
                               : a[2];
                 linalg::YieldOp::create(nb, l, arith::MulFOp::create(nb, l, n, g).getResult());
               });
    kb.dealloc(ss);
    return success();
  }

  /// The maps of a [b, t, (G,) n] view's rows: the statistics' indices
  /// (all but the last) and the reductions' iterators over the row.
  AffineMap statisticsMap(unsigned rank) {
    SmallVector<AffineExpr> lead;
    for (unsigned i = 0; i + 1 < rank; ++i)
      lead.push_back(kb.d(i));
    return kb.map(rank, lead);
  }

  /// mean and rstd of the rows of x [b, t, n] or of its groups' rows
  /// [b, t, G, n] (biased variance): [b, t] or [b, t, G].
  std::pair<Value, Value> rowStats(Value x, double eps) {
    auto type = cast<MemRefType>(x.getType());
    unsigned rank = type.getRank();
    float inv = 1.0f / float(type.getShape().back());
    SmallVector<int64_t> shape(type.getShape().drop_back());
    shape[0] = shape[1] = ShapedType::kDynamic;
    Value mean = kb.alloc(shape, {B(x), T(x)});
    Value var = kb.alloc(shape, {B(x), T(x)});
    kb.fill(mean, 0.0);
    kb.fill(var, 0.0);
    AffineMap rowMap = statisticsMap(rank), statMap = kb.identity(rank - 1);
    kb.generic(x, mean, {kb.identity(rank), rowMap}, KernelBuilder::iterators(rank - 1, 1),
               [&](OpBuilder &nb, Location l, ValueRange a) {
                 linalg::YieldOp::create(nb, l, arith::AddFOp::create(nb, l, a[1], a[0]).getResult());
               });
    kb.generic(ValueRange{}, mean, {statMap}, KernelBuilder::iterators(rank - 1),
               [&](OpBuilder &nb, Location l, ValueRange a) {
                 Value c = arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(inv));
                 linalg::YieldOp::create(nb, l, arith::MulFOp::create(nb, l, a[0], c).getResult());
               });
    kb.generic(ValueRange{x, mean}, var, {kb.identity(rank), rowMap, rowMap},
               KernelBuilder::iterators(rank - 1, 1),
               [&](OpBuilder &nb, Location l, ValueRange a) {
                 Value dlt = arith::SubFOp::create(nb, l, a[0], a[1]);
                 Value sq = arith::MulFOp::create(nb, l, dlt, dlt);
                 linalg::YieldOp::create(nb, l, arith::AddFOp::create(nb, l, a[2], sq).getResult());
               });
    kb.generic(ValueRange{}, var, {statMap}, KernelBuilder::iterators(rank - 1),
               [&](OpBuilder &nb, Location l, ValueRange a) {
                 auto c = [&](float v) {
                   return arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(v));
                 };
                 Value v = arith::AddFOp::create(
                     nb, l, arith::MulFOp::create(nb, l, a[0], c(inv)), c(float(eps)));
                 linalg::YieldOp::create(nb, l, emitRsqrt(nb, l, v));
               });
    return {mean, var}; // var now holds rstd
  }

  LogicalResult layerNorm(Value x, Value w, Value bias, Value out, double eps, double offset,
                          int64_t groups = 1) {
    // Whole rows as [b, t, n]; groups as [b, t, G, n / G], each its rows.
    unsigned rank = groups > 1 ? 4 : 3;
    int64_t glen = width(x) / groups;
    Value xv = groups > 1 ? kb.splitLastDim(x, groups) : x;
    Value outv = groups > 1 ? kb.splitLastDim(out, groups) : out;
    auto vector = [&](Value v) {
      return groups > 1 ? groupVector(v, groups, glen)
                        : std::pair<Value, AffineMap>{v, kb.map(3, {kb.d(2)})};
    };
    auto [mean, rstd] = rowStats(xv, eps);
    AffineMap rowMap = statisticsMap(rank);
    auto [gain, gainMap] = vector(w);
    SmallVector<Value> ins{xv, mean, rstd, gain};
    SmallVector<AffineMap> maps{kb.identity(rank), rowMap, rowMap, gainMap};
    if (bias) {
      auto [beta, betaMap] = vector(bias);
      ins.push_back(beta);
      maps.push_back(betaMap);
    }
    maps.push_back(kb.identity(rank));
    kb.generic(ins, outv, maps, KernelBuilder::iterators(rank),
               [&](OpBuilder &nb, Location l, ValueRange a) {
                 Value n = arith::MulFOp::create(
                     nb, l, arith::SubFOp::create(nb, l, a[0], a[1]), a[2]);
                 Value gain = a[3];
                 if (offset != 0.0)
                   gain = arith::AddFOp::create(
                       nb, l, arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(float(offset))),
                       gain);
                 Value y = arith::MulFOp::create(nb, l, n, gain);
                 if (bias)
                   y = arith::AddFOp::create(nb, l, y, a[4]);
                 linalg::YieldOp::create(nb, l, y);
               });
    kb.dealloc(mean);
    kb.dealloc(rstd);
    return success();
  }

  LogicalResult addNorm(AddNormOp n, ValueRange in, ValueRange out) {
    Value sum = out[0];
    if (failed(pointwise(ValueRange{in[0], in[1]}, sum,
                         [&](OpBuilder &nb, Location l, ValueRange v) {
                           return arith::AddFOp::create(nb, l, v[0], v[1]);
                         })))
      return failure();
    double eps = n.getEps().convertToDouble();
    double off = n.getGainOffsetValue();
    if (n.getKind() == NormKind::rms)
      return rmsNorm(sum, in[2], out[1], eps, off, 1);
    return layerNorm(sum, in[2], n.getBias() ? in[3] : Value(), out[1], eps, off);
  }

  /// out = residual + norm(x): the norm written to `out`, the residual
  /// added in place (a second pass over rows still in cache).
  LogicalResult normAdd(NormAddOp n, ValueRange in, Value out) {
    double eps = n.getEps().convertToDouble();
    double off = n.getGainOffsetValue();
    LogicalResult normed = n.getKind() == NormKind::rms
                               ? rmsNorm(in[0], in[2], out, eps, off, 1)
                               : layerNorm(in[0], in[2], n.getBias() ? in[3] : Value(), out, eps, off);
    if (failed(normed))
      return failure();
    return pointwise(ValueRange{in[1], out}, out, [&](OpBuilder &nb, Location l, ValueRange v) {
      return arith::AddFOp::create(nb, l, v[0], v[1]);
    });
  }

  /// acc[b, t, n] += sum_k x[b, t, k] * W[n, k] for n in [begin, end); the
  /// weight comes packed in panels whatever its checkpoint layout.
  void matmul(Value x, Value packed, Value acc, Value begin, Value end, bool accumulate) {
    emitPanelMatmul(b, loc, x, packed, acc, begin, end, tile, accumulate);
  }

  /// out = residual + bias broadcast (either may be absent, not both): what
  /// a plain projection accumulates onto.
  void initOutput(Value out, Value residual, Value bias) {
    SmallVector<Value> ins;
    SmallVector<AffineMap> maps;
    if (residual) {
      ins.push_back(residual);
      maps.push_back(kb.identity(3));
    }
    if (bias) {
      ins.push_back(bias);
      maps.push_back(kb.map(3, {kb.d(2)}));
    }
    maps.push_back(kb.identity(3));
    kb.generic(ins, out, maps, KernelBuilder::iterators(3),
               [&](OpBuilder &nb, Location l, ValueRange a) {
                 Value v = a[0];
                 if (residual && bias)
                   v = arith::AddFOp::create(nb, l, v, a[1]);
                 linalg::YieldOp::create(nb, l, v);
               });
  }

  /// x W^T (+ bias) (+ residual), this call's columns: the output starts as
  /// the bias and residual, and the matmul adds onto it.
  LogicalResult linear(Value x, Value w, Value bias, Value out, Value residual = Value()) {
    Value n = arith::SubIOp::create(b, loc, rangeEnd, rangeBegin);
    if (bias || residual)
      initOutput(kb.slice(out, 2, rangeBegin, n),
                 residual ? kb.slice(residual, 2, rangeBegin, n) : Value(),
                 bias ? kb.slice(bias, 0, rangeBegin, n) : Value());
    matmul(x, w, out, rangeBegin, rangeEnd, /*accumulate=*/bias || residual);
    return success();
  }

  LogicalResult fusedLinear(FusedLinearOp f, ValueRange in, Value out) {
    Value x = in[0], w = in[1];
    unsigned next = 2;
    Value bias = f.getBias() ? in[next++] : Value();
    Value corr = f.getMeanCorrection() ? in[next++] : Value();
    Value gain = f.getGain() ? in[next++] : Value();
    Value positions = f.getPositions() ? in[next++] : Value();
    Value lengths = f.getLengths() ? in[next++] : Value();
    Value residual = f.getResidual() ? in[next++] : Value();
    // A projection whose only epilogue is its bias and residual (attention's
    // output and the MLP's down projection) accumulates onto them in place,
    // as tbc.linear onto its bias: no accumulator buffer, no second pass.
    if (residual && !f.getNorm() && !gain && !f.getAct() && !f.getScale() && !f.getSoftcap() &&
        !f.getRope())
      return linear(x, w, bias, out, residual);
    int64_t rows = f.getProjectionWidth();
    int64_t outW = width(out);
    std::optional<NormKind> norm = f.getNorm();
    double eps = f.getEps() ? f.getEps()->convertToDouble() : 0.0;

    // Row statistics of x (the normalised tensor is never materialised).
    Value mean, rstd;
    if (norm == NormKind::layer) {
      std::tie(mean, rstd) = rowStats(x, eps);
    } else if (norm == NormKind::rms) {
      Value x4 = kb.splitLastDim(x, 1);
      rstd = sumSquares(x4, x); // [b, t, 1]
      float inv = 1.0f / float(width(x));
      kb.generic(ValueRange{}, rstd, {kb.identity(3)}, KernelBuilder::iterators(3),
                 [&](OpBuilder &nb, Location l, ValueRange a) {
                   auto c = [&](float v) {
                     return arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(v));
                   };
                   Value m = arith::AddFOp::create(
                       nb, l, arith::MulFOp::create(nb, l, a[0], c(inv)), c(float(eps)));
                   linalg::YieldOp::create(nb, l, emitRsqrt(nb, l, m));
                 });
    }
    // An activation-side gain (a shared weight, as a tied LM head): the
    // matmul reads x * (offset + gain), a copy of the activation rather
    // than of the weight.
    Value lhs = x;
    if (gain) {
      float offset = f.getGainOffset() ? float(f.getGainOffset()->convertToDouble()) : 0.0f;
      lhs = kb.alloc({ShapedType::kDynamic, ShapedType::kDynamic, width(x)}, {B(x), T(x)});
      kb.generic(ValueRange{x, gain}, lhs,
                 {kb.identity(3), kb.map(3, {kb.d(2)}), kb.identity(3)},
                 KernelBuilder::iterators(3), [&](OpBuilder &nb, Location l, ValueRange a) {
                   Value g = a[1];
                   if (offset != 0.0f)
                     g = arith::AddFOp::create(
                         nb, l, g, arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(offset)));
                   linalg::YieldOp::create(nb, l,
                                           arith::MulFOp::create(nb, l, a[0], g).getResult());
                 });
    }
    Value acc = kb.alloc({ShapedType::kDynamic, ShapedType::kDynamic, rows},
                         {B(x), T(x)});
    // Only this call's columns of the output (and, for a GLU, the matching
    // up-projection columns half a width further on) are computed.
    Value n = arith::SubIOp::create(b, loc, rangeEnd, rangeBegin);
    bool glu = f.getGlu();
    int64_t half = glu ? outW : 0;
    // One loop over the halves rather than two copies of the matmul: the
    // tiles are big, and LLVM's time grows with their number.
    scf::ForOp::create(
        b, loc, kb.idx(0), kb.idx(glu ? 2 : 1), kb.idx(1), ValueRange{},
        [&](OpBuilder &hb, Location, Value which, ValueRange) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(hb.getInsertionBlock(), hb.getInsertionPoint());
          Value at = arith::MulIOp::create(b, loc, which, kb.idx(half));
          Value begin = arith::AddIOp::create(b, loc, rangeBegin, at);
          Value end = arith::AddIOp::create(b, loc, rangeEnd, at);
          matmul(lhs, w, acc, begin, end, /*accumulate=*/false);
          scf::YieldOp::create(b, loc);
        });

    // Epilogue: z(n) = prologue(acc[n]) + bias[n]; then act / glu, scale,
    // softcap, residual.
    std::optional<Activation> act = f.getAct();
    std::optional<double> scale, cap;
    if (f.getScale())
      scale = f.getScale()->convertToDouble();
    if (f.getSoftcap())
      cap = f.getSoftcap()->convertToDouble();
    SmallVector<Value> ins;
    SmallVector<AffineMap> maps;
    auto add = [&](Value v, AffineMap m) {
      ins.push_back(v);
      maps.push_back(m);
    };
    AffineMap rowMapRms = kb.map(3, {kb.d(0), kb.d(1), b.getAffineConstantExpr(0)});
    AffineMap rowMap = kb.map(3, {kb.d(0), kb.d(1)});
    AffineMap colMap = kb.map(3, {kb.d(2)});
    // Every operand is viewed as this call's columns (a GLU reads the gate
    // and up halves as two such views), so that all agree on loop bounds.
    auto half3 = [&](Value v, int64_t at) -> Value {
      return kb.slice(v, 2, addIndex(rangeBegin, at), n);
    };
    auto half1 = [&](Value v, int64_t at) -> Value {
      return kb.slice(v, 0, addIndex(rangeBegin, at), n);
    };
    add(half3(acc, 0), kb.identity(3));
    if (glu)
      add(half3(acc, half), kb.identity(3));
    int biasIdx = -1, corrIdx = -1, rstdIdx = -1, meanIdx = -1;
    if (bias) {
      biasIdx = ins.size();
      add(half1(bias, 0), colMap);
      if (glu)
        add(half1(bias, half), colMap);
    }
    if (corr) {
      corrIdx = ins.size();
      add(half1(corr, 0), colMap);
      if (glu)
        add(half1(corr, half), colMap);
    }
    if (rstd) {
      rstdIdx = ins.size();
      add(rstd, norm == NormKind::rms ? rowMapRms : rowMap);
    }
    if (mean) {
      meanIdx = ins.size();
      add(mean, rowMap);
    }
    int residualIdx = -1;
    if (residual) {
      residualIdx = ins.size();
      add(half3(residual, 0), kb.identity(3));
    }
    RotaryEpilogueAttr rope = f.getRopeAttr();
    Value cosTable, sinTable;
    if (rope)
      std::tie(cosTable, sinTable) =
          ropeTables(rope, positions, lengths, RopeMath(b, loc, rope, module,
                                                        "rope_inv_freq_" +
                                                            std::to_string(kernelIndex)));
    maps.push_back(kb.identity(3));
    kb.generic(ins, half3(out, 0), maps, KernelBuilder::iterators(3),
               [&](OpBuilder &nb, Location l, ValueRange a) {
                 // The prologue and bias applied to an accumulator of column
                 // `col` (its corrections and bias passed in).
                 auto prologue = [&](Value v, Value corrAt, Value biasAt) -> Value {
                   if (corrAt)
                     v = arith::SubFOp::create(nb, l, v,
                                               arith::MulFOp::create(nb, l, a[meanIdx], corrAt));
                   if (rstdIdx >= 0)
                     v = arith::MulFOp::create(nb, l, v, a[rstdIdx]);
                   if (biasAt)
                     v = arith::AddFOp::create(nb, l, v, biasAt);
                   return v;
                 };
                 auto z = [&](int which) -> Value {
                   return prologue(a[which], corrIdx >= 0 ? a[corrIdx + which] : Value(),
                                   biasIdx >= 0 ? a[biasIdx + which] : Value());
                 };
                 Value y = z(0);
                 if (glu) {
                   // The up value first, in a statement of its own: in one
                   // argument list the order would be the compiler's.
                   Value up = z(1);
                   y = arith::MulFOp::create(nb, l, emitActivation(nb, l, *act, y), up);
                 }
                 else if (act)
                   y = emitActivation(nb, l, *act, y);
                 if (scale)
                   y = arith::MulFOp::create(
                       nb, l, y, arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(*scale)));
                 if (cap)
                   y = emitSoftcap(nb, l, *cap, y);
                 if (residualIdx >= 0)
                   y = arith::AddFOp::create(nb, l, y, a[residualIdx]);
                 if (rope)
                   y = ropeEpilogue(nb, l, rope, y, acc, bias, corr, cosTable, sinTable,
                                    prologue);
                 linalg::YieldOp::create(nb, l, y);
               });
    kb.dealloc(acc);
    if (cosTable) {
      kb.dealloc(cosTable);
      kb.dealloc(sinTable);
    }
    if (rstd)
      kb.dealloc(rstd);
    if (mean)
      kb.dealloc(mean);
    return success();
  }

  /// cos and sin of every row's position at every frequency of `rope`
  /// ([b, t, rotary_dim / 2] each), for the epilogue to read: computed once
  /// per position and frequency rather than once per rotated column, which
  /// repeats each pair for every head (libm's cosf and sinf, which do not
  /// vectorise: hidden 1024 prefill of 64 tokens spent 1.7 of 26 ms on them).
  std::pair<Value, Value> ropeTables(RotaryEpilogueAttr rope, Value positions, Value lengths,
                                     const RopeMath &math) {
    int64_t pairs = rope.getRotaryDim() / 2;
    Value cosTable = kb.alloc({ShapedType::kDynamic, ShapedType::kDynamic, pairs},
                              {kb.dim(positions, 0), kb.dim(positions, 1)});
    Value sinTable = kb.alloc({ShapedType::kDynamic, ShapedType::kDynamic, pairs},
                              {kb.dim(positions, 0), kb.dim(positions, 1)});
    SmallVector<Value> ins{positions};
    SmallVector<AffineMap> maps{kb.map(3, {kb.d(0), kb.d(1)})};
    if (lengths) {
      ins.push_back(lengths);
      maps.push_back(kb.map(3, {kb.d(0), kb.d(1)}));
    }
    maps.append({kb.identity(3), kb.identity(3)});
    kb.generic(ins, ValueRange{cosTable, sinTable}, maps, KernelBuilder::iterators(3),
               [&](OpBuilder &nb, Location l, ValueRange a) {
                 Value inv = math.inverseFrequency(nb, l, linalg::IndexOp::create(nb, l, 2),
                                                   lengths ? a[1] : Value());
                 auto [cos, sin] = math.cosSin(nb, l, a[0], inv);
                 linalg::YieldOp::create(nb, l, ValueRange{cos, sin});
               });
    return {cosTable, sinTable};
  }

  /// RoPE on projection output `y` (column rangeBegin + d2 of a generic
  /// over this call's columns): rotated with its partner column, whose
  /// accumulator this call has computed too (shares hold whole heads; see
  /// KernelABI.h's workRange), through the same prologue and bias.
  Value ropeEpilogue(OpBuilder &nb, Location l, RotaryEpilogueAttr rope, Value y, Value acc,
                     Value bias, Value corr, Value cosTable, Value sinTable,
                     llvm::function_ref<Value(Value, Value, Value)> prologue) {
    Value b0 = linalg::IndexOp::create(nb, l, 0);
    Value t0 = linalg::IndexOp::create(nb, l, 1);
    Value col = arith::AddIOp::create(nb, l, rangeBegin, linalg::IndexOp::create(nb, l, 2));
    RopeLanes lanes = emitRopeLanes(nb, l, col, rope);
    Value partner = lanes.partner;
    auto at = [&](Value v) -> Value {
      return v ? memref::LoadOp::create(nb, l, v, ValueRange{partner}).getResult() : Value();
    };
    Value zp = prologue(memref::LoadOp::create(nb, l, acc, ValueRange{b0, t0, partner}),
                        at(corr), at(bias));
    auto table = [&](Value t) -> Value {
      return memref::LoadOp::create(nb, l, t, ValueRange{b0, t0, lanes.i});
    };
    Value rotated =
        RopeMath::rotateBy(nb, l, y, zp, lanes.first, table(cosTable), table(sinTable));
    return arith::SelectOp::create(nb, l, lanes.inRot, rotated, y);
  }

  /// A per-group split (GPT-NeoX's [heads, 3 * head_dim] layout): copies.
  LogicalResult groupedSplit(SplitOp s, Value in, ValueRange outs) {
    int64_t groups = s.getNumGroups();
    int64_t perGroup = width(in) / groups;
    int64_t offset = 0;
    for (Value out : outs) {
      int64_t w = width(out) / groups;
      int64_t off = offset;
      kb.generic(ValueRange{}, out, {kb.identity(3)}, KernelBuilder::iterators(3),
                 [&](OpBuilder &nb, Location l, ValueRange) {
                   auto ci = [&](int64_t v) { return arith::ConstantIndexOp::create(nb, l, v); };
                   Value f = linalg::IndexOp::create(nb, l, 2);
                   Value g = arith::DivUIOp::create(nb, l, f, ci(w));
                   Value j = arith::RemUIOp::create(nb, l, f, ci(w));
                   Value src = arith::AddIOp::create(
                       nb, l, arith::MulIOp::create(nb, l, g, ci(perGroup)),
                       arith::AddIOp::create(nb, l, j, ci(off)));
                   Value v = memref::LoadOp::create(
                       nb, l, in,
                       ValueRange{linalg::IndexOp::create(nb, l, 0),
                                  linalg::IndexOp::create(nb, l, 1), src});
                   linalg::YieldOp::create(nb, l, v);
                 });
      offset += w;
    }
    return success();
  }

  LogicalResult rope(RopeOp r, Value x, Value pos, Value lengths, Value out) {
    RopeMath math(b, loc, r, module, "rope_inv_freq_" + std::to_string(kernelIndex));
    int64_t headDim = r.getHeadDim(), rot = r.getRotaryDim();
    bool gptj = r.getStyle() == RopeStyle::gptj;
    SmallVector<Value> ins{x, pos};
    SmallVector<AffineMap> maps{kb.identity(3), kb.map(3, {kb.d(0), kb.d(1)})};
    if (lengths) {
      ins.push_back(lengths);
      maps.push_back(kb.map(3, {kb.d(0), kb.d(1)}));
    }
    maps.push_back(kb.identity(3));
    kb.generic(ins, out, maps, KernelBuilder::iterators(3),
               [&](OpBuilder &nb, Location l, ValueRange a) {
                 Value b0 = linalg::IndexOp::create(nb, l, 0);
                 Value t0 = linalg::IndexOp::create(nb, l, 1);
                 Value f = linalg::IndexOp::create(nb, l, 2);
                 auto [inRot, first, i, partner] = emitRopeLanes(nb, l, f, headDim, rot, gptj);
                 Value inv = math.inverseFrequency(nb, l, i, lengths ? a[2] : Value());
                 Value xp = memref::LoadOp::create(nb, l, x, ValueRange{b0, t0, partner});
                 Value rotated = math.rotate(nb, l, a[0], xp, first, a[1], inv);
                 linalg::YieldOp::create(
                     nb, l, arith::SelectOp::create(nb, l, inRot, rotated, a[0]).getResult());
               });
    return success();
  }

  LogicalResult sinusoidal(SinusoidalPositionsOp s, Value pos, Value out) {
    double base = s.getBase().convertToDouble();
    int64_t w = width(out);
    kb.generic(pos, out, {kb.map(3, {kb.d(0), kb.d(1)}), kb.identity(3)},
               KernelBuilder::iterators(3),
               [&](OpBuilder &nb, Location l, ValueRange a) {
                 auto ci = [&](int64_t v) { return arith::ConstantIndexOp::create(nb, l, v); };
                 auto cf = [&](float v) {
                   return arith::ConstantOp::create(nb, l, nb.getF32FloatAttr(v));
                 };
                 Value f = linalg::IndexOp::create(nb, l, 2);
                 Value odd = arith::RemUIOp::create(nb, l, f, ci(2));
                 Value even = arith::SubIOp::create(nb, l, f, odd);
                 Value e = arith::UIToFPOp::create(
                     nb, l, nb.getF32Type(),
                     arith::IndexCastOp::create(nb, l, nb.getI32Type(), even));
                 Value expo = arith::DivFOp::create(nb, l, e, cf(float(w)));
                 Value denom = math::PowFOp::create(nb, l, cf(float(base)), expo);
                 Value p = arith::SIToFPOp::create(nb, l, nb.getF32Type(), a[0]);
                 Value angle = arith::DivFOp::create(nb, l, p, denom);
                 Value isOdd = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ne, odd, ci(0));
                 Value sin = math::SinOp::create(nb, l, angle);
                 Value cos = math::CosOp::create(nb, l, angle);
                 linalg::YieldOp::create(
                     nb, l, arith::SelectOp::create(nb, l, isOdd, cos, sin).getResult());
               });
    return success();
  }

  /// Appends the chunk's keys/values to the caches (rows [L - T, L)), then
  /// attends the T queries over all L cached positions.
  LogicalResult attention(AttentionOp a, ValueRange in, Value out,
                          ValueRange caches) {
    PositionBias bias(b, loc, a, module, "attention_" + std::to_string(kernelIndex),
                      a.getRelativeBias() ? in[3] : Value());
    emitAttention(b, loc, a, in[0], in[1], in[2], a.getWindowSize() ? in.back() : Value(),
                  out, caches[0], caches[1], rangeBegin, rangeEnd, bias, tile.vector,
                  /*amx=*/tile.amx && tile.activationTerms == 1, tile.promptTiles);
    return success();
  }
};

struct TbcLowerToCPUPass
    : tbc::impl::TbcLowerToCPUBase<TbcLowerToCPUPass> {
  using TbcLowerToCPUBase::TbcLowerToCPUBase;
  /// What the CPU kernels are written for, refused with a message here
  /// rather than as a verifier error deep inside the lowering: activations
  /// are [batch, seq, features] tensors of f32 (ids and positions i32).
  static LogicalResult checkSupported(func::FuncOp kernel) {
    auto supported = [](Type t) {
      Type e = cast<ShapedType>(t).getElementType();
      return e.isF32() || e.isInteger(32);
    };
    for (Type t : llvm::concat<const Type>(kernel.getArgumentTypes(),
                                           kernel.getResultTypes()))
      if (!isScalarOperand(t) && !supported(t))
        return kernel.emitError("the CPU backend computes in f32 (ids in i32); kernel @")
               << kernel.getSymName() << " uses " << t
               << ": compile with --dtype f32 (bf16/f16 checkpoints are "
                  "converted when weights are bound)";
    for (Operation &op : kernel.getBody().front().without_terminator())
      for (Type t : op.getResultTypes()) {
        auto tensor = dyn_cast<RankedTensorType>(t);
        if (!tensor || tensor.getRank() != 3)
          return op.emitError("the CPU backend runs activations of shape "
                              "[batch, seq, features]; this op produces ")
                 << t;
      }
    return success();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    CpuTile tile{vectorWidth, panelWidth, tileRows, bf16Dot, amx, activationTerms,
                 decodePrefetch, decodeStreams, promptAttentionTiles};
    if (tile.vector < 1 || tile.panel % tile.vector != 0 || tile.rows < 1 ||
        tile.decodePrefetch < 0 ||
        !isDecodeStreamCount(tile.decodeStreams) ||
        !isStorageType(weightType)) {
      module.emitError("the CPU tile needs vector-width > 0 dividing panel-width, tile-rows "
                       "> 0, decode-prefetch >= 0, decode-streams 1, 2 or 4, and weight-type "
                       "f32, bf16 or f16");
      return signalPassFailure();
    }
    if (bf16Dot && (weightType != "bf16" || tile.vector != 16 || tile.panel != 32)) {
      module.emitError("bf16-dot multiplies bf16 weights in 16-wide vectors: it needs "
                       "weight-type=bf16, vector-width=16 and panel-width=32");
      return signalPassFailure();
    }
    if (amx && !bf16Dot) {
      module.emitError("amx multiplies bf16 weights packed in k pairs: it needs bf16-dot");
      return signalPassFailure();
    }
    if (activationTerms < 1 || activationTerms > 3 || (activationTerms > 1 && !bf16Dot)) {
      module.emitError("activation-terms is 1, 2 or 3, and more than 1 needs bf16-dot");
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> kernels, others;
    for (auto fn : module.getOps<func::FuncOp>())
      (fn->hasAttr(TbcDialect::KernelAttrHelper::getNameStr()) ? kernels : others).push_back(fn);
    for (func::FuncOp fn : kernels)
      if (failed(checkSupported(fn)))
        return signalPassFailure();
    // The schedule (non-kernel functions) was recorded by the module writer.
    for (func::FuncOp fn : others)
      fn.erase();
    OpBuilder b(module.getContext());
    int index = 0;
    for (func::FuncOp old : kernels) {
      Operation *op = &old.getBody().front().front();
      Location loc = op->getLoc();
      // Scalar operands (an attention's window) come last: memref<1xi64>s
      // after the work range (KernelABI.h).
      const unsigned nScalars = kernelScalarOperands(old);
      const unsigned nIn = old.getNumArguments() - nScalars, nOut = old.getNumResults();
      SmallVector<Type> args;
      for (Type t : old.getArgumentTypes().take_front(nIn))
        args.push_back(operandType(t));
      // Projections read their weight, embeddings their table, packed in
      // panels (KernelABI.h).
      // With weight-type=bf16 they stay 16-bit in memory and are widened in
      // registers.
      if (std::optional<unsigned> p = packedOperand(op)) {
        auto packedShape =
            packedWeightShape(cast<ShapedType>(old.getArgumentTypes()[*p]).getShape(),
                              packedOperandInOut(op), tile.panel);
        if (bf16Dot && packedShape[1] % 2) {
          op->emitError("bf16 dot products take k in pairs: the reduction length ")
              << packedShape[1] << " is odd (compile without --cpu-dot bf16)";
          return signalPassFailure();
        }
        args[*p] = MemRefType::get(
            packedWeightShape(cast<ShapedType>(old.getArgumentTypes()[*p]).getShape(),
                              packedOperandInOut(op), tile.panel),
            storageElementType(b, weightType));
      }
      for (Type t : old.getResultTypes())
        args.push_back(resultType(t));
      bool cached = old->hasAttr(TbcDialect::KvCacheAttrHelper::getNameStr());
      if (cached) {
        auto a = cast<AttentionOp>(op);
        auto cacheType = MemRefType::get(
            {ShapedType::kDynamic, int64_t(a.getNumKvHeads() * a.getHeadDim())},
            b.getF32Type());
        args.append({cacheType, cacheType});
      }
      // Projections take the [begin, end) of the output columns to compute,
      // attention the [begin, end) of its key/value heads: a core's share.
      std::optional<manifest::WorkRange> units = workRange(old, tile.panel);
      if (units)
        args.push_back(MemRefType::get({2}, b.getI64Type()));
      args.append(nScalars, MemRefType::get({1}, b.getI64Type()));
      b.setInsertionPoint(old);
      auto fn = func::FuncOp::create(b, loc, old.getSymName(),
                                     b.getFunctionType(args, {}));
      fn->setAttr("llvm.emit_c_interface", b.getUnitAttr());
      Block *body = fn.addEntryBlock();
      b.setInsertionPointToEnd(body);
      ValueRange all = body->getArguments();
      Emitter emitter(b, loc, module, index++, tile);
      auto loadAt = [&](Value from, int64_t i) -> Value {
        return memref::LoadOp::create(b, loc, from,
                                      ValueRange{arith::ConstantIndexOp::create(b, loc, i)});
      };
      // The op's operands: its tensors, then its scalars' values.
      SmallVector<Value> in(all.take_front(nIn));
      for (Value scalar : all.take_back(nScalars))
        in.push_back(loadAt(scalar, 0));
      if (units) {
        // The range, clamped to what the kernel was compiled for, so that
        // no range a manifest passes makes it step outside its buffers.
        Value range = all[all.size() - nScalars - 1];
        auto load = [&](int64_t i) -> Value {
          return arith::IndexCastOp::create(b, loc, b.getIndexType(), loadAt(range, i));
        };
        Value end = arith::MinUIOp::create(
            b, loc, load(1), arith::ConstantIndexOp::create(b, loc, units->count));
        emitter.setRange(arith::MinUIOp::create(b, loc, load(0), end), end);
      }
      if (failed(emitter.emit(op, in, all.slice(nIn, nOut),
                              cached ? all.slice(nIn + nOut, 2) : ValueRange{})))
        return signalPassFailure();
      func::ReturnOp::create(b, loc);
      old.erase();
    }
  }
};
} // namespace
