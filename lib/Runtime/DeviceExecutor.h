//===- DeviceExecutor.h - running a module's kernels on a device -*- C++ -*-===//
//
// Private to lib/Runtime. Binding (transforms, packing) and the session logic
// (positions, capacity, token checks) are device-independent; an executor
// owns what is not: loading the module's code, where weights live, the
// key/value caches and activations, and launching the schedule. Each target
// registers its executor by the manifest's `target` (one line in
// DeviceExecutor.cpp): CpuExecutor.cpp, CudaExecutor.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_LIB_RUNTIME_DEVICEEXECUTOR_H
#define TBC_LIB_RUNTIME_DEVICEEXECUTOR_H

#include "tbc/Runtime/Runtime.h"
#include "tbc/Support/ModuleFile.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tbc::rt {
class Module;

/// One sequence's state on the device.
class DeviceSession {
public:
  virtual ~DeviceSession() = default;
  /// Where to add each kernel's time (Session::setProfiling), or null.
  void setProfile(std::vector<Session::KernelTime> *p) { profile = p; }
  /// Where to copy the module's taps (Session::setTapping; one entry per
  /// manifest tap, in its order), or null.
  void setTaps(std::vector<Session::Tap> *t) { taps = t; }
  /// Runs `tokens` (at `positions`) after `past` cached positions; fills
  /// `logits` with [tokens.size(), vocab] floats.
  virtual bool forward(const std::vector<int32_t> &tokens,
                       const std::vector<int32_t> &positions, int64_t past,
                       std::vector<float> &logits, std::string &error) = 0;

protected:
  std::vector<Session::KernelTime> *profile = nullptr;
  std::vector<Session::Tap> *taps = nullptr;
};

/// One sequence's share of a batched forward: its session, its tokens at
/// `positions` after `past` cached positions, and where its logits go
/// ([tokens.size(), vocab] floats).
struct SequenceChunk {
  DeviceSession *session;
  const std::vector<int32_t> *tokens;
  std::vector<int32_t> positions;
  int64_t past;
  std::vector<float> *logits;
  /// Its length once these tokens are in (the sequence_lengths input).
  int64_t sequenceLength() const { return past + int64_t(tokens->size()); }
};

class DeviceExecutor {
public:
  virtual ~DeviceExecutor() = default;
  /// Runs several sequences (distinct sessions of this executor) as one
  /// batch. By default one forward per sequence; an executor that can do
  /// better (the CPU's: one launch sequence over all rows, so projections
  /// read each weight once per step) overrides it.
  /// `rows`: LogitRows::Last fills each chunk's logits with its last
  /// position's only (by default computed in full, then cut).
  virtual bool forwardBatch(std::vector<SequenceChunk> &chunks, LogitRows rows,
                            std::string &error) {
    for (SequenceChunk &c : chunks) {
      if (!c.session->forward(*c.tokens, c.positions, c.past, *c.logits, error))
        return false;
      if (rows == LogitRows::Last && !c.logits->empty()) {
        size_t vocab = c.logits->size() / c.tokens->size();
        c.logits->erase(c.logits->begin(), c.logits->end() - long(vocab));
      }
    }
    return true;
  }
  /// Loads the module's code for the parsed manifest (`module.impl()`).
  virtual bool load(const ModuleFile &file, const Module &module, std::string &error) = 0;
  /// Takes the bound weights (after the bind-time transforms); the executor
  /// may release the host copies it has moved to the device.
  virtual bool weightsBound(const Module &module, std::string &error) = 0;
  virtual std::unique_ptr<DeviceSession> newSession(const Module &module,
                                                    int64_t capacity) = 0;
  /// Whether the kernels run on this process's CPU cores (what its
  /// ceilings, measured here, bound).
  virtual bool runsOnHostCpu() const { return false; }
};

/// The executor for a manifest's `target`; `error` is set (and nullptr
/// returned) for a target this runtime has none for.
std::unique_ptr<DeviceExecutor> createDeviceExecutor(const std::string &target,
                                                     std::string &error);

std::unique_ptr<DeviceExecutor> createCpuExecutor();
std::unique_ptr<DeviceExecutor> createCudaExecutor();

} // namespace tbc::rt

#endif // TBC_LIB_RUNTIME_DEVICEEXECUTOR_H
