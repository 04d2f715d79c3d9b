//===- RopeTest.cpp - RoPE inverse frequencies against transformers -------===//
//
// Expected values were computed with the formulas of transformers'
// modeling_rope_utils.py (_compute_<kind>_parameters of transformers 5.23,
// float32 where transformers computes in float32: hence the tolerances).
//
//===----------------------------------------------------------------------===//

#include "tbc/Dialect/Rope.h"

#include "mlir/IR/MLIRContext.h"

#include <cmath>

#include <gtest/gtest.h>

using namespace tbc;

TEST(Rope, DefaultFrequencies) {
  std::vector<double> inv = ropeInverseFrequencies(10000.0, 64);
  ASSERT_EQ(inv.size(), 32u);
  EXPECT_DOUBLE_EQ(inv[0], 1.0);
  EXPECT_NEAR(inv[1], 1.0 / std::pow(10000.0, 2.0 / 64), 1e-15);
  EXPECT_NEAR(inv[31], 1.0 / std::pow(10000.0, 62.0 / 64), 1e-18);
}

TEST(Rope, PartialRotaryUsesRotaryDim) {
  // GPT-NeoX with rotary_pct 0.25 and head_dim 128 rotates 32 dims: the
  // exponent's denominator is the rotary dim, not the head dim.
  std::vector<double> inv = ropeInverseFrequencies(10000.0, 32);
  ASSERT_EQ(inv.size(), 16u);
  EXPECT_NEAR(inv[1], std::pow(10000.0, -2.0 / 32), 1e-15);
}

namespace {
mlir::MLIRContext &context() {
  static mlir::MLIRContext context;
  context.getOrLoadDialect<TbcDialect>();
  return context;
}

RopeScalingAttr scaling(RopeScalingKind kind, double factor, double low = 1.0,
                        double high = 4.0, int64_t original = 8192,
                        double attention = 1.0,
                        llvm::ArrayRef<double> shortFactor = {},
                        llvm::ArrayRef<double> longFactor = {}) {
  auto array = [](llvm::ArrayRef<double> v) {
    return v.empty() ? mlir::DenseF64ArrayAttr()
                     : mlir::DenseF64ArrayAttr::get(&context(), v);
  };
  return RopeScalingAttr::get(&context(), kind, llvm::APFloat(factor), llvm::APFloat(low),
                              llvm::APFloat(high), original, llvm::APFloat(attention),
                              llvm::APFloat(32.0), llvm::APFloat(1.0), true,
                              array(shortFactor), array(longFactor));
}
} // namespace

TEST(Rope, LinearScalingDividesEveryFrequency) {
  RopeScalingAttr s = scaling(RopeScalingKind::linear, 8.0);
  std::vector<double> plain = ropeInverseFrequencies(1e6, 256);
  std::vector<double> scaled = ropeInverseFrequencies(1e6, 256, s);
  for (size_t i = 0; i < plain.size(); ++i)
    EXPECT_DOUBLE_EQ(scaled[i], plain[i] / 8.0) << "i=" << i;
}

TEST(Rope, Llama3ScalingKeepsHighDividesLowInterpolatesMiddle) {
  RopeScalingAttr s = scaling(RopeScalingKind::llama3, 8.0, 1.0, 4.0, 8192);
  std::vector<double> inv = ropeInverseFrequencies(500000.0, 128, s);
  ASSERT_EQ(inv.size(), 64u);
  EXPECT_DOUBLE_EQ(inv[0], 1.0);                       // high frequency: kept
  EXPECT_NEAR(inv[10], 0.12868737343265052, 1e-15);    // kept
  EXPECT_NEAR(inv[30], 0.0013718935677611381, 1e-15);  // interpolated
  EXPECT_NEAR(inv[33], 0.00031269375038406517, 1e-16); // interpolated
  EXPECT_NEAR(inv[40], 3.428102195952591e-05, 1e-18);  // divided by 8
  EXPECT_NEAR(inv[63], 3.068925988914511e-07, 1e-20);  // divided by 8
}

TEST(Rope, YarnRampsBetweenKeptAndInterpolated) {
  // Qwen2.5's YaRN: factor 4 over 32768 positions, theta 1e6, head_dim 128.
  RopeScalingAttr s = scaling(RopeScalingKind::yarn, 4.0, 1.0, 4.0, 32768,
                              yarnDefaultAttentionFactor(4.0, 0, 0));
  std::vector<double> inv = ropeInverseFrequencies(1e6, 128, s);
  ASSERT_EQ(inv.size(), 64u);
  double expected[][2] = {{0, 1.0},
                          {10, 0.11547820270061493},     // kept (extrapolated)
                          {20, 0.01333521492779255},     // ramp
                          {25, 0.004131738096475601},    // ramp
                          {30, 0.0010643609566614032},   // ramp
                          {40, 4.4456985051510856e-05},  // divided by 4
                          {63, 3.102344408034696e-07}};  // divided by 4
  for (auto [i, v] : expected)
    EXPECT_NEAR(inv[size_t(i)], v, v * 3e-7) << "i=" << i;
  EXPECT_NEAR(ropeAttentionFactor(s), 1.138629436111989, 1e-15);
}

TEST(Rope, LongropeSwitchesFactorsPastTheOriginalLength) {
  // Phi-3's LongRoPE on 8 rotary dims; 64 / 13 positions.
  double factor = 64.0 / 13.0;
  RopeScalingAttr s = scaling(RopeScalingKind::longrope, factor, 1.0, 4.0, 13,
                              longropeDefaultAttentionFactor(factor, 13),
                              {1.0, 1.2, 1.5, 2.0}, {1.0, 2.5, 4.0, 8.0});
  double shortExpected[] = {1.0, 0.0833333358168602, 0.006666666828095913,
                            0.0005000000237487257};
  double longExpected[] = {1.0, 0.03999999910593033, 0.0024999999441206455,
                           0.0001250000059371814};
  for (int64_t len : {0, 1, 13}) {
    std::vector<double> inv = ropeInverseFrequencies(10000.0, 8, s, len);
    for (size_t i = 0; i < 4; ++i)
      EXPECT_NEAR(inv[i], shortExpected[i], shortExpected[i] * 3e-7) << "len=" << len;
  }
  for (int64_t len : {14, 1000}) {
    std::vector<double> inv = ropeInverseFrequencies(10000.0, 8, s, len);
    for (size_t i = 0; i < 4; ++i)
      EXPECT_NEAR(inv[i], longExpected[i], longExpected[i] * 3e-7) << "len=" << len;
  }
  EXPECT_NEAR(ropeAttentionFactor(s), 1.2733534177768238, 1e-15);
}

TEST(Rope, DynamicRaisesTheBaseOnlyPastTheOriginalLength) {
  // factor 2, max_position_embeddings 10, 16 dims.
  RopeScalingAttr s = scaling(RopeScalingKind::dynamic, 2.0, 1.0, 4.0, 10);
  std::vector<double> plain = ropeInverseFrequencies(10000.0, 16);
  for (int64_t len : {0, 5, 10}) {
    std::vector<double> inv = ropeInverseFrequencies(10000.0, 16, s, len);
    for (size_t i = 0; i < 8; ++i)
      EXPECT_NEAR(inv[i], plain[i], plain[i] * 1e-12) << "len=" << len;
  }
  double at15[] = {1.0, 0.2864149510860443, 0.08203353732824326, 0.023495633155107498,
                   0.00672950129956007, 0.001927429810166359, 0.000552044773939997,
                   0.00015811389312148094};
  std::vector<double> inv = ropeInverseFrequencies(10000.0, 16, s, 15);
  for (size_t i = 0; i < 8; ++i)
    EXPECT_NEAR(inv[i], at15[i], at15[i] * 1e-6) << "i=" << i;
  EXPECT_EQ(ropeAttentionFactor(s), 1.0);
}
