//===- WeightTransforms.cpp - the manifest's bind-time weight transforms --===//
//
// Turns checkpoint tensors into the weights the kernels read, following the
// manifest's `weights` list (fill, concat, row_slice, swap_halves, fold_gain,
// weight_row_sums, fold_bias, pack, pack_pairs, convert). Two rules keep binding cheap:
//
//  * 16-bit stays 16-bit. A bf16 or f16 checkpoint tensor is copied as its
//    16-bit bits; concatenating and packing move bits, and a `convert` to the
//    checkpoint's own type takes them as they are (no rounding: the values
//    are the checkpoint's). Only what must be computed in f32 (a folded
//    gain, row sums, a folded bias) or what a kernel reads as f32 is widened,
//    one tensor at a time.
//  * A tensor is loaded when first read and freed after its last reader, so
//    binding holds the kernels' weights plus the tensors in flight, never a
//    second copy of the whole model.
//
//===----------------------------------------------------------------------===//

#include "ModuleImpl.h"

#include <algorithm>
#include <cstring>

using namespace tbc;
using namespace tbc::rt;
using namespace tbc::rt::detail;

namespace {

float widenBits(uint16_t h, StagedWeight::Kind kind) {
  return kind == StagedWeight::BF16 ? fromBF16Bits(h) : fromHalfBits(h);
}

StagedWeight::Kind kindOf(const std::string &dtype) {
  return dtype == "bf16" ? StagedWeight::BF16
         : dtype == "f16" ? StagedWeight::F16
                          : StagedWeight::F32;
}

/// `s` as f32 values: `s.f32` itself, or its 16-bit values widened into
/// `scratch`.
const LargeVector<float> &asF32(const StagedWeight &s, LargeVector<float> &scratch) {
  if (s.kind == StagedWeight::F32)
    return s.f32;
  scratch.resize(s.bits.size());
  for (size_t i = 0; i < s.bits.size(); ++i)
    scratch[i] = widenBits(s.bits[i], s.kind);
  return scratch;
}

/// out[p, k, j] = W[p * panel + j, k] ([out, in]) or W[k, p * panel + j]
/// ([in, out]); zero past the last output column. `pack_pairs` stores
/// element (k, j) of a panel at (k / 2) * 2 * panel + 2 * j + k % 2 of its
/// block instead: k in pairs, as vdpbf16ps reads them (KernelABI.h). T:
/// float or 16-bit bits (moved, never rounded).
template <typename T>
void pack(const T *w, T *out, const WeightEntry &e, const std::vector<int64_t> &ws) {
  int64_t panels = e.shape[0], in = e.shape[1], panel = e.shape[2];
  int64_t outCols = e.inOut ? ws[1] : ws[0];
  bool pairs = e.op == "pack_pairs";
  for (int64_t p = 0; p < panels; ++p)
    for (int64_t j = 0; j < panel && p * panel + j < outCols; ++j) {
      int64_t o = p * panel + j;
      for (int64_t k = 0; k < in; ++k) {
        int64_t at = pairs ? (k / 2) * 2 * panel + 2 * j + k % 2 : k * panel + j;
        out[p * in * panel + at] = e.inOut ? w[k * outCols + o] : w[o * in + k];
      }
    }
}

/// Rows (dim 0) or columns (dim 1) of rank-2 weights; vectors: dim 0.
template <typename T>
void concat(const std::vector<const T *> &srcs, T *out, const WeightEntry &e,
            const std::vector<WeightEntry> &entries) {
  int64_t cols = e.shape.size() > 1 ? e.shape[1] : 1;
  int64_t at = 0;
  for (size_t n = 0; n < e.inputs.size(); ++n) {
    const std::vector<int64_t> &s = entries[e.inputs[n]].shape;
    const T *src = srcs[n];
    int64_t r = s[0], c = s.size() > 1 ? s[1] : 1;
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j) {
        int64_t oi = e.dim == 0 ? at + i : i, oj = e.dim == 0 ? j : at + j;
        out[oi * cols + oj] = src[i * c + j];
      }
    at += e.dim == 0 ? r : c;
  }
}

/// Rows [e.start, e.start + e.shape[0]) of a rank-2 weight.
template <typename T>
void rowSlice(const T *src, T *out, const WeightEntry &e) {
  int64_t cols = e.shape[1];
  std::copy(src + e.start * cols, src + (e.start + e.shape[0]) * cols, out);
}

/// In every block of e.block rows (vector elements), the second half's rows
/// before the first's.
template <typename T>
void swapHalves(const T *src, T *out, const WeightEntry &e) {
  int64_t cols = e.shape.size() > 1 ? e.shape[1] : 1, half = e.block / 2 * cols;
  for (int64_t b = 0; b < e.shape[0] / e.block; ++b) {
    const T *in = src + b * 2 * half;
    T *to = out + b * 2 * half;
    std::copy(in + half, in + 2 * half, to);
    std::copy(in, in + half, to + half);
  }
}

/// The transforms that only move values (16-bit ones as bits): those
/// moveValues carries out.
bool movesValues(const std::string &op) {
  return manifest::isPackOp(op) || op == "concat" || op == "row_slice" || op == "swap_halves";
}

/// A transform movesValues() names, on `T` values.
template <typename T>
void moveValues(const std::vector<const T *> &srcs, T *out, const WeightEntry &e,
                const std::vector<WeightEntry> &entries) {
  if (manifest::isPackOp(e.op))
    pack(srcs[0], out, e, entries[e.inputs[0]].shape);
  else if (e.op == "row_slice")
    rowSlice(srcs[0], out, e);
  else if (e.op == "swap_halves")
    swapHalves(srcs[0], out, e);
  else
    concat(srcs, out, e, entries);
}

/// fold_gain, weight_row_sums, fold_bias: computed in f32 (f64 sums).
void computeF32(const WeightEntry &e, const std::vector<const LargeVector<float> *> &in,
                const std::vector<int64_t> &ws, LargeVector<float> &out) {
  const LargeVector<float> &w = *in[0];
  int64_t r = ws[0], c = ws[1];
  // Element (a, b) of an [out, in] weight, or of an [in, out] one.
  auto at = [&](int64_t a, int64_t b) { return a * c + b; };
  if (e.op == "fold_gain") {
    const LargeVector<float> &g = *in[1];
    for (int64_t a = 0; a < r; ++a)
      for (int64_t b = 0; b < c; ++b)
        out[at(a, b)] = w[at(a, b)] * (float(e.offset) + g[e.inOut ? a : b]);
  } else if (e.op == "weight_row_sums") {
    for (int64_t a = 0; a < r; ++a)
      for (int64_t b = 0; b < c; ++b)
        out[e.inOut ? b : a] += w[at(a, b)];
  } else if (e.op == "fold_bias") {
    const LargeVector<float> &beta = *in[1];
    std::vector<double> acc(out.size(), 0.0);
    for (int64_t a = 0; a < r; ++a)
      for (int64_t b = 0; b < c; ++b) {
        int64_t o = e.inOut ? b : a, i = e.inOut ? a : b;
        acc[o] += double(w[at(a, b)]) * beta[i];
      }
    for (size_t o = 0; o < out.size(); ++o)
      out[o] = float(acc[o]) + (in.size() > 2 ? (*in[2])[o] : 0.0f);
  }
}

} // namespace

StagedWeight StagedWeight::fromCheckpoint(const TensorView &t) {
  StagedWeight s;
  size_t n = size_t(t.numElements());
  if (t.dtype == DType::F32) {
    s.f32.resize(n);
    std::memcpy(s.f32.data(), t.data, n * 4);
  } else {
    s.kind = t.dtype == DType::BF16 ? BF16 : F16;
    s.bits.resize(n);
    std::memcpy(s.bits.data(), t.data, n * 2);
  }
  return s;
}

void Module::Impl::runTransforms(
    const std::function<StagedWeight(int param)> &loadParam) {
  size_t count = weightEntries.size();
  weights.assign(count, {});
  weights16.assign(count, {});
  std::vector<StagedWeight> staged(count);
  std::vector<bool> loaded(count, false);
  std::vector<size_t> lastRead(count, 0);
  for (size_t id = 0; id < count; ++id)
    for (int in : weightEntries[id].inputs)
      lastRead[in] = id;

  // A parameter is loaded at its first reader; any weight is freed after
  // its last reader unless a kernel reads it.
  auto input = [&](int id) -> StagedWeight & {
    if (!loaded[id]) {
      staged[id] = loadParam(weightEntries[id].param);
      loaded[id] = true;
    }
    return staged[id];
  };
  auto releaseInputs = [&](size_t id) {
    for (int in : weightEntries[id].inputs)
      if (!readByKernels[in] && lastRead[in] == id)
        staged[in] = StagedWeight();
  };

  for (size_t id = 0; id < count; ++id) {
    const WeightEntry &e = weightEntries[id];
    StagedWeight &out = staged[id];
    loaded[id] = e.op != "param";
    if (e.op == "param") {
      if (readByKernels[id])
        input(int(id));
      continue;
    }
    if (e.op == "fill") {
      out.f32.assign(size_t(product(e.shape)), float(e.value));
      continue;
    }
    std::vector<StagedWeight *> ins;
    for (int in : e.inputs)
      ins.push_back(&input(in));
    const std::vector<int64_t> &ws = weightEntries[e.inputs[0]].shape;
    // Moving bits needs every input in the same 16-bit type.
    StagedWeight::Kind common = ins[0]->kind;
    for (StagedWeight *s : ins)
      if (s->kind != common)
        common = StagedWeight::F32;

    if (e.op == "convert") {
      StagedWeight &src = *ins[0];
      StagedWeight::Kind want = kindOf(e.dtype);
      bool lastUse = !readByKernels[e.inputs[0]] && lastRead[e.inputs[0]] == id;
      if (src.kind == want) {
        // The checkpoint's own 16-bit values (or f32 to f32): no rounding.
        out = lastUse ? std::move(src) : src;
      } else {
        LargeVector<float> scratch;
        const LargeVector<float> &w = asF32(src, scratch);
        out.kind = want;
        if (want == StagedWeight::F32) {
          out.f32 = w;
        } else {
          out.bits.resize(w.size());
          for (size_t i = 0; i < w.size(); ++i)
            out.bits[i] = toHalfWidthBits(w[i], want == StagedWeight::BF16);
        }
      }
    } else if (movesValues(e.op)) {
      size_t n = size_t(product(e.shape));
      out.kind = common;
      if (common != StagedWeight::F32) {
        out.bits.assign(n, 0);
        std::vector<const uint16_t *> srcs;
        for (StagedWeight *s : ins)
          srcs.push_back(s->bits.data());
        moveValues(srcs, out.bits.data(), e, weightEntries);
      } else {
        out.f32.assign(n, 0.0f);
        std::vector<LargeVector<float>> scratch(ins.size());
        std::vector<const float *> srcs;
        for (size_t i = 0; i < ins.size(); ++i)
          srcs.push_back(asF32(*ins[i], scratch[i]).data());
        moveValues(srcs, out.f32.data(), e, weightEntries);
      }
    } else {
      out.f32.assign(size_t(product(e.shape)), 0.0f);
      std::vector<LargeVector<float>> scratch(ins.size());
      std::vector<const LargeVector<float> *> values;
      for (size_t i = 0; i < ins.size(); ++i)
        values.push_back(&asF32(*ins[i], scratch[i]));
      computeF32(e, values, ws, out.f32);
    }
    releaseInputs(id);
  }

  // What the kernels read: 16-bit bits for a bf16/f16 `convert`, f32 for
  // everything else (a 16-bit checkpoint tensor a kernel reads as f32, such
  // as a norm gain, is widened here).
  for (size_t id = 0; id < count; ++id) {
    if (!readByKernels[id])
      continue;
    StagedWeight &s = staged[id];
    if (kindOf(weightEntries[id].dtype) != StagedWeight::F32) {
      weights16[id] = std::move(s.bits);
    } else if (s.kind == StagedWeight::F32) {
      weights[id] = std::move(s.f32);
    } else {
      LargeVector<float> scratch;
      asF32(s, scratch);
      weights[id] = std::move(scratch);
    }
    s = StagedWeight();
  }
}
