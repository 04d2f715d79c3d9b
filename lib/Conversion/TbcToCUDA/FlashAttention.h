//===- FlashAttention.h - tensor-core attention for prefill -----*- C++ -*-===//
//
// The flash kernel of `tbc.attention` in 16-bit modules (KernelABI.h,
// kFlashRows): scores and the softmax never leave registers, keys and values
// are staged in shared memory a tile of kFlashKeys positions at a time.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_LIB_CONVERSION_TBCTOCUDA_FLASHATTENTION_H
#define TBC_LIB_CONVERSION_TBCTOCUDA_FLASHATTENTION_H

#include "GpuBuilder.h"

#include "tbc/Conversion/TbcToCUDA/KernelABI.h"

#include "../Common/KernelMath.h"

namespace tbc::cuda {

/// Shared memory of the flash kernel: rings of kFlashStages key tiles
/// [kFlashKeys, D] and value tiles [kFlashKeys, pass dims] (a pass's value
/// dims: flashPassDims), each row padded by 8 elements so that the 8 rows a
/// warp's fragment load touches fall in 8 different banks; together
/// flashSharedBytes (KernelABI.h) of the launch's dynamic shared memory.
mlir::MemRefType flashKeyTileType(mlir::MLIRContext *ctx, Type half, int64_t headDim,
                                  FlashTile flash);
mlir::MemRefType flashValueTileType(mlir::MLIRContext *ctx, Type half, int64_t headDim,
                                    FlashTile flash);
/// On wgmma (flashOnWgmma) both rings are [stages, D / 64, positions,
/// 64], unpadded, in wgmma's 128-byte swizzle.
/// The query tile [rows, D + 8] of a block that stages its queries
/// (flashStagesQueries): scaled and rounded to 16 bits once a row block,
/// read as A fragments by ldmatrix; on wgmma [D / 64, rows,
/// 64] in the 128-byte swizzle, read by wgmma's descriptors.
mlir::MemRefType flashQueryTileType(mlir::MLIRContext *ctx, Type half, int64_t headDim,
                                    FlashTile flash);

/// What the kernel reads and writes: the [T, H * D] queries and output, the
/// [positions, KV * D] f32 caches (the chunk already appended), the chunk's
/// rows T and the positions cached before it, the window (an index,
/// emitAttentionWindow; null: none), and the shared tiles (the query tile
/// null where the lanes keep their query fragments).
struct FlashAttentionOperands {
  Value queries, keyCache, valueCache, out, T, past, window, keyTile, valueTile, queryTile;
};

/// The body of the flash kernel for attention `a` (one block per
/// (kFlashRows query rows, head)); `bias` adds ALiBi or relative position
/// terms, if the op has them. The tiles' shapes come from their types;
/// `overlap` is FlashTile::overlap, the order of the products on wgmma.
void emitFlashAttention(GpuBuilder &g, MmaHalf half, AttentionOp a, const PositionBias &bias,
                        const FlashAttentionOperands &o, bool overlap);

} // namespace tbc::cuda

#endif // TBC_LIB_CONVERSION_TBCTOCUDA_FLASHATTENTION_H
