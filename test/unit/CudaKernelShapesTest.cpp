//===- CudaKernelShapesTest.cpp - the CUDA kernels' launch shapes ---------===//
//
// How many query heads a split-KV/decode attention block takes, and how many
// slices a decoding row is cut into: the register budget that keeps the
// kernels from spilling (KernelABI.h) and the blocks that fill the GPU.
//
//===----------------------------------------------------------------------===//

#include "tbc/Conversion/TbcToCUDA/KernelABI.h"

#include <gtest/gtest.h>

using tbc::cuda::decodeSplits;
using tbc::cuda::splitKvHeadsPerBlock;

TEST(CudaKernelShapes, SplitKvBlocksTakeTheLargestGroupDivisorThatFits) {
  // heads, KV heads, head dim: the examples' shapes first.
  EXPECT_EQ(splitKvHeadsPerBlock(32, 8, 128), 4); // Llama-3-8B, Qwen3-8B, Mistral-7B: 88
  EXPECT_EQ(splitKvHeadsPerBlock(32, 32, 128), 1); // MPT-7B, OLMo-2 (MHA)
  EXPECT_EQ(splitKvHeadsPerBlock(16, 8, 256), 2); // Gemma-2-9B: 2 (2 8) + 4 + 64 + 8 = 108
  EXPECT_EQ(splitKvHeadsPerBlock(4, 1, 256), 2);  // Gemma-3-1B: 4 would take 152
  EXPECT_EQ(splitKvHeadsPerBlock(28, 4, 128), 1); // Qwen2.5-7B: 7 (a prime group) takes 134
  // A group of 8 at head dim 128 would take 64 + 16 + 32 + 32 = 144: 4.
  EXPECT_EQ(splitKvHeadsPerBlock(64, 8, 128), 4);
  EXPECT_EQ(splitKvHeadsPerBlock(48, 8, 128), 3); // a group of 6: 6 takes 124, 3 78
  EXPECT_EQ(splitKvHeadsPerBlock(64, 8, 64), 8);  // 32 + 16 + 16 + 32 = 96
  EXPECT_EQ(splitKvHeadsPerBlock(4, 1, 16), 4);   // the gemma3 fixture: scalar loads
}

TEST(CudaKernelShapes, DecodeSlicesFillAbout256Blocks) {
  EXPECT_EQ(decodeSplits(8), 16);  // Llama-3-8B in blocks of 4 heads: 128 blocks
  EXPECT_EQ(decodeSplits(32), 8);  // a block per head: 256
  EXPECT_EQ(decodeSplits(2), 16);  // at most 16
  EXPECT_EQ(decodeSplits(512), 1); // at least 1
}

TEST(CudaKernelShapes, DecodeSlicesAsRequested) {
  EXPECT_EQ(decodeSplits(2, 2), 2);   // --cuda-decode-splits 2, whatever the heads
  EXPECT_EQ(decodeSplits(512, 4), 4); // more than the heads alone would get
  EXPECT_EQ(decodeSplits(8, 0), 16);  // 0: chosen by the heads
}
