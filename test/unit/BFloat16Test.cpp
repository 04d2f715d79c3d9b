//===- BFloat16Test.cpp - rounding to bf16 as PyTorch does ----------------===//

#include "tbc/Support/BFloat16.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

using namespace tbc;

TEST(BFloat16, RoundsToNearestEven) {
  EXPECT_EQ(roundToBF16(1.0f), 1.0f);
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties go to the even one (1).
  EXPECT_EQ(roundToBF16(1.00390625f), 1.0f);
  // 1 + 3 * 2^-8 lies halfway between 1 + 2^-7 and 1 + 2^-6: even is 1 + 2^-6.
  EXPECT_EQ(roundToBF16(1.01171875f), 1.015625f);
  // Just above halfway rounds up.
  EXPECT_EQ(roundToBF16(std::nextafter(1.00390625f, 2.0f)), 1.0078125f);
  EXPECT_EQ(roundToBF16(-2.5f), -2.5f);
  EXPECT_EQ(toBF16Bits(1.0f), 0x3f80);
  EXPECT_EQ(fromBF16Bits(0xc020), -2.5f);
}

TEST(BFloat16, SpecialValuesSurvive) {
  float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(roundToBF16(inf), inf);
  EXPECT_TRUE(std::isnan(roundToBF16(std::numeric_limits<float>::quiet_NaN())));
  // The largest finite f32 rounds up to infinity in bf16, as in PyTorch.
  EXPECT_EQ(roundToBF16(std::numeric_limits<float>::max()), inf);
}
