//===- ModuleImpl.h - a loaded module's parsed manifest ---------*- C++ -*-===//
//
// Private to lib/Runtime: what Runtime.cpp runs and ManifestCheck.cpp checks.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_LIB_RUNTIME_MODULEIMPL_H
#define TBC_LIB_RUNTIME_MODULEIMPL_H

#include "tbc/Support/HalfFloats.h"
#include "tbc/Support/Manifest.h"
#include "tbc/Support/ModuleFile.h"
#include "tbc/Runtime/HugePageAllocator.h"
#include "tbc/Runtime/Runtime.h"

#include "DeviceExecutor.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tbc::rt {
namespace detail {

// The manifest's own structs (tbc/Support/Manifest.h), under the names the
// runtime has always used for them.
using WeightEntry = manifest::Weight;
using BufferEntry = manifest::Buffer;
using Arg = manifest::Arg;
using LaunchInfo = manifest::Launch;
using Step = manifest::Step;

inline int64_t product(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

inline std::string shapeString(const std::vector<int64_t> &s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i)
    out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}
} // namespace detail

/// A weight while the bind-time transforms run (WeightTransforms.cpp): f32
/// values, or the bits of bf16/f16 values as a checkpoint holds them.
struct StagedWeight {
  enum Kind { F32, BF16, F16 } kind = F32;
  LargeVector<float> f32;
  LargeVector<uint16_t> bits;
  /// A copy of a checkpoint tensor in its own precision (never widened).
  static StagedWeight fromCheckpoint(const TensorView &t);
};

struct Module::Impl {
  using WeightEntry = detail::WeightEntry;
  using BufferEntry = detail::BufferEntry;
  using Step = detail::Step;
  using LaunchInfo = detail::LaunchInfo;

  /// The manifest's target, and its executor (DeviceExecutor.h).
  std::string target;
  std::unique_ptr<DeviceExecutor> device;
  /// Why the bound weights could not be moved to the device (sessions fail).
  std::string deviceError;
  /// Per kernel: what the device launches for it (empty on the host).
  std::vector<std::vector<LaunchInfo>> launches;

  std::vector<WeightEntry> weightEntries;
  std::vector<BufferEntry> buffers;
  std::vector<std::string> kernelNames;
  std::vector<bool> rowParallel; // rows of the chunk are independent
  /// Embedding gathers: they read one row of their table per token.
  std::vector<bool> gathers;
  /// How a kernel's work splits across the cores: `units` (0: it does not)
  /// are output columns (projections, shares aligned to 32 columns, one
  /// weight panel) or key/value heads (attention, aligned to 1); the kernel
  /// takes the [begin, end) of its share as its last operand.
  struct Split {
    int64_t units = 0, align = 1;
  };
  std::vector<Split> splits;
  std::vector<Step> steps;
  /// Whether a kernel reads the weight (by id), or only weight transforms do.
  std::vector<bool> readByKernels;
  /// Weight elements each step reads in full (what splitting it shares).
  std::vector<int64_t> stepWeightElements;
  /// Multiply-add FLOPs a step does per row: 2 per element of the matrices
  /// it multiplies by (none for a table an embedding gathers from).
  std::vector<double> stepMatmulFlopsPerRow;
  std::vector<std::vector<std::vector<int64_t>>> signatures; // by kernel
  std::vector<std::string> cacheTypes; // by kernel: the KV cache type it was compiled for
  std::vector<int64_t> scratch; // by kernel: f32 values of scratch it takes (0: none)
  std::vector<int64_t> staging; // by kernel: its staging array's width (0: none)
  int output = -1;
  /// Session::profile()'s entries (kernel uses: a kernel and what it
  /// reads), zeroed, and the entry each step's time goes to.
  std::vector<Session::KernelTime> profileEntries;
  std::vector<int> profileEntryOfStep;
  void makeProfileEntries(const Module &m);
  /// The first of the steps after the last attention when all of them are
  /// row-independent (each output row needs only its input row), else
  /// steps.size(): with only the last position's logits wanted
  /// (LogitRows::Last), executors run these steps on the last row alone.
  size_t lastRowTail = 0;
  /// The tensor taps (buffer by buffer id), in the order steps write them.
  std::vector<manifest::Tap> taps;
  /// Positions a sequence may reach: the rows of a learned position table.
  int64_t positionLimit = INT64_MAX;
  std::vector<LargeVector<float>> weights; // by weight id, after binding
  /// Weights the kernels read as bf16 (a `convert`), in 16 bits; their f32
  /// slot in `weights` stays empty.
  std::vector<LargeVector<uint16_t>> weights16;


  bool parseManifest(const std::string &text, Module &m, std::string &error);
  /// Checks that the manifest's parts agree with each other and with the
  /// shapes its kernels were compiled for (ManifestCheck.cpp); a manifest
  /// that passes cannot make a kernel or a weight transform step outside
  /// its memory.
  bool checkConsistency(const Module &m, std::string &error);
  /// Fills `weights` and `weights16` from the parameters (`loadParam`,
  /// called once per `param` entry, when first needed) by the manifest's
  /// transforms (WeightTransforms.cpp).
  void runTransforms(const std::function<StagedWeight(int param)> &loadParam);
};

} // namespace tbc::rt

#endif // TBC_LIB_RUNTIME_MODULEIMPL_H
