//===- Runtime.cpp - load a .tbcm module, bind weights, run it ------------===//

#include "tbc/Runtime/Runtime.h"

#include "tbc/Support/ModuleFile.h"
#include "ModuleImpl.h"
#include "tbc/Support/FileIO.h"
#include "tbc/Support/Json.h"
#include "tbc/Support/Limits.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

using namespace tbc;
using namespace tbc::rt;
using namespace tbc::rt::detail;

namespace {
/// The index of the first NaN or infinity in `v[0, n)`, or n. The common
/// case (none) is a branch-free OR of "exponent all ones" that the compiler
/// vectorises: a prefill's logits (T x vocab) cost well under 1% of it.
size_t firstNonFinite(const float *v, size_t n) {
  const uint32_t *bits = reinterpret_cast<const uint32_t *>(v);
  uint32_t any = 0;
  for (size_t i = 0; i < n; ++i)
    any |= (bits[i] & 0x7f800000u) == 0x7f800000u;
  if (!any)
    return n;
  size_t i = 0;
  while (i < n && std::isfinite(v[i]))
    ++i;
  return i;
}


/// Converts to f32; false and `bad` (the first non-finite element) when the
/// tensor holds a NaN or an infinity: such a weight makes every logit NaN.
bool toFloat(const TensorView &t, std::vector<float> &out, size_t &bad) {
  size_t n = size_t(t.numElements());
  out.resize(n);
  if (t.dtype == DType::F32) {
    std::memcpy(out.data(), t.data, n * 4);
  } else if (t.dtype == DType::BF16) {
    for (size_t i = 0; i < n; ++i) {
      uint16_t v;
      std::memcpy(&v, t.data + 2 * i, 2);
      out[i] = fromBF16Bits(v);
    }
  } else {
    for (size_t i = 0; i < n; ++i) {
      uint16_t v;
      std::memcpy(&v, t.data + 2 * i, 2);
      out[i] = fromHalfBits(v);
    }
  }
  bad = firstNonFinite(out.data(), n);
  return bad == n;
}

} // namespace


Module::Module() : impl_(new Impl) {}
Module::~Module() = default;

bool Module::Impl::parseManifest(const std::string &text, Module &m,
                                 std::string &error) {
  // Structure and references (tbc/Support/Manifest.h); then what the runtime
  // derives from it and the consistency checks of ManifestCheck.cpp.
  manifest::Manifest mf;
  if (!manifest::read(text, mf, error))
    return false;
  target = mf.target;
  m.vocab_ = mf.model.vocabSize;
  m.maxPositions_ = mf.model.maxPositions;
  m.architecture_ = mf.model.architecture;
  if (mf.model.config)
    m.sourceConfig_ = std::make_shared<json::Value>(*mf.model.config);
  for (manifest::Param &p : mf.params)
    m.params_.push_back(ParamInfo{std::move(p.name), std::move(p.shape)});
  weightEntries = std::move(mf.weights);
  buffers = std::move(mf.buffers);
  steps = std::move(mf.steps);
  output = mf.output;
  for (manifest::Kernel &k : mf.kernels) {
    kernelNames.push_back(k.symbol); // resolved by the executor's load()
    rowParallel.push_back(k.rowParallel);
    gathers.push_back(k.role == "embedding");
    launches.push_back(std::move(k.launches));
    splits.push_back(k.work ? Split{k.work->count, k.work->align} : Split{});
    signatures.push_back(std::move(k.signature));
  }
  if (!checkConsistency(m, error))
    return false;
  readByKernels.assign(weightEntries.size(), false);
  for (const Step &step : steps)
    for (const Arg &a : step.args)
      if (a.weight)
        readByKernels[a.id] = true;
  for (const Step &step : steps) {
    int64_t n = 0;
    for (const Arg &a : step.args)
      if (a.weight)
        n += product(weightEntries[a.id].shape);
    stepWeightElements.push_back(n);
  }
  return true;
}

bool Module::checkManifest(const std::string &manifest, std::string &error) {
  Module m;
  return m.impl_->parseManifest(manifest, m, error);
}


std::unique_ptr<Module> Module::load(const std::string &path,
                                     std::string &error) {
  std::string bytes;
  if (std::string why = readRegularFile(path, limits::kModuleFileBytes, bytes);
      !why.empty()) {
    error = why;
    return nullptr;
  }
  ModuleFile file;
  std::string why;
  if (!decodeModuleFile(bytes, file, why)) {
    error = path + ": " + why;
    return nullptr;
  }
  std::unique_ptr<Module> m(new Module());
  Impl &im = *m->impl_;
  if (!im.parseManifest(file.manifest, *m, why)) {
    error = path + ": " + why;
    return nullptr;
  }
  im.device = createDeviceExecutor(im.target, why);
  if (!im.device || !im.device->load(file, *m, why)) {
    error = path + ": " + why;
    return nullptr;
  }
  return m;
}

void Module::Impl::takeParams(std::vector<std::vector<float>> &values) {
  // A parameter several weights name (tied embeddings) is copied to all but
  // its last; the last takes it.
  std::vector<size_t> lastEntry(values.size(), 0);
  for (size_t id = 0; id < weightEntries.size(); ++id)
    if (weightEntries[id].op == "param")
      lastEntry[weightEntries[id].param] = id;
  weights.assign(weightEntries.size(), {});
  for (size_t id = 0; id < weightEntries.size(); ++id) {
    int p = weightEntries[id].param;
    if (weightEntries[id].op != "param")
      continue;
    if (lastEntry[p] == id)
      weights[id] = std::move(values[p]);
    else
      weights[id] = values[p];
  }
}

void Module::Impl::runTransforms() {
  // A weight no kernel reads (a checkpoint tensor that was concatenated,
  // folded or packed) is freed after the last transform that reads it, so
  // binding needs little more than the model's own size.
  weights16.assign(weightEntries.size(), {});
  std::vector<size_t> lastRead(weightEntries.size(), 0);
  for (size_t id = 0; id < weightEntries.size(); ++id)
    for (int in : weightEntries[id].inputs)
      lastRead[in] = id;
  auto release = [&](size_t id) {
    for (int in : weightEntries[id].inputs)
      if (!readByKernels[in] && lastRead[in] == id)
        std::vector<float>().swap(weights[in]);
  };

  for (size_t id = 0; id < weightEntries.size(); ++id) {
    const WeightEntry &e = weightEntries[id];
    if (e.op == "param") {
      if (!readByKernels[id] && lastRead[id] == 0)
        std::vector<float>().swap(weights[id]); // read by nothing at all
      continue;
    }
    if (e.op == "convert") {
      // bf16/f16: rounded to nearest even and kept in 16 bits, never widened.
      const std::vector<float> &w = weights[e.inputs[0]];
      if (e.dtype != "f32") {
        bool bf16 = e.dtype == "bf16";
        weights16[id].resize(w.size());
        for (size_t i = 0; i < w.size(); ++i)
          weights16[id][i] = toHalfWidthBits(w[i], bf16);
      } else {
        weights[id] = w;
      }
      release(id);
      continue;
    }
    std::vector<float> &out = weights[id];
    out.assign(size_t(product(e.shape)), 0.0f);
    const std::vector<int64_t> &ws = weightEntries[e.inputs[0]].shape;
    const std::vector<float> &w = weights[e.inputs[0]];
    if (e.op == "pack") {
      // out[p, k, j] = W[p * panel + j, k] ([out, in]) or W[k, p * panel + j]
      // ([in, out]); zero past the last output column.
      int64_t panels = e.shape[0], in = e.shape[1], panel = e.shape[2];
      int64_t outCols = e.inOut ? ws[1] : ws[0];
      for (int64_t p = 0; p < panels; ++p)
        for (int64_t j = 0; j < panel && p * panel + j < outCols; ++j) {
          int64_t o = p * panel + j;
          for (int64_t k = 0; k < in; ++k)
            out[(p * in + k) * panel + j] = e.inOut ? w[k * outCols + o] : w[o * in + k];
        }
      release(id);
      continue;
    }
    if (e.op == "concat") {
      // Rows (dim 0) or columns (dim 1) of rank-2 weights; vectors: dim 0.
      int64_t cols = e.shape.size() > 1 ? e.shape[1] : 1;
      int64_t at = 0;
      for (int in : e.inputs) {
        const std::vector<int64_t> &s = weightEntries[in].shape;
        const std::vector<float> &src = weights[in];
        int64_t r = s[0], c = s.size() > 1 ? s[1] : 1;
        for (int64_t i = 0; i < r; ++i)
          for (int64_t j = 0; j < c; ++j) {
            int64_t oi = e.dim == 0 ? at + i : i, oj = e.dim == 0 ? j : at + j;
            out[oi * cols + oj] = src[i * c + j];
          }
        at += e.dim == 0 ? r : c;
      }
      release(id);
      continue;
    }
    int64_t r = ws[0], c = ws[1];
    // Element (o, i) of an [out, in] weight, or of an [in, out] one.
    auto outIdx = [&](int64_t a, int64_t b) { return a * c + b; };
    if (e.op == "fold_gain") {
      const std::vector<float> &g = weights[e.inputs[1]];
      for (int64_t a = 0; a < r; ++a)
        for (int64_t b = 0; b < c; ++b) {
          float gain = float(e.offset) + g[e.inOut ? a : b];
          out[outIdx(a, b)] = w[outIdx(a, b)] * gain;
        }
    } else if (e.op == "weight_row_sums") {
      for (int64_t a = 0; a < r; ++a)
        for (int64_t b = 0; b < c; ++b)
          out[e.inOut ? b : a] += w[outIdx(a, b)];
    } else if (e.op == "fold_bias") {
      const std::vector<float> &beta = weights[e.inputs[1]];
      std::vector<double> acc(out.size(), 0.0);
      for (int64_t a = 0; a < r; ++a)
        for (int64_t b = 0; b < c; ++b) {
          int64_t o = e.inOut ? b : a, i = e.inOut ? a : b;
          acc[o] += double(w[outIdx(a, b)]) * beta[i];
        }
      for (size_t o = 0; o < out.size(); ++o)
        out[o] = float(acc[o]) + (e.inputs.size() > 2 ? weights[e.inputs[2]][o] : 0.0f);
    }
    release(id);
  }
}

/// Buffers real checkpoints carry that no module reads: GPT-2's and
/// GPT-NeoX's causal masks, older rotary inverse frequencies.
static bool isKnownUnusedTensor(const std::string &name) {
  static const char *const suffixes[] = {".attn.bias", ".attn.masked_bias",
                                         ".attention.bias", ".attention.masked_bias",
                                         "rotary_emb.inv_freq"};
  for (const char *suffix : suffixes) {
    size_t n = std::strlen(suffix);
    if (name.size() >= n && name.compare(name.size() - n, n, suffix) == 0)
      return true;
  }
  return false;
}

bool Module::checkSourceConfig(const WeightStore &store, std::string &error) const {
  if (!sourceConfig_)
    return true; // compiled from a native spec or IR: nothing to compare
  std::string path = store.folder() + "/config.json";
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0)
    return true; // a bare .safetensors file: no config beside it
  std::string text;
  if (std::string why = readRegularFile(path, limits::kConfigJson.maxBytes, text);
      !why.empty()) {
    error = why;
    return false;
  }
  json::ParseError pe;
  std::optional<json::Value> config = json::parse(text, pe, limits::kConfigJson);
  if (!config || !config->isObject()) {
    error = path + ":" + std::to_string(pe.pos.line) + ":" +
            std::to_string(pe.pos.column) + ": invalid JSON: " +
            (config ? "expected an object" : pe.message);
    return false;
  }
  auto shown = [](const json::Value *v) {
    std::string s = v ? json::serialize(*v) : "absent";
    return s.size() > 60 ? s.substr(0, 57) + "..." : s;
  };
  for (const auto &[key, want] : sourceConfig_->members()) {
    const json::Value *got = config->get(key);
    if (got && got->isNull())
      got = nullptr;
    bool same = got ? json::equal(*got, want) : want.isNull();
    if (!same) {
      error = path + ": field '" + key + "' is " + shown(got) +
              ", but the module was compiled from a config where it is " +
              shown(want.isNull() ? nullptr : &want) +
              ": these weights belong to another model (compile the module "
              "from this folder)";
      return false;
    }
  }
  return true;
}

bool Module::bindWeights(const WeightStore &store, std::string &error,
                         std::vector<std::string> *warnings) {
  if (!checkSourceConfig(store, error))
    return false;
  // Check everything before converting anything.
  std::vector<const TensorView *> views(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    const ParamInfo &p = params_[i];
    const TensorView *t = store.resolve(p.name);
    if (!t) {
      error = "tensor '" + p.name + "' is missing from the checkpoint";
      return false;
    }
    if (!isFloatDType(t->dtype)) {
      error = t->file + ": tensor '" + p.name + "' has dtype " +
              dtypeName(t->dtype) + "; expected F32, F16 or BF16";
      return false;
    }
    if (t->shape != p.shape) {
      error = t->file + ": tensor '" + p.name + "' has shape " +
              shapeString(t->shape) + "; the module needs " + shapeString(p.shape);
      return false;
    }
    views[i] = t;
  }
  if (warnings) {
    std::set<const TensorView *> used(views.begin(), views.end());
    std::vector<std::string> unused;
    for (const auto &[name, t] : store.all())
      if (!used.count(t) && !isKnownUnusedTensor(name))
        unused.push_back(name);
    if (!unused.empty()) {
      std::string list;
      for (size_t i = 0; i < unused.size() && i < 5; ++i)
        list += (i ? ", " : "") + unused[i];
      if (unused.size() > 5)
        list += ", ... (" + std::to_string(unused.size() - 5) + " more)";
      warnings->push_back(std::to_string(unused.size()) +
                          " checkpoint tensor(s) the module does not use: " + list);
    }
  }
  Impl &im = *impl_;
  std::vector<std::vector<float>> converted(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    size_t bad = 0;
    if (!toFloat(*views[i], converted[i], bad)) {
      error = views[i]->file + ": tensor '" + params_[i].name + "' holds " +
              (std::isnan(converted[i][bad]) ? "NaN" : "an infinity") +
              " at element " + std::to_string(bad) +
              "; a non-finite weight makes every logit NaN";
      return false;
    }
  }
  im.takeParams(converted);
  im.runTransforms();
  if (!im.device->weightsBound(*this, error))
    return false;
  bound_ = true;
  return true;
}

void Module::bindRandomWeights(uint64_t seed) {
  Impl &im = *impl_;
  std::vector<std::vector<float>> values(params_.size());
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  auto next = [&]() { // splitmix64 -> uniform [-1, 1)
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return float(int32_t(uint32_t((z ^ (z >> 31)) >> 32))) * (1.0f / 2147483648.0f);
  };
  for (size_t i = 0; i < params_.size(); ++i) {
    const ParamInfo &p = params_[i];
    // Matrices with variance 1/in keep activations O(1); vectors (norm
    // gains, biases) get sd 0.1 around 1 for gains, around 0 otherwise.
    // Uniform, not normal: a 7B model's worth takes seconds, not minutes.
    bool gain = p.shape.size() == 1 && p.name.find("norm") != std::string::npos &&
                p.name.size() > 7 && p.name.compare(p.name.size() - 7, 7, ".weight") == 0;
    double sd = p.shape.size() == 2 ? 1.0 / std::sqrt(double(p.shape[1])) : 0.1;
    values[i].resize(size_t(product(p.shape)));
    float center = gain ? 1.0f : 0.0f, halfWidth = float(sd * std::sqrt(3.0));
    for (float &v : values[i])
      v = center + halfWidth * next();
  }
  im.takeParams(values);
  im.runTransforms();
  im.deviceError.clear();
  if (!im.device->weightsBound(*this, im.deviceError))
    return; // sessions report deviceError
  bound_ = true;
}

int64_t Module::positionLimit() const { return impl_->positionLimit; }

Module::TokenCost Module::tokenCost() const {
  TokenCost cost;
  for (const Step &step : impl_->steps) {
    bool gather = impl_->gathers[step.kernel];
    for (const Arg &a : step.args) {
      if (!a.weight)
        continue;
      const std::vector<int64_t> &shape = impl_->weightEntries[a.id].shape;
      double elements = double(product(shape));
      double bytes = impl_->weightEntries[a.id].dtype == "f32" ? 4.0 : 2.0;
      if (gather && shape.size() >= 2) { // one row: [rows, hidden] or packed
        cost.weightBytes += bytes * double(shape[1]);
        continue;
      }
      cost.weightBytes += bytes * elements;
      if (shape.size() >= 2) // a matrix, or one packed in panels
        cost.matmulFlops += 2.0 * elements;
    }
  }
  return cost;
}

//===----------------------------------------------------------------------===//
// Session
//===----------------------------------------------------------------------===//

Session::Session(const Module &module, int64_t capacity)
    : module_(module),
      capacity_(std::min(capacity > 0                  ? capacity
                         : module.maxPositions() > 0 ? module.maxPositions()
                                                     : 4096,
                         limits::kMaxPositions)) {
  executorSession_ = module.impl().device->newSession(module, capacity_);
}


Session::~Session() = default;

void Session::setProfiling(bool on) {
  if (on && profile_.empty())
    clearProfile();
  executorSession_->setProfile(on ? &profile_ : nullptr);
}

void Session::clearProfile() {
  const auto &names = module_.impl().kernelNames;
  profile_.assign(names.size(), {});
  for (size_t k = 0; k < names.size(); ++k)
    profile_[k].name = names[k];
}

bool Session::forward(const std::vector<int32_t> &tokens,
                      std::vector<float> &logits, std::string &error) {
  // One session is one sequence: two threads running it at once would
  // interleave their positions in the cache.
  if (busy_.exchange(true)) {
    error = "this session is already running a forward on another thread; "
            "use one session per thread";
    return false;
  }
  struct Release {
    std::atomic<bool> &flag;
    ~Release() { flag = false; }
  } release{busy_};
  try {
    return run(tokens, logits, error);
  } catch (const std::bad_alloc &) {
    error = "out of memory running " + std::to_string(tokens.size()) + " tokens";
  } catch (const std::exception &e) {
    error = std::string("internal error: ") + e.what();
  }
  return false;
}

bool Session::run(const std::vector<int32_t> &tokens, std::vector<float> &logits,
                  std::string &error) {
  const Module::Impl &im = module_.impl();
  if (!module_.bound()) {
    error = im.deviceError.empty() ? "no weights are bound to the module" : im.deviceError;
    return false;
  }
  int64_t T = int64_t(tokens.size());
  if (T == 0) {
    error = "no tokens to run";
    return false;
  }
  if (position_ + T > im.positionLimit) {
    error = "the sequence would reach position " + std::to_string(position_ + T - 1) +
            "; the model's learned position table ends at " +
            std::to_string(im.positionLimit - 1);
    return false;
  }
  if (T > capacity_ - position_) {
    error = "the sequence would hold " + std::to_string(position_ + T) +
            " positions; this session holds at most " + std::to_string(capacity_);
    return false;
  }
  for (int32_t t : tokens)
    if (t < 0 || t >= module_.vocabSize()) {
      error = "token id " + std::to_string(t) + " is outside the vocabulary [0, " +
              std::to_string(module_.vocabSize()) + ")";
      return false;
    }
  std::vector<int32_t> positions(static_cast<size_t>(T), 0);
  for (int64_t i = 0; i < T; ++i)
    positions[i] = int32_t(position_ + i);
  // Everything device-specific (code, caches, launches) is the executor's.
  if (!executorSession_->forward(tokens, positions, position_, logits, error))
    return false;
  position_ += T;
  // NaN or infinite logits would make greedy decoding print token 0 forever.
  if (size_t i = firstNonFinite(logits.data(), logits.size()); i < logits.size()) {
    int64_t vocab = module_.vocabSize();
    error = "the forward produced a non-finite logit (" +
            std::string(std::isnan(logits[i]) ? "NaN" : "infinity") + ") at position " +
            std::to_string(position_ - T + int64_t(i) / vocab) + ", vocabulary entry " +
            std::to_string(int64_t(i) % vocab) + "; the weights or activations overflow f32";
    return false;
  }
  return true;
}

