//===- ManifestCheck.cpp - a manifest must agree with itself and its code -===//
//
// The container's checksum catches corruption; these checks catch a
// manifest that is well-formed JSON with every reference in range and still
// lies: a weight transform whose shapes do not add up, a view past its
// root, a step whose operands disagree with the shapes the kernel was
// compiled for (its `signature`). Each would make the runtime or a kernel
// read or write outside an allocation; here it is a message instead.
//
//===----------------------------------------------------------------------===//

#include "ModuleImpl.h"

#include <algorithm>

using namespace tbc;
using namespace tbc::rt;
using namespace tbc::rt::detail;

namespace {
/// Bounds on any one dimension and any one tensor: far beyond real models,
/// small enough that products and byte counts cannot overflow.
constexpr int64_t kMaxDim = int64_t(1) << 31;
constexpr int64_t kMaxElements = int64_t(1) << 36;

bool sameShape(const std::vector<int64_t> &a, const std::vector<int64_t> &b) {
  return a == b;
}

/// Whether `shape` fits a compiled `sig` (-1: any extent).
bool fits(const std::vector<int64_t> &shape, const std::vector<int64_t> &sig) {
  if (shape.size() != sig.size())
    return false;
  for (size_t i = 0; i < sig.size(); ++i)
    if (sig[i] != -1 && sig[i] != shape[i])
      return false;
  return true;
}
} // namespace

bool Module::Impl::checkConsistency(const Module &m, std::string &error) {
  auto bad = [&](const std::string &what) {
    error = "manifest: " + what;
    return false;
  };

  for (size_t id = 0; id < buffers.size(); ++id) {
    const BufferEntry &b = buffers[id];
    std::string name = "buffer " + std::to_string(id);
    if (manifest::isSequenceInput(b.kind))
      continue;
    if (b.kind != "activation" && b.kind != "view" && b.kind != "kv_cache")
      return bad(name + " has unknown kind '" + b.kind + "'");
    if (b.width < 1 || b.width > kMaxDim)
      return bad(name + " has width " + std::to_string(b.width));
    if (b.kind == "view" &&
        (b.offset < 0 || b.offset + b.width > buffers[b.of].width))
      return bad(name + " views columns [" + std::to_string(b.offset) + ", " +
                 std::to_string(b.offset + b.width) + ") of a buffer " +
                 std::to_string(buffers[b.of].width) + " wide");
  }

  for (size_t id = 0; id < weightEntries.size(); ++id) {
    const WeightEntry &e = weightEntries[id];
    std::string name = "weight " + std::to_string(id) + " (" + e.op + ")";
    if (e.shape.empty() || e.shape.size() > (manifest::isPackOp(e.op) || e.op == "convert" ? 3 : 2))
      return bad(name + (manifest::isPackOp(e.op) ? " must be [panels, in, panel width]"
                                        : " must be a vector or a matrix"));
    int64_t elements = 1;
    for (int64_t d : e.shape) {
      if (d < 1 || d > kMaxDim)
        return bad(name + " has shape " + shapeString(e.shape));
      elements *= d;
      if (elements > kMaxElements)
        return bad(name + " has shape " + shapeString(e.shape));
    }
    auto input = [&](size_t i) -> const std::vector<int64_t> & {
      return weightEntries[e.inputs[i]].shape;
    };
    auto mismatch = [&]() {
      std::string shapes;
      for (size_t i = 0; i < e.inputs.size(); ++i)
        shapes += (i ? ", " : "") + shapeString(input(i));
      return bad(name + " cannot make " + shapeString(e.shape) + " from " + shapes);
    };
    if (e.op == "param") {
      if (!sameShape(e.shape, m.params()[e.param].shape))
        return bad(name + " has shape " + shapeString(e.shape) + " but parameter '" +
                   m.params()[e.param].name + "' is " +
                   shapeString(m.params()[e.param].shape));
      continue;
    }
    if (e.op == "fill") { // made from its value alone
      if (!e.inputs.empty())
        return bad(name + " has " + std::to_string(e.inputs.size()) + " inputs");
      continue;
    }
    size_t want = e.op == "concat" ? e.inputs.size()
                  : e.op == "weight_row_sums" || manifest::isPackOp(e.op) || e.op == "convert" ||
                          e.op == "row_slice" || e.op == "swap_halves"
                      ? 1
                      : 2;
    if (e.inputs.empty() || e.inputs.size() < want ||
        e.inputs.size() > (e.op == "fold_bias" ? 3 : want))
      return bad(name + " has " + std::to_string(e.inputs.size()) + " inputs");
    if (e.op == "concat") {
      size_t rank = e.shape.size();
      if (e.dim < 0 || e.dim >= int64_t(rank))
        return bad(name + " concatenates along dimension " + std::to_string(e.dim));
      int64_t along = 0;
      for (size_t i = 0; i < e.inputs.size(); ++i) {
        if (input(i).size() != rank)
          return mismatch();
        for (size_t d = 0; d < rank; ++d)
          if (int64_t(d) != e.dim && input(i)[d] != e.shape[d])
            return mismatch();
        along += input(i)[e.dim];
      }
      if (along != e.shape[e.dim])
        return mismatch();
      continue;
    }
    if (e.op == "convert") {
      if (!sameShape(e.shape, input(0)))
        return mismatch();
      continue;
    }
    if (e.op == "row_slice") {
      const std::vector<int64_t> &in = input(0);
      if (in.size() != 2 || e.shape.size() != 2 || e.shape[1] != in[1] || e.start < 0 ||
          e.start > in[0] - e.shape[0])
        return bad(name + " cannot take " + shapeString(e.shape) + " from row " +
                   std::to_string(e.start) + " of " + shapeString(in));
      continue;
    }
    if (e.op == "swap_halves") {
      if (!sameShape(e.shape, input(0)) || e.shape.empty() || e.shape.size() > 2)
        return mismatch();
      if (e.block < 2 || e.block % 2 || e.shape[0] % e.block)
        return bad(name + " cannot swap the halves of blocks of " + std::to_string(e.block) +
                   " rows in " + shapeString(e.shape));
      continue;
    }
    // The rest read an [out, in] matrix (or [in, out] with in_out).
    const std::vector<int64_t> &w = input(0);
    if (w.size() != 2)
      return mismatch();
    int64_t outDim = e.inOut ? w[1] : w[0], inDim = e.inOut ? w[0] : w[1];
    auto isVector = [](const std::vector<int64_t> &s, int64_t n) {
      return s.size() == 1 && s[0] == n;
    };
    bool ok = false;
    if (manifest::isPackOp(e.op)) {
      int64_t panel = e.shape.size() == 3 ? e.shape[2] : 0;
      ok = panel > 0 && e.shape[0] == (outDim + panel - 1) / panel && e.shape[1] == inDim &&
           (e.op == "pack" || inDim % 2 == 0); // k in pairs
    } else if (e.op == "fold_gain")
      ok = sameShape(e.shape, w) && isVector(input(1), inDim);
    else if (e.op == "weight_row_sums")
      ok = isVector(e.shape, outDim);
    else if (e.op == "fold_bias")
      ok = isVector(e.shape, outDim) && isVector(input(1), inDim) &&
           (e.inputs.size() < 3 || isVector(input(2), outDim));
    if (!ok)
      return mismatch();
  }

  for (size_t s = 0; s < steps.size(); ++s) {
    const Step &step = steps[s];
    const std::vector<std::vector<int64_t>> &sig = signatures[step.kernel];
    std::string name = "step " + std::to_string(s) + " (" + kernelNames[step.kernel] + ")";
    const Split &split = splits[step.kernel];
    int64_t scratchFloats = scratch[step.kernel];
    int64_t stagingWidth = staging[step.kernel];
    size_t operands = step.args.size() + step.caches.size() + (scratchFloats ? 1 : 0) +
                      (stagingWidth ? 1 : 0) + (split.units ? 1 : 0);
    if (operands != sig.size())
      return bad(name + " passes " + std::to_string(operands) +
                 " operands; the kernel takes " + std::to_string(sig.size()));
    // The share's range comes last. (Kernels clamp it to what they were
    // compiled for, so a wrong count costs results, not memory safety.)
    if (split.units && (sig.back() != std::vector<int64_t>{2} || split.units < 1 ||
                        split.units > kMaxDim))
      return bad(name + " splits " + std::to_string(split.units) +
                 " units it cannot take a range of");
    for (size_t i = 0; i < step.args.size(); ++i) {
      const Arg &a = step.args[i];
      std::string what = name + " operand " + std::to_string(i);
      if (a.weight) {
        const std::vector<int64_t> &shape = weightEntries[a.id].shape;
        if (!fits(shape, sig[i]))
          return bad(what + " is a " + shapeString(shape) +
                     " weight; the kernel was compiled for " + shapeString(sig[i]));
        // A gather indexes its table with token ids (below the vocabulary)
        // or positions (a learned position table bounds the sequence).
        if (gathers[step.kernel]) {
          // A packed table's rows are its source's (the panels pad them);
          // a converted one's are its input's.
          const WeightEntry *table = &weightEntries[a.id];
          if (table->op == "convert")
            table = &weightEntries[table->inputs[0]];
          int64_t rows = manifest::isPackOp(table->op) ? weightEntries[table->inputs[0]].shape[0]
                                             : table->shape[0];
          for (const Arg &index : step.args) {
            if (index.weight)
              continue;
            if (buffers[index.id].kind == "token_ids" && rows < m.vocabSize())
              return bad(what + ": the embedding table has " + std::to_string(rows) +
                         " rows for a vocabulary of " + std::to_string(m.vocabSize()));
            if (buffers[index.id].kind == "positions")
              positionLimit = std::min(positionLimit, rows);
          }
        }
        continue;
      }
      // Every dimension: the runtime passes [1, T] ids and [1, T, width]
      // activations for any T (and row shares of them), so the compiled
      // shape must leave the sequence dynamic; a kernel built for 7 tokens
      // and run on 40 would write past its buffers.
      const BufferEntry &b = buffers[a.id];
      auto rowsFit = [&](const std::vector<int64_t> &s) {
        return (s[0] == -1 || s[0] == 1) && s[1] == -1;
      };
      bool ok = manifest::isSequenceInput(b.kind)
                    ? sig[i].size() == 2 && rowsFit(sig[i])
                    : b.kind != "kv_cache" && sig[i].size() == 3 &&
                          rowsFit(sig[i]) && sig[i][2] == b.width;
      if (!ok)
        return bad(what + " is a " + b.kind + " buffer" +
                   (b.width ? " " + std::to_string(b.width) + " wide" : "") +
                   "; the kernel was compiled for " + shapeString(sig[i]));
    }
    for (size_t c = 0; c < step.caches.size(); ++c) {
      const std::vector<int64_t> &want = sig[step.args.size() + c];
      int64_t width = buffers[step.caches[c]].width;
      if (want.size() != 2 || want[0] != -1 || want[1] != width)
        return bad(name + " cache " + std::to_string(c) + " is " +
                   std::to_string(width) + " wide; the kernel was compiled for " +
                   shapeString(want));
      // A kernel writing bf16 into f32 rows (or the reverse) would read
      // garbage, or write past a cache sized for the other type.
      const std::string &type = buffers[step.caches[c]].cacheType;
      if (type != cacheTypes[step.kernel])
        return bad(name + " cache " + std::to_string(c) + " holds " + type +
                   "; the kernel was compiled for " + cacheTypes[step.kernel]);
    }
    // The session's scratch (after the caches) is sized from the count: the
    // code must have been compiled for exactly that many values.
    if (scratchFloats) {
      const std::vector<int64_t> &want = sig[step.args.size() + step.caches.size()];
      if (want != std::vector<int64_t>{scratchFloats})
        return bad(name + " takes " + std::to_string(scratchFloats) +
                   " values of scratch; the kernel was compiled for " + shapeString(want));
    }
    // Its staging array ([chunk rows, width] 16-bit values, after the
    // scratch) likewise: the runtime sizes it from the width.
    if (stagingWidth) {
      const std::vector<int64_t> &want =
          sig[step.args.size() + step.caches.size() + (scratchFloats ? 1 : 0)];
      if (want != std::vector<int64_t>{-1, stagingWidth})
        return bad(name + " takes a staging array " + std::to_string(stagingWidth) +
                   " wide; the kernel was compiled for " + shapeString(want));
    }
  }
  return true;
}
