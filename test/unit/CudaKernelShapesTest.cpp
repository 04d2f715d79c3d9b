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
  EXPECT_EQ(splitKvHeadsPerBlock(32, 8, 128), 4); // Llama-3-8B, Qwen3-8B, Mistral-7B
  EXPECT_EQ(splitKvHeadsPerBlock(32, 32, 128), 1); // MPT-7B, OLMo-2 (MHA)
  EXPECT_EQ(splitKvHeadsPerBlock(16, 8, 256), 1); // Gemma-2-9B: 2 heads spilled 8 bytes
  EXPECT_EQ(splitKvHeadsPerBlock(4, 1, 256), 1);  // Gemma-3-1B
  EXPECT_EQ(splitKvHeadsPerBlock(28, 4, 128), 1); // Qwen2.5-7B: a group of 7, prime
  // A group of 8 at head dim 128 would take 4 (8 + 8) + 16 = 80 registers: 4.
  EXPECT_EQ(splitKvHeadsPerBlock(64, 8, 128), 4);
  EXPECT_EQ(splitKvHeadsPerBlock(48, 8, 128), 3); // a group of 6: 6 takes 68
  EXPECT_EQ(splitKvHeadsPerBlock(64, 8, 64), 8);  // 2 (8 + 8) + 16 = 48
  EXPECT_EQ(splitKvHeadsPerBlock(4, 1, 16), 4);   // the gemma3 fixture: scalar loads
}

TEST(CudaKernelShapes, DecodeSlicesFillAbout256Blocks) {
  EXPECT_EQ(decodeSplits(8), 16);  // Llama-3-8B in blocks of 4 heads: 128 blocks
  EXPECT_EQ(decodeSplits(32), 8);  // a block per head: 256
  EXPECT_EQ(decodeSplits(2), 16);  // at most 16
  EXPECT_EQ(decodeSplits(512), 1); // at least 1
}
