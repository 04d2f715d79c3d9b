//===- CudaLaunchGraph.h - a call's kernel launches as one CUDA graph -*- C++ -*-===//
//
// A decode step of an 8B model is some 250 kernel launches of tens of
// microseconds each, and launching each from the host costs a few: the GPU
// waits between kernels on the host's launch rate (bench/NOTES.md,
// 2026-11-27: 0.70 ms of a 6.40 ms step). A graph hands the driver the whole
// chain at once. It is built on the first call and kept: the next call's
// launches (the same kernels and block shapes, as every decode step has) only
// update the nodes whose grid or parameters changed -- the attention kernels,
// whose parameters carry the cached positions (TbcToCUDA/KernelABI.h), and
// every node whose buffers were reallocated -- and launch it again.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_RUNTIME_CUDALAUNCHGRAPH_H
#define TBC_RUNTIME_CUDALAUNCHGRAPH_H

#include "CudaDriver.h"

#include <string>
#include <vector>

namespace tbc::rt::cuda {

/// One kernel launch: its function, geometry and parameters (each an i64,
/// in the order of the function's parameters).
struct KernelLaunch {
  CUfunction fn = nullptr;
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  std::vector<int64_t> values;
  unsigned sharedBytes = 0; // dynamic shared memory
  /// Launched before the kernel before it ends (programmatic dependent
  /// launch): its code waits for that one itself (manifest::Launch::
  /// programmatic), once every block of that one has said so
  /// (griddepcontrol.launch_dependents) or ended. Only where
  /// Driver::canLaunchProgrammatically.
  bool programmatic = false;
};

/// Pointers to `l`'s values, as the driver takes kernel parameters (it
/// copies them at the launch or when a graph node takes them).
std::vector<void *> parameterPointers(const KernelLaunch &l);

/// Launches `l` on the default stream (programmatically if it says so).
CUresult launchKernel(const KernelLaunch &l);

class LaunchGraph {
public:
  LaunchGraph() = default;
  LaunchGraph(const LaunchGraph &) = delete;
  LaunchGraph &operator=(const LaunchGraph &) = delete;
  ~LaunchGraph() { reset(); }

  /// Runs `launches` in order on the default stream, as the graph of the
  /// previous call with its changed nodes updated, or as a new graph when
  /// the kernels or block shapes differ from that call's.
  bool run(const std::vector<KernelLaunch> &launches, std::string &error);

  /// Whether calls may use graphs: the driver has them and TBC_CUDA_GRAPHS
  /// is not 0 (the A/B switch of bench/gpu_bench.py).
  static bool enabled();

private:
  void reset();
  bool build(const std::vector<KernelLaunch> &launches, std::string &error);
  /// Same kernels and blocks in the same order: an update suffices.
  bool sameShape(const std::vector<KernelLaunch> &launches) const;

  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
  std::vector<CUgraphNode> nodes_;
  std::vector<KernelLaunch> launched_; // what each node holds now
};

} // namespace tbc::rt::cuda

#endif // TBC_RUNTIME_CUDALAUNCHGRAPH_H
