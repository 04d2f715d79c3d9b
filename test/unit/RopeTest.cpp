//===- RopeTest.cpp - RoPE inverse frequencies against transformers -------===//
//
// Expected values were computed with the formulas of transformers'
// modeling_rope_utils.py (_compute_default/linear/llama3_parameters).
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
RopeScalingAttr scaling(RopeScalingKind kind, double factor, double low = 1.0,
                        double high = 4.0, int64_t original = 8192) {
  static mlir::MLIRContext context;
  context.getOrLoadDialect<TbcDialect>();
  return RopeScalingAttr::get(&context, kind, llvm::APFloat(factor), llvm::APFloat(low),
                              llvm::APFloat(high), original);
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
