//===- Runtime.h - load a .tbcm module, bind weights, run it ----*- C++ -*-===//
//
// The tbc runtime has no LLVM/MLIR dependency: it reads the module file,
// dlopens the host code it carries, binds weights from safetensors by name
// (carrying out the recorded bind-time transforms), and executes the
// manifest's schedule for one sequence at a time, keeping a KV cache per
// attention call site so that decoding is incremental.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_RUNTIME_RUNTIME_H
#define TBC_RUNTIME_RUNTIME_H

#include "tbc/Support/Safetensors.h"
#include "tbc/Support/Json.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tbc::rt {
class DeviceSession;

struct ParamInfo {
  std::string name;
  std::vector<int64_t> shape;
};

class Module {
public:
  ~Module();
  Module(const Module &) = delete;
  Module &operator=(const Module &) = delete;

  /// Loads and validates a module file; nullptr and `error` on failure.
  static std::unique_ptr<Module> load(const std::string &path,
                                      std::string &error);

  /// Validates a manifest without loading any code (what `load` checks
  /// after the container; used by the fuzzers).
  static bool checkManifest(const std::string &manifest, std::string &error);

  /// Binds every parameter from `weights` (f32/f16/bf16, converted to f32),
  /// checking names, shapes and finiteness first, then runs the bind-time
  /// transforms. When the module records the config it was compiled from
  /// and the checkpoint's folder has a config.json, every field the module
  /// depends on must agree. `warnings` (if given) receives checkpoint
  /// tensors the module does not use.
  bool bindWeights(const WeightStore &weights, std::string &error,
                   std::vector<std::string> *warnings = nullptr);
  /// Deterministic random weights (for trying a module without a checkpoint),
  /// each value exact in bf16: the same model whatever the module stores.
  void bindRandomWeights(uint64_t seed);
  bool bound() const { return bound_; }

  int64_t vocabSize() const { return vocab_; }
  int64_t maxPositions() const { return maxPositions_; }
  /// Positions a sequence may reach whatever its capacity (the rows of a
  /// learned position table; INT64_MAX when there is none).
  int64_t positionLimit() const;
  /// Whether a call's logits depend on the sequence's length at that call
  /// (LongRoPE and dynamic NTK pick RoPE frequencies by it, per call, as
  /// transformers does): a prompt prefilled at once and the same prompt fed
  /// in pieces then give different logits.
  bool lengthDependent() const;
  const std::string &architecture() const { return architecture_; }
  /// Whether its kernels run on this process's CPU cores (a CPU module), as
  /// opposed to a device's.
  bool runsOnHostCpu() const;
  /// The tensor taps compiled in (tbc compile --taps), in the order the
  /// schedule writes them: Hugging Face module paths (model.layers.3,
  /// model.layers.3.mlp.down_proj). Empty for a module compiled without.
  std::vector<std::string> tapNames() const;
  const std::vector<ParamInfo> &params() const { return params_; }

  /// What one token costs in the projections, from the schedule: the weight
  /// bytes every kernel reads (an embedding gather reads one row) and the
  /// multiply-add FLOPs of the matrices (2 per weight element). Attention's
  /// own FLOPs grow with the position and are left out. `tbc bench` sets
  /// decode speed against weightBytes / memory bandwidth. tailMatmulFlops:
  /// the part of matmulFlops in the steps after the last attention, which a
  /// prefill wanting only the last position's logits runs on that row alone.
  struct TokenCost {
    double weightBytes = 0, matmulFlops = 0, tailMatmulFlops = 0;
  };
  TokenCost tokenCost() const;

  struct Impl;
  Impl &impl() const { return *impl_; }

private:
  Module();
  /// The checkpoint folder's config.json against sourceConfig_.
  bool checkSourceConfig(const WeightStore &store, std::string &error) const;
  std::unique_ptr<Impl> impl_;
  bool bound_ = false;
  int64_t vocab_ = 0, maxPositions_ = 0;
  std::string architecture_;
  std::vector<ParamInfo> params_;
  /// The config.json fields the module was compiled from (null: absent).
  std::shared_ptr<const json::Value> sourceConfig_;
};

/// Which positions a forward returns logits for.
enum class LogitRows {
  /// Every position: [tokens, vocab].
  All,
  /// The last position of each sequence only: [1, vocab]. What generation
  /// needs; the kernels after the last attention (the last layer's output
  /// projection and FFN, the final norm, the LM head: all row-independent)
  /// then run on that row alone.
  Last,
};

/// One sequence: its KV caches and how many positions it has seen.
///
/// Threads: sessions of one module may run on different threads at once
/// (the module is read-only once bound; kernels share the process's worker
/// pool, and a forward that finds it busy runs its shares on its own
/// thread). One session must not run on two threads at once: the second
/// forward is refused with an error. The module must outlive its sessions.
class Session {
public:
  /// `capacity`: most positions the session holds (0: the model's maximum,
  /// or 4096 when the model has none; never more than
  /// limits::kMaxPositions). The key/value caches grow as the sequence
  /// does, so a large capacity costs nothing until it is used.
  Session(const Module &module, int64_t capacity = 0);
  ~Session();

  /// Runs `tokens` after everything seen so far; `logits` receives
  /// [tokens.size(), vocab] floats. Fails (never throws) on tokens outside
  /// the vocabulary or past the capacity, on running out of memory, and
  /// when a logit comes out non-finite (the logits are still filled then).
  bool forward(const std::vector<int32_t> &tokens, std::vector<float> &logits,
               std::string &error, LogitRows rows = LogitRows::All);
  /// Runs several sequences at once: `tokens[i]` after everything
  /// `sessions[i]` has seen, `logits[i]` receiving [tokens[i].size(),
  /// vocab] floats. Lengths may differ (a prompt's prefill can share a step
  /// with other sequences' decodes); sessions must be distinct and of one
  /// module, and any may join or leave between calls. On the CPU the batch
  /// is one launch sequence over all rows, so a projection reads its weight
  /// once per call, not once per sequence. Checks every sequence as
  /// forward() does before running any; on failure no position advances
  /// (except that a non-finite logit is reported after the step).
  static bool forwardBatch(const std::vector<Session *> &sessions,
                           const std::vector<std::vector<int32_t>> &tokens,
                           std::vector<std::vector<float>> &logits, std::string &error,
                           LogitRows rows = LogitRows::All);
  int64_t position() const { return position_; }
  int64_t capacity() const { return capacity_; }
  void reset() { position_ = 0; }

  /// Time spent in each use of a kernel (wall clock around each call, all
  /// cores' share included; CUDA events on a GPU), accumulated while
  /// profiling is on. A use is a kernel and what it reads: the RMS norm
  /// kernel that every layer's input norm and the final norm share shows as
  /// two entries, each layer's calls of one of them added up.
  struct KernelTime {
    std::string name;
    /// The checkpoint tensors this use reads, by module path inside a layer
    /// ("self_attn.q_proj self_attn.k_proj"), space-separated; empty for
    /// kernels that read no weight (attention, adds).
    std::string reads;
    double seconds = 0;
    int64_t calls = 0;
    /// Multiply-add FLOPs of its projections over the timed calls (2 per
    /// weight element and row), 0 for kernels without one: with `seconds`,
    /// the rate a projection ran at.
    double matmulFlops = 0;
  };
  void setProfiling(bool on);

  /// A tap's value for the tokens of the last forward call: [rows, width]
  /// floats, row i being token i of the call.
  struct Tap {
    std::string name;
    int64_t rows = 0, width = 0;
    std::vector<float> data;
  };
  /// Copy every tap of the module (Module::tapNames) out as each forward
  /// runs. The last call's values are then in taps(). While tapping, every
  /// row is computed even when only the last position's logits are asked
  /// for, so that each tap holds all the call's tokens.
  void setTapping(bool on);
  const std::vector<Tap> &taps() const { return taps_; }
  /// Per kernel use, in the order of the uses' first steps; clearProfile()
  /// zeroes it.
  const std::vector<KernelTime> &profile() const { return profile_; }
  void clearProfile();

private:
  /// Whether `tokens` can run next (bound module, ids, positions, capacity).
  bool check(const std::vector<int32_t> &tokens, std::string &error) const;
  /// Advances past `n` tokens whose logits (of the last `rows` of them)
  /// were just computed; fails on a non-finite logit.
  bool finish(int64_t n, int64_t rows, const std::vector<float> &logits,
              std::string &error);

  const Module &module_;
  int64_t capacity_;
  int64_t position_ = 0;
  std::atomic<bool> busy_{false};
  /// The sequence's state with the module's executor (caches, activations).
  std::unique_ptr<DeviceSession> executorSession_;
  std::vector<KernelTime> profile_;
  bool tapping_ = false;
  std::vector<Tap> taps_;
};

} // namespace tbc::rt

#endif // TBC_RUNTIME_RUNTIME_H
