//===- LaunchPlan.h - launch geometry the kernels share ---------*- C++ -*-===//
//
// What the launch plan (KernelABI.h; LaunchPlan.cpp) decides and the kernel
// bodies (Emitter.h) read back: heads per split-KV block, decoding's slices
// and scratch layout, the RoPE GEMV's paired warps, the blocks an SM must
// hold of a launch.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_LIB_CONVERSION_TBCTOCUDA_LAUNCHPLAN_H
#define TBC_LIB_CONVERSION_TBCTOCUDA_LAUNCHPLAN_H

#include "tbc/Conversion/TbcToCUDA/KernelABI.h"
#include "tbc/Dialect/TbcDialect.h"

namespace tbc::cuda {

/// The innermost dimension of a shaped type.
inline int64_t lastDim(mlir::Type t) { return mlir::cast<mlir::ShapedType>(t).getShape().back(); }

/// The query heads a split-KV block of `a` attends with (splitKvHeadsPerBlock).
int64_t headsPerBlock(AttentionOp a);

/// The slices of a decoding row's positions, each a block of
/// headsPerBlock(a) heads (`requested`: decodeSplits').
int64_t decodeSlices(AttentionOp a, int64_t requested);

/// Decoding attention's scratch array: first a counter per (row t, head h)
/// (at t H + h: the slices that have written their partials), kDecodeMaxRows
/// x the most heads of any attention of the module, so that no kernel's
/// partials overwrite another's counters; then per (row, head) its slices'
/// partials (max, sum, D values each), padded to a multiple of 128 bytes so
/// that no cache line holds two (row, head)s' partials (the merging block
/// reads its (row, head)'s in L2: combineSlices).
int64_t decodePartialsOffset(AttentionOp a);
/// The floats of a (row, head)'s slices' partials in that array.
int64_t decodePartialsStride(AttentionOp a, int64_t requested);

/// Whether the GEMV `launch` with the RoPE epilogue `rope` (null: none)
/// computes a RoPE pair's two columns in
/// two warps of one block, which swap their results through shared memory
/// (Emitter::pairedRopeColumn): GPT-J pairs are adjacent columns already;
/// NeoX pairs, half a head apart, are brought together where every head
/// dim rotates and half a head is a multiple of 4 columns. Elsewhere (NeoX
/// with partial rotary, or several rows) one warp reads both weight rows
/// and its partner's warp idles.
bool pairsRopeWarps(RotaryEpilogueAttr rope, const Launch &launch);

/// The blocks an SM must be able to hold of `launch`'s kernel for `op`
/// (`nvvm.minctasm`, which bounds the registers ptxas may give a thread), or
/// 0 where ptxas's own choice spills nowhere.
int64_t minBlocksPerSM(mlir::Operation *op, const Launch &launch, bool halfWeights,
                       const TiledGemm &tiled);

} // namespace tbc::cuda

#endif // TBC_LIB_CONVERSION_TBCTOCUDA_LAUNCHPLAN_H
