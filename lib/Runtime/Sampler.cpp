//===- Sampler.cpp - greedy decoding and HF-style sampling ----------------===//

#include "tbc/Runtime/Sampler.h"

#include <algorithm>
#include <cmath>

using namespace tbc::rt;

std::string SamplingOptions::check() const {
  if (!(temperature >= 0) || !std::isfinite(temperature))
    return "the temperature must be a finite number >= 0";
  if (topK < 0)
    return "top-k must be >= 0 (0: off)";
  if (!(topP > 0 && topP <= 1))
    return "top-p must be in (0, 1]";
  if (!(repetitionPenalty > 0) || !std::isfinite(repetitionPenalty))
    return "the repetition penalty must be a finite number > 0 (1: off)";
  return "";
}

Sampler::Sampler(const SamplingOptions &options)
    : options_(options), state_(options.seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull) {}

double Sampler::uniform() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return double(z >> 11) * 0x1.0p-53;
}

int32_t Sampler::next(const float *logits, int64_t vocab, const std::vector<int32_t> &seen) {
  const float *row = logits;
  if (options_.repetitionPenalty != 1) {
    scratch_.assign(logits, logits + vocab);
    float p = float(options_.repetitionPenalty);
    std::vector<bool> done(size_t(vocab), false);
    for (int32_t t : seen)
      if (t >= 0 && t < vocab && !done[size_t(t)]) {
        done[size_t(t)] = true;
        float &l = scratch_[size_t(t)];
        l = l > 0 ? l / p : l * p;
      }
    row = scratch_.data();
  }
  // Greedy: the first maximum, as std::max_element and torch.argmax pick.
  if (options_.temperature == 0 || options_.topK == 1)
    return int32_t(std::max_element(row, row + vocab) - row);

  // Candidates by descending logit (stable: ties keep the lower id first),
  // cut to the top k.
  order_.resize(size_t(vocab));
  for (int64_t i = 0; i < vocab; ++i)
    order_[size_t(i)] = int32_t(i);
  int64_t keep = options_.topK > 0 ? std::min(options_.topK, vocab) : vocab;
  auto byLogit = [&](int32_t a, int32_t b) {
    return row[a] > row[b] || (row[a] == row[b] && a < b);
  };
  if (keep < vocab)
    std::partial_sort(order_.begin(), order_.begin() + keep, order_.end(), byLogit);
  else
    std::sort(order_.begin(), order_.end(), byLogit);
  order_.resize(size_t(keep));

  // Softmax of logit / temperature over the candidates, in double.
  std::vector<double> prob(order_.size());
  double top = double(row[order_[0]]) / options_.temperature, total = 0;
  for (size_t i = 0; i < order_.size(); ++i) {
    prob[i] = std::exp(double(row[order_[i]]) / options_.temperature - top);
    total += prob[i];
  }
  // Top-p: the smallest prefix whose probability reaches p (the most
  // likely token always stays).
  size_t n = prob.size();
  if (options_.topP < 1) {
    double cumulative = 0;
    for (size_t i = 0; i < prob.size(); ++i) {
      cumulative += prob[i] / total;
      if (cumulative >= options_.topP) {
        n = i + 1;
        break;
      }
    }
    total = 0;
    for (size_t i = 0; i < n; ++i)
      total += prob[i];
  }
  double u = uniform() * total;
  for (size_t i = 0; i < n; ++i) {
    u -= prob[i];
    if (u < 0)
      return order_[i];
  }
  return order_[n - 1]; // rounding left u at 0
}
