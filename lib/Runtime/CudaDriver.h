//===- CudaDriver.h - the CUDA driver API, loaded at run time ---*- C++ -*-===//
//
// LLVM-free and without a link-time CUDA dependency: the driver library is
// dlopen'ed (libcuda.so.1) and only its C entry points are used, declared
// here (the driver API's ABI is stable). Shared by the CUDA executor and its
// launch graphs (CudaLaunchGraph.h).
//
//===----------------------------------------------------------------------===//

#ifndef TBC_RUNTIME_CUDADRIVER_H
#define TBC_RUNTIME_CUDADRIVER_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <mutex>
#include <string>

namespace tbc::rt::cuda {

// The driver API's types, as cuda.h declares them.
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;
using CUgraph = struct CUgraph_st *;
using CUgraphExec = struct CUgraphExec_st *;
using CUgraphNode = struct CUgraphNode_st *;
/// A kernel node's launch (cuda.h's CUDA_KERNEL_NODE_PARAMS_v2; `kern` and
/// `ctx` are for CUkernel handles, unused here).
struct KernelNodeParams {
  CUfunction func;
  unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  void **kernelParams;
  void **extra;
  void *kern;
  CUcontext ctx;
};
/// A launch attribute (cuda.h's CUlaunchAttribute: an id, then a 64-byte
/// union at offset 8); tbc sets one, programmatic stream serialization.
struct LaunchAttribute {
  int id;
  char pad[4];
  union {
    char bytes[64];
    int programmaticStreamSerializationAllowed;
    void *align; // the union holds pointers
  } value;
};
static_assert(sizeof(LaunchAttribute) == 72, "cuda.h's CUlaunchAttribute");
constexpr int kProgrammaticStreamSerialization = 6;
/// cuLaunchKernelEx's launch (cuda.h's CUlaunchConfig).
struct LaunchConfig {
  unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  CUstream hStream;
  LaunchAttribute *attrs;
  unsigned numAttrs;
};
static_assert(sizeof(LaunchConfig) == 56, "cuda.h's CUlaunchConfig");
/// A graph edge's kind (cuda.h's CUgraphEdgeData): zeroed, full
/// serialization; programmatic (from_port and type 1), the downstream
/// kernel launches once every block of the upstream one has run
/// griddepcontrol.launch_dependents or ended, and waits for the rest itself.
struct GraphEdgeData {
  unsigned char fromPort, toPort, type, reserved[5];
};
static_assert(sizeof(GraphEdgeData) == 8, "cuda.h's CUgraphEdgeData");
constexpr unsigned char kKernelNodePortProgrammatic = 1;
constexpr unsigned char kDependencyTypeProgrammatic = 1;
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
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
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
  // Optional (launch graphs, CudaLaunchGraph.h): null when the driver
  // lacks them (before CUDA 12), and the kernels are launched one by one.
  CUresult (*cuGraphCreate)(CUgraph *, unsigned) = nullptr;
  CUresult (*cuGraphAddKernelNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                   const KernelNodeParams *) = nullptr;
  CUresult (*cuGraphInstantiate)(CUgraphExec *, CUgraph, unsigned long long) = nullptr;
  CUresult (*cuGraphExecKernelNodeSetParams)(CUgraphExec, CUgraphNode,
                                             const KernelNodeParams *) = nullptr;
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream) = nullptr;
  CUresult (*cuGraphExecDestroy)(CUgraphExec) = nullptr;
  CUresult (*cuGraphDestroy)(CUgraph) = nullptr;
  // Optional (programmatic dependent launch, CUDA 12.3 and sm_90): null
  // when the driver lacks them, and such kernels launch as any other
  // (their griddepcontrol.wait then has nothing to wait for).
  CUresult (*cuLaunchKernelEx)(const LaunchConfig *, CUfunction, void **, void **) = nullptr;
  CUresult (*cuGraphAddDependencies)(CUgraph, const CUgraphNode *, const CUgraphNode *,
                                     const GraphEdgeData *, size_t) = nullptr;
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

  /// Whether kernels may launch programmatically (cuLaunchKernelEx, graph
  /// edges with their kind): the driver has both and the GPU is sm_90 or
  /// later.
  bool canLaunchProgrammatically() const {
    return cuLaunchKernelEx && cuGraphAddDependencies && arch >= 90 && !programmaticRefused;
  }
  /// After the driver refused a programmatic launch or graph (`why`):
  /// kernels launch as any other from now on (their waits then have
  /// nothing to wait for), said once on stderr, since a benchmark's A/B
  /// would otherwise time the same launches twice.
  void refuseProgrammatic(const std::string &why) {
    if (!programmaticRefused)
      std::fprintf(stderr, "tbc: the GPU driver refused a programmatic launch (%s); kernels "
                           "launch one after another\n", why.c_str());
    programmaticRefused = true;
  }
  bool programmaticRefused = false;

  bool canGraph() const {
    return cuGraphCreate && cuGraphAddKernelNode && cuGraphInstantiate &&
           cuGraphExecKernelNodeSetParams && cuGraphLaunch && cuGraphExecDestroy &&
           cuGraphDestroy;
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
        !sym(cuFuncSetAttribute, "cuFuncSetAttribute") ||
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
    // The _v2 node functions take KernelNodeParams (cuda.h maps the names).
    optionalSym(cuGraphCreate, "cuGraphCreate");
    optionalSym(cuGraphAddKernelNode, "cuGraphAddKernelNode_v2");
    optionalSym(cuGraphInstantiate, "cuGraphInstantiateWithFlags");
    optionalSym(cuGraphExecKernelNodeSetParams, "cuGraphExecKernelNodeSetParams_v2");
    optionalSym(cuGraphLaunch, "cuGraphLaunch");
    optionalSym(cuGraphExecDestroy, "cuGraphExecDestroy");
    optionalSym(cuGraphDestroy, "cuGraphDestroy");
    // The _v2 forms take edge data (cuda.h maps the names to them).
    optionalSym(cuLaunchKernelEx, "cuLaunchKernelEx");
    optionalSym(cuGraphAddDependencies, "cuGraphAddDependencies_v2");
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

/// An A/B switch of the environment: on unless `variable` is "0"
/// (TBC_CUDA_GRAPHS, TBC_CUDA_PDL).
inline bool switchedOn(const char *variable) {
  const char *v = std::getenv(variable);
  return !(v && std::string(v) == "0");
}

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

} // namespace tbc::rt::cuda

#endif // TBC_RUNTIME_CUDADRIVER_H
