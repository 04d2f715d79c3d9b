//===- BuildModel.cpp - ModelSpec -> tbc IR -------------------------------===//
//
// Layers that compute the same thing share one function, so the IR (and
// later the kernel count) does not grow with the number of layers: each
// layer is a func.call passing that layer's parameters.
//
//===----------------------------------------------------------------------===//

#include "tbc/Frontend/BuildModel.h"

#include "tbc/Dialect/TbcDialect.h"

#include "mlir/IR/Builders.h"

#include <algorithm>
#include <cmath>
#include <map>

using namespace mlir;
using namespace tbc;

namespace {

/// One per-layer weight: its name relative to the layer prefix and shape.
struct WeightSlot {
  std::string name;
  SmallVector<int64_t> shape;
  bool shared = false; // one tensor for every layer: `name` is absolute
  /// Checkpoint tensors (layer-relative, rank 1) concatenated at bind time
  /// into this slot, whose `name` is then the module they make up
  /// (StableLM 2's per-head norms); empty: the slot is the tensor `name`.
  std::vector<std::string> parts;
  /// No checkpoint tensor: every element is this value (the ones of a norm
  /// without a learned gain), made at bind time.
  std::optional<double> fill;
  /// The tensor's rows in blocks of this many with their halves swapped at
  /// bind time (tbc.swap_halves: q/k of a reversed RoPE); 0: as stored.
  int64_t swapHalves = 0;
};

/// Collects the per-layer weights of a spec, in the order the block
/// functions take them.
class SlotList {
public:
  explicit SlotList(const ModelSpec &s) : s(s) {
    int64_t hidden = s.hiddenSize, qDim = s.numHeads * s.headDim,
            kvDim = s.numKvHeads * s.headDim;
    norm(s.names.attnPreNorm, hidden);
    switch (s.qkvLayout) {
    case QkvLayout::Separate:
      linear(s.names.q, hidden, qDim, s.qkvBias, queryKeySwap());
      linear(s.names.k, hidden, kvDim, s.qkvBias, queryKeySwap());
      linear(s.names.v, hidden, kvDim, s.qkvBias);
      break;
    default:
      linear(s.names.qkv, hidden, qDim + 2 * kvDim, s.qkvBias);
      break;
    }
    qkNorm(s.names.qNorm, s.numHeads);
    qkNorm(s.names.kNorm, s.numKvHeads);
    if (s.positions == PositionKind::Relative)
      list.push_back({s.names.relativeBias + ".weight",
                      {s.relative.numBuckets, s.numHeads},
                      !s.relative.perLayer});
    linear(s.names.o, qDim, hidden, s.oBias);
    norm(s.names.attnPostNorm, hidden);
    norm(s.names.ffnPreNorm, hidden);
    if (s.ffnKind == FfnKind::Glu && s.fusedGateUp) {
      linear(s.names.gateUp, hidden, 2 * s.ffnSize, s.ffnBias);
    } else {
      if (s.ffnKind == FfnKind::Glu)
        linear(s.names.gate, hidden, s.ffnSize, s.ffnBias);
      linear(s.names.up, hidden, s.ffnSize, s.ffnBias);
    }
    linear(s.names.down, s.ffnSize, hidden, s.downBias);
    norm(s.names.ffnPostNorm, hidden);
  }
  const std::vector<WeightSlot> &slots() const { return list; }

private:
  const ModelSpec &s;
  std::vector<WeightSlot> list;

  void vec(const std::string &name, int64_t n, int64_t swapHalves = 0) {
    list.push_back({name, {n}});
    list.back().swapHalves = swapHalves;
  }
  /// What a reversed RoPE swaps in q's and k's tensors: each head's halves.
  int64_t queryKeySwap() const { return s.reverseRope ? s.headDim : 0; }
  /// The gains (and biases) of the QK-norm of `heads` heads.
  void qkNorm(const std::string &name, int64_t heads) {
    const NormSpec &n = s.qkNormOrBlockNorm();
    bool bias = n.kind == NormType::LayerNorm && n.bias;
    for (const char *suffix : {".weight", ".bias"}) {
      if (StringRef(suffix) == ".bias" && !bias)
        break;
      WeightSlot slot{name + suffix, {s.headDim}};
      slot.swapHalves = queryKeySwap();
      switch (s.qkNorm) {
      case QKNormKind::None:
        return;
      case QKNormKind::PerHead:
        break;
      case QKNormKind::PerHeadStacked:
        slot.shape = {heads, s.headDim};
        break;
      case QKNormKind::PerHeadTensors:
        slot.shape = {heads * s.headDim};
        for (int64_t h = 0; h < heads; ++h)
          slot.parts.push_back(name + ".norms." + std::to_string(h) + suffix);
        break;
      case QKNormKind::Full:
        slot.shape = {heads * s.headDim};
        break;
      }
      if (!n.gain) { // NanoChat's: ones, and no bias
        slot.parts.clear();
        slot.fill = 1.0;
        list.push_back(std::move(slot));
        return;
      }
      list.push_back(std::move(slot));
    }
  }
  void norm(const std::string &name, int64_t n) {
    if (name.empty())
      return;
    if (!s.norm.gain) {
      list.push_back({name + ".weight", {n}, false, {}, 1.0});
      return;
    }
    vec(name + ".weight", n);
    if (s.norm.kind == NormType::LayerNorm && s.norm.bias)
      vec(name + ".bias", n);
  }
  void linear(const std::string &name, int64_t in, int64_t out, bool bias,
              int64_t swapHalves = 0) {
    list.push_back({name + ".weight", s.weightsInOut
                                          ? SmallVector<int64_t>{in, out}
                                          : SmallVector<int64_t>{out, in}});
    list.back().swapHalves = swapHalves;
    if (bias)
      vec(name + ".bias", out, swapHalves);
  }
};

std::string layerPrefix(const ModelSpec &s, int64_t layer) {
  std::string p = s.names.layerPrefix;
  size_t at = p.find("{i}");
  if (at != std::string::npos)
    p.replace(at, 3, std::to_string(layer));
  return p;
}

/// Emits tbc ops for one model; shared by the block functions and @forward.
class ModelEmitter {
public:
  ModelEmitter(OpBuilder &b, const ModelSpec &s, Type elt)
      : b(b), s(s), elt(elt), loc(b.getUnknownLoc()) {}

  /// [batch, seq, width] activations.
  RankedTensorType act(int64_t width) {
    return RankedTensorType::get(
        {ShapedType::kDynamic, ShapedType::kDynamic, width}, elt);
  }
  RankedTensorType positionsType() {
    return RankedTensorType::get({ShapedType::kDynamic, ShapedType::kDynamic},
                                 b.getI32Type());
  }

  Value param(const std::string &name, ArrayRef<int64_t> shape) {
    return ParamOp::create(b, loc, RankedTensorType::get(shape, elt), name);
  }

  /// A weight no checkpoint holds: `value` everywhere, made at bind time.
  Value fill(double value, ArrayRef<int64_t> shape) {
    return FillOp::create(b, loc, RankedTensorType::get(shape, elt), b.getF64FloatAttr(value));
  }

  /// A layer's weight for `slot`: its checkpoint tensor, or its parts'
  /// concatenation (a bind-time transform, as a merged QKV's weights).
  Value slotValue(const WeightSlot &slot, const std::string &prefix) {
    if (slot.fill) // the same in every row: nothing to swap
      return fill(*slot.fill, slot.shape);
    Value v;
    if (slot.parts.empty()) {
      v = param(slot.shared ? slot.name : prefix + slot.name, slot.shape);
    } else {
      SmallVector<Value> parts;
      int64_t each = slot.shape[0] / int64_t(slot.parts.size());
      for (const std::string &part : slot.parts)
        parts.push_back(param(prefix + part, {each}));
      v = ConcatOp::create(b, loc, RankedTensorType::get(slot.shape, elt), parts,
                           b.getI64IntegerAttr(0));
    }
    if (slot.swapHalves)
      v = SwapHalvesOp::create(b, loc, v, b.getI64IntegerAttr(slot.swapHalves));
    return v;
  }

  /// Norm `slot` (weights looked up in `w`); identity when `slot` is empty.
  Value norm(const std::map<std::string, Value> &w, const std::string &slot,
             Value x) {
    if (slot.empty())
      return x;
    Value weight = w.at(slot + ".weight");
    Value bias = s.norm.kind == NormType::LayerNorm && s.norm.bias ? w.at(slot + ".bias") : Value();
    return normOf(s.norm, x, weight, bias, 1);
  }

  /// A norm outside the blocks (its weights are model-level params).
  Value globalNorm(const std::string &name, Value x) {
    std::map<std::string, Value> w;
    w[name + ".weight"] =
        s.norm.gain ? param(name + ".weight", {s.hiddenSize}) : fill(1.0, {s.hiddenSize});
    if (s.norm.kind == NormType::LayerNorm && s.norm.bias)
      w[name + ".bias"] = param(name + ".bias", {s.hiddenSize});
    return norm(w, name, x);
  }

  /// A norm of kind `n` over `groups` groups of x's features.
  Value normOf(const NormSpec &n, Value x, Value weight, Value bias, int64_t groups) {
    IntegerAttr groupsAttr = groups != 1 ? b.getI64IntegerAttr(groups) : IntegerAttr();
    FloatAttr offset = n.gainOffset != 0 ? b.getF64FloatAttr(n.gainOffset) : FloatAttr();
    if (n.kind == NormType::LayerNorm)
      return LayerNormOp::create(b, loc, x.getType(), x, weight, bias, b.getF64FloatAttr(n.eps),
                                 offset, groupsAttr);
    return RMSNormOp::create(b, loc, x.getType(), x, weight, b.getF64FloatAttr(n.eps), offset,
                             groupsAttr);
  }

  /// The QK-norm of q or k (`heads` heads), weights in slot `name`.
  Value qkNorm(const std::map<std::string, Value> &w, const std::string &name, Value x,
               int64_t heads) {
    const NormSpec &n = s.qkNormOrBlockNorm();
    Value bias = n.kind == NormType::LayerNorm && n.bias ? w.at(name + ".bias") : Value();
    return normOf(n, x, w.at(name + ".weight"), bias,
                  s.qkNorm == QKNormKind::Full ? 1 : heads);
  }

  Value linear(const std::map<std::string, Value> &w, const std::string &slot,
               Value x, bool bias) {
    Value weight = w.at(slot + ".weight");
    Value b_ = bias ? w.at(slot + ".bias") : Value();
    return LinearOp::create(b, loc, x, weight, b_, s.weightsInOut);
  }

  SmallVector<Value> split(Value x, ArrayRef<int64_t> widths, int64_t groups) {
    SmallVector<Type> types;
    for (int64_t wd : widths)
      types.push_back(act(wd));
    auto op = SplitOp::create(b, loc, types, x,
                              groups != 1 ? b.getI64IntegerAttr(groups)
                                          : IntegerAttr());
    return SmallVector<Value>(op.getResults());
  }

  /// The function being emitted's sequence lengths argument (null when no
  /// layer's RoPE depends on the sequence's length).
  Value lengths;

  Value rope(Value x, Value pos, const RopeSpec &r) {
    RopeScalingAttr scaling;
    const RopeScalingSpec &sc = r.scaling;
    auto array = [&](const std::vector<double> &v) {
      return v.empty() ? DenseF64ArrayAttr() : b.getDenseF64ArrayAttr(v);
    };
    if (sc.kind)
      scaling = RopeScalingAttr::get(
          b.getContext(), *sc.kind, APFloat(sc.factor), APFloat(sc.lowFreqFactor),
          APFloat(sc.highFreqFactor), sc.originalMaxPosition, APFloat(sc.attentionFactor),
          APFloat(sc.betaFast), APFloat(sc.betaSlow), sc.truncate, array(sc.shortFactor),
          array(sc.longFactor));
    return RopeOp::create(
        b, loc, x.getType(), x, pos,
        scaling && scaling.dependsOnLength() ? lengths : Value(),
        r.gptjStyle ? RopeStyle::gptj : RopeStyle::neox, s.headDim,
        r.rotaryDim, APFloat(r.theta), scaling);
  }

  /// q, k or v (or all three) clamped to [-clip_qkv, clip_qkv] (MPT, OLMo).
  Value clipQkv(Value x) {
    return s.clipQkv ? ClipOp::create(b, loc, x.getType(), x, b.getF64FloatAttr(*s.clipQkv))
                     : x;
  }

  Value attention(const std::map<std::string, Value> &w, Value x, Value pos,
                  const LayerVariant &variant) {
    int64_t qDim = s.numHeads * s.headDim, kvDim = s.numKvHeads * s.headDim;
    Value q, k, v;
    switch (s.qkvLayout) {
    case QkvLayout::Separate:
      q = clipQkv(linear(w, s.names.q, x, s.qkvBias));
      k = clipQkv(linear(w, s.names.k, x, s.qkvBias));
      v = clipQkv(linear(w, s.names.v, x, s.qkvBias));
      break;
    case QkvLayout::FusedRows:
    case QkvLayout::FusedInOut:
    case QkvLayout::FusedPerHead: {
      Value qkv = clipQkv(linear(w, s.names.qkv, x, s.qkvBias));
      bool perHead = s.qkvLayout == QkvLayout::FusedPerHead;
      SmallVector<Value> parts =
          split(qkv, {qDim, kvDim, kvDim}, perHead ? s.numKvHeads : 1);
      q = parts[0], k = parts[1], v = parts[2];
      break;
    }
    }
    auto normQK = [&] {
      if (s.qkNorm != QKNormKind::None) {
        q = qkNorm(w, s.names.qNorm, q, s.numHeads);
        k = qkNorm(w, s.names.kNorm, k, s.numKvHeads);
      }
    };
    if (!s.qkNormAfterRope)
      normQK();
    if (s.positions == PositionKind::Rope && !variant.noRope) {
      q = rope(q, pos, variant.rope);
      k = rope(k, pos, variant.rope);
    }
    if (s.qkNormAfterRope)
      normQK();
    double scale =
        s.attnScale > 0 ? s.attnScale : 1.0 / std::sqrt(double(s.headDim));
    bool relative = s.positions == PositionKind::Relative;
    Value a = AttentionOp::create(
        b, loc, q.getType(), q, k, v,
        relative ? w.at(s.names.relativeBias + ".weight") : Value(), /*window_size=*/Value(),
        s.numHeads,
        s.numKvHeads, s.headDim, APFloat(scale), s.causal,
        variant.window > 0 ? b.getI64IntegerAttr(variant.window)
                           : IntegerAttr(),
        s.attnSoftcap ? b.getF64FloatAttr(*s.attnSoftcap) : FloatAttr(),
        s.positions == PositionKind::Alibi
            ? b.getDenseF64ArrayAttr(s.alibiSlopes)
            : DenseF64ArrayAttr(),
        relative ? RelativeBucketsAttr::get(b.getContext(), s.relative.numBuckets,
                                            s.relative.maxDistance,
                                            s.relative.bidirectional)
                 : RelativeBucketsAttr());
    return linear(w, s.names.o, a, s.oBias);
  }

  Value ffn(const std::map<std::string, Value> &w, Value x) {
    Activation act = *symbolizeActivation(s.activation);
    Value h;
    if (s.ffnKind == FfnKind::Glu) {
      Value gate, up;
      if (s.fusedGateUp) {
        Value gu = linear(w, s.names.gateUp, x, s.ffnBias);
        SmallVector<Value> parts = split(gu, {s.ffnSize, s.ffnSize}, 1);
        gate = parts[0], up = parts[1];
      } else {
        gate = linear(w, s.names.gate, x, s.ffnBias);
        up = linear(w, s.names.up, x, s.ffnBias);
      }
      h = GluOp::create(b, loc, gate.getType(), act, gate, up);
    } else {
      Value up = linear(w, s.names.up, x, s.ffnBias);
      h = ActivationOp::create(b, loc, up.getType(), act, up);
    }
    return linear(w, s.names.down, h, s.downBias);
  }

  Value add(Value a, Value c) { return AddOp::create(b, loc, a, c); }

  Value scaled(Value x, double factor) {
    return factor == 1.0 ? x
                         : ScaleOp::create(b, loc, x.getType(), x, b.getF64FloatAttr(factor))
                               .getResult();
  }
  /// A sub-layer's output as the residual stream adds it.
  Value branch(Value out) { return scaled(out, s.residualScale); }

  /// One decoder layer in the spec's norm placement.
  Value block(const std::map<std::string, Value> &w, Value x, Value pos,
              const LayerVariant &v) {
    const WeightNames &n = s.names;
    if (s.parallelBlock) {
      Value attnIn = norm(w, n.attnPreNorm, x);
      Value attnOut = branch(attention(w, attnIn, pos, v));
      Value ffnOut = branch(ffn(w, s.sharedParallelNorm ? attnIn : norm(w, n.ffnPreNorm, x)));
      return add(add(x, attnOut), ffnOut);
    }
    switch (s.placement) {
    case NormPlacement::Post: {
      Value h = norm(w, n.attnPostNorm, add(x, branch(attention(w, x, pos, v))));
      return norm(w, n.ffnPostNorm, add(h, branch(ffn(w, h))));
    }
    case NormPlacement::Pre:
    case NormPlacement::BranchPost:
    case NormPlacement::Sandwich: {
      Value a = attention(w, norm(w, n.attnPreNorm, x), pos, v);
      Value h = add(x, branch(norm(w, n.attnPostNorm, a)));
      Value f = ffn(w, norm(w, n.ffnPreNorm, h));
      return add(h, branch(norm(w, n.ffnPostNorm, f)));
    }
    }
    return x;
  }

private:
  OpBuilder &b;
  const ModelSpec &s;
  Type elt;
  Location loc;
};

/// "block" when all layers agree, else names saying what differs
/// ("block_window4096", "block_global"), numbered only if still ambiguous.
std::vector<std::string> blockNames(const std::vector<LayerVariant> &variants) {
  if (variants.size() == 1)
    return {"block"};
  std::vector<std::string> names;
  for (const LayerVariant &v : variants)
    names.push_back((v.window > 0 ? "block_window" + std::to_string(v.window) : "block_global") +
                    (v.noRope ? "_nope" : ""));
  std::vector<std::string> unique = names;
  for (size_t i = 0; i < names.size(); ++i)
    if (std::count(names.begin(), names.end(), names[i]) > 1)
      unique[i] += "_" + std::to_string(i);
  return unique;
}

} // namespace

OwningOpRef<ModuleOp> tbc::buildModelIR(MLIRContext &ctx, const ModelSpec &s,
                                        Type elt) {
  ctx.getOrLoadDialect<TbcDialect>();
  ctx.getOrLoadDialect<func::FuncDialect>();
  OpBuilder b(&ctx);
  Location loc = b.getUnknownLoc();
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  module->getOperation()->setAttr(TbcDialect::ArchitectureAttrHelper::getNameStr(),
                                  b.getStringAttr(s.architecture));
  module->getOperation()->setAttr(TbcDialect::VocabSizeAttrHelper::getNameStr(),
                                  b.getI64IntegerAttr(s.vocabSize));
  if (s.maxPositions > 0)
    module->getOperation()->setAttr(TbcDialect::MaxPositionsAttrHelper::getNameStr(),
                                    b.getI64IntegerAttr(s.maxPositions));
  b.setInsertionPointToEnd(module->getBody());
  ModelEmitter em(b, s, elt);
  SlotList slots(s);

  // Distinct layer kinds, in order of first appearance.
  std::vector<LayerVariant> variants;
  std::vector<size_t> variantOf;
  for (const LayerVariant &l : s.layers) {
    size_t k = 0;
    while (k < variants.size() && !(variants[k] == l))
      ++k;
    if (k == variants.size())
      variants.push_back(l);
    variantOf.push_back(k);
  }

  // LongRoPE and dynamic NTK pick their frequencies by the sequence's
  // length: the model then takes each row's sequence length as an input.
  bool withLengths =
      s.positions == PositionKind::Rope &&
      llvm::any_of(s.layers, [](const LayerVariant &l) {
        return l.rope.scaling.kind &&
               RopeScalingAttr::dependsOnLength(*l.rope.scaling.kind);
      });
  auto nameArg = [&](func::FuncOp fn, unsigned i, StringRef name) {
    fn.setArgAttr(i, TbcDialect::NameAttrHelper::getNameStr(), b.getStringAttr(name));
  };

  // @forward first, so it reads top-down; block functions follow.
  RankedTensorType logitsType = em.act(s.vocabSize);
  SmallVector<Type> forwardArgs{em.positionsType(), em.positionsType()};
  if (withLengths)
    forwardArgs.push_back(em.positionsType());
  auto forward = func::FuncOp::create(
      b, loc, "forward", b.getFunctionType(forwardArgs, {logitsType}));
  nameArg(forward, 0, "token_ids");
  nameArg(forward, 1, "positions");
  if (withLengths)
    nameArg(forward, 2, "sequence_lengths");

  std::vector<func::FuncOp> blocks;
  SmallVector<Type> blockArgs{em.act(s.hiddenSize), em.positionsType()};
  if (withLengths)
    blockArgs.push_back(em.positionsType());
  unsigned firstWeight = blockArgs.size();
  for (const WeightSlot &slot : slots.slots())
    blockArgs.push_back(RankedTensorType::get(slot.shape, elt));
  std::vector<std::string> names = blockNames(variants);
  for (size_t k = 0; k < variants.size(); ++k) {
    auto fn = func::FuncOp::create(
        b, loc, names[k],
        b.getFunctionType(blockArgs, {em.act(s.hiddenSize)}));
    fn.setPrivate();
    nameArg(fn, 0, "hidden");
    nameArg(fn, 1, "positions");
    if (withLengths)
      nameArg(fn, 2, "sequence_lengths");
    for (size_t i = 0; i < slots.slots().size(); ++i)
      nameArg(fn, firstWeight + i, slots.slots()[i].name);
    Block *body = fn.addEntryBlock();
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(body);
    std::map<std::string, Value> w;
    for (size_t i = 0; i < slots.slots().size(); ++i)
      w[slots.slots()[i].name] = body->getArgument(firstWeight + i);
    em.lengths = withLengths ? body->getArgument(2) : Value();
    Value out = em.block(w, body->getArgument(0), body->getArgument(1),
                         variants[k]);
    func::ReturnOp::create(b, loc, out);
    blocks.push_back(fn);
  }

  Block *entry = forward.addEntryBlock();
  b.setInsertionPointToEnd(entry);
  Value ids = entry->getArgument(0), pos = entry->getArgument(1);
  em.lengths = withLengths ? entry->getArgument(2) : Value();
  Value table = em.param(s.names.embed, {s.vocabSize, s.hiddenSize});
  Value h = EmbeddingOp::create(
      b, loc, table, ids,
      s.embeddingScale != 1.0 ? b.getF64FloatAttr(s.embeddingScale)
                              : FloatAttr());
  // BLOOM's word_embeddings_layernorm: the blocks' norm kind, own weights.
  if (!s.names.embedNorm.empty())
    h = em.globalNorm(s.names.embedNorm, h);
  if (s.positions == PositionKind::Learned) {
    Value wpe = em.param(s.names.positionEmbed,
                         {s.maxPositions + s.positionOffset, s.hiddenSize});
    if (s.positionOffset)
      wpe = RowSliceOp::create(b, loc, RankedTensorType::get({s.maxPositions, s.hiddenSize}, elt),
                               wpe, b.getI64IntegerAttr(s.positionOffset));
    h = em.add(h, EmbeddingOp::create(b, loc, wpe, pos, FloatAttr()));
  } else if (s.positions == PositionKind::Sinusoidal) {
    h = em.add(h, SinusoidalPositionsOp::create(
                      b, loc, em.act(s.hiddenSize), pos,
                      b.getF64FloatAttr(s.sinusoidalBase)));
  }
  for (int64_t i = 0; i < s.numLayers; ++i) {
    SmallVector<Value> args{h, pos};
    if (withLengths)
      args.push_back(em.lengths);
    std::string prefix = layerPrefix(s, i);
    for (const WeightSlot &slot : slots.slots())
      args.push_back(em.slotValue(slot, prefix));
    h = func::CallOp::create(b, loc, blocks[variantOf[i]], args).getResult(0);
  }
  if (s.finalNorm)
    h = em.globalNorm(s.names.finalNorm, h);
  Value head = s.tiedEmbeddings
                   ? table
                   : em.param(s.names.lmHead, {s.vocabSize, s.hiddenSize});
  Value headBias = s.lmHeadBias ? em.param(s.names.lmHeadBias, {s.vocabSize}) : Value();
  Value logits = em.scaled(LinearOp::create(b, loc, h, head, headBias, false), s.logitScale);
  if (s.finalSoftcap)
    logits = SoftcapOp::create(b, loc, logits.getType(), logits,
                               b.getF64FloatAttr(*s.finalSoftcap));
  func::ReturnOp::create(b, loc, logits);
  return module;
}
