//===- SamplerTest.cpp - greedy and sampled next tokens -------------------===//

#include "tbc/Runtime/Sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

using namespace tbc::rt;

namespace {
std::vector<float> logits{1.0f, 3.0f, 2.0f, 3.0f, -1.0f};

std::map<int32_t, int> draws(const SamplingOptions &o, int n,
                             const std::vector<int32_t> &seen = {}) {
  Sampler s(o);
  std::map<int32_t, int> counts;
  for (int i = 0; i < n; ++i)
    ++counts[s.next(logits.data(), int64_t(logits.size()), seen)];
  return counts;
}
} // namespace

TEST(Sampler, GreedyIsTheFirstMaximum) {
  Sampler s({});
  EXPECT_EQ(s.next(logits.data(), 5, {}), 1); // ties: the lower id, as argmax
  SamplingOptions hot;
  hot.temperature = 10;
  hot.topK = 1; // top-k 1 is greedy whatever the temperature
  EXPECT_EQ(Sampler(hot).next(logits.data(), 5, {}), 1);
}

TEST(Sampler, RepetitionPenaltyAsTransformers) {
  SamplingOptions o;
  o.repetitionPenalty = 2;
  // Token 1 seen: 3 / 2 = 1.5 < 3 (token 3) -> greedy picks 3.
  EXPECT_EQ(Sampler(o).next(logits.data(), 5, {1, 1}), 3);
  // A negative logit is multiplied: token 4 seen stays last.
  EXPECT_EQ(Sampler(o).next(logits.data(), 5, {4, 1, 3}), 2);
}

TEST(Sampler, TemperatureFollowsTheSoftmax) {
  SamplingOptions o;
  o.temperature = 1;
  o.seed = 7;
  const int n = 200000;
  std::map<int32_t, int> c = draws(o, n);
  double z = 0;
  for (float l : logits)
    z += std::exp(double(l));
  for (int32_t t = 0; t < 5; ++t) {
    double p = std::exp(double(logits[t])) / z;
    double sd = std::sqrt(p * (1 - p) / n);
    EXPECT_NEAR(double(c[t]) / n, p, 5 * sd + 1e-4) << "token " << t;
  }
}

TEST(Sampler, TopKAndTopPCutTheTail) {
  SamplingOptions o;
  o.temperature = 1;
  o.topK = 3; // tokens 1, 3, 2
  std::map<int32_t, int> c = draws(o, 20000);
  EXPECT_EQ(c.count(0) + c.count(4), 0u);
  EXPECT_GT(c[2], 0);
  // Probabilities 0.387, 0.387, 0.142, ...: p = 0.7 keeps tokens 1 and 3.
  SamplingOptions p;
  p.temperature = 1;
  p.topP = 0.7;
  c = draws(p, 20000);
  EXPECT_EQ(c.size(), 2u);
  EXPECT_GT(c[1], 9000);
  EXPECT_GT(c[3], 9000);
}

TEST(Sampler, SeedsReproduce) {
  SamplingOptions o;
  o.temperature = 1.5;
  o.seed = 3;
  Sampler a(o), b(o);
  o.seed = 4;
  Sampler c(o);
  int same = 0, differ = 0;
  for (int i = 0; i < 200; ++i) {
    int32_t x = a.next(logits.data(), 5, {}), y = b.next(logits.data(), 5, {});
    EXPECT_EQ(x, y);
    (x == c.next(logits.data(), 5, {}) ? same : differ)++;
  }
  EXPECT_GT(differ, 20);
}

TEST(Sampler, ChecksOptions) {
  SamplingOptions o;
  EXPECT_EQ(o.check(), "");
  o.topP = 0;
  EXPECT_NE(o.check(), "");
  o = {};
  o.temperature = -1;
  EXPECT_NE(o.check(), "");
  o = {};
  o.repetitionPenalty = 0;
  EXPECT_NE(o.check(), "");
}
