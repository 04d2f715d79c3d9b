//===- Manifest.cpp - the schedule of an outlined module as JSON ----------===//

#include "tbc/Target/Manifest.h"

#include "tbc/Target/TargetBackend.h"
#include "tbc/Dialect/TbcDialect.h"
#include "tbc/Support/Json.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <sstream>

using namespace mlir;
using namespace tbc;

namespace {
std::string quote(StringRef s) { return json::quote(s.str()); }

std::string shapeJson(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") +
         std::to_string(ShapedType::isDynamic(shape[i]) ? -1 : shape[i]);
  return s + "]";
}

std::string num(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

/// A kernel argument: a runtime buffer or a bound weight.
struct Ref {
  bool weight = false;
  int id = -1;
  std::string json() const {
    return std::string("{\"") + (weight ? "w" : "b") + "\": " +
           std::to_string(id) + "}";
  }
};

class Flattener {
public:
  Flattener(ModuleOp module, const TargetBackend &backend, StringRef sourceConfig)
      : module(module), backend(backend), sourceConfig(sourceConfig) {}

  LogicalResult run(std::string &json) {
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward)
      return module.emitError("the module has no @forward function");
    SmallVector<Ref> args;
    for (auto [i, arg] : llvm::enumerate(forward.getArguments())) {
      auto name = forward.getArgAttrOfType<StringAttr>(i, TbcDialect::NameAttrHelper::getNameStr());
      std::string kind = name ? name.getValue().str() : "";
      if (kind != "token_ids" && kind != "positions")
        return forward.emitError("@forward argument ")
               << i << " must be token_ids or positions";
      // A runnable module takes any number of tokens (a prompt, then one at
      // a time): kernels compiled for a fixed count would be run on others.
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (!type || type.getRank() != 2 || !type.getElementType().isInteger(32) ||
          !(type.getDimSize(0) == 1 || type.isDynamicDim(0)) || !type.isDynamicDim(1))
        return forward.emitError("@forward argument ")
               << i << " (" << kind << ") must be tensor<?x?xi32> ([batch, seq]), got "
               << arg.getType()
               << ": a runnable module takes any number of tokens, so its "
                  "sequence dimension must be dynamic";
      args.push_back(newBuffer("{\"kind\": " + quote(kind) + ", \"dtype\": \"i32\"}"));
    }
    SmallVector<Ref> results;
    if (failed(visit(forward, args, results)))
      return failure();
    if (results.size() != 1 || results[0].weight)
      return forward.emitError("@forward must return the logits");

    std::string out = "{\n  \"format\": \"tbcm\",\n  \"version\": 1,\n";
    out += "  \"target\": " + quote(backend.name()) + ",\n";
    out += "  \"model\": {\"architecture\": " +
           quote(stringAttr(TbcDialect::ArchitectureAttrHelper::getNameStr())) +
           ", \"vocab_size\": " + std::to_string(intAttr(TbcDialect::VocabSizeAttrHelper::getNameStr())) +
           ", \"max_positions\": " + std::to_string(intAttr(TbcDialect::MaxPositionsAttrHelper::getNameStr())) +
           (sourceConfig.empty() ? std::string()
                                 : ", \"config\": " + sourceConfig.str()) +
           "},\n";
    auto list = [&](const char *key, const std::vector<std::string> &items) {
      out += std::string("  \"") + key + "\": [\n";
      for (size_t i = 0; i < items.size(); ++i)
        out += "    " + items[i] + (i + 1 < items.size() ? ",\n" : "\n");
      out += "  ],\n";
    };
    list("params", params);
    list("weights", weights);
    list("buffers", buffers);
    list("kernels", kernels);
    list("steps", steps);
    out += "  \"output\": " + std::to_string(results[0].id) + "\n}\n";
    json = out;
    return success();
  }

private:
  ModuleOp module;
  const TargetBackend &backend;
  StringRef sourceConfig;
  std::vector<std::string> params, weights, buffers, kernels, steps;
  llvm::StringMap<int> paramIds, kernelIds;

  std::string stringAttr(StringRef name) {
    auto a = module->getAttrOfType<StringAttr>(name);
    return a ? a.getValue().str() : "";
  }
  int64_t intAttr(StringRef name) {
    auto a = module->getAttrOfType<IntegerAttr>(name);
    return a ? a.getInt() : 0;
  }

  Ref newBuffer(const std::string &json) {
    Ref r{false, int(buffers.size())};
    buffers.push_back("{\"id\": " + std::to_string(r.id) + ", " + json.substr(1));
    return r;
  }
  Ref newWeight(const std::string &json) {
    Ref r{true, int(weights.size())};
    weights.push_back("{\"id\": " + std::to_string(r.id) + ", " + json.substr(1));
    return r;
  }

  /// The packed copy of weight `w` (one per weight) in the backend's layout.
  llvm::DenseMap<int, Ref> packedWeights;
  Ref packedWeight(Ref w, const PackedOperand &p) {
    auto it = packedWeights.find(w.id);
    if (it != packedWeights.end())
      return it->second;
    Ref packed = newWeight("{\"op\": \"pack\", \"inputs\": [" + std::to_string(w.id) +
                           "], \"in_out\": " + (p.inOut ? "true" : "false") +
                           ", \"shape\": " + shapeJson(p.shape) + "}");
    packedWeights[w.id] = packed;
    return packed;
  }

  /// Views record their root buffer and column offset.
  struct View {
    int root;
    int64_t offset;
  };
  llvm::DenseMap<int, View> views;

  Ref activation(Type t) {
    auto tensor = cast<RankedTensorType>(t);
    return newBuffer("{\"kind\": \"activation\", \"width\": " +
                     std::to_string(tensor.getShape().back()) +
                     ", \"dtype\": \"f32\"}");
  }

  int kernelId(func::FuncOp kernel) {
    auto it = kernelIds.find(kernel.getSymName());
    if (it != kernelIds.end())
      return it->second;
    int id = kernels.size();
    kernelIds[kernel.getSymName()] = id;
    // The shapes the compiled code assumes (-1: dynamic), operands, results,
    // then the key/value caches: the runtime checks every step against them
    // so that a manifest that disagrees with its code is refused, not run.
    std::string signature;
    auto addShape = [&](ArrayRef<int64_t> shape) {
      std::string dims;
      for (int64_t d : shape)
        dims += (dims.empty() ? "" : ", ") +
                std::to_string(ShapedType::isDynamic(d) ? -1 : d);
      signature += (signature.empty() ? "[" : ", [") + dims + "]";
    };
    FunctionType type = kernel.getFunctionType();
    Operation *op = &kernel.getBody().front().front();
    std::optional<PackedOperand> packed = backend.packedOperand(op);
    for (auto [i, t] : llvm::enumerate(
             llvm::concat<const Type>(type.getInputs(), type.getResults()))) {
      if (packed && i == packed->operand)
        addShape(packed->shape);
      else
        addShape(cast<ShapedType>(t).getShape());
    }
    if (kernel->hasAttr(TbcDialect::KvCacheAttrHelper::getNameStr())) {
      auto attn = cast<AttentionOp>(kernel.getBody().front().front());
      int64_t width = attn.getNumKvHeads() * attn.getHeadDim();
      addShape({ShapedType::kDynamic, width});
      addShape({ShapedType::kDynamic, width});
    }
    // A ranged kernel's last operand is the [begin, end) of its work: output
    // columns of a projection, key/value heads of an attention.
    std::string units;
    if (std::optional<int64_t> n = backend.workUnits(kernel)) {
      addShape({2});
      units = std::string(", \"") +
              (kernel->hasAttr(TbcDialect::KvCacheAttrHelper::getNameStr()) ? "kv_heads" : "columns") +
              "\": " + std::to_string(*n);
    }
    kernels.push_back("{\"id\": " + std::to_string(id) + ", \"name\": " +
                      quote(kernel.getSymName()) + ", \"symbol\": " +
                      quote(backend.symbol(kernel)) + ", \"role\": " +
                      quote(kernelRole(op)) +
                      ", \"kv_cache\": " +
                      (kernel->hasAttr(TbcDialect::KvCacheAttrHelper::getNameStr()) ? "true" : "false") +
                      // Every kernel but attention treats the chunk's rows
                      // independently, so the runtime may split them.
                      ", \"row_parallel\": " +
                      (kernel->hasAttr(TbcDialect::KvCacheAttrHelper::getNameStr()) ? "false" : "true") +
                      units + backend.kernelFields(kernel) +
                      ", \"signature\": [" + signature + "]}");
    return id;
  }

  LogicalResult visit(func::FuncOp fn, ArrayRef<Ref> args,
                      SmallVectorImpl<Ref> &results) {
    DenseMap<Value, Ref> refs;
    for (auto [a, r] : llvm::zip(fn.getArguments(), args))
      refs[a] = r;
    for (Operation &op : fn.getBody().front()) {
      auto inputs = [&]() {
        SmallVector<Ref> in;
        for (Value v : op.getOperands())
          in.push_back(refs.lookup(v));
        return in;
      };
      if (auto p = dyn_cast<ParamOp>(op)) {
        std::string name = p.getName().str();
        if (!paramIds.count(name)) {
          paramIds[name] = params.size();
          params.push_back("{\"name\": " + quote(name) + ", \"shape\": " +
                           shapeJson(p.getType().getShape()) + "}");
        }
        refs[p] = newWeight("{\"op\": \"param\", \"param\": " +
                            std::to_string(paramIds[name]) + ", \"shape\": " +
                            shapeJson(p.getType().getShape()) + "}");
        continue;
      }
      if (op.hasTrait<WeightTransform>()) {
        std::string ins;
        for (Ref r : inputs()) {
          if (!r.weight)
            return op.emitError("weight transform of a non-weight");
          ins += (ins.empty() ? "" : ", ") + std::to_string(r.id);
        }
        std::string extra;
        bool inOut = op.hasAttr("weight_in_out");
        if (auto c = dyn_cast<ConcatOp>(op))
          extra = ", \"dim\": " + std::to_string(c.getDim());
        if (auto g = dyn_cast<FoldGainOp>(op))
          extra = ", \"offset\": " +
                  num(g.getOffset() ? g.getOffset()->convertToDouble() : 0.0);
        std::string name = op.getName().stripDialect().str();
        refs[op.getResult(0)] = newWeight(
            "{\"op\": " + quote(name) + ", \"inputs\": [" + ins + "]" + extra +
            ", \"in_out\": " + (inOut ? "true" : "false") + ", \"shape\": " +
            shapeJson(cast<RankedTensorType>(op.getResult(0).getType()).getShape()) +
            "}");
        continue;
      }
      if (auto split = dyn_cast<SplitOp>(op)) {
        Ref in = refs.lookup(split.getInput());
        View base = views.count(in.id) ? views[in.id] : View{in.id, 0};
        int64_t offset = base.offset;
        for (Value r : split.getResults()) {
          int64_t w = cast<RankedTensorType>(r.getType()).getShape().back();
          Ref v = newBuffer("{\"kind\": \"view\", \"of\": " +
                            std::to_string(base.root) + ", \"offset\": " +
                            std::to_string(offset) + ", \"width\": " +
                            std::to_string(w) + ", \"dtype\": \"f32\"}");
          views[v.id] = {base.root, offset};
          refs[r] = v;
          offset += w;
        }
        continue;
      }
      if (auto call = dyn_cast<func::CallOp>(op)) {
        auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
        if (!callee)
          return call.emitError("unknown callee");
        if (!callee->hasAttr(TbcDialect::KernelAttrHelper::getNameStr())) {
          SmallVector<Ref> out;
          if (failed(visit(callee, inputs(), out)))
            return failure();
          for (auto [r, ref] : llvm::zip(call.getResults(), out))
            refs[r] = ref;
          continue;
        }
        std::string args;
        SmallVector<Ref> in = inputs();
        // Projections read their weight and embeddings their table packed
        // in panels (KernelABI.h): the runtime packs once, at bind time.
        if (std::optional<PackedOperand> p =
                backend.packedOperand(&callee.getBody().front().front()))
          in[p->operand] = packedWeight(in[p->operand], *p);
        for (Ref r : in)
          args += (args.empty() ? "" : ", ") + r.json();
        for (Value r : call.getResults()) {
          Ref out = activation(r.getType());
          refs[r] = out;
          args += ", " + out.json();
        }
        std::string caches;
        if (callee->hasAttr(TbcDialect::KvCacheAttrHelper::getNameStr())) {
          auto attn = cast<AttentionOp>(callee.getBody().front().front());
          std::string width = std::to_string(attn.getNumKvHeads() * attn.getHeadDim());
          for (int i = 0; i < 2; ++i) {
            Ref c = newBuffer("{\"kind\": \"kv_cache\", \"width\": " + width +
                              ", \"dtype\": \"f32\"}");
            caches += (caches.empty() ? "" : ", ") + c.json();
          }
        }
        steps.push_back("{\"kernel\": " + std::to_string(kernelId(callee)) +
                        ", \"args\": [" + args + "]" +
                        (caches.empty() ? "" : ", \"caches\": [" + caches + "]") +
                        "}");
        continue;
      }
      if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        for (Value v : ret.getOperands())
          results.push_back(refs.lookup(v));
        continue;
      }
      return op.emitError("cannot be scheduled (run --tbc-outline-kernels first)");
    }
    return success();
  }
};
} // namespace

FailureOr<std::string> tbc::buildManifest(ModuleOp outlined,
                                          const TargetBackend &target,
                                          StringRef sourceConfig) {
  std::string json;
  if (failed(Flattener(outlined, target, sourceConfig).run(json)))
    return failure();
  return json;
}
