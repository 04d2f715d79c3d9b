//===- KernelABI.h - what the CPU kernels take besides their op operands ===//
//
// The lowering (`--tbc-lower-to-cpu`) and the module writer (the
// manifest) must agree on two departures from the tbc op's own signature:
//
// * Packed operands. Projection kernels read their weight (and embeddings
//   their table) as panels of `panel` output columns, each contiguous
//   along the reduction: packed[p, k, j] = W[p * panel + j, k]
//   (W[k, ...] for [in, out] weights), zero past the last column. One
//   16-wide load then gives 16 output columns of one k, so the kernel
//   accumulates outer products x[t, k] * W[k, cols] in registers with no
//   horizontal sums, whatever the weight's layout. The runtime packs at
//   bind time (the manifest's `pack` weights); the tbc IR keeps the
//   checkpoint's layout, since packing is this backend's business.
//   With bf16 dot products (`bf16-dot`, AVX512-BF16's vdpbf16ps, which
//   multiplies pairs of bf16 along k) the panels hold k in pairs: panel p's
//   element (k, j) lies at (k / 2) * 2 * panel + 2 * j + k % 2 of its
//   [in, panel] block (the manifest's `pack_pairs`), so one 32-wide bf16
//   load gives 16 columns of k and k + 1; `in` must be even.
// * Work ranges. Projections take the [begin, end) of their output columns
//   as a last operand, attention of its key/value heads, so that the runtime can
//   give each core a share.
// * Scalar operands (i64: an attention's `window(%w)`), the kernel function's
//   last, come after everything else, each a memref<1xi64> (the steps'
//   `scalars` in the manifest).
//
//===----------------------------------------------------------------------===//

#ifndef TBC_CONVERSION_TBCTOCPU_KERNELABI_H
#define TBC_CONVERSION_TBCTOCPU_KERNELABI_H

#include "tbc/Dialect/TbcDialect.h"
#include "tbc/Support/Manifest.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/SmallVector.h"

#include <numeric>
#include <optional>

namespace tbc {

/// How far ahead a decode tile prefetches its weight panel unless the target
/// CPU wants otherwise (CpuBackend.cpp's decodePrefetchFor).
constexpr int64_t kDefaultDecodePrefetch = 8192;

/// The register tile of the projection kernels, chosen once per target CPU
/// (the CPU backend's tileFor): `vector` floats per SIMD register, weight
/// panels of `panel` output columns, `rows` token rows per tile. The
/// accumulators (rows x panel / vector registers), one broadcast and the
/// panel's weight vectors must fit the register file: AVX-512 has 32 zmm
/// (8 x 2 + 1 + 2 = 19), AVX2 16 ymm (6 x 2 + 1 + 2 = 15).
struct CpuTile {
  int64_t vector = 16, panel = 32, rows = 8;
  /// bf16 weights packed in k pairs and multiplied by activations rounded to
  /// bf16, two k per instruction (vdpbf16ps; AVX-512 tile, bf16 weights).
  bool bf16Dot = false;
  /// With bf16Dot: multi-row tiles on AMX's tile registers (tdpbf16ps, 32
  /// rows x one panel x 32 k per step) where the reduction is a multiple of
  /// 32; single rows (decode) stay on vdpbf16ps. Same packing.
  bool amx = false;
  /// With bf16Dot: the activations as the sum of this many bf16 terms (each
  /// the rounding of what the previous left), every product taken once per
  /// term: 1 rounds them to bf16; 3 holds an f32 exactly (8 + 8 + 8 bits of
  /// significand), the products then the f32 path's (`--cpu-dot amx-f32`).
  int64_t activationTerms = 1;
  /// How far ahead (bytes) a single-row (decode) tile prefetches its panel
  /// into L2; 0: none, the hardware prefetcher alone. Chosen per CPU and
  /// weight width (CpuBackend.cpp's tileFor).
  int64_t decodePrefetch = kDefaultDecodePrefetch;
  /// Panels a single-row (decode) tile reads side by side (1, 2 or 4:
  /// isDecodeStreamCount): more streams for a core's prefetchers to follow.
  /// Chosen per CPU (CpuBackend.cpp's tileFor).
  int64_t decodeStreams = 1;
  /// A prompt's attention (kTiledMinRows queries or more, no position bias)
  /// in register tiles of several query rows against a block of packed keys
  /// (TiledAttention.cpp); false: one query row a pass, as decoding attends
  /// (`--cpu-prompt-attention rows`, to compare the two on a host).
  bool promptTiles = true;
};

/// The decode stream counts a tile can have: divisors of the unrolled k
/// steps, which the streams share (Matmul.cpp).
constexpr bool isDecodeStreamCount(int64_t n) { return n == 1 || n == 2 || n == 4; }
/// The AVX-512 tile: the default, and what modules recorded before the tile
/// was chosen per target.
constexpr CpuTile kAvx512Tile{16, 32, 8};
constexpr CpuTile kAvx2Tile{8, 16, 6};

/// The operand of a kernel's op that is read packed: a projection's weight,
/// or an embedding's table (so that a table tied to the LM head is stored
/// once, packed, and gathered from there); none for other ops.
inline std::optional<unsigned> packedOperand(mlir::Operation *op) {
  if (llvm::isa<ProjectionOpInterface>(op))
    return 1;
  if (llvm::isa<EmbeddingOp>(op))
    return 0;
  return std::nullopt;
}

/// Whether that operand is [in, out] (GPT-2's Conv1D) rather than [out, in]
/// (an embedding table's rows are its "outputs").
inline bool packedOperandInOut(mlir::Operation *op) {
  auto p = llvm::dyn_cast<ProjectionOpInterface>(op);
  return p && p.getWeightInOut();
}

/// [panels, in, panel] for a weight of `shape` ([out, in], or [in, out]
/// with `inOut`).
inline llvm::SmallVector<int64_t, 3> packedWeightShape(llvm::ArrayRef<int64_t> shape,
                                                       bool inOut, int64_t panel) {
  int64_t out = inOut ? shape[1] : shape[0], in = inOut ? shape[0] : shape[1];
  return {(out + panel - 1) / panel, in, panel};
}

/// The work range a kernel takes, or none when its op takes none: output
/// columns of a projection (shares start on whole weight panels), key/value
/// heads of an attention. The op decides (ProjectionOpInterface,
/// tbc.attention).
inline std::optional<manifest::WorkRange> workRange(mlir::func::FuncOp kernel,
                                                    int64_t panel) {
  mlir::Operation *op = &kernel.getBody().front().front();
  if (auto a = llvm::dyn_cast<AttentionOp>(op))
    return manifest::WorkRange{"kv_heads", int64_t(a.getNumKvHeads()), 1};
  if (auto p = llvm::dyn_cast<ProjectionOpInterface>(op)) {
    // A RoPE epilogue rotates each column with a partner in the same head:
    // shares hold whole heads, so the partner is computed by the same call.
    int64_t align = panel;
    if (auto f = llvm::dyn_cast<FusedLinearOp>(op); f && f.getRope())
      align = std::lcm(panel, f.getRope()->getHeadDim());
    return manifest::WorkRange{"columns", p.getResultWidth(), align};
  }
  return std::nullopt;
}

} // namespace tbc

#endif // TBC_CONVERSION_TBCTOCPU_KERNELABI_H
