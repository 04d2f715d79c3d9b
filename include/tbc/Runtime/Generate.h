//===- Generate.h - batched generation over sessions ------------*- C++ -*-===//
//
// Continues several prompts at once: one batched prefill step over all of
// them (Session::forwardBatch), then one decode step over every sequence
// still running, each weight read once per step for the whole batch. Each
// sequence samples with its own Sampler from the same options (so a prompt
// continues the same wherever it stands in the batch) and stops at a stop
// token (kept), at max_new_tokens, or where its session or the model's
// position table ends. What `tbc run --generate` and the Python package's
// generate() share; LLVM-free and device-independent.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_RUNTIME_GENERATE_H
#define TBC_RUNTIME_GENERATE_H

#include "tbc/Runtime/Runtime.h"
#include "tbc/Runtime/Sampler.h"

#include <memory>
#include <string>
#include <vector>

namespace tbc::rt {

struct GenerationOptions {
  int64_t maxNewTokens = 0;
  SamplingOptions sampling;
  std::vector<int32_t> stopTokens;
  /// Positions each session may hold (Session's capacity; 0: the model's).
  int64_t capacity = 0;
};

class BatchGenerator {
public:
  /// Why a sequence is no longer running.
  enum class Stop {
    Running,
    Length,        // max_new_tokens generated
    StopToken,     // generated a stop token (the last one it holds)
    Capacity,      // its session holds no more positions
    PositionTable, // the model's learned position table ends
  };

  BatchGenerator(const Module &module, std::vector<std::vector<int32_t>> prompts,
                 const GenerationOptions &options);

  /// Runs every prompt in one step and picks each sequence's first token.
  /// With `promptLogits`, it receives every prompt position's logits
  /// ([prompt length, vocab] each); without, only the last rows are
  /// computed (LogitRows::Last).
  bool prefill(std::string &error, std::vector<std::vector<float>> *promptLogits = nullptr);
  /// One decode step over the running sequences.
  bool step(std::string &error);

  bool running() const { return runningCount() > 0; }
  size_t runningCount() const;
  /// Tokens each running sequence has generated so far (they move together).
  int64_t produced() const { return produced_; }
  /// Positions a sequence may reach: its session's and the model's.
  int64_t room() const { return room_; }
  const std::vector<int32_t> &generated(size_t i) const { return generated_[i]; }
  Stop stop(size_t i) const { return stop_[i]; }
  /// Sequence i's session (to turn on profiling or tapping).
  Session &session(size_t i) { return *sessions_[i]; }

private:
  /// Takes each running sequence's picked token and decides whether it
  /// goes on.
  void accept();

  GenerationOptions options_;
  int64_t vocab_, room_, produced_ = 0;
  std::vector<std::unique_ptr<Session>> sessions_;
  std::vector<Sampler> samplers_;
  std::vector<std::vector<int32_t>> prompts_, seen_, generated_;
  std::vector<int32_t> next_;
  std::vector<Stop> stop_;
};

} // namespace tbc::rt

#endif // TBC_RUNTIME_GENERATE_H
