//===- CudaExecutor.cpp - run a module's PTX on an NVIDIA GPU -------------===//
//
// LLVM-free and without a link-time CUDA dependency: the driver library is
// dlopen'ed (libcuda.so.1) and only its C entry points are used, declared
// in CudaDriver.h. The module's PTX for the device's architecture is
// JIT-compiled by the driver; weights are uploaded once
// after binding; each session keeps its activations and key/value caches
// on the device, and only the logits come back.
//
// Kernel parameters follow TbcToCUDA/KernelABI.h: every memref is its descriptor
// (allocated pointer, aligned pointer, offset, sizes, strides, as i64s),
// then the chunk's row count and the number of cached positions.
//
//===----------------------------------------------------------------------===//

#include "CudaDriver.h"
#include "CudaLaunchGraph.h"
#include "DeviceExecutor.h"
#include "ModuleImpl.h"
#include "tbc/Support/Limits.h"

#include <algorithm>
#include <cstdio>

using namespace tbc::rt;
using namespace tbc::rt::detail;
using namespace tbc::rt::cuda;

namespace {

class CudaExecutor;

class CudaSession final : public DeviceSession {
public:
  CudaSession(const Module &module, CudaExecutor &executor, int64_t capacity)
      : module_(module), executor_(executor), capacity_(capacity),
        activations_(module.impl().buffers.size()),
        caches_(module.impl().buffers.size()) {
    for (int64_t n : module.impl().scratch)
      scratchFloats_ = std::max(scratchFloats_, n);
    for (int64_t k : module.impl().staging)
      stagingWidth_ = std::max(stagingWidth_, k);
  }

  ~CudaSession() override {
    for (CUevent e : events_)
      Driver::get().cuEventDestroy(e);
  }

  bool forward(const std::vector<int32_t> &tokens, const std::vector<int32_t> &positions,
               int64_t past, std::vector<float> &logits, std::string &error) override {
    return run(tokens, positions, past, /*lastRowOnly=*/false, logits, error);
  }
  /// `lastRowOnly`: the last position's logits only (what generation
  /// needs): the steps from Module::Impl::lastRowTail on run on that row,
  /// and only it is copied back (a 512-token prefill of a 128k vocabulary
  /// would otherwise compute 512 head rows and move 256 MB over PCIe).
  bool run(const std::vector<int32_t> &tokens, const std::vector<int32_t> &positions,
           int64_t past, bool lastRowOnly, std::vector<float> &logits, std::string &error);

private:
  /// While profiling: an event before the first step and after each,
  /// recorded on the launch stream; the kernels' times are read once the
  /// call has finished.
  bool recordStepEvent(size_t i, std::string &error);
  /// `T` and `lastRowOnly`: the call's, for the rows each step ran on.
  bool addStepTimes(int64_t T, bool lastRowOnly, std::string &error);

  std::vector<CUevent> events_;
  const Module &module_;
  CudaExecutor &executor_;
  int64_t capacity_;
  std::vector<DeviceBuffer> activations_; // by root buffer id: [rows, width]
  std::vector<DeviceBuffer> caches_;      // by kv_cache buffer id
  std::vector<int64_t> cacheRows_;
  DeviceBuffer tokens_, positions_, lengths_;
  /// The kernels' scratch (decoding attention's slices and their
  /// counters), sized for the largest, scratchFloats_ values, zeroed when
  /// allocated; steps run one after another on one stream, so they share it.
  DeviceBuffer scratch_;
  int64_t scratchFloats_ = 0;
  /// The tiled projections' 16-bit activations ([chunk rows, width] a
  /// step, KernelABI.h), sized for the widest and the longest chunk so far.
  DeviceBuffer staging_;
  int64_t stagingWidth_ = 0;
  /// The decode steps' kernels (CudaLaunchGraph.h).
  LaunchGraph graph_;
};

/// Whether the PTX entry `symbol` of `ptx` runs griddepcontrol.wait (its
/// text up to the next entry holds one).
bool entryWaitsForGrids(const std::string &ptx, const std::string &symbol) {
  size_t at = ptx.find(".entry " + symbol + "(");
  if (at == std::string::npos)
    return false;
  size_t next = ptx.find(".entry ", at + 1);
  size_t wait = ptx.find("griddepcontrol.wait", at);
  return wait != std::string::npos && wait < next;
}

class CudaExecutor final : public DeviceExecutor {
public:
  ~CudaExecutor() override {
    weights_.clear();
    if (cuModule_)
      Driver::get().cuModuleUnload(cuModule_);
  }

  bool load(const ModuleFile &file, const Module &module, std::string &error) override {
    Driver &d = Driver::get();
    if (!d.error.empty()) {
      error = d.error;
      return false;
    }
    d.cuCtxSetCurrent(d.context);
    // The newest PTX not newer than the device (the driver JITs PTX for any
    // later architecture); at the device's own architecture, PTX for it
    // alone (sm_90a: wgmma) before the portable one. Architecture-specific
    // PTX runs on that architecture only.
    const CodeBlob *best = nullptr;
    int bestRank = 0;
    for (const CodeBlob &b : file.blobs) {
      int arch = 0, end = 0;
      if (std::sscanf(b.name.c_str(), "cuda.sm_%d%n", &arch, &end) != 1)
        continue;
      std::string suffix = b.name.substr(size_t(end));
      bool specific = suffix == "a.ptx";
      if (!(specific || suffix == ".ptx") || arch > d.arch || (specific && arch != d.arch))
        continue;
      if (int rank = 2 * arch + specific; rank > bestRank) {
        best = &b;
        bestRank = rank;
      }
    }
    if (!best) {
      error = "the module has no PTX for this GPU (" + d.name + ", sm_" +
              std::to_string(d.arch) + "); compile it with --cuda-arch sm_" +
              std::to_string(d.arch);
      return false;
    }
    std::string ptx = best->bytes; // NUL-terminated for the driver
    char log[8192] = {0};
    int options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {log, reinterpret_cast<void *>(uintptr_t(sizeof(log) - 1))};
    if (CUresult r = d.cuModuleLoadDataEx(&cuModule_, ptx.c_str(), 2, options, values);
        r != 0) {
      error = "the GPU driver cannot load the module's PTX (" + best->name +
              "): " + d.describe(r) + (log[0] ? std::string(": ") + log : "");
      return false;
    }
    const Module::Impl &im = module.impl();
    for (size_t k = 0; k < im.launches.size(); ++k) {
      functions_.emplace_back();
      if (im.launches[k].empty()) {
        error = "kernel '" + im.kernelNames[k] + "' has no launch plan";
        return false;
      }
      for (const LaunchInfo &l : im.launches[k]) {
        CUfunction fn = nullptr;
        if (d.cuModuleGetFunction(&fn, cuModule_, l.symbol.c_str()) != 0) {
          error = "kernel '" + l.symbol + "' is missing from the PTX";
          return false;
        }
        // Launched before its predecessor ends, a kernel that does not
        // wait for it would race it: the manifest's word is checked.
        if (l.programmatic && !entryWaitsForGrids(ptx, l.symbol)) {
          error = "manifest: launch '" + l.symbol +
                  "' is marked programmatic, but its code never waits for the kernels before "
                  "it (griddepcontrol.wait)";
          return false;
        }
        // Past 48 KB a function's dynamic shared memory must be allowed
        // first (cuFuncSetAttribute), up to what the GPU offers a block.
        if (l.sharedBytes > 48 * 1024) {
          constexpr int kMaxDynamicSharedAttribute = 8; // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
          if (CUresult r =
                  d.cuFuncSetAttribute(fn, kMaxDynamicSharedAttribute, int(l.sharedBytes));
              r != 0) {
            error = "kernel '" + l.symbol + "' needs " + std::to_string(l.sharedBytes >> 10) +
                    " KB of shared memory a block, more than this GPU allows (" + d.describe(r) +
                    ")";
            return false;
          }
        }
        functions_.back().push_back(fn);
      }
    }
    return true;
  }

  bool weightsBound(const Module &module, std::string &error) override {
    Module::Impl &im = module.impl();
    Driver &d = Driver::get();
    d.cuCtxSetCurrent(d.context);
    weights_.clear();
    weights_.resize(im.weightEntries.size());
    for (size_t id = 0; id < im.weightEntries.size(); ++id) {
      if (!im.readByKernels[id])
        continue;
      // bf16/f16 weights (a `convert`) travel and stay in 16 bits.
      const LargeVector<float> &w = im.weights[id];
      const LargeVector<uint16_t> &half = im.weights16[id];
      bool narrow = im.weightEntries[id].dtype != "f32"; // bf16 or f16
      const void *src = narrow ? static_cast<const void *>(half.data()) : w.data();
      size_t bytes = narrow ? half.size() * 2 : w.size() * 4;
      if (!weights_[id].reserve(bytes, false, error))
        return false;
      if (CUresult r = d.cuMemcpyHtoD(weights_[id].ptr, src, bytes); r != 0) {
        error = "cannot upload weights to the GPU: " + d.describe(r);
        return false;
      }
    }
    // The device holds them now; the host copies would double the memory.
    for (LargeVector<float> &w : im.weights)
      LargeVector<float>().swap(w);
    for (LargeVector<uint16_t> &w : im.weights16)
      LargeVector<uint16_t>().swap(w);
    return true;
  }

  std::unique_ptr<DeviceSession> newSession(const Module &module, int64_t capacity) override {
    return std::make_unique<CudaSession>(module, *this, capacity);
  }

  bool forwardBatch(std::vector<SequenceChunk> &chunks, LogitRows rows,
                    std::string &error) override {
    for (SequenceChunk &c : chunks)
      if (!static_cast<CudaSession *>(c.session)
               ->run(*c.tokens, c.positions, c.past, rows == LogitRows::Last, *c.logits, error))
        return false;
    return true;
  }

  std::vector<std::vector<CUfunction>> functions_; // by kernel, in launch order
  std::vector<DeviceBuffer> weights_;              // by weight id
  CUmodule cuModule_ = nullptr;
};

bool CudaSession::recordStepEvent(size_t i, std::string &error) {
  Driver &d = Driver::get();
  while (events_.size() <= i) {
    CUevent e = nullptr;
    if (CUresult r = d.cuEventCreate(&e, 0); r != 0) {
      error = "creating a CUDA event: " + d.describe(r);
      return false;
    }
    events_.push_back(e);
  }
  if (CUresult r = d.cuEventRecord(events_[i], nullptr); r != 0) {
    error = "recording a CUDA event: " + d.describe(r);
    return false;
  }
  return true;
}

/// The rows step `s` of a call over `T` tokens runs on: with only the last
/// logits wanted, the steps from Module::Impl::lastRowTail on run on the
/// last row alone.
static int64_t stepRows(const Module::Impl &im, size_t s, int64_t T, bool lastRowOnly) {
  return lastRowOnly && s >= im.lastRowTail ? 1 : T;
}

bool CudaSession::addStepTimes(int64_t T, bool lastRowOnly, std::string &error) {
  Driver &d = Driver::get();
  const Module::Impl &im = module_.impl();
  const std::vector<Step> &steps = im.steps;
  if (CUresult r = d.cuEventSynchronize(events_[steps.size()]); r != 0) {
    error = "running the kernels: " + d.describe(r);
    return false;
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    float ms = 0;
    if (CUresult r = d.cuEventElapsedTime(&ms, events_[i], events_[i + 1]); r != 0) {
      error = "reading a CUDA event: " + d.describe(r);
      return false;
    }
    Session::KernelTime &k = (*profile)[size_t(im.profileEntryOfStep[i])];
    k.seconds += double(ms) * 1e-3;
    ++k.calls;
    k.matmulFlops += double(stepRows(im, i, T, lastRowOnly)) * im.stepMatmulFlopsPerRow[i];
  }
  return true;
}

bool CudaSession::run(const std::vector<int32_t> &tokens, const std::vector<int32_t> &positions,
                      int64_t past, bool lastRowOnly, std::vector<float> &logits,
                      std::string &error) {
  Driver &d = Driver::get();
  d.cuCtxSetCurrent(d.context);
  const Module::Impl &im = module_.impl();
  int64_t T = int64_t(tokens.size());
  auto check = [&](CUresult r, const char *what) {
    if (r != 0)
      error = std::string(what) + ": " + d.describe(r);
    return r == 0;
  };
  if (!tokens_.reserve(T * 4, false, error) || !positions_.reserve(T * 4, false, error) ||
      !check(d.cuMemcpyHtoD(tokens_.ptr, tokens.data(), T * 4), "uploading tokens") ||
      !check(d.cuMemcpyHtoD(positions_.ptr, positions.data(), T * 4), "uploading positions"))
    return false;
  // Only modules that read it get the sequence_lengths input (one copy
  // less per decode step for the rest). One sequence: every row's length
  // is past + T.
  if (module_.lengthDependent()) {
    std::vector<int32_t> lengths(size_t(T), int32_t(past + T));
    if (!lengths_.reserve(T * 4, false, error) ||
        !check(d.cuMemcpyHtoD(lengths_.ptr, lengths.data(), T * 4), "uploading sequence lengths"))
      return false;
  }
  // Activations hold the chunk's rows; caches grow by doubling up to the
  // capacity, as on the host.
  cacheRows_.resize(im.buffers.size(), 0);
  for (size_t b = 0; b < im.buffers.size(); ++b) {
    const BufferEntry &e = im.buffers[b];
    if (e.kind == "activation" && !activations_[b].reserve(size_t(T * e.width) * 4, false, error))
      return false;
    if (e.kind == "kv_cache" && cacheRows_[b] < past + T) {
      int64_t rows = std::max<int64_t>(256, cacheRows_[b]);
      while (rows < past + T)
        rows *= 2;
      rows = std::min(rows, capacity_);
      if (!caches_[b].reserve(size_t(rows * e.width) * tbc::storageTypeBytes(e.cacheType), true,
                              error))
        return false;
      cacheRows_[b] = rows;
    }
  }
  if (scratchFloats_ && !scratch_.ptr) {
    // Zeroed once: decoding attention's counters start at 0, and every
    // launch leaves them there (cuda::scratchFloats in LaunchPlan.cpp).
    std::vector<float> zeros(size_t(scratchFloats_), 0.0f);
    if (!scratch_.reserve(zeros.size() * 4, false, error) ||
        !check(d.cuMemcpyHtoD(scratch_.ptr, zeros.data(), zeros.size() * 4),
               "clearing the attention scratch"))
      return false;
  }
  // Whole tiles of rows: the tiled projection reads its last tile's rows
  // past T without a clamp (limits::kStagingRowMultiple).
  const int64_t stagingRows = (T + tbc::limits::kStagingRowMultiple - 1) /
                              tbc::limits::kStagingRowMultiple *
                              tbc::limits::kStagingRowMultiple;
  if (stagingWidth_ && !staging_.reserve(size_t(stagingRows * stagingWidth_) * 2, false, error))
    return false;
  std::vector<int64_t> values;
  bool timing = profile && d.canTime();
  if (timing && !recordStepEvent(0, error))
    return false;
  // Decode steps (one row) run as a graph, updated from one step to the
  // next (CudaLaunchGraph.h); profiled calls launch each kernel between
  // their events.
  const bool asGraph = T == 1 && !timing && LaunchGraph::enabled();
  // Kernels compiled to wait for their predecessors themselves launch
  // before those end (not between profiling events, nor the call's first,
  // which follows copies). TBC_CUDA_PDL=0: launched as any other (the A/B).
  static const bool pdlSwitch = switchedOn("TBC_CUDA_PDL");
  const bool programmatic = !timing && d.canLaunchProgrammatically() && pdlSwitch;
  bool firstLaunch = true;
  std::vector<KernelLaunch> graphLaunches;
  for (size_t stepIndex = 0; stepIndex < im.steps.size(); ++stepIndex) {
    const Step &step = im.steps[stepIndex];
    values.clear();
    // With only the last logits wanted, the row-independent steps after the
    // last attention (the final norm and the head, say) run on the last row
    // alone: their memrefs start at that row and hold one.
    int64_t rows = stepRows(im, stepIndex, T, lastRowOnly), firstRow = T - rows;
    // A memref descriptor: allocated and aligned pointer, offset, sizes,
    // strides; `skip` bytes move the aligned pointer to the first row.
    auto memref = [&](CUdeviceptr p, int64_t offset, std::initializer_list<int64_t> sizes,
                      std::initializer_list<int64_t> strides, int64_t skip = 0) {
      values.push_back(int64_t(p));
      values.push_back(int64_t(p) + skip);
      values.push_back(offset);
      values.insert(values.end(), sizes);
      values.insert(values.end(), strides);
    };
    for (const Arg &a : step.args) {
      if (a.weight) {
        const std::vector<int64_t> &shape = im.weightEntries[a.id].shape;
        values.push_back(int64_t(executor_.weights_[a.id].ptr));
        values.push_back(int64_t(executor_.weights_[a.id].ptr));
        values.push_back(0);
        values.insert(values.end(), shape.begin(), shape.end());
        int64_t stride = 1;
        std::vector<int64_t> strides(shape.size());
        for (size_t i = shape.size(); i-- > 0;) {
          strides[i] = stride;
          stride *= shape[i];
        }
        values.insert(values.end(), strides.begin(), strides.end());
        continue;
      }
      const BufferEntry &b = im.buffers[a.id];
      if (tbc::manifest::isSequenceInput(b.kind)) {
        memref(b.kind == "token_ids"   ? tokens_.ptr
               : b.kind == "positions" ? positions_.ptr
                                       : lengths_.ptr,
               0, {rows}, {1}, firstRow * 4);
        continue;
      }
      int root = b.kind == "view" ? b.of : a.id;
      int64_t rootWidth = im.buffers[root].width;
      memref(activations_[root].ptr, b.kind == "view" ? b.offset : 0, {rows, b.width},
             {rootWidth, 1}, firstRow * rootWidth * 4);
    }
    for (int c : step.caches)
      memref(caches_[c].ptr, 0, {cacheRows_[c], im.buffers[c].width},
             {im.buffers[c].width, 1});
    if (int64_t n = im.scratch[step.kernel])
      memref(scratch_.ptr, 0, {n}, {1});
    if (int64_t k = im.staging[step.kernel])
      memref(staging_.ptr, 0, {rows, k}, {k, 1});
    values.push_back(rows);
    // Only attention reads the cached positions (KernelABI.h); the others
    // get 0, so that their parameters stay the same from one decode step to
    // the next and a graph's nodes for them need no update.
    values.push_back(step.caches.empty() ? 0 : past + firstRow);
    values.insert(values.end(), step.scalars.begin(), step.scalars.end());
    const std::vector<LaunchInfo> &launches = im.launches[step.kernel];
    for (size_t l = 0; l < launches.size(); ++l) {
      const LaunchInfo &li = launches[l];
      if (!li.serves(rows))
        continue; // a variant for chunks of another size
      int64_t gridY = std::min<int64_t>((rows + li.rowsPerBlock - 1) / li.rowsPerBlock, 65535);
      KernelLaunch launch{executor_.functions_[step.kernel][l],
                          {unsigned(li.gridX), unsigned(gridY), 1},
                          {unsigned(li.blockX), unsigned(li.blockY), 1},
                          values, unsigned(li.sharedBytes)};
      launch.programmatic = programmatic && li.programmatic && !firstLaunch;
      firstLaunch = false;
      if (asGraph) {
        graphLaunches.push_back(std::move(launch));
      } else if (!check(launchKernel(launch), ("launching " + li.symbol).c_str())) {
        return false;
      }
    }
    if (timing && !recordStepEvent(stepIndex + 1, error))
      return false;
  }
  if (asGraph && !graph_.run(graphLaunches, error))
    return false;
  if (timing && !addStepTimes(T, lastRowOnly, error))
    return false;
  int64_t vocab = module_.vocabSize(), rows = lastRowOnly ? std::min<int64_t>(T, 1) : T;
  logits.resize(size_t(rows * vocab));
  if (!check(d.cuMemcpyDtoH(logits.data(), activations_[im.output].ptr + (T - rows) * vocab * 4,
                            logits.size() * 4),
             "running the kernels"))
    return false;
  // Every activation has its own device buffer for the whole call, so the
  // taps are read back after it.
  for (size_t i = 0; taps && i < im.taps.size(); ++i) {
    const BufferEntry &b = im.buffers[im.taps[i].buffer];
    int root = b.kind == "view" ? b.of : im.taps[i].buffer;
    int64_t rootWidth = im.buffers[root].width, offset = b.kind == "view" ? b.offset : 0;
    std::vector<float> rows(size_t(T * rootWidth));
    if (!check(d.cuMemcpyDtoH(rows.data(), activations_[root].ptr, rows.size() * 4),
               "reading a tap"))
      return false;
    Session::Tap &tap = (*taps)[i];
    tap.rows = T;
    tap.width = b.width;
    tap.data.resize(size_t(T * b.width));
    for (int64_t t = 0; t < T; ++t)
      std::copy_n(rows.begin() + t * rootWidth + offset, b.width, tap.data.begin() + t * b.width);
  }
  return true;
}

} // namespace

std::unique_ptr<DeviceExecutor> tbc::rt::createCudaExecutor() {
  return std::make_unique<CudaExecutor>();
}
