//===- Cost.cpp - FLOPs and minimum bytes moved per op --------------------===//

#include "tbc/Analysis/Cost.h"

#include "tbc/Dialect/TbcDialect.h"

#include "mlir/IR/Matchers.h"

#include "llvm/ADT/TypeSwitch.h"

#include <fmt/format.h>

#include <map>

using namespace mlir;
using namespace tbc;

namespace {
/// Elements of a value, with the dynamic [batch, seq] dims set to [1, T].
int64_t elements(Value v, int64_t tokens) {
  auto t = cast<RankedTensorType>(v.getType());
  int64_t n = 1;
  bool seenDynamic = false;
  for (int64_t d : t.getShape()) {
    if (ShapedType::isDynamic(d)) {
      // The first dynamic dim is the batch (1), the second the sequence.
      n *= seenDynamic ? tokens : 1;
      seenDynamic = true;
    } else {
      n *= d;
    }
  }
  return n;
}

int64_t bytesOf(Value v, int64_t tokens) {
  auto t = cast<RankedTensorType>(v.getType());
  return elements(v, tokens) *
         int64_t((t.getElementType().getIntOrFloatBitWidth() + 7) / 8);
}

/// Every operand read once, every result written once.
int64_t ioBytes(Operation *op, int64_t tokens) {
  int64_t b = 0;
  for (Value v : op->getOperands())
    if (isa<RankedTensorType>(v.getType())) // not a scalar (an attention's window(%w))
      b += bytesOf(v, tokens);
  for (Value v : op->getResults())
    b += bytesOf(v, tokens);
  return b;
}

/// Query/key pairs a causal (optionally windowed) attention scores.
int64_t attentionPairs(int64_t tokens, bool causal, int64_t window) {
  if (!causal)
    return tokens * tokens;
  int64_t pairs = 0;
  for (int64_t p = 0; p < tokens; ++p)
    pairs += window > 0 ? std::min(p + 1, window) : p + 1;
  return pairs;
}

/// FLOPs per element of a pointwise activation are counted as 1: the model
/// is about bytes; matmuls dominate FLOPs.
constexpr int64_t kNormFlopsPerElement = 4; // square-accumulate, scale, gain
} // namespace

Cost tbc::opCost(Operation *op, int64_t tokens) {
  if (isa<ParamOp, func::CallOp, func::ReturnOp, SplitOp>(op) ||
      op->hasTrait<WeightTransform>())
    return {}; // split is a view; transforms run at bind time
  Cost c;
  c.bytes = ioBytes(op, tokens);
  auto rows = [&](Value v) {
    return elements(v, tokens) /
           cast<RankedTensorType>(v.getType()).getShape().back();
  };
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](EmbeddingOp e) {
        // A gather reads only the selected rows of the table.
        c.bytes = bytesOf(e.getIds(), tokens) + 2 * bytesOf(e.getResult(), tokens);
        c.flops = e.getScale() ? elements(e.getResult(), tokens) : 0;
      })
      .Case([&](LinearOp l) {
        int64_t r = rows(l.getInput());
        c.flops = 2 * r * l.getInFeatures() * l.getOutFeatures() +
                  (l.getBias() ? r * l.getOutFeatures() : 0);
      })
      .Case([&](FusedLinearOp f) {
        int64_t r = rows(f.getInput());
        int64_t width = f.getProjectionWidth();
        int64_t out = cast<RankedTensorType>(f.getType()).getShape().back();
        c.flops = 2 * r * f.getInFeatures() * width;
        if (f.getBias())
          c.flops += r * width;
        if (f.getNorm())
          c.flops += 2 * r * f.getInFeatures() + 2 * r * width;
        if (f.getAct())
          c.flops += r * out * (f.getGlu() ? 2 : 1);
        if (f.getSoftcap())
          c.flops += 2 * r * out;
        if (f.getResidual())
          c.flops += r * out;
        if (auto rope = f.getRopeAttr()) // as tbc.rope's count, for its heads
          c.flops += 3 * r * (rope.getColumns() / rope.getHeadDim()) * rope.getRotaryDim();
      })
      .Case([&](AttentionOp a) {
        // A window(%w) counts as its constant, or as none (an upper bound).
        APInt w;
        int64_t window = a.getWindow().value_or(0);
        if (Value size = a.getWindowSize(); size && matchPattern(size, m_ConstantInt(&w)))
          window = w.getSExtValue();
        int64_t pairs = attentionPairs(tokens, a.getCausal(), window);
        int64_t perPair = 4 * a.getHeadDim(); // q.k and p.v
        c.flops = pairs * a.getNumHeads() * perPair;
      })
      .Case([&](NormOpInterface n) {
        c.flops = kNormFlopsPerElement * elements(n->getResult(0), tokens);
      })
      .Case([&](AddNormOp n) {
        c.flops = (1 + kNormFlopsPerElement) * elements(n.getSum(), tokens);
      })
      .Case([&](NormAddOp n) {
        c.flops = (kNormFlopsPerElement + 1) * elements(n.getResult(), tokens);
      })
      .Case([&](RopeOp r) {
        int64_t heads = cast<RankedTensorType>(r.getType()).getShape().back() /
                        r.getHeadDim();
        c.flops = 3 * rows(r.getInput()) * heads * r.getRotaryDim();
      })
      .Case([&](GluOp g) { c.flops = 2 * elements(g.getResult(), tokens); })
      .Case([&](SoftcapOp s) { c.flops = 2 * elements(s.getResult(), tokens); })
      .Case([&](ClipOp s) { c.flops = 2 * elements(s.getResult(), tokens); })
      .Case([&](ScaleOp s) { c.flops = elements(s.getResult(), tokens); })
      .Default([&](Operation *o) {
        c.flops = o->getNumResults() ? elements(o->getResult(0), tokens) : 0;
      });
  return c;
}

Cost tbc::functionCost(func::FuncOp fn, int64_t tokens) {
  Cost total;
  fn.walk([&](Operation *op) {
    if (op != fn)
      total += opCost(op, tokens);
  });
  return total;
}

/// How often each function runs per forward pass (calls from @forward).
static std::map<std::string, int64_t> callCounts(ModuleOp module) {
  std::map<std::string, int64_t> counts;
  module.walk([&](func::CallOp call) { ++counts[call.getCallee().str()]; });
  return counts;
}

Cost tbc::modelCost(ModuleOp module, int64_t tokens) {
  std::map<std::string, int64_t> counts = callCounts(module);
  Cost total;
  for (auto fn : module.getOps<func::FuncOp>()) {
    Cost c = functionCost(fn, tokens);
    int64_t n = fn.isPublic() ? 1 : counts[fn.getSymName().str()];
    total.flops += n * c.flops;
    total.bytes += n * c.bytes;
  }
  return total;
}

/// One line of the per-op table: name, FLOPs, bytes, in fixed columns.
static std::string row(StringRef name, const Cost &c) {
  return fmt::format("    {:<22}{:>16} FLOP{:>16} B\n", std::string_view(name), c.flops, c.bytes);
}

void tbc::printCostReport(ModuleOp module, int64_t tokens,
                          llvm::raw_ostream &os) {
  std::map<std::string, int64_t> counts = callCounts(module);
  for (auto fn : module.getOps<func::FuncOp>()) {
    int64_t n = fn.isPublic() ? 1 : counts[fn.getSymName().str()];
    os << "  @" << fn.getSymName() << " (runs " << n << "x)\n";
    int64_t bindTime = 0;
    fn.walk([&](Operation *op) {
      if (op->hasTrait<WeightTransform>()) {
        ++bindTime;
        return;
      }
      if (op == fn || isa<ParamOp, func::ReturnOp, func::CallOp>(op))
        return;
      Cost c = opCost(op, tokens);
      os << row(op->getName().getStringRef(), c);
    });
    Cost t = functionCost(fn, tokens);
    os << row("total", t);
    if (bindTime)
      os << "    (" << bindTime
         << " bind-time weight transforms, run once when weights are bound)\n";
  }
}

void tbc::printCostSummary(ModuleOp before, ModuleOp after, int64_t tokens,
                           llvm::raw_ostream &os) {
  auto line = [&](StringRef what, Cost b, Cost a) {
    os << fmt::format("  {:<24}FLOP {:>16} -> {:>16}   bytes {:>14} -> {:>14}   saved {:>14} "
                      "B ({:.1f}%)\n",
                      std::string_view(what), b.flops, a.flops, b.bytes, a.bytes,
                      b.bytes - a.bytes,
                      b.bytes ? 100.0 * double(b.bytes - a.bytes) / double(b.bytes) : 0.0);
  };
  os << "== summary (" << tokens << " token(s)): unfused -> fused\n";
  // @forward (public) holds the embeddings, the final norm and the LM head.
  for (auto fn : before.getOps<func::FuncOp>()) {
    auto fused = after.lookupSymbol<func::FuncOp>(fn.getSymName());
    if (!fused)
      continue;
    line(((fn.isPublic() ? "head @" : "layer @") + fn.getSymName()).str(),
         functionCost(fn, tokens), functionCost(fused, tokens));
  }
  line("model", modelCost(before, tokens), modelCost(after, tokens));
}
