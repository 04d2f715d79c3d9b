//===- HostProbes.h - the host's ceilings, measured now ---------*- C++ -*-===//
#ifndef TBC_TOOLS_RUNCOMMANDS_HOSTPROBES_H
#define TBC_TOOLS_RUNCOMMANDS_HOSTPROBES_H

#include <chrono>

namespace tbc::rt {

/// Seconds since `t0` on the steady clock: the timer of the probes and of
/// `tbc bench`'s runs.
inline double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Bytes per second of a streaming read over every core: the ceiling for
/// work that must read each weight once. `onHugePages` says whether the
/// probe's buffer got 2 MiB pages, as the runtime's weights do.
double measureReadBandwidth(bool &onHugePages);

/// FLOP/s of 12 independent FMA chains a core on every core of the pool,
/// in the widest vectors the CPU has (`registers`: "zmm" or "ymm"), best of
/// 3: the ceiling of a projection's multiply-adds. 0 (and no `registers`)
/// on a CPU without FMA vectors.
double measureFmaPeak(const char *&registers);

} // namespace tbc::rt

#endif // TBC_TOOLS_RUNCOMMANDS_HOSTPROBES_H
