//===- Runtime.cpp - load a .tbcm module, bind weights, run it ------------===//

#include "tbc/Runtime/Runtime.h"

#include "tbc/Support/ModuleFile.h"
#include "ModuleImpl.h"
#include "tbc/Support/FileIO.h"
#include "tbc/Support/HalfFloats.h"
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


/// The index of the first NaN or infinity of a checkpoint tensor, or its
/// element count: such a weight makes every logit NaN. Read in place, in
/// the tensor's own precision (bytes, as the mapping need not be aligned).
size_t firstNonFinite(const TensorView &t) {
  size_t n = size_t(t.numElements());
  if (t.dtype == DType::F32) {
    for (size_t i = 0; i < n; ++i) {
      uint32_t v;
      std::memcpy(&v, t.data + 4 * i, 4);
      if ((v & 0x7f800000u) == 0x7f800000u)
        return i;
    }
    return n;
  }
  uint16_t exponent = t.dtype == DType::BF16 ? 0x7f80 : 0x7c00;
  for (size_t i = 0; i < n; ++i) {
    uint16_t v;
    std::memcpy(&v, t.data + 2 * i, 2);
    if ((v & exponent) == exponent)
      return i;
  }
  return n;
}

/// Whether element `i` (non-finite) of `t` is a NaN rather than an infinity.
bool isNaNAt(const TensorView &t, size_t i) {
  if (t.dtype == DType::F32) {
    uint32_t v;
    std::memcpy(&v, t.data + 4 * i, 4);
    return (v & 0x007fffffu) != 0;
  }
  uint16_t v;
  std::memcpy(&v, t.data + 2 * i, 2);
  return (v & (t.dtype == DType::BF16 ? 0x007f : 0x03ff)) != 0;
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
  taps = std::move(mf.taps);
  for (manifest::Kernel &k : mf.kernels) {
    kernelNames.push_back(k.symbol); // resolved by the executor's load()
    rowParallel.push_back(k.rowParallel);
    gathers.push_back(k.role == "embedding");
    launches.push_back(std::move(k.launches));
    splits.push_back(k.work ? Split{k.work->count, k.work->align} : Split{});
    signatures.push_back(std::move(k.signature));
    cacheTypes.push_back(std::move(k.cacheType));
    scratch.push_back(k.scratch);
    staging.push_back(k.staging);
  }
  if (!checkConsistency(m, error))
    return false;
  makeProfileEntries(m);
  lastRowTail = 0;
  for (size_t s = 0; s < steps.size(); ++s)
    if (!steps[s].caches.empty())
      lastRowTail = s + 1;
  for (size_t s = lastRowTail; s < steps.size(); ++s)
    if (!rowParallel[size_t(steps[s].kernel)])
      lastRowTail = steps.size();
  readByKernels.assign(weightEntries.size(), false);
  for (const Step &step : steps)
    for (const Arg &a : step.args)
      if (a.weight)
        readByKernels[a.id] = true;
  for (const Step &step : steps) {
    int64_t n = 0;
    double flops = 0;
    for (const Arg &a : step.args) {
      if (!a.weight)
        continue;
      const std::vector<int64_t> &shape = weightEntries[a.id].shape;
      n += product(shape);
      if (!gathers[step.kernel] && shape.size() >= 2) // a matrix, or one packed in panels
        flops += 2.0 * double(product(shape));
    }
    stepWeightElements.push_back(n);
    stepMatmulFlopsPerRow.push_back(flops);
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
  json::Value config;
  if (std::string why = json::readObjectFile(path, limits::kConfigJson, config); !why.empty()) {
    error = why;
    return false;
  }
  auto shown = [](const json::Value *v) {
    std::string s = v ? json::serialize(*v) : "absent";
    return s.size() > 60 ? s.substr(0, 57) + "..." : s;
  };
  for (const auto &[key, want] : sourceConfig_->members()) {
    const json::Value *got = config.get(key);
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
  for (size_t i = 0; i < params_.size(); ++i) {
    size_t bad = firstNonFinite(*views[i]);
    if (bad != size_t(views[i]->numElements())) {
      error = views[i]->file + ": tensor '" + params_[i].name + "' holds " +
              (isNaNAt(*views[i], bad) ? "NaN" : "an infinity") + " at element " +
              std::to_string(bad) + "; a non-finite weight makes every logit NaN";
      return false;
    }
  }
  // Each tensor is copied in its own precision when the transforms first
  // read it (a bf16 checkpoint is never widened as a whole).
  Impl &im = *impl_;
  im.runTransforms(
      [&](int p) { return StagedWeight::fromCheckpoint(*views[size_t(p)]); });
  if (!im.device->weightsBound(*this, error))
    return false;
  bound_ = true;
  return true;
}

void Module::bindRandomWeights(uint64_t seed) {
  Impl &im = *impl_;
  std::vector<LargeVector<float>> values(params_.size());
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
    // Each value bf16-representable: a module that stores weights in bf16
    // binds the same model as one that keeps them in f32, so a CUDA module
    // can be checked against the CPU path on random weights
    // (scripts/gpu-cpu-reference.py) with nothing but the kernels between.
    for (float &v : values[i])
      v = roundToBF16(center + halfWidth * next());
  }
  // A parameter several weights name (tied embeddings) is copied for all
  // but its last reader, which takes it.
  std::vector<int> readers(values.size(), 0);
  for (const WeightEntry &e : im.weightEntries)
    if (e.op == "param")
      ++readers[size_t(e.param)];
  im.runTransforms([&](int p) {
    StagedWeight s;
    if (--readers[size_t(p)] == 0)
      s.f32 = std::move(values[size_t(p)]);
    else
      s.f32 = values[size_t(p)];
    return s;
  });
  im.deviceError.clear();
  if (!im.device->weightsBound(*this, im.deviceError))
    return; // sessions report deviceError
  bound_ = true;
}

int64_t Module::positionLimit() const { return impl_->positionLimit; }

bool Module::runsOnHostCpu() const { return impl_->device && impl_->device->runsOnHostCpu(); }

bool Module::lengthDependent() const {
  for (const auto &b : impl_->buffers)
    if (b.kind == "sequence_lengths")
      return true;
  return false;
}

Module::TokenCost Module::tokenCost() const {
  TokenCost cost;
  for (size_t s = 0; s < impl_->steps.size(); ++s) {
    const Step &step = impl_->steps[s];
    bool gather = impl_->gathers[step.kernel];
    for (const Arg &a : step.args) {
      if (!a.weight)
        continue;
      const std::vector<int64_t> &shape = impl_->weightEntries[a.id].shape;
      double elements = double(product(shape));
      double bytes = double(storageTypeBytes(impl_->weightEntries[a.id].dtype));
      if (gather && shape.size() >= 2) { // one row: [rows, hidden] or packed
        cost.weightBytes += bytes * double(shape[1]);
        continue;
      }
      cost.weightBytes += bytes * elements;
    }
    cost.matmulFlops += impl_->stepMatmulFlopsPerRow[s];
    if (s >= impl_->lastRowTail)
      cost.tailMatmulFlops += impl_->stepMatmulFlopsPerRow[s];
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

void Session::setTapping(bool on) {
  tapping_ = on;
  taps_.clear();
  if (on)
    for (const manifest::Tap &t : module_.impl().taps) {
      const BufferEntry &b = module_.impl().buffers[t.buffer];
      taps_.push_back(Tap{t.name, 0, b.width, {}});
    }
  executorSession_->setTaps(on ? &taps_ : nullptr);
}

std::vector<std::string> Module::tapNames() const {
  std::vector<std::string> names;
  for (const manifest::Tap &t : impl_->taps)
    names.push_back(t.name);
  return names;
}

/// The params weight `id` is made of (through its bind-time transforms),
/// each as its module path inside a layer: `model.layers.3.mlp.up_proj.weight`
/// -> `mlp.up_proj`, so that a kernel shared by every layer reads as one.
static void collectParamPaths(const Module &m, int id, std::vector<std::string> &out) {
  const manifest::Weight &w = m.impl().weightEntries[size_t(id)];
  if (w.op != "param") {
    for (int in : w.inputs)
      collectParamPaths(m, in, out);
    return;
  }
  std::string path = m.params()[size_t(w.param)].name;
  for (const char *suffix : {".weight", ".bias"})
    if (size_t n = std::strlen(suffix);
        path.size() > n && path.compare(path.size() - n, n, suffix) == 0)
      path.resize(path.size() - n);
  // Past the last numbered component (the layer index), if any.
  for (size_t dot = path.size(); dot-- > 0;) {
    if (path[dot] != '.')
      continue;
    size_t end = path.find('.', dot + 1);
    if (end != std::string::npos && end > dot + 1 &&
        std::all_of(path.begin() + long(dot) + 1, path.begin() + long(end),
                    [](char c) { return c >= '0' && c <= '9'; })) {
      path = path.substr(end + 1);
      break;
    }
  }
  if (std::find(out.begin(), out.end(), path) == out.end())
    out.push_back(path);
}

void Module::Impl::makeProfileEntries(const Module &m) {
  profileEntries.clear();
  profileEntryOfStep.clear();
  std::map<std::pair<int, std::string>, int> entryOf;
  for (const Step &step : steps) {
    std::vector<std::string> paths;
    for (const Arg &a : step.args)
      if (a.weight)
        collectParamPaths(m, a.id, paths);
    std::string reads;
    for (const std::string &p : paths)
      reads += (reads.empty() ? "" : " ") + p;
    auto [it, fresh] = entryOf.try_emplace({step.kernel, reads}, int(profileEntries.size()));
    if (fresh)
      profileEntries.push_back({kernelNames[size_t(step.kernel)], reads, 0, 0, 0});
    profileEntryOfStep.push_back(it->second);
  }
}

void Session::clearProfile() { profile_ = module_.impl().profileEntries; }

bool Session::forward(const std::vector<int32_t> &tokens,
                      std::vector<float> &logits, std::string &error, LogitRows rows) {
  std::vector<std::vector<float>> out(1);
  out[0].swap(logits); // its capacity is reused for the logits
  bool ok = forwardBatch({this}, {tokens}, out, error, rows);
  logits.swap(out[0]);
  return ok;
}

bool Session::forwardBatch(const std::vector<Session *> &sessions,
                           const std::vector<std::vector<int32_t>> &tokens,
                           std::vector<std::vector<float>> &logits, std::string &error,
                           LogitRows rows) {
  if (sessions.empty() || sessions.size() != tokens.size()) {
    error = "a batch needs one token list per session (" + std::to_string(sessions.size()) +
            " sessions, " + std::to_string(tokens.size()) + " token lists)";
    return false;
  }
  for (size_t i = 0; i < sessions.size(); ++i) {
    if (!sessions[i] || &sessions[i]->module_ != &sessions[0]->module_) {
      error = "every session of a batch must belong to the same module";
      return false;
    }
    for (size_t j = 0; j < i; ++j)
      if (sessions[j] == sessions[i]) {
        error = "a session appears twice in the batch (" + std::to_string(j) + " and " +
                std::to_string(i) + "); one sequence cannot take two steps at once";
        return false;
      }
  }
  // One session is one sequence: two threads running it at once would
  // interleave their positions in the cache.
  size_t claimed = 0;
  struct Release {
    const std::vector<Session *> &sessions;
    size_t &n;
    ~Release() {
      for (size_t i = 0; i < n; ++i)
        sessions[i]->busy_ = false;
    }
  } release{sessions, claimed};
  for (; claimed < sessions.size(); ++claimed)
    if (sessions[claimed]->busy_.exchange(true)) {
      error = "this session is already running a forward on another thread; "
              "use one session per thread";
      return false;
    }
  auto prefix = [&](size_t i) {
    return sessions.size() > 1 ? "sequence " + std::to_string(i) + " of the batch: "
                               : std::string();
  };
  try {
    for (size_t i = 0; i < sessions.size(); ++i)
      if (!sessions[i]->check(tokens[i], error)) {
        error = prefix(i) + error;
        return false;
      }
    logits.resize(sessions.size());
    std::vector<SequenceChunk> chunks;
    for (size_t i = 0; i < sessions.size(); ++i) {
      Session &s = *sessions[i];
      std::vector<int32_t> positions(tokens[i].size());
      for (size_t j = 0; j < positions.size(); ++j)
        positions[j] = int32_t(s.position_ + int64_t(j));
      chunks.push_back(SequenceChunk{s.executorSession_.get(), &tokens[i],
                                     std::move(positions), s.position_, &logits[i]});
    }
    // Everything device-specific (code, caches, launches) is the executor's.
    // Taps hold every row of the call, so while tapping every row runs.
    bool tapping = std::any_of(sessions.begin(), sessions.end(),
                               [](const Session *s) { return s->tapping_; });
    LogitRows run = tapping ? LogitRows::All : rows;
    if (!sessions[0]->module_.impl().device->forwardBatch(chunks, run, error))
      return false;
    if (run != rows)
      for (size_t i = 0; i < sessions.size(); ++i) {
        size_t vocab = size_t(sessions[0]->module_.vocabSize());
        logits[i].erase(logits[i].begin(), logits[i].end() - long(vocab));
      }
    bool ok = true;
    for (size_t i = 0; i < sessions.size(); ++i) {
      std::string why;
      int64_t n = int64_t(tokens[i].size());
      if (!sessions[i]->finish(n, rows == LogitRows::Last ? 1 : n, logits[i], why) && ok) {
        error = prefix(i) + why;
        ok = false;
      }
    }
    return ok;
  } catch (const std::bad_alloc &) {
    error = "out of memory running a batch of " + std::to_string(sessions.size()) +
            " sequence(s)";
  } catch (const std::exception &e) {
    error = std::string("internal error: ") + e.what();
  }
  return false;
}

bool Session::check(const std::vector<int32_t> &tokens, std::string &error) const {
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
  return true;
}

bool Session::finish(int64_t T, int64_t rows, const std::vector<float> &logits,
                     std::string &error) {
  position_ += T;
  // NaN or infinite logits would make greedy decoding print token 0 forever.
  if (size_t i = firstNonFinite(logits.data(), logits.size()); i < logits.size()) {
    int64_t vocab = module_.vocabSize();
    error = "the forward produced a non-finite logit (" +
            std::string(std::isnan(logits[i]) ? "NaN" : "infinity") + ") at position " +
            std::to_string(position_ - rows + int64_t(i) / vocab) + ", vocabulary entry " +
            std::to_string(int64_t(i) % vocab) + "; the weights or activations overflow f32";
    return false;
  }
  return true;
}

