//===- Sampler.h - choosing the next token from logits ----------*- C++ -*-===//
//
// Greedy decoding by default (bit-identical to an argmax), or sampling as
// Hugging Face's generate() does it: repetition penalty on the logits of
// tokens already seen, then temperature, top-k and top-p, then a draw from
// the softmax. Seeded and platform-independent (the generator and the
// uniform draw are our own, not <random>'s implementation-defined
// distributions), so a seed reproduces a generation anywhere. LLVM-free,
// device-independent: it reads the logits a session returned.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_RUNTIME_SAMPLER_H
#define TBC_RUNTIME_SAMPLER_H

#include <cstdint>
#include <string>
#include <vector>

namespace tbc::rt {

struct SamplingOptions {
  /// 0: greedy (argmax; the other options but the penalty are ignored).
  double temperature = 0;
  /// Keep the k most likely tokens (0: all).
  int64_t topK = 0;
  /// Keep the smallest set of most likely tokens whose probability reaches
  /// p (1: all).
  double topP = 1;
  /// > 1 discourages tokens already in the sequence (HF's
  /// repetition_penalty: a positive logit is divided by it, a negative one
  /// multiplied); 1: off.
  double repetitionPenalty = 1;
  uint64_t seed = 0;

  /// Empty when the options are valid, else what is wrong.
  std::string check() const;
};

class Sampler {
public:
  explicit Sampler(const SamplingOptions &options);
  /// The next token from `logits` (`vocab` floats) of a sequence that holds
  /// `seen` (prompt and generated tokens, for the repetition penalty).
  int32_t next(const float *logits, int64_t vocab, const std::vector<int32_t> &seen);

private:
  /// Uniform in [0, 1), 53 random bits of splitmix64.
  double uniform();
  SamplingOptions options_;
  uint64_t state_;
  std::vector<float> scratch_;
  std::vector<int32_t> order_;
};

} // namespace tbc::rt

#endif // TBC_RUNTIME_SAMPLER_H
