//===- HalfFloatsTest.cpp - rounding to bf16 and f16 as PyTorch does -----===//

#include "tbc/Support/HalfFloats.h"

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

TEST(Half, RoundsToNearestEven) {
  EXPECT_EQ(toHalfBits(1.0f), 0x3c00);
  EXPECT_EQ(fromHalfBits(0x3c00), 1.0f);
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1).
  EXPECT_EQ(roundToHalf(1.00048828125f), 1.0f);
  // 1 + 3 * 2^-11 is halfway between 1 + 2^-10 and 1 + 2^-9: even is 1 + 2^-9.
  EXPECT_EQ(roundToHalf(1.00146484375f), 1.001953125f);
  EXPECT_EQ(roundToHalf(-2.5f), -2.5f);
  EXPECT_EQ(roundToHalf(65504.0f), 65504.0f);
  EXPECT_EQ(roundToHalf(65519.0f), 65504.0f);
}

TEST(Half, RangeEnds) {
  float inf = std::numeric_limits<float>::infinity();
  // 65520 is halfway between 65504 and 65536 (not representable): infinity.
  EXPECT_EQ(roundToHalf(65520.0f), inf);
  EXPECT_EQ(roundToHalf(-1e6f), -inf);
  // The smallest subnormal, 2^-24, and what rounds to it or to zero.
  EXPECT_EQ(toHalfBits(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(toHalfBits(std::ldexp(1.0f, -25)), 0x0000); // a tie: to even (0)
  EXPECT_EQ(toHalfBits(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(toHalfBits(std::ldexp(3.0f, -25)), 0x0002); // 1.5 units: tie to even (2)
  EXPECT_EQ(roundToHalf(std::ldexp(1.0f, -14)), std::ldexp(1.0f, -14)); // smallest normal
  EXPECT_EQ(fromHalfBits(0x03ff), std::ldexp(1023.0f, -24));            // largest subnormal
  EXPECT_TRUE(std::isnan(roundToHalf(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(roundToHalf(inf), inf);
}

TEST(Half, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) // NaN payloads need not survive
      continue;
    ASSERT_EQ(toHalfBits(fromHalfBits(uint16_t(h))), h) << std::hex << h;
  }
}
