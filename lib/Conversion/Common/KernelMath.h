//===- KernelMath.h - scalar math both lowerings emit -----------*- C++ -*-===//
//
// The per-element math of tbc's ops, written once with arith/math ops so that
// the CPU lowering (inside linalg generics and vector loops) and the CUDA
// lowering (inside gpu.funcs) compute the same thing: activations, soft-caps,
// rsqrt, and RoPE's frequency table and pairing.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_LIB_CONVERSION_COMMON_KERNELMATH_H
#define TBC_LIB_CONVERSION_COMMON_KERNELMATH_H

#include "tbc/Dialect/TbcDialect.h"

#include "mlir/IR/Builders.h"

namespace tbc {

/// The element type a storage name of the options (--dtype, --cuda-kv-cache:
/// "bf16", "f16" or "f32") stands for.
mlir::Type storageElementType(mlir::Builder &b, llvm::StringRef name);
/// An attention's sliding window as an index value, null where it has none:
/// its `window` attribute, or the value of its `window(%w)` (`windowSize`,
/// the i64 a kernel takes), a value of 0 or less standing for no window as
/// one past any position (limits::kMaxPositions) does.
mlir::Value emitAttentionWindow(mlir::OpBuilder &b, mlir::Location loc, AttentionOp a,
                                mlir::Value windowSize);
/// act(x) in f32 with the math dialect (gelu = exact erf form).
mlir::Value emitActivation(mlir::OpBuilder &b, mlir::Location loc,
                           Activation act, mlir::Value x);
/// 1 / sqrt(x) (libm has no rsqrtf, so math.rsqrt is not used).
mlir::Value emitRsqrt(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x);
/// RoPE's frequencies and rotation for one tbc.rope kernel: its inverse
/// frequencies (with its scaling) are a constant table, the memref.global
/// `name` in `symbolTable` (a module or gpu.module; created once), read
/// through memref.get_global at the builder's point.
class RopeMath {
public:
  RopeMath(mlir::OpBuilder &b, mlir::Location loc, RopeScalingAttr scaling, double theta,
           int64_t rotaryDim, mlir::Operation *symbolTable, llvm::StringRef name);
  RopeMath(mlir::OpBuilder &b, mlir::Location loc, RopeOp r,
           mlir::Operation *symbolTable, llvm::StringRef name)
      : RopeMath(b, loc, r.getScalingAttr(), r.getTheta().convertToDouble(),
                 r.getRotaryDim(), symbolTable, name) {}
  /// A projection's RoPE epilogue (tbc.fused_linear's `rope`).
  RopeMath(mlir::OpBuilder &b, mlir::Location loc, RotaryEpilogueAttr r,
           mlir::Operation *symbolTable, llvm::StringRef name)
      : RopeMath(b, loc, r.getScaling(), r.getTheta().convertToDouble(), r.getRotaryDim(),
                 symbolTable, name) {}
  /// Inverse frequency `i` (index) in f32 for a row whose sequence is
  /// `length` long (i32; read only by scalings that depend on it: longrope
  /// picks its long factors past original_max_position, dynamic recomputes
  /// the frequencies in f32 as transformers does).
  mlir::Value inverseFrequency(mlir::OpBuilder &b, mlir::Location loc,
                               mlir::Value i, mlir::Value length) const;
  /// v cos(a) -/+ partner sin(a) with a = position (i32) * inv, minus when
  /// `first` (the first of its pair), cos and sin scaled by the scaling's
  /// attention factor.
  mlir::Value rotate(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                     mlir::Value partner, mlir::Value first,
                     mlir::Value position, mlir::Value inv) const;
  /// cos(a) and sin(a) of the rotation above, scaled by the attention
  /// factor: what a kernel tabulates once per position and frequency.
  std::pair<mlir::Value, mlir::Value> cosSin(mlir::OpBuilder &b, mlir::Location loc,
                                             mlir::Value position, mlir::Value inv) const;
  /// The rotation with cos and sin given (from cosSin).
  static mlir::Value rotateBy(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                              mlir::Value partner, mlir::Value first, mlir::Value cos,
                              mlir::Value sin);

private:
  RopeScalingAttr scaling;
  double theta;
  int64_t rotaryDim;
  mlir::Value table;
};

/// Where element `f` of a row of heads takes its RoPE partner from: whether
/// it is rotated at all (`inRot`: dims past rotary_dim pass through), whether
/// it is the first of its pair (its partner enters with a minus sign), the
/// frequency index `i` and the partner's column, both clamped to safe
/// indices where not rotated. NeoX pairs halves, GPT-J adjacent dims.
struct RopeLanes {
  mlir::Value inRot, first, i, partner;
};
RopeLanes emitRopeLanes(mlir::OpBuilder &b, mlir::Location loc, mlir::Value f,
                        int64_t headDim, int64_t rotaryDim, bool gptj);
/// The same for output column `col` of a projection with a RoPE epilogue:
/// `inRot` also requires the column to be among the rotated leading ones.
RopeLanes emitRopeLanes(mlir::OpBuilder &b, mlir::Location loc, mlir::Value col,
                        RotaryEpilogueAttr rope);

/// The position bias of an attention's logits (tbc.attention's
/// alibi_slopes or relative_bias), built once per kernel: its constant table
/// (the slopes, or the bucket of each distance) becomes the memref.global
/// `name`_alibi_slopes / `name`_relative_buckets in `symbolTable`.
class PositionBias {
public:
  /// `relativeTable`: the kernel's [num_buckets, heads] operand, if any.
  PositionBias(mlir::OpBuilder &b, mlir::Location loc, AttentionOp a,
               mlir::Operation *symbolTable, llvm::StringRef name,
               mlir::Value relativeTable);
  /// The f32 term added to the logit of query head `head` at position
  /// `queryPos` for the key at `keyPos` (index values), or null without a
  /// bias.
  mlir::Value at(mlir::OpBuilder &b, mlir::Location loc, mlir::Value head,
                 mlir::Value queryPos, mlir::Value keyPos) const;
  /// Whether the logits have no bias (at() returns null).
  bool empty() const { return !table; }

private:
  RelativeBucketsAttr buckets; // null with ALiBi
  mlir::Value table, relativeTable;
};

/// min(max(x, -limit), limit).
mlir::Value emitClip(mlir::OpBuilder &b, mlir::Location loc, double limit,
                     mlir::Value x);

/// cap * tanh(x / cap), x an f32 or a vector of them. `byReciprocal`: x times 1 / cap instead of the
/// division (within an ulp; on a GPU an IEEE division is a slow-path
/// sequence), for kernels whose result is rounded to 16 bits after.
mlir::Value emitSoftcap(mlir::OpBuilder &b, mlir::Location loc, double cap,
                        mlir::Value x, bool byReciprocal = false);

} // namespace tbc

#endif // TBC_LIB_CONVERSION_COMMON_KERNELMATH_H
