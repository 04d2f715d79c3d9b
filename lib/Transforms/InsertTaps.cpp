//===- InsertTaps.cpp - name the values a user may inspect ----------------===//
//
// A checkpoint's tensor names are its modules' paths (`model.layers.3.
// self_attn.o_proj.weight`), so the op reading a weight computes that
// module's output: the tap is the weight's name without `.weight`. Layer
// functions are shared by every layer, so inside them the path is relative
// to the layer; each call carries the layer's own path.
//
//===----------------------------------------------------------------------===//

#include "tbc/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;

namespace tbc {
#define GEN_PASS_DEF_TBCINSERTTAPS
#include "tbc/TbcTransforms.h.inc"
} // namespace tbc

using namespace tbc;

namespace {
/// The checkpoint name a value is, when it is a parameter as bound.
std::optional<StringRef> paramName(Value v) {
  if (auto p = v.getDefiningOp<ParamOp>())
    return p.getName();
  return std::nullopt;
}

/// The layer path of a call: the prefix up to the first numeric component
/// (`model.layers.3`) that most of its parameters share (a table shared by
/// every layer, such as T5's relative bias, has none).
std::optional<std::string> layerPath(func::CallOp call) {
  llvm::StringMap<int> counts;
  std::optional<std::string> best;
  int bestCount = 0;
  for (Value v : call.getOperands()) {
    std::optional<StringRef> name = paramName(v);
    if (!name)
      continue;
    SmallVector<StringRef> parts;
    name->split(parts, '.');
    for (size_t k = 0; k + 1 < parts.size(); ++k) {
      if (parts[k].empty() || !llvm::all_of(parts[k], llvm::isDigit))
        continue;
      std::string prefix = llvm::join(ArrayRef<StringRef>(parts).take_front(k + 1), ".");
      int n = ++counts[prefix];
      if (n > bestCount) {
        best = prefix;
        bestCount = n;
      }
      break;
    }
  }
  return best;
}

/// The module path of a weight's name: without its `.weight` suffix.
std::optional<std::string> modulePath(StringRef weightName) {
  if (!weightName.consume_back(".weight") || weightName.empty())
    return std::nullopt;
  return weightName.str();
}

/// The weight whose module's output `op` computes, if it is one.
Value tappedWeight(Operation *op) {
  if (auto n = dyn_cast<NormOpInterface>(op))
    return n.getWeight();
  if (auto l = dyn_cast<LinearOp>(op))
    return l.getWeight();
  // Gemma 2 scales its embeddings outside the module; Gemma 3's scaling
  // embedding module is not one transformers' path tells apart: neither is
  // tapped.
  if (auto e = dyn_cast<EmbeddingOp>(op); e && !e.getScale())
    return e.getTable();
  return Value();
}

struct TbcInsertTapsPass : tbc::impl::TbcInsertTapsBase<TbcInsertTapsPass> {
  using TbcInsertTapsBase::TbcInsertTapsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (level != "layers" && level != "all") {
      module.emitError("tbc-insert-taps: level must be layers or all, not '") << level << "'";
      return signalPassFailure();
    }
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward)
      return;
    MLIRContext *ctx = &getContext();
    StringRef tapAttr = TbcDialect::TapAttrHelper::getNameStr();
    // Each layer function's parameter names, from its first call, relative
    // to that call's layer.
    llvm::DenseMap<func::FuncOp, SmallVector<std::optional<std::string>>> relativeNames;
    forward.walk([&](func::CallOp call) {
      auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
      std::optional<std::string> layer = layerPath(call);
      if (!callee || !layer)
        return;
      call->setAttr(tapAttr, StringAttr::get(ctx, *layer));
      if (relativeNames.count(callee))
        return;
      SmallVector<std::optional<std::string>> &names = relativeNames[callee];
      for (auto [i, v] : llvm::enumerate(call.getOperands())) {
        std::optional<StringRef> name = paramName(v);
        names.push_back(std::nullopt);
        if (name && name->starts_with(*layer + "."))
          names.back() = modulePath(name->drop_front(layer->size() + 1));
        // Tensors concatenated at bind time into one weight (StableLM 2's
        // per-head norms, q_layernorm.norms.{h}) make up the module the
        // block's argument is named after (q_layernorm).
        if (v.getDefiningOp<ConcatOp>())
          if (auto arg = callee.getArgAttrOfType<StringAttr>(
                  i, TbcDialect::NameAttrHelper::getNameStr()))
            names.back() = modulePath(arg.getValue());
      }
    });
    if (level != "all")
      return;
    // The embedding tables (a head reading one is the tied LM head).
    llvm::DenseSet<Value> tables;
    forward.walk([&](EmbeddingOp e) { tables.insert(e.getTable()); });
    auto tap = [&](Operation *op, std::optional<std::string> path) {
      if (path && op->getNumResults() > 0)
        op->setAttr(tapAttr, StringAttr::get(ctx, *path));
    };
    forward.walk([&](Operation *op) {
      Value w = tappedWeight(op);
      std::optional<StringRef> name = w ? paramName(w) : std::nullopt;
      if (!name)
        return;
      tap(op, isa<LinearOp>(op) && tables.contains(w) ? std::optional<std::string>("lm_head")
                                                       : modulePath(*name));
    });
    for (auto &entry : relativeNames) {
      func::FuncOp fn = entry.first;
      const SmallVector<std::optional<std::string>> &names = entry.second;
      fn.walk([&](Operation *op) {
        auto arg = dyn_cast_or_null<BlockArgument>(tappedWeight(op));
        if (arg && arg.getOwner() == &fn.getBody().front() && arg.getArgNumber() < names.size())
          tap(op, names[arg.getArgNumber()]);
      });
    }
  }
};
} // namespace
