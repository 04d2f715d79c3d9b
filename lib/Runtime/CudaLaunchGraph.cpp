//===- CudaLaunchGraph.cpp - a call's kernel launches as one CUDA graph ---===//

#include "CudaLaunchGraph.h"

#include <algorithm>
#include <cstdlib>

using namespace tbc::rt::cuda;

namespace {

/// The node parameters of `l`, its parameters pointed to from `params`.
KernelNodeParams nodeParams(const KernelLaunch &l, std::vector<void *> &params) {
  params = parameterPointers(l);
  KernelNodeParams p{};
  p.func = l.fn;
  p.gridDimX = l.grid[0];
  p.gridDimY = l.grid[1];
  p.gridDimZ = l.grid[2];
  p.blockDimX = l.block[0];
  p.blockDimY = l.block[1];
  p.blockDimZ = l.block[2];
  p.sharedMemBytes = l.sharedBytes;
  p.kernelParams = params.data();
  return p;
}

bool check(Driver &d, CUresult r, const char *what, std::string &error) {
  if (r != 0)
    error = std::string(what) + ": " + d.describe(r);
  return r == 0;
}

bool sameGrid(const KernelLaunch &a, const KernelLaunch &b) {
  return a.grid[0] == b.grid[0] && a.grid[1] == b.grid[1] && a.grid[2] == b.grid[2];
}

} // namespace

std::vector<void *> tbc::rt::cuda::parameterPointers(const KernelLaunch &l) {
  std::vector<void *> params;
  for (const int64_t &v : l.values)
    params.push_back(const_cast<int64_t *>(&v));
  return params;
}

CUresult tbc::rt::cuda::launchKernel(const KernelLaunch &l) {
  std::vector<void *> params = parameterPointers(l);
  Driver &d = Driver::get();
  if (l.programmatic && d.canLaunchProgrammatically()) {
    LaunchAttribute attribute{};
    attribute.id = kProgrammaticStreamSerialization;
    attribute.value.programmaticStreamSerializationAllowed = 1;
    LaunchConfig config{l.grid[0],  l.grid[1],  l.grid[2],     l.block[0], l.block[1],
                        l.block[2], l.sharedBytes, nullptr, &attribute, 1};
    CUresult r = d.cuLaunchKernelEx(&config, l.fn, params.data(), nullptr);
    if (r == 0)
      return r;
    // Launched plainly instead (a failure of the kernel before, which
    // the plain launch reports as well, is not hidden by this).
    d.refuseProgrammatic(d.describe(r));
  }
  return d.cuLaunchKernel(l.fn, l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1],
                          l.block[2], l.sharedBytes, nullptr, params.data(), nullptr);
}

bool LaunchGraph::enabled() {
  static const bool on = switchedOn("TBC_CUDA_GRAPHS") && Driver::get().canGraph();
  return on;
}

void LaunchGraph::reset() {
  Driver &d = Driver::get();
  if (exec_)
    d.cuGraphExecDestroy(exec_);
  if (graph_)
    d.cuGraphDestroy(graph_);
  exec_ = nullptr;
  graph_ = nullptr;
  nodes_.clear();
  launched_.clear();
}

bool LaunchGraph::sameShape(const std::vector<KernelLaunch> &launches) const {
  if (!exec_ || launches.size() != launched_.size())
    return false;
  for (size_t i = 0; i < launches.size(); ++i) {
    const KernelLaunch &a = launches[i], &b = launched_[i];
    if (a.fn != b.fn || a.block[0] != b.block[0] || a.block[1] != b.block[1] ||
        a.block[2] != b.block[2] || a.sharedBytes != b.sharedBytes ||
        a.programmatic != b.programmatic || a.values.size() != b.values.size())
      return false;
  }
  return true;
}

bool LaunchGraph::build(const std::vector<KernelLaunch> &launches, std::string &error) {
  Driver &d = Driver::get();
  reset();
  if (!check(d, d.cuGraphCreate(&graph_, 0), "creating a CUDA graph", error))
    return false;
  // A chain: each kernel after the one before, as on a stream; a
  // programmatic one by an edge of that kind (added after the node).
  std::vector<void *> params;
  for (const KernelLaunch &l : launches) {
    KernelNodeParams p = nodeParams(l, params);
    CUgraphNode node = nullptr;
    const CUgraphNode *after = nodes_.empty() ? nullptr : &nodes_.back();
    const bool programmatic = after && l.programmatic;
    if (!check(d,
               d.cuGraphAddKernelNode(&node, graph_, programmatic ? nullptr : after,
                                      after && !programmatic ? 1 : 0, &p),
               "adding a kernel to a CUDA graph", error))
      return false;
    if (programmatic) {
      GraphEdgeData edge{};
      edge.fromPort = kKernelNodePortProgrammatic;
      edge.type = kDependencyTypeProgrammatic;
      if (!check(d, d.cuGraphAddDependencies(graph_, after, &node, &edge, 1),
                 "adding a programmatic edge to a CUDA graph", error))
        return false;
    }
    nodes_.push_back(node);
  }
  if (!check(d, d.cuGraphInstantiate(&exec_, graph_, 0), "instantiating a CUDA graph", error))
    return false;
  launched_ = launches;
  return true;
}

bool LaunchGraph::run(const std::vector<KernelLaunch> &launches, std::string &error) {
  Driver &d = Driver::get();
  if (!sameShape(launches)) {
    if (!build(launches, error)) {
      reset(); // a half-built graph is not run again
      // A driver that refuses programmatic edges gets a plain chain.
      bool programmatic = std::any_of(launches.begin(), launches.end(),
                                      [](const KernelLaunch &l) { return l.programmatic; });
      if (!programmatic)
        return false;
      d.refuseProgrammatic(error);
      error.clear();
      std::vector<KernelLaunch> plain = launches;
      for (KernelLaunch &l : plain)
        l.programmatic = false;
      if (!build(plain, error)) {
        reset();
        return false;
      }
    }
  } else {
    std::vector<void *> params;
    for (size_t i = 0; i < launches.size(); ++i) {
      if (sameGrid(launches[i], launched_[i]) && launches[i].values == launched_[i].values)
        continue;
      KernelNodeParams p = nodeParams(launches[i], params);
      if (!check(d, d.cuGraphExecKernelNodeSetParams(exec_, nodes_[i], &p),
                 "updating a CUDA graph's kernel", error)) {
        reset();
        return false;
      }
      launched_[i] = launches[i];
    }
  }
  return check(d, d.cuGraphLaunch(exec_, nullptr), "launching a CUDA graph", error);
}
