//===- GpuBuilder.h - terse op builders for the CUDA kernels ----*- C++ -*-===//
//
// The kernels of TbcToCUDA are written op by op; these helpers keep a
// kernel's arithmetic readable: index and f32 arithmetic, GPU ids, scf
// loops and warp reductions, and the mma.sync m16n8k16 operands of the
// 16-bit tensor-core kernels (projections and flash attention).
//
//===----------------------------------------------------------------------===//

#ifndef TBC_LIB_CONVERSION_TBCTOCUDA_GPUBUILDER_H
#define TBC_LIB_CONVERSION_TBCTOCUDA_GPUBUILDER_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/Support/MathExtras.h"

#include <cassert>
#include <initializer_list>

namespace tbc::cuda {

using mlir::Location;
using mlir::OpBuilder;
using mlir::SmallVector;
using mlir::Type;
using mlir::TypeRange;
using mlir::VectorType;
using mlir::Value;
using mlir::ValueRange;
namespace arith = mlir::arith;
namespace gpu = mlir::gpu;
namespace math = mlir::math;
namespace memref = mlir::memref;
namespace scf = mlir::scf;
namespace vector = mlir::vector;

/// The i64 address `address` as a global-memory pointer (!llvm.ptr<1>),
/// through a generic one as NVVM's ops take it.
inline Value globalPointerAt(OpBuilder &b, Location loc, Value address) {
  Value generic = mlir::LLVM::IntToPtrOp::create(
      b, loc, mlir::LLVM::LLVMPointerType::get(b.getContext()), address,
      mlir::LLVM::DereferenceableAttr());
  return mlir::LLVM::AddrSpaceCastOp::create(
      b, loc, mlir::LLVM::LLVMPointerType::get(b.getContext(), /*global*/ 1), generic);
}

/// Index and f32 arithmetic, GPU ids, loops and warp reductions.
struct GpuBuilder {
  OpBuilder &b;
  Location loc;

  Value idx(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value f32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(float(v)));
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value add(Value x, int64_t c) { return c ? add(x, idx(c)) : x; }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value mul(Value x, int64_t c) { return arith::MulIOp::create(b, loc, x, idx(c)); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
  Value div(Value x, int64_t c) { return arith::DivUIOp::create(b, loc, x, idx(c)); }
  Value div(Value x, Value y) { return arith::DivUIOp::create(b, loc, x, y); }
  Value rem(Value x, int64_t c) { return arith::RemUIOp::create(b, loc, x, idx(c)); }
  Value rem(Value x, Value y) { return arith::RemUIOp::create(b, loc, x, y); }
  Value min(Value x, Value y) { return arith::MinSIOp::create(b, loc, x, y); }
  Value max(Value x, Value y) { return arith::MaxSIOp::create(b, loc, x, y); }
  /// The first position a causal row at `p` sees through a sliding window
  /// (null: none, 0): max(0, p + 1 - window).
  Value firstVisible(Value p, Value window) {
    return window ? max(idx(0), sub(add(p, 1), window)) : idx(0);
  }
  Value lt(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x, y);
  }
  Value lt(Value x, int64_t c) { return lt(x, idx(c)); }
  Value le(Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, x, y);
  }
  Value i1(bool v) { return arith::ConstantIntOp::create(b, loc, v, 1); }
  Value i32(int64_t v) { return arith::ConstantIntOp::create(b, loc, v, 32); }
  /// x == c, in x's integer type (index or i32).
  Value eq(Value x, int64_t c) {
    Value y = x.getType().isIndex() ? idx(c) : arith::ConstantIntOp::create(b, loc, x.getType(), c);
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, x, y);
  }
  Value andi(Value x, Value y) { return arith::AndIOp::create(b, loc, x, y); }
  Value ori(Value x, Value y) { return arith::OrIOp::create(b, loc, x, y); }
  Value xori(Value x, Value y) { return arith::XOrIOp::create(b, loc, x, y); }
  Value select(Value c, Value x, Value y) {
    return arith::SelectOp::create(b, loc, c, x, y);
  }
  Value fadd(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value fsub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value fmul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value fdiv(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  Value fmax(Value x, Value y) { return arith::MaximumFOp::create(b, loc, x, y); }
  Value fma(Value x, Value y, Value acc) { return math::FmaOp::create(b, loc, x, y, acc); }
  Value exp(Value x) { return math::ExpOp::create(b, loc, x); }
  Value exp2(Value x) { return math::Exp2Op::create(b, loc, x); }
  /// 2^x (f32) by a bare ex2.approx.ftz (one MUFU.EX2): results below
  /// 2^-126 flush to 0. math.exp2 (libdevice) is ex2.approx without .ftz,
  /// which ptxas wraps in a compare, a select and two multiplies to keep
  /// those subnormal. For softmax weights relative to their row's max they
  /// are nothing a 16-bit P or an f32 sum of at least 1 keeps anyway.
  Value exp2Ftz(Value x) {
    return mlir::LLVM::CallIntrinsicOp::create(b, loc, b.getF32Type(),
                                               b.getStringAttr("llvm.nvvm.ex2.approx.ftz.f32"),
                                               ValueRange{x})
        .getResult(0);
  }
  Value rsqrt(Value x) { return fdiv(f32(1.0), math::SqrtOp::create(b, loc, x)); }
  Value toF32(Value i32) { return arith::SIToFPOp::create(b, loc, b.getF32Type(), i32); }
  Value toIndex(Value i32) {
    return arith::IndexCastOp::create(b, loc, b.getIndexType(), i32);
  }

  Value tid(gpu::Dimension d) { return gpu::ThreadIdOp::create(b, loc, d); }
  Value bid(gpu::Dimension d) { return gpu::BlockIdOp::create(b, loc, d); }
  Value gridDim(gpu::Dimension d) { return gpu::GridDimOp::create(b, loc, d); }

  Value load(Value m, ValueRange i) { return memref::LoadOp::create(b, loc, m, i); }
  void store(Value v, Value m, ValueRange i) { memref::StoreOp::create(b, loc, v, m, i); }

  using LoopBody = llvm::function_ref<SmallVector<Value>(Value, ValueRange)>;
  /// for (iv = lb; iv < ub; iv += step) with loop-carried `init`.
  SmallVector<Value> loop(Value lb, Value ub, Value step, ValueRange init,
                          LoopBody body) {
    auto f = scf::ForOp::create(b, loc, lb, ub, step, init);
    if (init.empty()) // the builder added an empty scf.yield: ours replaces it
      f.getBody()->getTerminator()->erase();
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(f.getBody());
    SmallVector<Value> next = body(f.getInductionVar(), f.getRegionIterArgs());
    scf::YieldOp::create(b, loc, next);
    return SmallVector<Value>(f.getResults());
  }
  /// As loop(), kept rolled: LLVM's unroller leaves it, and NVPTX marks its
  /// header `.pragma "nounroll"` for ptxas, which otherwise unrolls a short
  /// constant trip count of a body already holding many live values (the
  /// tiled projection's k walk at K = 192: 6 steps unrolled took 255
  /// registers and spilled; rolled, 192 and none).
  SmallVector<Value> rolledLoop(Value lb, Value ub, Value step, ValueRange init,
                                LoopBody body) {
    SmallVector<Value> results = loop(lb, ub, step, init, body);
    assert(!results.empty() && "a rolled loop carries values");
    mlir::MLIRContext *ctx = b.getContext();
    auto unroll = mlir::LLVM::LoopUnrollAttr::get(ctx, /*disable=*/b.getBoolAttr(true), {}, {},
                                                  {}, {}, {}, {});
    auto annotation = mlir::LLVM::LoopAnnotationAttr::get(
        ctx, {}, {}, {}, unroll, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {});
    // scf-to-cf moves the LLVM dialect's attributes of a loop to its latch.
    results.front().getDefiningOp()->setAttr("loop_annotation", annotation);
    return results;
  }
  void loop(Value lb, Value ub, Value step, llvm::function_ref<void(Value)> body) {
    loop(lb, ub, step, ValueRange{}, [&](Value iv, ValueRange) {
      body(iv);
      return SmallVector<Value>{};
    });
  }
  void ifThen(Value cond, llvm::function_ref<void()> body) {
    auto i = scf::IfOp::create(b, loc, cond, /*withElse=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(i.thenBlock());
    body();
  }
  /// scf.if without results: `then` where `cond` holds, else `otherwise`.
  void ifThenElse(Value cond, llvm::function_ref<void()> then,
                  llvm::function_ref<void()> otherwise) {
    auto i = scf::IfOp::create(b, loc, cond, /*withElse=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(i.thenBlock());
    then();
    b.setInsertionPointToStart(i.elseBlock());
    otherwise();
  }
  /// scf.if with results: `then` and `otherwise` each build the values.
  SmallVector<Value> ifElse(Value cond, TypeRange types,
                            llvm::function_ref<SmallVector<Value>()> then,
                            llvm::function_ref<SmallVector<Value>()> otherwise) {
    auto i = scf::IfOp::create(b, loc, types, cond, /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(i.thenBlock());
    scf::YieldOp::create(b, loc, then());
    b.setInsertionPointToStart(i.elseBlock());
    scf::YieldOp::create(b, loc, otherwise());
    return SmallVector<Value>(i.getResults());
  }
  /// Whether every row of the 2-D activation memref `x` starts 16 bytes
  /// aligned: its offset and row stride, dynamic in the kernel ABI (a view
  /// is a column range of a wider buffer), are multiples of 4 elements of
  /// 4 bytes (buffers start 256-byte aligned). Uniform across the grid: a
  /// kernel branches on it to read rows 128 bits at a time, which NVPTX
  /// emits only for loads it knows to be aligned (else 4 scalar loads, 4x
  /// the load instructions and L1 wavefronts).
  Value rowsAligned16(Value x) {
    auto md = memref::ExtractStridedMetadataOp::create(b, loc, x);
    Value bits = arith::OrIOp::create(b, loc, md.getOffset(), md.getStrides()[0]);
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                 arith::AndIOp::create(b, loc, bits, idx(3)), idx(0));
  }
  /// Vectors of `type` from x at each (row, k) of `at`, 16-byte aligned
  /// loads where `aligned` (rowsAligned16, every k % 4 == 0) holds. The
  /// other branch loads element by element: were both branches the same
  /// vector loads but for their alignment, LLVM would hoist them into one,
  /// of the lesser alignment.
  SmallVector<Value> loadRows(Value x, llvm::ArrayRef<std::pair<Value, Value>> at,
                              VectorType type, Value aligned) {
    const int64_t width = type.getNumElements();
    return ifElse(
        aligned, SmallVector<Type>(at.size(), type),
        [&] {
          SmallVector<Value> v;
          for (auto [row, k] : at) {
            auto l = vector::LoadOp::create(b, loc, type, x, ValueRange{row, k});
            l.setAlignment(16);
            v.push_back(l);
          }
          return v;
        },
        [&] {
          SmallVector<Value> v;
          for (auto [row, k] : at) {
            SmallVector<Value> elements;
            for (int64_t j = 0; j < width; ++j)
              elements.push_back(load(x, {row, j ? add(k, j) : k}));
            v.push_back(vector::FromElementsOp::create(b, loc, type, elements));
          }
          return v;
        });
  }
  /// n vectors of `type` from x[row, k + i * width] (loadRows).
  SmallVector<Value> loadRow(Value x, Value row, Value k, int64_t n, VectorType type,
                             Value aligned) {
    SmallVector<std::pair<Value, Value>> at;
    for (int64_t i = 0; i < n; ++i)
      at.push_back({row, i ? add(k, i * type.getNumElements()) : k});
    return loadRows(x, at, type, aligned);
  }
  /// v combined with its XOR-butterfly partners `offsets` apart, in every
  /// lane: {16, 8, 4, 2, 1} spans the warp, {1, 2} the 4 lanes of an mma
  /// fragment row (lane / 4).
  Value butterfly(Value v, llvm::ArrayRef<int32_t> offsets,
                  llvm::function_ref<Value(Value, Value)> combine) {
    for (int32_t offset : offsets)
      v = combine(v, gpu::ShuffleOp::create(b, loc, v, offset, 32, gpu::ShuffleMode::XOR)
                         .getShuffleResult());
    return v;
  }
  /// The sum of `v` over the 32 lanes of a warp, in every lane.
  Value warpSum(Value v) {
    return butterfly(v, {16, 8, 4, 2, 1}, [&](Value x, Value y) { return fadd(x, y); });
  }
  /// Lane `src`'s `v`, in every lane (shfl.sync.idx).
  Value fromLane(Value v, int32_t src) {
    return gpu::ShuffleOp::create(b, loc, v, src, 32, gpu::ShuffleMode::IDX).getShuffleResult();
  }
  /// The warp sums of n = values.size() f32 values a lane (a power of 2 up
  /// to 32), sum i left in the 32 / n adjacent lanes from i * 32 / n: the
  /// lane's own (`lane`: its index). A transposed butterfly: at each offset
  /// a lane keeps the half of its values its lane bit picks, sends its
  /// partner the other half and adds what comes back, so the n sums take
  /// n - 1 shuffles (then the lanes sharing one sum add it over the rest of
  /// the warp) where n butterflies (warpSum) took 5 n.
  Value transposedWarpSum(SmallVector<Value> values, Value lane) {
    assert(llvm::isPowerOf2_64(values.size()) && values.size() <= 32);
    int32_t offset = 16;
    for (; values.size() > 1; offset /= 2) {
      const size_t half = values.size() / 2;
      Value upper = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                          andi(lane, idx(offset)), idx(0));
      for (size_t i = 0; i < half; ++i) {
        Value keep = select(upper, values[i + half], values[i]);
        Value give = select(upper, values[i], values[i + half]);
        values[i] = fadd(keep, gpu::ShuffleOp::create(b, loc, give, offset, 32,
                                                     gpu::ShuffleMode::XOR)
                                   .getShuffleResult());
      }
      values.resize(half);
    }
    SmallVector<int32_t> rest;
    for (; offset >= 1; offset /= 2)
      rest.push_back(offset);
    return butterfly(values[0], rest, [&](Value x, Value y) { return fadd(x, y); });
  }
  /// The sum / max of `v` over the 4 lanes that hold one row of an mma
  /// fragment (MmaHalf), in each of them.
  Value rowQuadSum(Value v) {
    return butterfly(v, {1, 2}, [&](Value x, Value y) { return fadd(x, y); });
  }
  Value rowQuadMax(Value v) {
    return butterfly(v, {1, 2}, [&](Value x, Value y) { return fmax(x, y); });
  }
  /// Whether the i1 `p` holds in some lane of the warp (vote.sync.any,
  /// every lane of the warp taking part): a warp-uniform condition.
  Value warpAny(Value p) {
    Value everyLane = i32(-1);
    return mlir::NVVM::VoteSyncOp::create(b, loc, b.getI1Type(), everyLane, p,
                                          mlir::NVVM::VoteSyncKind::any);
  }
  /// prefetch.global.L2 of the line holding byte `bytes` of the identity-
  /// layout global memref `m`: a hint, no value, no fault.
  void prefetchL2(Value m, Value bytes) {
    Value address = mlir::arith::IndexCastOp::create(
        b, loc, b.getI64Type(),
        mlir::arith::AddIOp::create(
            b, loc, mlir::memref::ExtractAlignedPointerAsIndexOp::create(b, loc, m), bytes));
    Value global = globalPointerAt(b, loc, address);
    mlir::NVVM::PrefetchOp::create(
        b, loc, mlir::NVVM::PrefetchCacheLevelAttr::get(b.getContext(),
                                                        mlir::NVVM::PrefetchCacheLevel::L2),
        mlir::NVVM::CacheEvictionPriorityAttr(), global, Value(), false, false, false);
  }
  /// griddepcontrol.wait (sm_90): until the kernels this launch depends on
  /// have ended and their writes are visible. Inline PTX with a memory
  /// clobber, as CUDA's cudaGridDependencySynchronize writes it: NVVM's
  /// intrinsic is memory(none), so LLVM could move a load above it.
  void waitForPrerequisiteGrids() {
    mlir::LLVM::InlineAsmOp::create(b, loc, Type(), ValueRange{}, "griddepcontrol.wait;",
                                    "~{memory}", /*has_side_effects=*/true,
                                    /*is_align_stack=*/false,
                                    mlir::LLVM::tailcallkind::TailCallKind::None,
                                    mlir::LLVM::AsmDialectAttr(), mlir::ArrayAttr());
  }
  /// griddepcontrol.launch_dependents (sm_90): the next kernel may launch
  /// once every block of this one has run it (or ended).
  void launchDependents() {
    mlir::NVVM::GriddepcontrolOp::create(b, loc, mlir::NVVM::GridDepActionKind::launch_dependents);
  }
};

/// A [rows, cols] tile of 16-bit mma operands in shared memory, each row
/// padded by 8 elements (16 bytes): a fragment load's 8 rows (group =
/// 0..7) start 4 banks apart instead of in the same bank.
inline mlir::MemRefType paddedSharedTile(mlir::MLIRContext *ctx, Type half, int64_t rows,
                                         int64_t cols) {
  return mlir::MemRefType::get({rows, cols + 8}, half, mlir::MemRefLayoutAttrInterface(),
                               gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup));
}

/// The 16-bit operand type of a tensor-core kernel (bf16 or f16) and how
/// nvvm.mma.sync m16n8k16 (f32 accumulators, A row-major, B column-major)
/// takes its pairs. Fragment layout (PTX ISA, mma.m16n8k16): lane =
/// 4 * group + quad; A registers hold rows group and group + 8 at k =
/// 2 * quad (+1) and 2 * quad + 8 (+1); B registers hold column group at
/// the same k; accumulators i = 0..3 hold row (i < 2 ? group : group + 8),
/// column 2 * quad + i % 2.
struct MmaHalf {
  OpBuilder &b;
  Location loc;
  bool f16; // else bf16

  Type type() { return f16 ? Type(b.getF16Type()) : Type(b.getBF16Type()); }
  /// Two f32 values rounded to a vector<2x16-bit> pair.
  Value pair(Value lo, Value hi) {
    return mlir::vector::FromElementsOp::create(
        b, loc, mlir::VectorType::get({2}, type()),
        ValueRange{mlir::arith::TruncFOp::create(b, loc, type(), lo),
                   mlir::arith::TruncFOp::create(b, loc, type(), hi)});
  }
  /// Two f32 values as the packed 16-bit pair of an operand register (the
  /// lower-indexed element in the low half, as mma.sync reads it).
  Value pack(Value lo, Value hi) { return operand(pair(lo, hi)); }
  /// A vector<2x16-bit> pair as nvvm.mma.sync takes it: f16 as is, bf16
  /// packed in an i32 (MLIR 22 has no bf16 vector form for it).
  Value operand(Value pair) {
    if (f16)
      return pair;
    auto one = mlir::VectorType::get({1}, b.getI32Type());
    Value bits = mlir::vector::BitCastOp::create(b, loc, one, pair);
    return mlir::vector::ExtractOp::create(b, loc, bits, llvm::ArrayRef<int64_t>{0});
  }
  /// The pair at `indices` of a 16-bit memref (the last index even, rows of
  /// an even length: 4-byte aligned), as an operand register.
  Value loadPair(Value memref, ValueRange indices) {
    auto pair = mlir::vector::LoadOp::create(b, loc, mlir::VectorType::get({2}, type()),
                                             memref, indices);
    pair.setAlignment(4);
    return operand(pair);
  }
  /// The row-major offset, in elements from its first, of `indices` in the
  /// identity-layout memref `m` (a shared ring of tiles [stage][row][col],
  /// a global [rows][cols] array; the leading extent may be dynamic).
  Value elementOf(Value m, ValueRange indices) {
    auto type = llvm::cast<mlir::MemRefType>(m.getType());
    Value at = indices[0];
    for (size_t d = 1; d < indices.size(); ++d)
      at = mlir::arith::AddIOp::create(
          b, loc,
          mlir::arith::MulIOp::create(
              b, loc, at, mlir::arith::ConstantIndexOp::create(b, loc, type.getDimSize(d))),
          indices[d]);
    return at;
  }
  /// ldmatrix.x4 (8x8 matrices of 16-bit elements, not transposed) from a
  /// row-major shared tile: lane l names, as the indices `at` of `tile` (a
  /// ring's [stage, row, col]), the first element of row l % 8 of matrix
  /// l / 8 (16-byte aligned); register i of lane l then holds row l / 4 of
  /// matrix i, elements 2 (l % 4) and 2 (l % 4) + 1, as an operand register.
  /// Matrices (rows 0-7 | 8-15) x (k 0-7 | 8-15) in that order are an A
  /// fragment; (n 0-7) x (k 0-7 | 8-15) of two column tiles are two B
  /// fragments. One instruction where loadPair takes four. `transposed`
  /// (ldmatrix .trans): register i of lane l holds column l / 4 of matrix i,
  /// rows 2 (l % 4) and 2 (l % 4) + 1: from a [k][n] tile, matrices (k 0-7 |
  /// 8-15) x (n 0-7) of two column tiles are two B fragments.
  SmallVector<Value, 4> loadMatrices(Value tile, ValueRange at, bool transposed = false) {
    return loadMatricesAt(sharedPointer(tile, elementOf(tile, at)), transposed);
  }
  /// loadMatrices from the shared pointer `ptr` (this lane's row, as
  /// sharedPointer gives it, perhaps offsetPointer'd).
  SmallVector<Value, 4> loadMatricesAt(Value ptr, bool transposed = false) {
    Type i32 = b.getI32Type();
    auto regs = mlir::LLVM::LLVMStructType::getLiteral(b.getContext(), SmallVector<Type>(4, i32));
    auto load = mlir::NVVM::LdMatrixOp::create(
        b, loc, regs, ptr, 4, transposed ? mlir::NVVM::MMALayout::col : mlir::NVVM::MMALayout::row,
        mlir::NVVM::LdStMatrixShapeAttr::get(b.getContext(), 8, 8),
        mlir::NVVM::LdStMatrixEltType::B16);
    SmallVector<Value, 4> out;
    for (int64_t i = 0; i < 4; ++i) {
      Value r = mlir::LLVM::ExtractValueOp::create(b, loc, load, i);
      if (f16) // mma.sync takes f16 pairs as vector<2xf16>
        r = mlir::LLVM::BitcastOp::create(b, loc, mlir::VectorType::get({2}, type()), r);
      out.push_back(r);
    }
    return out;
  }
  /// The bytes of a row of the 16-bit memref `m` (its last extent, static).
  static int64_t rowBytes(Value m) {
    return llvm::cast<mlir::MemRefType>(m.getType()).getShape().back() * 2;
  }
  /// The shared pointer `ptr` plus `bytes`, a constant: where a walk's
  /// ldmatrix addresses differ by constants, ptxas folds them into the
  /// instructions' immediate offsets (from index arithmetic LLVM kept a
  /// register and an IMAD + LEA an ldmatrix).
  Value offsetPointer(Value ptr, int64_t bytes) {
    return mlir::LLVM::GEPOp::create(b, loc, ptr.getType(), b.getI8Type(), ptr,
                                     llvm::ArrayRef<mlir::LLVM::GEPArg>{int32_t(bytes)});
  }
  /// The address of 16-bit element `element` (an offset from the start) of
  /// memref `m`, as an i64.
  Value byteAddress(Value m, Value element) {
    Value address = mlir::arith::AddIOp::create(
        b, loc, mlir::memref::ExtractAlignedPointerAsIndexOp::create(b, loc, m),
        mlir::arith::MulIOp::create(b, loc, element,
                                    mlir::arith::ConstantIndexOp::create(b, loc, 2)));
    return mlir::arith::IndexCastOp::create(b, loc, b.getI64Type(), address);
  }
  /// The shared-memory address of 16-bit element `element` (an offset from
  /// the start) of the shared tile `tile`.
  Value sharedPointer(Value tile, Value element) {
    return mlir::LLVM::IntToPtrOp::create(
        b, loc, mlir::LLVM::LLVMPointerType::get(b.getContext(), /*shared*/ 3),
        byteAddress(tile, element), mlir::LLVM::DereferenceableAttr());
  }
  /// cp.async.cg of 16 bytes (8 elements) from indices `srcAt` of the
  /// 16-bit global memref `src` to indices `at` of the shared tile `tile`
  /// (both identity layouts: elementOf); issued now, landed once a
  /// cp.async.wait_group covers the group it is committed with.
  void copyAsync16(Value tile, ValueRange at, Value src, ValueRange srcAt) {
    // The source first, each pointer a statement: in one argument list the
    // order would be the compiler's (gcc and clang would emit other IR).
    Value from = globalPointer(src, srcAt);
    copyAsync16At(sharedPointer(tile, elementOf(tile, at)), from);
  }
  /// The global-memory pointer to indices `at` of the identity-layout
  /// memref `src` (elementOf), 16-bit elements.
  Value globalPointer(Value src, ValueRange at) {
    return globalPointerAt(b, loc, byteAddress(src, elementOf(src, at)));
  }
  /// copyAsync16 between pointers: the shared `to` and the global `from`
  /// (either perhaps offsetPointer'd).
  void copyAsync16At(Value to, Value from) {
    mlir::NVVM::CpAsyncOp::create(b, loc, to, from, 16u, mlir::NVVM::LoadCacheModifierKind::CG,
                                  Value());
  }
  /// acc + A * B for one m16n8k16 tile: `a` 4 registers, `bOps` 2, `acc` 4
  /// f32; returns the 4 new accumulators.
  SmallVector<Value> mma(ValueRange a, ValueRange bOps, ValueRange acc) {
    auto f32x4 = mlir::LLVM::LLVMStructType::getLiteral(
        b.getContext(), SmallVector<Type>(4, b.getF32Type()));
    mlir::NVVM::MMATypes t = f16 ? mlir::NVVM::MMATypes::f16 : mlir::NVVM::MMATypes::bf16;
    auto op = mlir::NVVM::MmaOp::create(
        b, loc, f32x4, a, bOps, acc, {16, 8, 16}, std::nullopt, std::nullopt,
        std::array<mlir::NVVM::MMATypes, 2>{t, t},
        std::array<mlir::NVVM::MMALayout, 2>{mlir::NVVM::MMALayout::row,
                                             mlir::NVVM::MMALayout::col});
    SmallVector<Value> out;
    for (int64_t i = 0; i < 4; ++i)
      out.push_back(mlir::LLVM::ExtractValueOp::create(b, loc, op, i));
    return out;
  }
  /// A wgmma matrix descriptor (PTX ISA, "Matrix Descriptor Format") as
  /// built: its low word (start address and leading byte offset, an i32)
  /// and its high word (stride byte offset and layout), a constant.
  struct Descriptor {
    Value low;
    uint32_t high;
  };
  /// The descriptor of a K-major operand in the 64- or 128-byte swizzle
  /// (`rowBytes`), its first row at shared address `address` (an i64): rows
  /// of 64 bytes whose 16-byte chunk c sits at c ^ (row / 2) % 4, or of 128
  /// bytes with chunk c at c ^ row % 8; groups of 8 rows 8 rowBytes apart
  /// (the stride byte offset; the leading one is unused in a swizzled
  /// K-major layout). The hardware XORs the bits of the absolute address:
  /// the rows' pattern must start at a multiple of 8 rowBytes.
  ///
  /// An N-major B operand (`leadingBytes`: the bytes between its blocks of
  /// rowBytes / 2 columns) has its rows of rowBytes along n, 8 k a group 8
  /// rowBytes apart, the next block of columns leadingBytes on.
  Descriptor swizzledDescriptor(Value address, int64_t rowBytes, int64_t leadingBytes = 16) {
    assert((rowBytes == 64 || rowBytes == 128) && "wgmma's 64- and 128-byte swizzles");
    assert(leadingBytes % 16 == 0 && leadingBytes < (16 << 14) && "a 14-bit field of 16 bytes");
    auto i32 = [&](int64_t v) { return mlir::arith::ConstantIntOp::create(b, loc, v, 32); };
    Value low = mlir::arith::TruncIOp::create(b, loc, b.getI32Type(), address);
    Value start = mlir::arith::AndIOp::create(
        b, loc, mlir::arith::ShRUIOp::create(b, loc, low, i32(4)), i32(0x3fff));
    const uint32_t layout = rowBytes == 64 ? 2 : 1; // 64-byte : 128-byte swizzle
    return {mlir::arith::OrIOp::create(b, loc, start, i32(leadingBytes / 16 << 16)),
            uint32_t(8 * rowBytes >> 4) | layout << 30};
  }
  /// The i64 operand wgmma takes for descriptor `d` `bytes` further on in
  /// shared memory: the start address field (bits 0-13, in 16-byte units)
  /// plus bytes / 16, which does not carry past the field while the address
  /// stays inside the block's shared memory (under 256 KB). The words are
  /// joined by a `mov.b64 {lo, hi}` that LLVM cannot see through: joined in
  /// LLVM IR it folds a k step's offset into a 64-bit add with its carry,
  /// and ptxas then moves both words to uniform registers for each wgmma.
  Value descriptorAt(Descriptor d, int64_t bytes = 0) {
    assert(bytes % 16 == 0 && "descriptors address 16-byte units");
    Value low = d.low;
    if (bytes)
      low = mlir::arith::AddIOp::create(
          b, loc, low, mlir::arith::ConstantIntOp::create(b, loc, bytes / 16, 32));
    Value hi = mlir::arith::ConstantIntOp::create(b, loc, int64_t(d.high), 32);
    return mlir::LLVM::InlineAsmOp::create(
               b, loc, b.getI64Type(), ValueRange{low, hi}, "mov.b64 $0, {$1, $2};", "=l,r,r",
               /*has_side_effects=*/false, /*is_align_stack=*/false,
               mlir::LLVM::tailcallkind::TailCallKind::None, mlir::LLVM::AsmDialectAttr(),
               mlir::ArrayAttr())
        .getResult(0);
  }
  /// fence.proxy.async for shared memory: this thread's writes by the generic
  /// proxy (st.shared, cp.async once waited for) become visible to wgmma's
  /// reads, which go through the async proxy (with a barrier after it, for
  /// the block's threads' writes).
  void fenceSharedForWgmma() {
    mlir::NVVM::FenceProxyOp::create(
        b, loc, mlir::NVVM::ProxyKindAttr::get(b.getContext(), mlir::NVVM::ProxyKind::async_shared),
        mlir::NVVM::SharedSpaceAttr::get(b.getContext(), mlir::NVVM::SharedSpace::shared_cta));
  }
  /// acc + A * B for one wgmma.mma_async m64nNk16 of the warpgroup, A (64 x
  /// 16) from registers (`a`: each warp's 16 rows as mma.sync's A fragment,
  /// 4 operand registers) and B (16 x N) N-major in shared memory (`descB`,
  /// imm-trans-b 1: a [k][n] tile as stored, no transposing copy), `acc` in
  /// warpgroupMma's layout. NVVM's op takes A by descriptor only: inline
  /// PTX, as convert-nvvm-to-llvm writes the op's.
  SmallVector<Value> warpgroupMmaRegisterA(ValueRange a, Value descB, ValueRange acc) {
    const int64_t n = int64_t(acc.size());
    std::string text = "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\nwgmma.mma_async.sync.aligned.m64n" +
                       std::to_string(2 * n) + "k16.f32." + (f16 ? "f16.f16" : "bf16.bf16") + " {";
    std::string constraints;
    for (int64_t i = 0; i < n; ++i) {
      text += (i ? ", $" : "$") + std::to_string(i);
      constraints += (i ? ",=f" : "=f");
    }
    for (int64_t i = 0; i < n; ++i) // the accumulators in, tied to the outputs
      constraints += "," + std::to_string(i);
    text += "}, {";
    for (int64_t i = 0; i < 4; ++i)
      text += (i ? ", $" : "$") + std::to_string(2 * n + i);
    text += "}, $" + std::to_string(2 * n + 4) + ", p, 1, 1, 1;\n}\n";
    constraints += ",r,r,r,r,l";
    SmallVector<Value> operands(acc.begin(), acc.end());
    for (Value v : a)
      operands.push_back(asI32(v));
    operands.push_back(descB);
    auto type = mlir::LLVM::LLVMStructType::getLiteral(
        b.getContext(), SmallVector<Type>(n, b.getF32Type()));
    Value d = mlir::LLVM::InlineAsmOp::create(
                  b, loc, type, operands, text, constraints, /*has_side_effects=*/true,
                  /*is_align_stack=*/false, mlir::LLVM::tailcallkind::TailCallKind::None,
                  mlir::LLVM::AsmDialectAttr(), mlir::ArrayAttr())
                  .getResult(0);
    SmallVector<Value> out;
    for (int64_t i = 0; i < n; ++i)
      out.push_back(mlir::LLVM::ExtractValueOp::create(b, loc, d, i));
    return out;
  }
  /// wgmma.wait_group `pending` that also reads `aRegisters`: the register
  /// A operands of a wgmma in flight until it. LLVM sees that wgmma's
  /// inline PTX read them when issued, and could otherwise give their
  /// registers to values written before the wait (PTX leaves such a write
  /// undefined; the emulator faults it).
  void waitForWarpgroupMma(int64_t pending, ValueRange aRegisters) {
    std::string constraints;
    SmallVector<Value> operands;
    for (Value v : aRegisters) {
      constraints += constraints.empty() ? "r" : ",r";
      operands.push_back(asI32(v));
    }
    mlir::LLVM::InlineAsmOp::create(
        b, loc, Type(), operands, "wgmma.wait_group.sync.aligned " + std::to_string(pending) + ";",
        constraints, /*has_side_effects=*/true, /*is_align_stack=*/false,
        mlir::LLVM::tailcallkind::TailCallKind::None, mlir::LLVM::AsmDialectAttr(),
        mlir::ArrayAttr());
  }
  /// An operand register (operand()) as the i32 an inline PTX "r" takes.
  Value asI32(Value v) {
    if (v.getType().isInteger(32))
      return v;
    auto one = mlir::VectorType::get({1}, b.getI32Type());
    return mlir::vector::ExtractOp::create(b, loc, mlir::vector::BitCastOp::create(b, loc, one, v),
                                           llvm::ArrayRef<int64_t>{0});
  }
  /// acc + A * B for one wgmma.mma_async m64nNk16 of the warpgroup, A (64 x
  /// 16) and B (N x 16) K-major in shared memory (descriptors `descA`,
  /// `descB`); `acc` is the N / 2 f32 of this thread: for column tile j
  /// (8 columns), rows 16 (warp % 4) + l / 4 and that + 8, columns 8 j + 2
  /// (l % 4) and + 1 (lane l), in mma's order. Returns the new ones, which
  /// hold the result only after a wgmma.wait_group covers its commit.
  SmallVector<Value> warpgroupMma(Value descA, Value descB, ValueRange acc) {
    int64_t n = int64_t(acc.size()) * 2;
    auto type = mlir::LLVM::LLVMStructType::getLiteral(
        b.getContext(), SmallVector<Type>(acc.size(), b.getF32Type()));
    Value in = mlir::LLVM::UndefOp::create(b, loc, type);
    for (auto [i, v] : llvm::enumerate(acc))
      in = mlir::LLVM::InsertValueOp::create(b, loc, in, v, int64_t(i));
    namespace nvvm = mlir::NVVM;
    nvvm::WGMMATypes t = f16 ? nvvm::WGMMATypes::f16 : nvvm::WGMMATypes::bf16;
    Value d = nvvm::WgmmaMmaAsyncOp::create(
        b, loc, type, in, descA, descB, nvvm::MMAShapeAttr::get(b.getContext(), 64, n, 16), t, t,
        nvvm::WGMMATypes::f32, nvvm::WGMMAScaleOut::one, nvvm::WGMMAScaleIn::one,
        nvvm::WGMMAScaleIn::one, nvvm::MMALayout::row, nvvm::MMALayout::col, nullptr);
    SmallVector<Value> out;
    for (int64_t i = 0; i < int64_t(acc.size()); ++i)
      out.push_back(mlir::LLVM::ExtractValueOp::create(b, loc, d, i));
    return out;
  }
};

} // namespace tbc::cuda

#endif // TBC_LIB_CONVERSION_TBCTOCUDA_GPUBUILDER_H
