//===- Manifest.cpp - the schedule of an outlined module as a manifest ----===//
//
// Fills the typed manifest (tbc/Support/Manifest.h) from the outlined module;
// manifest::write turns it into the JSON the runtime reads back with
// manifest::read.
//
//===----------------------------------------------------------------------===//

#include "tbc/Target/Manifest.h"

#include "tbc/Dialect/TbcDialect.h"
#include "tbc/Support/Manifest.h"
#include "tbc/Target/TargetBackend.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <map>
#include <tuple>

using namespace mlir;
using namespace tbc;
using manifest::Arg;

namespace {
std::vector<int64_t> shapeOf(ArrayRef<int64_t> shape) {
  std::vector<int64_t> s;
  for (int64_t d : shape)
    s.push_back(ShapedType::isDynamic(d) ? -1 : d);
  return s;
}

std::vector<int64_t> shapeOf(Type t) { return shapeOf(cast<ShapedType>(t).getShape()); }

class Flattener {
public:
  Flattener(ModuleOp module, const TargetBackend &backend, const TargetOptions &options,
            StringRef sourceConfig)
      : module(module), backend(backend), options(options), sourceConfig(sourceConfig) {}

  LogicalResult run(manifest::Manifest &out) {
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward)
      return module.emitError("the module has no @forward function");
    SmallVector<Arg> args;
    for (auto [i, arg] : llvm::enumerate(forward.getArguments())) {
      auto name = forward.getArgAttrOfType<StringAttr>(
          i, TbcDialect::NameAttrHelper::getNameStr());
      std::string kind = name ? name.getValue().str() : "";
      if (!manifest::isSequenceInput(kind))
        return forward.emitError("@forward argument ")
               << i << " must be token_ids, positions or sequence_lengths";
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
      args.push_back(newBuffer({kind}));
    }
    SmallVector<Arg> results;
    if (failed(visit(forward, args, results, "")))
      return failure();
    if (results.size() != 1 || results[0].weight)
      return forward.emitError("@forward must return the logits");

    m.target = backend.name().str();
    auto stringAttr = [&](StringRef name) {
      auto a = module->getAttrOfType<StringAttr>(name);
      return a ? a.getValue().str() : "";
    };
    auto intAttr = [&](StringRef name) -> int64_t {
      auto a = module->getAttrOfType<IntegerAttr>(name);
      return a ? a.getInt() : 0;
    };
    m.model.architecture = stringAttr(TbcDialect::ArchitectureAttrHelper::getNameStr());
    m.model.vocabSize = intAttr(TbcDialect::VocabSizeAttrHelper::getNameStr());
    m.model.maxPositions = intAttr(TbcDialect::MaxPositionsAttrHelper::getNameStr());
    if (!sourceConfig.empty()) {
      json::ParseError pe;
      std::optional<json::Value> config = json::parse(sourceConfig, pe);
      if (!config)
        return module.emitError("the recorded model config is not JSON: ") << pe.message;
      m.model.config = std::move(*config);
    }
    m.output = results[0].id;
    out = std::move(m);
    return success();
  }

private:
  ModuleOp module;
  const TargetBackend &backend;
  const TargetOptions &options;
  StringRef sourceConfig;
  manifest::Manifest m;
  llvm::StringMap<int> paramIds, kernelIds;

  Arg newBuffer(manifest::Buffer b) {
    m.buffers.push_back(std::move(b));
    return Arg{false, int(m.buffers.size()) - 1};
  }
  Arg newWeight(manifest::Weight w) {
    m.weights.push_back(std::move(w));
    return Arg{true, int(m.weights.size()) - 1};
  }

  /// Weight `w` in the form a kernel reads it: repacked in the backend's
  /// layout and/or converted to its storage type (each form made once).
  std::map<std::tuple<int, std::vector<int64_t>, std::string, bool>, Arg> packedWeights;
  Arg packedWeight(Arg w, const PackedOperand &p) {
    auto key = std::make_tuple(w.id, shapeOf(p.shape), p.dtype, p.kPairs);
    auto it = packedWeights.find(key);
    if (it != packedWeights.end())
      return it->second;
    Arg form = w;
    if (!p.shape.empty()) {
      manifest::Weight packed;
      packed.op = p.kPairs ? "pack_pairs" : "pack";
      packed.inputs = {form.id};
      packed.inOut = p.inOut;
      packed.shape = shapeOf(p.shape);
      form = newWeight(std::move(packed));
    }
    if (p.dtype != "f32") {
      manifest::Weight converted;
      converted.op = "convert";
      converted.inputs = {form.id};
      converted.dtype = p.dtype;
      converted.shape = m.weights[form.id].shape;
      form = newWeight(std::move(converted));
    }
    return packedWeights[key] = form;
  }

  /// Views record their root buffer and column offset.
  struct View {
    int root;
    int64_t offset;
  };
  llvm::DenseMap<int, View> views;

  Arg activation(Type t) {
    return newBuffer({"activation", cast<RankedTensorType>(t).getShape().back()});
  }

  int kernelId(func::FuncOp kernel) {
    auto it = kernelIds.find(kernel.getSymName());
    if (it != kernelIds.end())
      return it->second;
    int id = m.kernels.size();
    kernelIds[kernel.getSymName()] = id;
    Operation *op = &kernel.getBody().front().front();
    bool cached = kernel->hasAttr(TbcDialect::KvCacheAttrHelper::getNameStr());
    manifest::Kernel k;
    k.name = kernel.getSymName().str();
    k.symbol = backend.symbol(kernel);
    k.role = kernelRole(op).str();
    k.kvCache = cached;
    if (cached)
      k.cacheType = backend.kvCacheType(options);
    // Every kernel but attention treats the chunk's rows independently, so
    // the runtime may split them.
    k.rowParallel = !cached;
    k.work = backend.workRange(kernel, options);
    k.launches = backend.launches(kernel, options);
    k.scratch = backend.scratchFloats(kernel, options);
    k.staging = backend.stagingWidth(kernel, options);
    // The shapes the compiled code assumes (-1: dynamic), operands, results,
    // then the key/value caches, the scratch, the staging and the work range: the runtime
    // checks every
    // step against them so that a manifest that disagrees with its code is
    // refused, not run.
    // Scalar operands (last, an attention's window) are not in it: they
    // are the steps' `scalars`, which the code takes after everything else.
    FunctionType type = kernel.getFunctionType();
    k.scalars = kernelScalarOperands(kernel);
    std::optional<PackedOperand> packed = backend.packedOperand(op, options);
    for (auto [i, t] : llvm::enumerate(llvm::concat<const Type>(
             type.getInputs().drop_back(k.scalars), type.getResults())))
      k.signature.push_back(packed && i == packed->operand && !packed->shape.empty()
                                ? shapeOf(packed->shape)
                                : shapeOf(t));
    if (cached) {
      auto attn = cast<AttentionOp>(op);
      int64_t width = attn.getNumKvHeads() * attn.getHeadDim();
      k.signature.push_back({-1, width});
      k.signature.push_back({-1, width});
    }
    if (k.scratch)
      k.signature.push_back({k.scratch});
    if (k.staging)
      k.signature.push_back({-1, k.staging});
    if (k.work)
      k.signature.push_back({2});
    m.kernels.push_back(std::move(k));
    return id;
  }

  /// A tap on `op` (tbc.tap), its path relative to the layer `prefix`.
  void recordTap(Operation *op, StringRef prefix, Arg buffer) {
    auto tap = op->getAttrOfType<StringAttr>(TbcDialect::TapAttrHelper::getNameStr());
    if (!tap || buffer.weight)
      return;
    std::string name = prefix.empty() ? tap.getValue().str()
                                      : (prefix + "." + tap.getValue()).str();
    m.taps.push_back({std::move(name), buffer.id});
  }

  /// Schedules `fn`'s ops; `prefix` is the layer path of the call being
  /// flattened (a layer function's taps are relative to it).
  LogicalResult visit(func::FuncOp fn, ArrayRef<Arg> args, SmallVectorImpl<Arg> &results,
                      StringRef prefix) {
    DenseMap<Value, Arg> refs;
    for (auto [a, r] : llvm::zip(fn.getArguments(), args))
      refs[a] = r;
    // The schedule's constants: kernels' scalar operands (an attention's
    // window), passed by the steps.
    DenseMap<Value, int64_t> constants;
    for (Operation &op : fn.getBody().front()) {
      if (auto c = dyn_cast<arith::ConstantIntOp>(op)) {
        constants[c] = c.value();
        continue;
      }
      auto inputs = [&]() {
        SmallVector<Arg> in;
        for (Value v : op.getOperands())
          in.push_back(refs.lookup(v));
        return in;
      };
      if (auto p = dyn_cast<ParamOp>(op)) {
        std::string name = p.getName().str();
        if (!paramIds.count(name)) {
          paramIds[name] = m.params.size();
          m.params.push_back({name, shapeOf(p.getType())});
        }
        manifest::Weight w;
        w.op = "param";
        w.param = paramIds[name];
        w.shape = shapeOf(p.getType());
        refs[p] = newWeight(std::move(w));
        continue;
      }
      if (op.hasTrait<WeightTransform>()) {
        manifest::Weight w;
        for (Arg r : inputs()) {
          if (!r.weight)
            return op.emitError("weight transform of a non-weight");
          w.inputs.push_back(r.id);
        }
        w.op = op.getName().stripDialect().str();
        w.inOut = op.hasAttr("weight_in_out");
        if (auto c = dyn_cast<ConcatOp>(op))
          w.dim = c.getDim();
        if (auto g = dyn_cast<FoldGainOp>(op))
          w.offset = g.getOffset() ? g.getOffset()->convertToDouble() : 0.0;
        if (auto fill = dyn_cast<FillOp>(op))
          w.value = fill.getValue().convertToDouble();
        if (auto slice = dyn_cast<RowSliceOp>(op))
          w.start = slice.getStart();
        if (auto swap = dyn_cast<SwapHalvesOp>(op))
          w.block = swap.getBlock();
        w.shape = shapeOf(op.getResult(0).getType());
        refs[op.getResult(0)] = newWeight(std::move(w));
        continue;
      }
      if (auto split = dyn_cast<SplitOp>(op)) {
        Arg in = refs.lookup(split.getInput());
        View base = views.count(in.id) ? views[in.id] : View{in.id, 0};
        int64_t offset = base.offset;
        for (Value r : split.getResults()) {
          int64_t w = cast<RankedTensorType>(r.getType()).getShape().back();
          Arg v = newBuffer({"view", w, base.root, offset});
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
          SmallVector<Arg> out;
          auto layer = call->getAttrOfType<StringAttr>(TbcDialect::TapAttrHelper::getNameStr());
          if (failed(visit(callee, inputs(), out, layer ? layer.getValue() : prefix)))
            return failure();
          for (auto [r, ref] : llvm::zip(call.getResults(), out))
            refs[r] = ref;
          if (layer && !out.empty()) // the layer's output, named by the call
            m.taps.push_back({layer.getValue().str(), out.front().id});
          continue;
        }
        manifest::Step step;
        SmallVector<Arg> in;
        for (Value v : call.getOperands()) {
          if (!isScalarOperand(v.getType())) {
            in.push_back(refs.lookup(v));
            continue;
          }
          auto c = constants.find(v);
          if (c == constants.end())
            return call.emitError("a kernel's scalar operand must be a constant of the "
                                  "function calling it");
          step.scalars.push_back(c->second);
        }
        // Operands the backend reads in its own layout (the CPU's weight
        // panels): the runtime packs them once, at bind time.
        if (std::optional<PackedOperand> p =
                backend.packedOperand(&callee.getBody().front().front(), options))
          in[p->operand] = packedWeight(in[p->operand], *p);
        step.args.assign(in.begin(), in.end());
        for (Value r : call.getResults()) {
          Arg out = activation(r.getType());
          refs[r] = out;
          step.args.push_back(out);
        }
        if (call.getNumResults())
          recordTap(call, prefix, refs[call.getResult(0)]);
        if (callee->hasAttr(TbcDialect::KvCacheAttrHelper::getNameStr())) {
          auto attn = cast<AttentionOp>(callee.getBody().front().front());
          manifest::Buffer cache{"kv_cache", int64_t(attn.getNumKvHeads() * attn.getHeadDim())};
          cache.cacheType = backend.kvCacheType(options);
          for (int i = 0; i < 2; ++i)
            step.caches.push_back(newBuffer(cache).id);
        }
        step.kernel = kernelId(callee);
        m.steps.push_back(std::move(step));
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

FailureOr<std::string> tbc::buildManifest(ModuleOp outlined, const TargetBackend &target,
                                          const TargetOptions &options,
                                          StringRef sourceConfig) {
  manifest::Manifest m;
  if (failed(Flattener(outlined, target, options, sourceConfig).run(m)))
    return failure();
  return manifest::write(m);
}
