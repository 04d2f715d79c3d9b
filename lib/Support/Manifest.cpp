//===- Manifest.cpp - a module manifest to and from JSON ------------------===//

#include "tbc/Support/Manifest.h"

#include "tbc/Support/HalfFloats.h"
#include "tbc/Support/Limits.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <utility>

using namespace tbc;
using namespace tbc::manifest;

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

namespace {
std::string ints(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string ints(const std::vector<int> &v) {
  return ints(std::vector<int64_t>(v.begin(), v.end()));
}

std::string boolean(bool b) { return b ? "true" : "false"; }

std::string arg(const Arg &a) {
  return std::string("{\"") + (a.weight ? "w" : "b") + "\": " + std::to_string(a.id) + "}";
}

std::string weight(size_t id, const Weight &w) {
  std::string s = "{\"id\": " + std::to_string(id) + ", \"op\": " + json::quote(w.op);
  if (w.op == "param") {
    s += ", \"param\": " + std::to_string(w.param);
  } else {
    s += ", \"inputs\": " + ints(w.inputs);
    if (w.op == "concat")
      s += ", \"dim\": " + std::to_string(w.dim);
    if (w.op == "fold_gain")
      s += ", \"offset\": " + json::formatNumber(w.offset);
    if (w.op == "fill")
      s += ", \"value\": " + json::formatNumber(w.value);
    if (w.op == "row_slice")
      s += ", \"start\": " + std::to_string(w.start);
    if (w.op == "swap_halves")
      s += ", \"block\": " + std::to_string(w.block);
    if (w.op == "convert")
      s += ", \"dtype\": " + json::quote(w.dtype);
    s += ", \"in_out\": " + boolean(w.inOut);
  }
  return s + ", \"shape\": " + ints(w.shape) + "}";
}

std::string buffer(size_t id, const Buffer &b) {
  std::string s = "{\"id\": " + std::to_string(id) + ", \"kind\": " + json::quote(b.kind);
  if (b.kind == "view")
    s += ", \"of\": " + std::to_string(b.of) + ", \"offset\": " + std::to_string(b.offset);
  if (!isSequenceInput(b.kind))
    s += ", \"width\": " + std::to_string(b.width);
  return s + ", \"dtype\": " + json::quote(b.dtype()) + "}";
}

std::string kernel(size_t id, const Kernel &k) {
  std::string s = "{\"id\": " + std::to_string(id) + ", \"name\": " + json::quote(k.name) +
                  ", \"symbol\": " + json::quote(k.symbol) + ", \"role\": " +
                  json::quote(k.role) + ", \"kv_cache\": " + boolean(k.kvCache) +
                  ", \"row_parallel\": " + boolean(k.rowParallel);
  if (k.kvCache)
    s += ", \"cache_dtype\": " + json::quote(k.cacheType);
  if (k.scratch)
    s += ", \"scratch\": " + std::to_string(k.scratch);
  if (k.staging)
    s += ", \"staging\": " + std::to_string(k.staging);
  if (k.scalars)
    s += ", \"scalars\": " + std::to_string(k.scalars);
  if (k.work)
    s += ", \"work\": {\"unit\": " + json::quote(k.work->unit) +
         ", \"count\": " + std::to_string(k.work->count) +
         ", \"align\": " + std::to_string(k.work->align) + "}";
  if (!k.launches.empty()) {
    s += ", \"launches\": [";
    for (size_t i = 0; i < k.launches.size(); ++i) {
      const Launch &l = k.launches[i];
      s += std::string(i ? ", " : "") + "{\"symbol\": " + json::quote(l.symbol) +
           ", \"block\": " + ints(std::vector<int64_t>{l.blockX, l.blockY}) +
           ", \"grid_x\": " + std::to_string(l.gridX) +
           ", \"rows_per_block\": " + std::to_string(l.rowsPerBlock) +
           ", \"rows\": " + ints(std::vector<int64_t>{l.minRows, l.maxRows}) +
           (l.sharedBytes ? ", \"shared_bytes\": " + std::to_string(l.sharedBytes) : "") +
           (l.programmatic ? ", \"programmatic\": true" : "") + "}";
    }
    s += "]";
  }
  s += ", \"signature\": [";
  for (size_t i = 0; i < k.signature.size(); ++i)
    s += (i ? ", " : "") + ints(k.signature[i]);
  return s + "]}";
}

std::string step(const Step &st) {
  std::string s = "{\"kernel\": " + std::to_string(st.kernel) + ", \"args\": [";
  for (size_t i = 0; i < st.args.size(); ++i)
    s += (i ? ", " : "") + arg(st.args[i]);
  s += "]";
  if (!st.caches.empty()) {
    s += ", \"caches\": [";
    for (size_t i = 0; i < st.caches.size(); ++i)
      s += (i ? ", " : "") + arg(Arg{false, st.caches[i]});
    s += "]";
  }
  if (!st.scalars.empty())
    s += ", \"scalars\": " + ints(st.scalars);
  return s + "}";
}

template <typename T, typename F>
void list(std::string &out, const char *key, const std::vector<T> &items, F entry) {
  out += std::string("  \"") + key + "\": [\n";
  for (size_t i = 0; i < items.size(); ++i)
    out += "    " + entry(i, items[i]) + (i + 1 < items.size() ? ",\n" : "\n");
  out += "  ],\n";
}
} // namespace

std::string manifest::write(const Manifest &m) {
  std::string out = "{\n  \"format\": \"tbcm\",\n  \"version\": " + std::to_string(kVersion) +
                    ",\n  \"target\": " + json::quote(m.target) + ",\n";
  out += "  \"model\": {\"architecture\": " + json::quote(m.model.architecture) +
         ", \"vocab_size\": " + std::to_string(m.model.vocabSize) +
         ", \"max_positions\": " + std::to_string(m.model.maxPositions) +
         (m.model.config ? ", \"config\": " + json::serialize(*m.model.config) : "") + "},\n";
  list(out, "params", m.params, [](size_t, const Param &p) {
    return "{\"name\": " + json::quote(p.name) + ", \"shape\": " + ints(p.shape) + "}";
  });
  list(out, "weights", m.weights, weight);
  list(out, "buffers", m.buffers, buffer);
  list(out, "kernels", m.kernels, kernel);
  list(out, "steps", m.steps, [](size_t, const Step &s) { return step(s); });
  if (!m.taps.empty())
    list(out, "taps", m.taps, [](size_t, const Tap &t) {
      return "{\"name\": " + json::quote(t.name) + ", \"buffer\": " + std::to_string(t.buffer) +
             "}";
    });
  return out + "  \"output\": " + std::to_string(m.output) + "\n}\n";
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

namespace {
bool readInts(const json::Value *v, std::vector<int64_t> &out) {
  if (!v || !v->isArray())
    return false;
  for (const json::Value &e : v->elements()) {
    if (!e.isInteger())
      return false;
    out.push_back(e.asInt());
  }
  return true;
}

const json::Value *member(const json::Value &v, const char *key, json::Value::Kind kind) {
  const json::Value *m = v.get(key);
  return m && m->kind() == kind ? m : nullptr;
}

/// A KV cache's element type: f32, bf16 or f16.
bool readCacheType(const json::Value &v, std::string &out) {
  if (!v.isString() || !isStorageType(v.asString()))
    return false;
  out = v.asString();
  return true;
}

bool readLaunch(const json::Value &l, Launch &info) {
  const json::Value *s = l.get("symbol"), *gx = l.get("grid_x"), *rows = l.get("rows_per_block");
  std::vector<int64_t> b, range;
  if (!s || !s->isString() || !readInts(l.get("block"), b) || b.size() != 2 || !gx ||
      !gx->isInteger() || !rows || !rows->isInteger() || !readInts(l.get("rows"), range) ||
      range.size() != 2)
    return false;
  info = {s->asString(), b[0], b[1], gx->asInt(), rows->asInt(), range[0], range[1]};
  if (const json::Value *shared = l.get("shared_bytes")) {
    if (!shared->isInteger())
      return false;
    info.sharedBytes = shared->asInt(); // bounded by the caller
  }
  if (const json::Value *p = l.get("programmatic")) {
    if (!p->isBool())
      return false;
    info.programmatic = p->asBool();
  }
  return true;
}

/// Whether every chunk size (1 row and up) is served by some launch: a
/// chunk no launch serves would leave the kernel's results unwritten.
bool coversEveryChunk(const std::vector<Launch> &launches) {
  std::vector<std::pair<int64_t, int64_t>> ranges; // sorted by their start
  for (const Launch &l : launches)
    ranges.emplace_back(l.minRows, l.maxRows);
  std::sort(ranges.begin(), ranges.end());
  int64_t next = 1; // the smallest chunk not yet served
  for (auto [lo, hi] : ranges) {
    if (lo > next)
      return false;
    if (hi == 0)
      return true;
    next = std::max(next, hi + 1);
  }
  return false;
}
} // namespace

bool manifest::read(std::string_view text, Manifest &m, std::string &error) {
  m = Manifest{}; // what a previous read left must not satisfy this one's references
  json::ParseError pe;
  std::optional<json::Value> root = json::parse(text, pe, limits::kManifest);
  if (!root || !root->isObject()) {
    error = "manifest is not valid JSON (line " + std::to_string(pe.pos.line) + "): " +
            pe.message;
    return false;
  }
  auto bad = [&](const std::string &what) {
    error = "manifest: " + what;
    return false;
  };
  const json::Value *version = root->get("version");
  if (!version || !version->isInteger() || version->asInt() < kOldestVersion ||
      version->asInt() > kVersion)
    return bad("format version " +
               (version ? json::serialize(*version) : std::string("(none)")) +
               ", this runtime reads versions " + std::to_string(kOldestVersion) + " to " +
               std::to_string(kVersion) + "; compile the model again (tbc compile)");
  const json::Value *model = root->get("model");
  if (!model || !model->get("vocab_size") || !model->get("vocab_size")->isInteger())
    return bad("missing model.vocab_size");
  m.model.vocabSize = model->get("vocab_size")->asInt();
  if (m.model.vocabSize < 1 || m.model.vocabSize > (int64_t(1) << 31))
    return bad("model.vocab_size " + std::to_string(m.model.vocabSize) + " is out of range");
  if (const json::Value *mp = model->get("max_positions"); mp && mp->isInteger())
    m.model.maxPositions = mp->asInt();
  if (m.model.maxPositions < 0)
    return bad("model.max_positions is negative");
  if (const json::Value *t = root->get("target"); t && t->isString())
    m.target = t->asString();
  else
    return bad("missing target");
  if (const json::Value *c = model->get("config")) {
    if (!c->isObject())
      return bad("model.config must be an object");
    m.model.config = *c;
  }
  if (const json::Value *a = model->get("architecture"); a && a->isString())
    m.model.architecture = a->asString();

  using K = json::Value::Kind;
  const json::Value *params = member(*root, "params", K::Array),
                    *weights = member(*root, "weights", K::Array),
                    *bufs = member(*root, "buffers", K::Array),
                    *kerns = member(*root, "kernels", K::Array),
                    *stps = member(*root, "steps", K::Array), *out = root->get("output");
  if (!params || !weights || !bufs || !kerns || !stps || !out || !out->isInteger())
    return bad("missing params, weights, buffers, kernels, steps or output");
  for (const json::Value &p : params->elements()) {
    Param info;
    const json::Value *name = p.get("name");
    if (!name || !name->isString() || !readInts(p.get("shape"), info.shape))
      return bad("a parameter lacks a name or shape");
    info.name = name->asString();
    m.params.push_back(std::move(info));
  }
  for (const json::Value &w : weights->elements()) {
    Weight e;
    const json::Value *op = w.get("op");
    if (!op || !op->isString() || !readInts(w.get("shape"), e.shape))
      return bad("a weight lacks its op or shape");
    e.op = op->asString();
    if (e.op == "param") {
      const json::Value *p = w.get("param");
      if (!p || !p->isInteger() || p->asInt() < 0 || p->asInt() >= int64_t(m.params.size()))
        return bad("weight refers to an unknown parameter");
      e.param = int(p->asInt());
    } else {
      std::vector<int64_t> in;
      if (!readInts(w.get("inputs"), in))
        return bad("weight transform lacks inputs");
      for (int64_t i : in) {
        if (i < 0 || i >= int64_t(m.weights.size()))
          return bad("weight transform refers to a later weight");
        e.inputs.push_back(int(i));
      }
      if (const json::Value *d = w.get("dim"); d && d->isInteger())
        e.dim = d->asInt();
      if (const json::Value *o = w.get("offset"); o && o->isNumber())
        e.offset = o->asDouble();
      if (const json::Value *io = w.get("in_out"); io && io->isBool())
        e.inOut = io->asBool();
      static const char *known[] = {"fill",      "concat", "row_slice", "swap_halves", "fold_gain",
                                    "weight_row_sums", "fold_bias", "pack", "pack_pairs",
                                    "convert"};
      if (std::find(std::begin(known), std::end(known), e.op) == std::end(known))
        return bad("unknown weight transform '" + e.op + "'");
      if (e.op == "fill") {
        const json::Value *v = w.get("value");
        if (!v || !v->isNumber() || !std::isfinite(v->asDouble()))
          return bad("a fill weight needs a finite value");
        e.value = v->asDouble();
      }
      if (e.op == "row_slice") {
        const json::Value *st = w.get("start");
        if (!st || !st->isInteger())
          return bad("a row_slice weight needs its start row");
        e.start = st->asInt();
      }
      if (e.op == "swap_halves") {
        const json::Value *bl = w.get("block");
        if (!bl || !bl->isInteger())
          return bad("a swap_halves weight needs its block");
        e.block = bl->asInt();
      }
      if (e.op == "convert") {
        const json::Value *d = w.get("dtype");
        if (!d || !d->isString() || !isStorageType(d->asString()))
          return bad("a convert weight needs a dtype of bf16, f16 or f32");
        e.dtype = d->asString();
      } else if (e.inputs.size() && m.weights[e.inputs[0]].dtype != "f32") {
        return bad("weight transform '" + e.op + "' of a " + m.weights[e.inputs[0]].dtype +
                   " weight (convert comes last)");
      }
    }
    m.weights.push_back(std::move(e));
  }
  for (const json::Value &b : bufs->elements()) {
    Buffer e;
    const json::Value *kind = b.get("kind");
    if (!kind || !kind->isString())
      return bad("a buffer lacks its kind");
    e.kind = kind->asString();
    if (const json::Value *w = b.get("width"); w && w->isInteger())
      e.width = w->asInt();
    if (const json::Value *of = b.get("of"); of && of->isInteger())
      e.of = int(of->asInt());
    if (const json::Value *o = b.get("offset"); o && o->isInteger())
      e.offset = o->asInt();
    if (e.kind == "kv_cache") {
      // Absent in modules written before caches had a choice: f32.
      if (const json::Value *d = b.get("dtype"); d && !readCacheType(*d, e.cacheType))
        return bad("a kv_cache buffer's dtype must be f32, bf16 or f16");
    }
    if (e.kind == "view" && (e.of < 0 || e.of >= int(m.buffers.size()) ||
                             m.buffers[e.of].kind != "activation"))
      return bad("a view refers to an unknown buffer");
    m.buffers.push_back(std::move(e));
  }
  for (const json::Value &k : kerns->elements()) {
    Kernel kernel;
    const json::Value *sym = k.get("symbol");
    if (!sym || !sym->isString())
      return bad("a kernel lacks its symbol");
    kernel.symbol = sym->asString();
    if (const json::Value *n = k.get("name"); n && n->isString())
      kernel.name = n->asString();
    const json::Value *role = k.get("role");
    if (!role || !role->isString())
      return bad("kernel '" + kernel.symbol + "' lacks its role");
    kernel.role = role->asString();
    const json::Value *rp = k.get("row_parallel"), *kv = k.get("kv_cache");
    kernel.rowParallel = rp && rp->isBool() && rp->asBool();
    kernel.kvCache = kv && kv->isBool() && kv->asBool();
    if (const json::Value *d = k.get("cache_dtype"); d && !readCacheType(*d, kernel.cacheType))
      return bad("kernel '" + kernel.symbol + "': cache_dtype must be f32, bf16 or f16");
    if (const json::Value *n = k.get("scratch")) {
      if (!n->isInteger() || n->asInt() < 1 || n->asInt() > limits::kMaxScratchFloats)
        return bad("kernel '" + kernel.symbol + "': scratch must be a count of f32 values from 1 to " +
                   std::to_string(limits::kMaxScratchFloats));
      kernel.scratch = n->asInt();
    }
    if (const json::Value *n = k.get("staging")) {
      if (!n->isInteger() || n->asInt() < 1 || n->asInt() > limits::kMaxStagingWidth)
        return bad("kernel '" + kernel.symbol + "': staging must be a row width from 1 to " +
                   std::to_string(limits::kMaxStagingWidth));
      kernel.staging = n->asInt();
    }
    if (const json::Value *n = k.get("scalars")) {
      if (!n->isInteger() || n->asInt() < 1 || n->asInt() > limits::kMaxKernelScalars)
        return bad("kernel '" + kernel.symbol + "': scalars must be a count from 1 to " +
                   std::to_string(limits::kMaxKernelScalars));
      kernel.scalars = n->asInt();
    }
    if (const json::Value *w = k.get("work")) {
      const json::Value *unit = w->get("unit"), *count = w->get("count"),
                        *align = w->get("align");
      if (!unit || !unit->isString() || !count || !count->isInteger() || !align ||
          !align->isInteger() || count->asInt() < 1 || align->asInt() < 1)
        return bad("kernel '" + kernel.symbol + "' has a malformed work range");
      kernel.work = WorkRange{unit->asString(), count->asInt(), align->asInt()};
    }
    if (const json::Value *ls = k.get("launches")) {
      if (!ls->isArray())
        return bad("kernel '" + kernel.symbol + "' has malformed launches");
      for (const json::Value &l : ls->elements()) {
        Launch info;
        if (!readLaunch(l, info))
          return bad("kernel '" + kernel.symbol + "' has a malformed launch");
        if (info.blockX < 1 || info.blockY < 1 || info.blockX * info.blockY > 1024 ||
            info.gridX < 1 || info.gridX > (int64_t(1) << 31) - 1 || info.rowsPerBlock < 1)
          return bad("kernel '" + kernel.symbol + "' has a launch outside the GPU's limits");
        // (Bounded, so that coversEveryChunk's maxRows + 1 cannot overflow.)
        if (info.minRows < 1 || info.maxRows < 0 || info.maxRows > (int64_t(1) << 40) ||
            (info.maxRows && info.maxRows < info.minRows))
          return bad("kernel '" + kernel.symbol + "' has a launch with a malformed row range");
        if (info.sharedBytes < 0 || info.sharedBytes > limits::kMaxDynamicSharedBytes)
          return bad("kernel '" + kernel.symbol + "': launch '" + info.symbol +
                     "' asks for " + std::to_string(info.sharedBytes) +
                     " bytes of shared memory, outside 0 to " +
                     std::to_string(limits::kMaxDynamicSharedBytes));
        kernel.launches.push_back(std::move(info));
      }
      if (!kernel.launches.empty() && !coversEveryChunk(kernel.launches))
        return bad("kernel '" + kernel.symbol + "' has no launch for some chunk sizes");
    }
    const json::Value *sig = k.get("signature");
    if (!sig || !sig->isArray())
      return bad("kernel '" + kernel.symbol + "' lacks its signature");
    for (const json::Value &shape : sig->elements()) {
      kernel.signature.emplace_back();
      if (!readInts(&shape, kernel.signature.back()))
        return bad("kernel '" + kernel.symbol + "' has a malformed signature");
    }
    m.kernels.push_back(std::move(kernel));
  }
  auto readArg = [&](const json::Value &a, Arg &arg) {
    const json::Value *w = a.get("w"), *b = a.get("b");
    if (w && w->isInteger() && w->asInt() >= 0 && w->asInt() < int64_t(m.weights.size())) {
      arg = {true, int(w->asInt())};
      return true;
    }
    if (b && b->isInteger() && b->asInt() >= 0 && b->asInt() < int64_t(m.buffers.size())) {
      arg = {false, int(b->asInt())};
      return true;
    }
    return false;
  };
  for (const json::Value &s : stps->elements()) {
    Step st;
    const json::Value *k = s.get("kernel"), *args = s.get("args");
    if (!k || !k->isInteger() || k->asInt() < 0 || k->asInt() >= int64_t(m.kernels.size()) ||
        !args || !args->isArray())
      return bad("a step refers to an unknown kernel");
    st.kernel = int(k->asInt());
    for (const json::Value &a : args->elements()) {
      Arg arg;
      if (!readArg(a, arg))
        return bad("a step argument refers to an unknown buffer or weight");
      st.args.push_back(arg);
    }
    if (const json::Value *c = s.get("caches")) {
      if (!c->isArray())
        return bad("a step's caches must be kv_cache buffers");
      for (const json::Value &a : c->elements()) {
        Arg arg;
        if (!readArg(a, arg) || arg.weight || m.buffers[arg.id].kind != "kv_cache")
          return bad("a step's caches must be kv_cache buffers");
        st.caches.push_back(arg.id);
      }
    }
    if (const json::Value *v = s.get("scalars"); v && !readInts(v, st.scalars))
      return bad("a step's scalars must be a list of integers");
    if (int64_t(st.scalars.size()) != m.kernels[st.kernel].scalars)
      return bad("a step of kernel '" + m.kernels[st.kernel].symbol + "' passes " +
                 std::to_string(st.scalars.size()) + " scalars; the kernel takes " +
                 std::to_string(m.kernels[st.kernel].scalars));
    m.steps.push_back(std::move(st));
  }
  if (m.steps.empty())
    return bad("the schedule has no steps");
  // Range-checked as int64, before the narrowing to int.
  if (out->asInt() < 0 || out->asInt() >= int64_t(m.buffers.size()) ||
      m.buffers[out->asInt()].kind != "activation" ||
      m.buffers[out->asInt()].width != m.model.vocabSize)
    return bad("the output must be a vocab-wide activation buffer");
  m.output = int(out->asInt());
  auto writesOutput = [&](const Step &st) {
    return std::any_of(st.args.begin(), st.args.end(), [&](const Arg &a) {
      return !a.weight && (a.id == m.output || (m.buffers[a.id].kind == "view" &&
                                                m.buffers[a.id].of == m.output));
    });
  };
  if (std::none_of(m.steps.begin(), m.steps.end(), writesOutput))
    return bad("no step writes the output buffer");
  if (const json::Value *taps = root->get("taps")) {
    if (!taps->isArray())
      return bad("taps must be a list");
    for (const json::Value &t : taps->elements()) {
      const json::Value *name = t.get("name"), *b = t.get("buffer");
      if (!name || !name->isString() || name->asString().empty() || !b || !b->isInteger() ||
          b->asInt() < 0 || b->asInt() >= int64_t(m.buffers.size()))
        return bad("a tap needs a name and a buffer of the schedule");
      const std::string &kind = m.buffers[b->asInt()].kind;
      if (kind != "activation" && kind != "view")
        return bad("tap '" + name->asString() + "' must name an activation, not a " + kind +
                   " buffer");
      m.taps.push_back({name->asString(), int(b->asInt())});
    }
  }
  return true;
}
