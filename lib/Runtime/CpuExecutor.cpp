//===- CpuExecutor.cpp - the host CPU executor ----------------------------===//
//
// Runs a `cpu` module's schedule in this process: dlopens the module's host
// code (checking first that this CPU has the extensions it was compiled
// for), passes every operand as an MLIR memref descriptor through the
// kernels' packed entry points (void k_packed(void **args)), and shares each
// step across the worker pool by rows, output columns or key/value heads
// as the manifest's work ranges allow. Weights stay where binding put them
// (Module::Impl::weights); caches and activations are the session's.
//
//===----------------------------------------------------------------------===//

#include "DeviceExecutor.h"
#include "ModuleImpl.h"
#include "tbc/Runtime/ThreadPool.h"

#include "tbc/Runtime/CpuFeatures.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <mutex>
#include <sys/mman.h>
#include <unistd.h>

using namespace tbc;
using namespace tbc::rt;
using namespace tbc::rt::detail;

namespace {
using KernelFn = void (*)(void **);

// A projection over fewer rows than this per core splits by output columns:
// with rows split, each core streams the whole weight, and below some
// hundred rows a core that costs as much as the multiply-adds (2 cores at
// ~20 GB/s: a hidden-2048 prompt of 64 tokens ran 18% faster split by
// columns, 128 tokens 12-18%, 256 within 5% either way, 512 the same;
// bench/NOTES.md, 2026-11-25).
constexpr int64_t kColumnSplitRows = 128;

/// Activation buffers between forward calls, shared by a module's sessions.
/// Fresh memory costs page faults, and on a virtual machine a 2 MiB page's
/// first touch can take milliseconds: with every session mapping its own,
/// a 512-token prefill at hidden 4096 spent 60-120 ms of its 240-300 in the
/// kernel whenever other processes had run in between (bench/NOTES.md,
/// 2026-11-25). So a buffer outlives the session that filled it; the pool
/// keeps no more than the largest forward call so far has used.
class ActivationPool {
public:
  /// A buffer of `size` floats, contents undefined: the smallest spare that
  /// holds it unless that is over twice as large, else a new one.
  LargeVector<float> take(size_t size) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = spare_.lower_bound(size);
      if (it != spare_.end() && it->first / 2 <= size) {
        LargeVector<float> buffer = std::move(it->second);
        held_ -= it->first;
        spare_.erase(it);
        buffer.resize(size);
        return buffer;
      }
    }
    return LargeVector<float>(size);
  }
  void give(LargeVector<float> buffer) {
    std::lock_guard<std::mutex> lock(mutex_);
    held_ += buffer.capacity();
    spare_.emplace(buffer.capacity(), std::move(buffer));
  }
  /// After a forward call that took `used` floats: frees the smallest spares
  /// until the pool holds no more than the largest call so far took.
  void endForward(size_t used) {
    std::lock_guard<std::mutex> lock(mutex_);
    largestForward_ = std::max(largestForward_, used);
    while (held_ > largestForward_ && !spare_.empty()) {
      held_ -= spare_.begin()->first;
      spare_.erase(spare_.begin());
    }
  }

private:
  std::mutex mutex_;
  std::multimap<size_t, LargeVector<float>> spare_; // by capacity, in floats
  size_t held_ = 0, largestForward_ = 0;            // floats
};

class CpuExecutor final : public DeviceExecutor {
public:
  ~CpuExecutor() override {
    if (library)
      dlclose(library);
    if (memfd >= 0)
      close(memfd);
  }
  bool load(const ModuleFile &file, const Module &module, std::string &error) override;
  bool weightsBound(const Module &, std::string &) override {
    return true; // the kernels read the bound weights where they are
  }
  bool runsOnHostCpu() const override { return true; }
  std::unique_ptr<DeviceSession> newSession(const Module &module, int64_t capacity) override;
  bool forwardBatch(std::vector<SequenceChunk> &chunks, LogitRows rows,
                    std::string &error) override;

  void *library = nullptr;
  int memfd = -1;
  std::vector<KernelFn> kernels; // by kernel id
  mutable ActivationPool activations;
};

class CpuSession final : public DeviceSession {
public:
  CpuSession(const Module &module, const CpuExecutor &executor, int64_t capacity)
      : module_(module), executor_(executor), capacity_(capacity),
        caches_(module.impl().buffers.size()) {}
  bool forward(const std::vector<int32_t> &tokens, const std::vector<int32_t> &positions,
               int64_t past, std::vector<float> &logits, std::string &error) override;
  /// One launch sequence over the rows of every chunk (CpuSessions of one
  /// module): attention runs per sequence on its own cache, every other
  /// kernel once over all rows.
  static bool runBatch(std::vector<SequenceChunk> &chunks, LogitRows logitRows,
                       std::string &error);

private:
  /// Makes every key/value cache hold at least `positions` rows. The caches
  /// start empty and grow with the sequence: a session costs memory in
  /// proportion to what it has seen, not to the model's maximum length
  /// (34 GB up front for Llama-3.1-8B's 131k).
  bool growCaches(int64_t positions, std::string &error);

  const Module &module_;
  const CpuExecutor &executor_;
  int64_t capacity_;
  // Indexed by buffer id; large ones on 2 MiB pages, as decoding streams
  // them every step.
  std::vector<LargeVector<float>> caches_;
};
} // namespace

bool CpuExecutor::load(const ModuleFile &file, const Module &module, std::string &error) {
  const Module::Impl &im = module.impl();
  const CodeBlob *host = nullptr, *cpu = nullptr;
  for (const CodeBlob &b : file.blobs) {
    if (b.name == "host.so")
      host = &b;
    if (b.name == "host.cpu")
      cpu = &b;
  }
  if (!host) {
    error = "the module carries no host code (compiled for another target?)";
    return false;
  }
  // Without the record of what the code needs, loading it could die of
  // SIGILL: a module without one is refused, not trusted.
  if (!cpu) {
    error = "the module does not record the CPU its host code was "
                   "compiled for (host.cpu); compile the model again (tbc compile)";
    return false;
  }
  if (std::string missing = missingCpuFeatures(cpu->bytes); !missing.empty()) {
    error = "the host code was compiled for a CPU with " + missing +
            ", which this CPU lacks; compile the model again on this "
            "machine (tbc compile)";
    return false;
  }
  // The host kernels keep their caches in f32 (caches_).
  for (const BufferEntry &b : im.buffers)
    if (b.kind == "kv_cache" && b.cacheType != "f32") {
      error = "manifest: the CPU executor keeps KV caches in f32, not " + b.cacheType;
      return false;
    }
  // Nor do they take scratch: a kernel that asks for it was built for
  // another executor.
  for (size_t k = 0; k < im.scratch.size(); ++k)
    if (im.scratch[k] || im.staging[k]) {
      error = "manifest: kernel '" + im.kernelNames[k] + "' takes " +
              (im.scratch[k] ? "scratch" : "a staging array") +
              ", which the CPU executor does not pass";
      return false;
    }
  // dlopen needs a file: an anonymous in-memory one leaves nothing behind.
  memfd = memfd_create("tbc-kernels", MFD_CLOEXEC);
  if (memfd < 0 ||
      write(memfd, host->bytes.data(), host->bytes.size()) != ssize_t(host->bytes.size())) {
    error = std::string("cannot stage the host code: ") + std::strerror(errno);
    return false;
  }
  std::string fdPath = "/proc/self/fd/" + std::to_string(memfd);
  library = dlopen(fdPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    error = std::string("cannot load the host code: ") + dlerror();
    return false;
  }
  kernels.resize(im.kernelNames.size());
  for (size_t k = 0; k < kernels.size(); ++k) {
    kernels[k] = reinterpret_cast<KernelFn>(dlsym(library, im.kernelNames[k].c_str()));
    if (!kernels[k]) {
      error = "manifest: kernel '" + im.kernelNames[k] + "' is missing from the code";
      return false;
    }
  }
  return true;
}

std::unique_ptr<DeviceSession> CpuExecutor::newSession(const Module &module,
                                                       int64_t capacity) {
  return std::make_unique<CpuSession>(module, *this, capacity);
}

std::unique_ptr<DeviceExecutor> tbc::rt::createCpuExecutor() {
  return std::make_unique<CpuExecutor>();
}

bool CpuSession::growCaches(int64_t positions, std::string &error) {
  const auto &buffers = module_.impl().buffers;
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (buffers[i].kind != "kv_cache")
      continue;
    size_t width = size_t(buffers[i].width);
    LargeVector<float> &cache = caches_[i];
    if (cache.size() >= size_t(positions) * width)
      continue;
    // Doubling (from 256 positions), capped at the capacity: amortised
    // O(1) copies per position, at most twice the memory needed.
    int64_t want = std::max<int64_t>(256, int64_t(cache.size() / width));
    while (want < positions)
      want *= 2;
    want = std::min(want, capacity_);
    try {
      LargeVector<float> grown(size_t(want) * width, 0.0f);
      std::copy(cache.begin(), cache.end(), grown.begin());
      cache.swap(grown);
    } catch (const std::bad_alloc &) {
      error = "out of memory growing a key/value cache to " + std::to_string(want) +
              " positions (" + std::to_string(want * int64_t(width) * 4 >> 20) + " MiB)";
      return false;
    }
  }
  return true;
}

bool CpuExecutor::forwardBatch(std::vector<SequenceChunk> &chunks, LogitRows rows,
                               std::string &error) {
  return CpuSession::runBatch(chunks, rows, error);
}

bool CpuSession::forward(const std::vector<int32_t> &tokens,
                         const std::vector<int32_t> &positions, int64_t past,
                         std::vector<float> &logits, std::string &error) {
  std::vector<SequenceChunk> one{SequenceChunk{this, &tokens, positions, past, &logits}};
  return runBatch(one, LogitRows::All, error);
}

bool CpuSession::runBatch(std::vector<SequenceChunk> &chunks, LogitRows logitRows,
                          std::string &error) {
  auto sessionOf = [&](size_t i) { return static_cast<CpuSession *>(chunks[i].session); };
  CpuSession &first = *sessionOf(0);
  const Module::Impl &im = first.module_.impl();
  // The chunks' rows, one after another: tokens, positions, sequence
  // lengths, row offsets.
  std::vector<int32_t> tokens, positions, lengths;
  std::vector<int64_t> rowBegin;
  for (size_t i = 0; i < chunks.size(); ++i) {
    rowBegin.push_back(int64_t(tokens.size()));
    tokens.insert(tokens.end(), chunks[i].tokens->begin(), chunks[i].tokens->end());
    positions.insert(positions.end(), chunks[i].positions.begin(), chunks[i].positions.end());
    lengths.insert(lengths.end(), chunks[i].tokens->size(),
                   int32_t(chunks[i].sequenceLength()));
    if (!sessionOf(i)->growCaches(chunks[i].past + int64_t(chunks[i].tokens->size()), error))
      return false;
  }
  int64_t T = int64_t(tokens.size());
  std::vector<float> &logits = *chunks[0].logits;
  std::vector<Session::KernelTime> *profile = first.profile;
  ActivationPool &activations = first.executor_.activations;
  const CpuExecutor &executor_ = first.executor_;

  // With only the last position's logits wanted, the steps after the last
  // attention (row-independent: each row's output needs only that row) run
  // on each sequence's last row alone, as runs of adjacent rows.
  size_t tailBegin = logitRows == LogitRows::Last ? im.lastRowTail : im.steps.size();
  std::vector<std::pair<int64_t, int64_t>> lastRows; // [begin, end) runs
  for (size_t c = 0; c < chunks.size(); ++c) {
    int64_t row = rowBegin[c] + int64_t(chunks[c].tokens->size()) - 1;
    if (!lastRows.empty() && lastRows.back().second == row)
      lastRows.back().second = row + 1;
    else
      lastRows.push_back({row, row + 1});
  }

  // Activation buffers are allocated on first write and recycled after
  // their last reader (views keep their root alive).
  size_t nb = im.buffers.size();
  std::vector<size_t> lastUse(nb, 0);
  auto root = [&](int b) { return im.buffers[b].kind == "view" ? im.buffers[b].of : b; };
  for (size_t s = 0; s < im.steps.size(); ++s)
    for (const Arg &a : im.steps[s].args)
      if (!a.weight)
        lastUse[root(a.id)] = s;
  lastUse[im.output] = im.steps.size();
  // Activations by root buffer, large ones on 2 MiB pages (prefill +2-3%
  // at hidden 2048); the logits in `output` instead, a std::vector that
  // goes back to the caller without a copy.
  std::vector<LargeVector<float>> acts(nb);
  std::vector<float> output;
  size_t taken = 0; // floats from the pool, for its bound
  auto actData = [&](int r) { return r == im.output ? output.data() : acts[r].data(); };
  // Taps are copied out right after the step that writes their buffer (the
  // first to use its root), before the memory is recycled; only when some
  // sequence of the batch is tapping.
  bool tapping = false;
  for (size_t c = 0; c < chunks.size(); ++c)
    tapping = tapping || sessionOf(c)->taps;
  std::vector<size_t> tapStep(tapping ? im.taps.size() : 0, im.steps.size());
  for (size_t i = 0; i < tapStep.size(); ++i)
    for (size_t s = 0; s < im.steps.size() && tapStep[i] == im.steps.size(); ++s)
      for (const Arg &a : im.steps[s].args)
        if (!a.weight && root(a.id) == root(im.taps[i].buffer))
          tapStep[i] = s;
  auto copyTaps = [&](size_t s) {
    for (size_t i = 0; i < tapStep.size(); ++i) {
      if (tapStep[i] != s)
        continue;
      const BufferEntry &b = im.buffers[im.taps[i].buffer];
      int r = root(im.taps[i].buffer);
      int64_t rootWidth = im.buffers[r].width, offset = b.kind == "view" ? b.offset : 0;
      for (size_t c = 0; c < chunks.size(); ++c) {
        std::vector<Session::Tap> *dest = sessionOf(c)->taps;
        if (!dest)
          continue;
        Session::Tap &tap = (*dest)[i];
        int64_t n = int64_t(chunks[c].tokens->size());
        tap.rows = n;
        tap.width = b.width;
        tap.data.resize(size_t(n * b.width));
        for (int64_t t = 0; t < n; ++t)
          std::copy_n(actData(r) + (rowBegin[c] + t) * rootWidth + offset, b.width,
                      tap.data.begin() + t * b.width);
      }
    }
  };

  // Below this many multiply-adds, waking the other cores costs more than
  // sharing the work saves (a tiny model decodes faster on one core).
  // TBC_SPLIT_MIN_WORK overrides it (the conformance tests set 0, so that
  // their tiny models exercise the splits too).
  static const int64_t kSplitMinWork = [] {
    const char *v = std::getenv("TBC_SPLIT_MIN_WORK");
    return v ? std::atoll(v) : int64_t(1) << 18;
  }();
  // A step's multiply-adds: a projection's weight per row, an attention's
  // query width per row and cached position.
  auto stepWork = [&](size_t s, int64_t rows) {
    const Step &step = im.steps[s];
    if (!step.caches.empty()) {
      int64_t work = 0;
      for (const SequenceChunk &c : chunks) {
        int64_t n = int64_t(c.tokens->size());
        work += n * (c.past + n) * im.buffers[step.args.back().id].width;
      }
      return work;
    }
    return rows * im.stepWeightElements[s];
  };

  static const bool trace = std::getenv("TBC_TRACE") != nullptr;
  ThreadPool &pool = ThreadPool::shared();
  for (size_t s = 0; s < im.steps.size(); ++s) {
    const Step &step = im.steps[s];
    // Outputs first touched here get their memory before any thread runs.
    for (const Arg &a : step.args) {
      if (a.weight || manifest::isSequenceInput(im.buffers[a.id].kind))
        continue;
      int r = root(a.id);
      if (!(r == im.output ? output.empty() : acts[r].empty()))
        continue;
      // Memory is reused: fresh pages cost more than the kernels that
      // fill them (a 262k-token vocabulary's logits for a 64-token prompt
      // are 67 MB). The logits take the caller's vector back; everything
      // else comes from the module's pool.
      size_t size = size_t(T * im.buffers[r].width);
      if (r == im.output) {
        output = std::move(logits);
        output.resize(size);
      } else {
        acts[r] = activations.take(size);
        taken += size;
      }
    }
    // Runs the kernel on rows [row0, row0 + rows) of the chunk and, for a
    // projection, on its output columns [col0, col1).
    const Module::Impl::Split &split = im.splits[step.kernel];
    // `chunk`: the sequence whose caches an attention step reads and
    // appends to (its rows are [row0, row0 + rows)).
    auto launch = [&](int64_t row0, int64_t rows, int64_t col0, int64_t col1,
                      size_t chunk) {
      int64_t range[2] = {col0, col1};
      std::vector<std::vector<int64_t>> descs;
      auto desc = [&](const void *data, int64_t offset,
                      std::vector<int64_t> sizes, std::vector<int64_t> strides) {
        std::vector<int64_t> d{int64_t(intptr_t(data)), int64_t(intptr_t(data)),
                               offset};
        d.insert(d.end(), sizes.begin(), sizes.end());
        d.insert(d.end(), strides.begin(), strides.end());
        descs.push_back(std::move(d));
      };
      for (const Arg &a : step.args) {
        if (a.weight) {
          const std::vector<int64_t> &shape = im.weightEntries[a.id].shape;
          std::vector<int64_t> strides(shape.size(), 1);
          for (int i = int(shape.size()) - 2; i >= 0; --i)
            strides[i] = strides[i + 1] * shape[i + 1];
          // bf16/f16 weights (a `convert`) are read in 16 bits.
          const void *data = im.weightEntries[a.id].dtype != "f32"
                                 ? static_cast<const void *>(im.weights16[a.id].data())
                                 : im.weights[a.id].data();
          desc(data, 0, shape, strides);
          continue;
        }
        const BufferEntry &b = im.buffers[a.id];
        // Row ranges move the base pointer: kernels assume a zero offset
        // for contiguous (identity-layout) operands and results.
        if (manifest::isSequenceInput(b.kind)) {
          const std::vector<int32_t> &input = b.kind == "token_ids"   ? tokens
                                              : b.kind == "positions" ? positions
                                                                      : lengths;
          desc(input.data() + row0, 0, {1, rows}, {T, 1});
          continue;
        }
        int r = root(a.id);
        int64_t rootWidth = im.buffers[r].width;
        desc(actData(r) + row0 * rootWidth, b.kind == "view" ? b.offset : 0,
             {1, rows, b.width}, {T * rootWidth, rootWidth, 1});
      }
      for (int c : step.caches) {
        int64_t w = im.buffers[c].width;
        desc(sessionOf(chunk)->caches_[c].data(), 0, {chunks[chunk].past + rows, w},
             {w, 1});
      }
      if (split.units)
        desc(range, 0, {2}, {1});
      for (const int64_t &scalar : step.scalars) // memref<1xi64>s (KernelABI.h)
        desc(&scalar, 0, {1}, {1});
      std::vector<void *> argv;
      for (std::vector<int64_t> &d : descs)
        argv.push_back(d.data());
      executor_.kernels[step.kernel](argv.data());
    };
    if (trace)
      std::fprintf(stderr, "tbc: step %zu: %s\n", s,
                   im.kernelNames[step.kernel].c_str());
    // Row-independent kernels split a long chunk across the cores by rows;
    // projections split a short one (decoding a token, or a batch of
    // decodes: fewer than kColumnSplitRows rows a core) by output columns,
    // each core reading its share of the weight once for all rows (shares
    // start on whole weight panels); attention splits by key/value heads,
    // each core appending and attending over its heads' share of the
    // cache, or, batched, by sequences.
    unsigned parts = pool.size();
    auto started = std::chrono::steady_clock::now();
    auto boundary = [&](unsigned part) {
      return part == parts ? split.units
                           : split.units * part / parts / split.align * split.align;
    };
    // Whether the step, over `rows` rows, is worth sharing by columns
    // (projections) or key/value heads (attention).
    auto splitsUnits = [&](int64_t rows) {
      return parts > 1 && split.units >= int64_t(parts) * split.align &&
             stepWork(s, rows) >= kSplitMinWork;
    };
    bool columnSplit = splitsUnits(T);
    if (!step.caches.empty()) {
      // Attention: each sequence on its own cache. One sequence splits by
      // key/value heads; several go to the cores whole, round robin.
      auto sequence = [&](size_t c, int64_t col0, int64_t col1) {
        launch(rowBegin[c], int64_t(chunks[c].tokens->size()), col0, col1, c);
      };
      if (chunks.size() == 1 && columnSplit)
        pool.run([&](unsigned part) { sequence(0, boundary(part), boundary(part + 1)); });
      else if (chunks.size() > 1 && parts > 1 && stepWork(s, T) >= kSplitMinWork)
        pool.run([&](unsigned part) {
          for (size_t c = part; c < chunks.size(); c += parts)
            sequence(c, 0, split.units);
        });
      else
        for (size_t c = 0; c < chunks.size(); ++c)
          sequence(c, 0, split.units);
    } else if (s >= tailBegin) {
      // Only the sequences' last rows: each core its share of the columns
      // (or all of them) for every run of rows.
      auto runs = [&](int64_t col0, int64_t col1) {
        for (const auto &[begin, end] : lastRows)
          launch(begin, end - begin, col0, col1, 0);
      };
      if (splitsUnits(int64_t(chunks.size())))
        pool.run([&](unsigned part) { runs(boundary(part), boundary(part + 1)); });
      else
        runs(0, split.units);
    } else if (im.rowParallel[step.kernel] && parts > 1 && T >= 4 * int64_t(parts) &&
               !(split.units && columnSplit && T < kColumnSplitRows * int64_t(parts))) {
      pool.run([&](unsigned part) {
        int64_t begin = T * part / parts, end = T * (part + 1) / parts;
        launch(begin, end - begin, 0, split.units, 0);
      });
    } else if (columnSplit) {
      pool.run([&](unsigned part) {
        launch(0, T, boundary(part), boundary(part + 1), 0);
      });
    } else {
      launch(0, T, 0, split.units, 0);
    }
    if (profile) {
      Session::KernelTime &entry = (*profile)[size_t(im.profileEntryOfStep[s])];
      entry.seconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      ++entry.calls;
      // The tail runs each sequence's last row alone.
      int64_t rows = s >= tailBegin ? int64_t(chunks.size()) : T;
      entry.matmulFlops += double(rows) * im.stepMatmulFlopsPerRow[s];
    }
    copyTaps(s);
    // Recycle buffers whose last reader this was.
    for (const Arg &a : step.args)
      if (!a.weight) {
        int r = root(a.id);
        if (lastUse[r] == s && !acts[r].empty()) {
          activations.give(std::move(acts[r]));
          acts[r] = LargeVector<float>();
        }
      }
  }
  activations.endForward(taken);
  // The logits by sequence: the first chunk's are the front rows.
  std::vector<float> &all = output;
  int64_t vocab = im.buffers[im.output].width;
  if (logitRows == LogitRows::Last) {
    for (size_t c = chunks.size(); c-- > 0;) {
      int64_t row = rowBegin[c] + int64_t(chunks[c].tokens->size()) - 1;
      std::vector<float> last(all.begin() + row * vocab, all.begin() + (row + 1) * vocab);
      if (c == 0) {
        logits = std::move(last);
        return true;
      }
      chunks[c].logits->swap(last);
    }
  }
  for (size_t c = chunks.size(); c-- > 1;)
    chunks[c].logits->assign(all.begin() + rowBegin[c] * vocab,
                             all.begin() + (rowBegin[c] + int64_t(chunks[c].tokens->size())) * vocab);
  all.resize(size_t(int64_t(chunks[0].tokens->size()) * vocab));
  logits = std::move(all);
  return true;
}
