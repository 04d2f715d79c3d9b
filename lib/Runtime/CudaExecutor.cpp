//===- CudaExecutor.cpp - run a module's PTX on an NVIDIA GPU -------------===//
//
// LLVM-free and without a link-time CUDA dependency: the driver library is
// dlopen'ed (libcuda.so.1) and only its C entry points are used, declared
// here (the driver API's ABI is stable). The module's PTX for the device's
// architecture is JIT-compiled by the driver; weights are uploaded once
// after binding; each session keeps its activations and key/value caches
// on the device, and only the logits come back.
//
// Kernel parameters follow TbcToCUDA/KernelABI.h: every memref is its descriptor
// (allocated pointer, aligned pointer, offset, sizes, strides, as i64s),
// then the chunk's row count and the number of cached positions.
//
//===----------------------------------------------------------------------===//

#include "DeviceExecutor.h"
#include "ModuleImpl.h"

#include <algorithm>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <mutex>

using namespace tbc::rt;
using namespace tbc::rt::detail;

namespace {

// The driver API's types, as cuda.h declares them.
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr int CU_JIT_ERROR_LOG_BUFFER = 5;
constexpr int CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;

/// The driver's entry points, resolved once per process.
struct Driver {
  void *lib = nullptr;
  std::string error; // why the driver is unusable, if it is
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuDeviceGetName)(char *, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned, int *, void **);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, unsigned, CUstream, void **, void **);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*cuMemcpyDtoD)(CUdeviceptr, CUdeviceptr, size_t);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuGetErrorString)(CUresult, const char **);
  // Optional (profiling only): null when the driver lacks them.
  CUresult (*cuEventCreate)(CUevent *, unsigned) = nullptr;
  CUresult (*cuEventRecord)(CUevent, CUstream) = nullptr;
  CUresult (*cuEventSynchronize)(CUevent) = nullptr;
  CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent) = nullptr;
  CUresult (*cuEventDestroy)(CUevent) = nullptr;
  CUcontext context = nullptr;
  CUdevice device = 0;
  int arch = 0; // compute capability, e.g. 90
  std::string name;

  std::string describe(CUresult r) {
    const char *s = nullptr;
    if (cuGetErrorString && cuGetErrorString(r, &s) == 0 && s)
      return s;
    return "CUDA error " + std::to_string(r);
  }

  static Driver &get() {
    static Driver d;
    static std::once_flag once;
    std::call_once(once, [] { d.open(); });
    return d;
  }

private:
  template <typename F> bool sym(F &fn, const char *name) {
    fn = reinterpret_cast<F>(dlsym(lib, name));
    if (!fn)
      error = std::string("the CUDA driver lacks ") + name;
    return fn != nullptr;
  }
  template <typename F> bool optionalSym(F &fn, const char *name) {
    fn = reinterpret_cast<F>(dlsym(lib, name));
    return fn != nullptr;
  }

public:
  bool canTime() const {
    return cuEventCreate && cuEventRecord && cuEventSynchronize && cuEventElapsedTime &&
           cuEventDestroy;
  }

private:

  void open() {
    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      error = "no NVIDIA driver (cannot load libcuda.so.1): this module was "
              "compiled for CUDA; compile with --target cpu to run here";
      return;
    }
    if (!sym(cuInit, "cuInit") || !sym(cuDeviceGet, "cuDeviceGet") ||
        !sym(cuDeviceGetAttribute, "cuDeviceGetAttribute") ||
        !sym(cuDeviceGetName, "cuDeviceGetName") ||
        !sym(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") ||
        !sym(cuCtxSetCurrent, "cuCtxSetCurrent") ||
        !sym(cuModuleLoadDataEx, "cuModuleLoadDataEx") ||
        !sym(cuModuleUnload, "cuModuleUnload") ||
        !sym(cuModuleGetFunction, "cuModuleGetFunction") ||
        !sym(cuLaunchKernel, "cuLaunchKernel") || !sym(cuMemAlloc, "cuMemAlloc_v2") ||
        !sym(cuMemFree, "cuMemFree_v2") || !sym(cuMemcpyHtoD, "cuMemcpyHtoD_v2") ||
        !sym(cuMemcpyDtoH, "cuMemcpyDtoH_v2") || !sym(cuMemcpyDtoD, "cuMemcpyDtoD_v2") ||
        !sym(cuCtxSynchronize, "cuCtxSynchronize") ||
        !sym(cuGetErrorString, "cuGetErrorString"))
      return;
    optionalSym(cuEventCreate, "cuEventCreate");
    optionalSym(cuEventRecord, "cuEventRecord");
    optionalSym(cuEventSynchronize, "cuEventSynchronize");
    // CUDA 12.8 added a _v2 (cuda.h maps the name to it); older drivers have
    // only the first.
    if (!optionalSym(cuEventElapsedTime, "cuEventElapsedTime_v2"))
      optionalSym(cuEventElapsedTime, "cuEventElapsedTime");
    optionalSym(cuEventDestroy, "cuEventDestroy_v2");
    CUresult r = cuInit(0);
    if (r == 0)
      r = cuDeviceGet(&device, 0);
    if (r != 0) {
      error = "no usable NVIDIA GPU: " + describe(r);
      return;
    }
    int major = 0, minor = 0;
    cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
    cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
    arch = major * 10 + minor;
    char buf[256] = {0};
    cuDeviceGetName(buf, sizeof(buf) - 1, device);
    name = buf;
    if ((r = cuDevicePrimaryCtxRetain(&context, device)) != 0)
      error = "cannot create a CUDA context: " + describe(r);
  }
};

/// Device memory that frees itself.
struct DeviceBuffer {
  CUdeviceptr ptr = 0;
  size_t bytes = 0;
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  DeviceBuffer(DeviceBuffer &&o) noexcept : ptr(o.ptr), bytes(o.bytes) {
    o.ptr = 0;
    o.bytes = 0;
  }
  ~DeviceBuffer() { reset(); }
  void reset() {
    if (ptr)
      Driver::get().cuMemFree(ptr);
    ptr = 0;
    bytes = 0;
  }
  /// At least `want` bytes; the old contents are kept when `keep`.
  bool reserve(size_t want, bool keep, std::string &error) {
    if (bytes >= want)
      return true;
    Driver &d = Driver::get();
    CUdeviceptr fresh = 0;
    if (CUresult r = d.cuMemAlloc(&fresh, want); r != 0) {
      error = "cannot allocate " + std::to_string(want >> 20) + " MiB on the GPU: " +
              d.describe(r);
      return false;
    }
    if (keep && bytes)
      d.cuMemcpyDtoD(fresh, ptr, bytes);
    reset();
    ptr = fresh;
    bytes = want;
    return true;
  }
};

class CudaExecutor;

class CudaSession final : public DeviceSession {
public:
  CudaSession(const Module &module, CudaExecutor &executor, int64_t capacity)
      : module_(module), executor_(executor), capacity_(capacity),
        activations_(module.impl().buffers.size()),
        caches_(module.impl().buffers.size()) {
    for (int64_t n : module.impl().scratch)
      scratchFloats_ = std::max(scratchFloats_, n);
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
  /// The kernels' scratch (decoding attention's slices), sized for the
  /// largest, scratchFloats_ values; steps run one after another on one
  /// stream, so they share it.
  DeviceBuffer scratch_;
  int64_t scratchFloats_ = 0;
};

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
    // later architecture).
    const CodeBlob *best = nullptr;
    int bestArch = 0;
    for (const CodeBlob &b : file.blobs) {
      int arch = 0;
      if (std::sscanf(b.name.c_str(), "cuda.sm_%d.ptx", &arch) == 1 && arch <= d.arch &&
          arch > bestArch) {
        best = &b;
        bestArch = arch;
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
  if (scratchFloats_ && !scratch_.reserve(size_t(scratchFloats_) * 4, false, error))
    return false;
  std::vector<int64_t> values;
  std::vector<void *> params;
  bool timing = profile && d.canTime();
  if (timing && !recordStepEvent(0, error))
    return false;
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
    values.push_back(rows);
    values.push_back(past + firstRow);
    params.clear();
    for (int64_t &v : values)
      params.push_back(&v);
    const std::vector<LaunchInfo> &launches = im.launches[step.kernel];
    for (size_t l = 0; l < launches.size(); ++l) {
      const LaunchInfo &li = launches[l];
      if (!li.serves(rows))
        continue; // a variant for chunks of another size
      int64_t gridY = std::min<int64_t>((rows + li.rowsPerBlock - 1) / li.rowsPerBlock, 65535);
      if (!check(d.cuLaunchKernel(executor_.functions_[step.kernel][l], unsigned(li.gridX),
                                  unsigned(gridY), 1, unsigned(li.blockX),
                                  unsigned(li.blockY), 1, 0, nullptr, params.data(), nullptr),
                 ("launching " + li.symbol).c_str()))
        return false;
    }
    if (timing && !recordStepEvent(stepIndex + 1, error))
      return false;
  }
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
