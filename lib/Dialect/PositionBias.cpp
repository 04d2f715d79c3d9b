//===- PositionBias.cpp - ALiBi slopes and T5 relative buckets ------------===//

#include "tbc/Dialect/PositionBias.h"

#include <algorithm>
#include <cmath>

std::vector<double> tbc::bloomAlibiSlopes(int64_t heads) {
  int64_t n = 1;
  while (n * 2 <= heads)
    n *= 2;
  // The reference raises a float32 base to integer powers.
  auto slopes = [](int64_t n, int64_t first, int64_t count, int64_t step) {
    float base = float(std::pow(2.0, -std::pow(2.0, -(std::log2(double(n)) - 3))));
    std::vector<double> s;
    for (int64_t i = 0; i < count; ++i)
      s.push_back(double(std::pow(base, float(first + i * step))));
    return s;
  };
  std::vector<double> s = slopes(n, 1, n, 1);
  if (n != heads) {
    std::vector<double> extra = slopes(2 * n, 1, std::min(n, heads - n), 2);
    s.insert(s.end(), extra.begin(), extra.end());
  }
  return s;
}

std::vector<double> tbc::mptAlibiSlopes(int64_t heads, double maxBias) {
  int64_t n = 1;
  while (n < heads)
    n *= 2;
  std::vector<double> all;
  for (int64_t i = 1; i <= n; ++i)
    all.push_back(double(1.0f / std::pow(2.0f, float(i) * float(maxBias / double(n)))));
  if (n == heads)
    return all;
  std::vector<double> s;
  for (int64_t i = 1; i < n; i += 2)
    s.push_back(all[i]);
  for (int64_t i = 0; i < n; i += 2)
    s.push_back(all[i]);
  s.resize(heads);
  return s;
}

std::vector<int32_t> tbc::relativeBucketTable(RelativeBucketsAttr buckets) {
  int64_t side =
      relativeBucketsPerSide(buckets.getNumBuckets(), buckets.getBidirectional());
  int64_t maxExact = side / 2, maxDistance = buckets.getMaxDistance();
  // float32 throughout, as the reference: log(n / max_exact) /
  // log(max_distance / max_exact) * (side - max_exact), truncated.
  float denom = float(std::log(double(maxDistance) / double(maxExact)));
  std::vector<int32_t> table(maxDistance + 1);
  for (int64_t n = 0; n <= maxDistance; ++n) {
    if (n < maxExact) {
      table[n] = int32_t(n);
      continue;
    }
    float large = std::log(float(n) / float(maxExact)) / denom * float(side - maxExact);
    table[n] = int32_t(std::min<int64_t>(maxExact + int64_t(large), side - 1));
  }
  return table;
}
