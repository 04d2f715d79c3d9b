//===- PositionBiasTest.cpp - ALiBi slopes and T5 buckets vs transformers ===//
//
// Expected values printed by transformers 5.23: bloom's _get_alibi_slopes,
// mpt's build_mpt_alibi_tensor and T5Attention._relative_position_bucket.
//
//===----------------------------------------------------------------------===//

#include "tbc/Dialect/PositionBias.h"

#include "mlir/IR/MLIRContext.h"

#include <cmath>

#include <gtest/gtest.h>

using namespace tbc;

static void expectSlopes(const std::vector<double> &got, const std::vector<double> &want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t h = 0; h < want.size(); ++h)
    EXPECT_FLOAT_EQ(float(got[h]), float(want[h])) << "head " << h;
}

TEST(PositionBias, BloomSlopes) {
  // 6 and 12 heads: the powers of two below, then every other slope of the
  // next power's rule.
  expectSlopes(bloomAlibiSlopes(6), {0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125});
  expectSlopes(bloomAlibiSlopes(12),
               {0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125, 0.00390625,
                0.7071067690849304, 0.3535533845424652, 0.1767766773700714,
                0.0883883386850357});
  EXPECT_FLOAT_EQ(float(bloomAlibiSlopes(16).front()), float(std::pow(2.0, -0.5)));
}

TEST(PositionBias, MptSlopes) {
  expectSlopes(mptAlibiSlopes(6, 8.0), {0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125});
  // A larger alibi_bias_max and 12 heads: odd-numbered slopes first.
  expectSlopes(mptAlibiSlopes(12, 16.0),
               {0.25, 0.0625, 0.015625, 0.00390625, 0.0009765625, 0.000244140625,
                6.103515625e-05, 1.52587890625e-05, 0.5, 0.125, 0.03125, 0.0078125});
}

TEST(PositionBias, RelativeBuckets) {
  mlir::MLIRContext ctx;
  ctx.loadDialect<TbcDialect>();
  // Distances 0..139 on the causal side: 16 exact, then logarithmic up to
  // 128, then the last bucket.
  const std::vector<int32_t> causal = {
      0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 16, 16, 17,
      17, 18, 18, 18, 19, 19, 19, 20, 20, 20, 20, 21, 21, 21, 21, 22, 22, 22, 22, 22,
      23, 23, 23, 23, 23, 23, 24, 24, 24, 24, 24, 24, 25, 25, 25, 25, 25, 25, 25, 26,
      26, 26, 26, 26, 26, 26, 26, 27, 27, 27, 27, 27, 27, 27, 27, 27, 27, 28, 28, 28,
      28, 28, 28, 28, 28, 28, 28, 29, 29, 29, 29, 29, 29, 29, 29, 29, 29, 29, 29, 30,
      30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 31};
  // The bidirectional rule's lower half (keys before the query).
  const std::vector<int32_t> lower = {
      0,  1,  2,  3,  4,  5,  6,  7,  8,  8,  8,  8,  9,  9,  9,  9,  10, 10, 10, 10,
      10, 10, 10, 11, 11, 11, 11, 11, 11, 11, 11, 11, 12, 12, 12, 12, 12, 12, 12, 12,
      12, 12, 12, 12, 12, 12, 13, 13, 13, 13, 13, 13, 13, 13, 13, 13, 13, 13, 13, 13,
      13, 13, 13, 13, 14, 14, 14, 14, 14, 14, 14, 14, 14, 14, 14, 14, 14, 14, 14, 14,
      14, 14, 14, 14, 14, 14, 14, 14, 14, 14, 14, 15};
  for (bool bidirectional : {false, true}) {
    const std::vector<int32_t> &want = bidirectional ? lower : causal;
    std::vector<int32_t> table = relativeBucketTable(
        RelativeBucketsAttr::get(&ctx, 32, 128, bidirectional));
    ASSERT_EQ(table.size(), 129u);
    // Past max_distance every distance reads table[max_distance], the last
    // bucket of its side.
    EXPECT_EQ(table.back(), bidirectional ? 15 : 31);
    for (size_t n = 0; n < want.size(); ++n)
      EXPECT_EQ(table[n], want[n]) << "distance " << n << (bidirectional ? " (bidirectional)" : "");
  }
}
