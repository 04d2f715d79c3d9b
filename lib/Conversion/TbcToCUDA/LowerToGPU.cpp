//===- LowerToGPU.cpp - outlined tbc kernels -> gpu.func (the CUDA path) --===//
//
// Every `tbc.kernel` function becomes the gpu.funcs of TbcToCUDA/KernelABI.h in
// one `gpu.module @tbc_kernels`, written directly with gpu/scf/arith/math/
// memref/vector ops (hand-shaped kernels, not a generic tiling):
//
// * pointwise ops (add, glu, activation, soft-cap, embedding gather, RoPE,
//   sinusoidal positions, grouped split, the KV-cache append): one thread per
//   element of a row, one block row per token row;
// * norms (RMS with groups, Layer, add+norm): one warp per row (or group),
//   two passes over it in registers' reach, butterfly shuffles for the sums;
// * projections (plain and fused): one warp per output column and
//   kProjectionRows token rows (one when decoding a token: a GEMV), so each
//   weight row is read once per 8 tokens with 128-bit loads; with 16-bit
//   weights, chunks of 16 rows and up on tensor cores instead (a warp per
//   16 x 8 tile; from 64 rows, a block per 128 x 128 tile staged in shared
//   memory, on wgmma in sm_90a modules). The norm
//   statistic is the prologue (for the 128 x 128 tiles, a staging launch's
//   before them), bias / GLU / activation / soft-cap the epilogue, exactly as
//   `tbc.fused_linear` says;
// * attention: in 16-bit modules, a flash kernel on tensor cores for
//   chunks of 16 rows or more (FlashAttention.cpp); otherwise (decoding, f32
//   modules) one block per (query row, query heads of one GQA group), its
//   warps each an online softmax over a share of the visible cached
//   positions (no score matrix anywhere), head dims split across the lanes.
//
// Arithmetic is f32. The transcendental math ops become libdevice calls in
// `convert-gpu-to-nvvm` (linked by `gpu-module-to-binary`).
//
// This file writes each kernel's gpu.funcs (their ABI, shared memory and the
// dispatch by op); the launches are LaunchPlan.cpp's and the bodies are
// defined by family (Emitter.h).
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"
#include "FlashAttention.h"

#include "tbc/Conversion/Passes.h"
#include "tbc/Support/HalfFloats.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace tbc {
#define GEN_PASS_DEF_TBCLOWERTOGPU
#include "tbc/TbcConversion.h.inc"
} // namespace tbc

using namespace tbc;

namespace {
/// Memref types of the ABI (TbcToCUDA/KernelABI.h).
MemRefType activationType(MLIRContext *ctx, int64_t width) {
  auto layout = StridedLayoutAttr::get(ctx, ShapedType::kDynamic,
                                       {ShapedType::kDynamic, 1});
  return MemRefType::get({ShapedType::kDynamic, width}, Float32Type::get(ctx), layout);
}

Type abiType(Type t, MLIRContext *ctx) {
  auto tensor = cast<RankedTensorType>(t);
  if (tensor.getElementType().isInteger(32))
    return MemRefType::get({ShapedType::kDynamic}, tensor.getElementType());
  if (tensor.hasStaticShape())
    return MemRefType::get(tensor.getShape(), tensor.getElementType());
  return activationType(ctx, tensor.getShape().back());
}
} // namespace

namespace tbc::cuda {

LogicalResult Emitter::lower(func::FuncOp kernel) {
  Operation *op = &kernel.getBody().front().front();
  MLIRContext *ctx = b.getContext();
  // Scalar operands (an attention's window) come last, after T and past
  // (KernelABI.h).
  const unsigned nScalars = kernelScalarOperands(kernel);
  const unsigned nIn = kernel.getNumArguments() - nScalars, nOut = kernel.getNumResults();
  SmallVector<Type> args;
  for (Type t : kernel.getArgumentTypes().take_front(nIn))
    args.push_back(abiType(t, ctx));
  // The weight as the runtime stores it: 16-bit where tensor cores read
  // it, and GPT-2's [in, out] transposed at bind time to [out, in, 1].
  bool mma = cuda::usesTensorCores(op, weightType);
  Type weightElement = mma ? halfType() : b.getF32Type();
  if (cuda::transposesWeight(op)) {
    auto w = cast<ShapedType>(kernel.getArgumentTypes()[1]).getShape();
    args[1] = MemRefType::get({w[1], w[0], 1}, weightElement);
  } else if (mma) {
    args[1] = MemRefType::get(cast<ShapedType>(kernel.getArgumentTypes()[1]).getShape(),
                              weightElement);
  }
  for (Type t : kernel.getResultTypes())
    args.push_back(abiType(t, ctx));
  bool cached = kernel->hasAttr(TbcDialect::KvCacheAttrHelper::getNameStr());
  if (cached) {
    auto a = cast<AttentionOp>(op);
    auto cache = MemRefType::get({ShapedType::kDynamic, int64_t(a.getNumKvHeads() * a.getHeadDim())},
                                 cacheType);
    args.append({cache, cache});
  }
  int64_t scratchSize = cuda::scratchFloats(op, decodeSplits);
  if (auto a = dyn_cast<AttentionOp>(op))
    partialsOffset = decodePartialsOffset(a); // a walk of the module: once a kernel
  if (scratchSize)
    args.push_back(MemRefType::get({scratchSize}, b.getF32Type()));
  int64_t stagingK = cuda::stagingWidth(op, weightType);
  if (stagingK)
    args.push_back(MemRefType::get({ShapedType::kDynamic, stagingK}, halfType()));
  args.append({b.getIndexType(), b.getIndexType()}); // T, past
  args.append(nScalars, b.getI64Type());
  for (const cuda::Launch &launch :
       cuda::launchesFor(op, weightType, flash, tiled, flashTile, decodeSplits)) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(gpuModule.getBody());
    auto fn = gpu::GPUFuncOp::create(b, loc, (kernel.getSymName() + launch.suffix).str(),
                                     b.getFunctionType(args, {}));
    fn->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
    fn.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr(
        {int32_t(launch.blockX), int32_t(launch.blockY), 1}));
    if (int64_t blocks =
            minBlocksPerSM(op, launch, cuda::usesTensorCores(op, weightType), tiled))
      fn->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(), b.getI32IntegerAttr(blocks));
    // Shared memory first: adding it appends an argument to the entry
    // block, which must not move the arguments taken below.
    workgroup = flashKeys = flashValues = flashQueries = tileA = tileB = accTile = Value();
    if (launch.body == cuda::Body::splitKv || launch.body == cuda::Body::decodeSlice)
      workgroup = fn.addWorkgroupAttribution(attentionPartsType(cast<AttentionOp>(op)), loc);
    if (auto f = dyn_cast<FusedLinearOp>(op); f && pairsRopeWarps(f.getRopeAttr(), launch))
      // a result per warp
      workgroup = fn.addWorkgroupAttribution(
          MemRefType::get({cuda::kWarpsPerBlock}, b.getF32Type(), MemRefLayoutAttrInterface{},
                          gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup)),
          loc);
    b.setInsertionPointToStart(&fn.getBody().front());
    auto workgroupSpace = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
    // Views of the launch's dynamic shared memory (launch.sharedBytes).
    auto dynamicShared = [&] {
      return gpu::DynamicSharedMemoryOp::create(
          b, loc,
          MemRefType::get({ShapedType::kDynamic}, b.getI8Type(), MemRefLayoutAttrInterface{},
                          workgroupSpace));
    };
    auto view = [&](Value bytes, MemRefType type, Value offset) {
      return memref::ViewOp::create(b, loc, type, bytes, offset, ValueRange{});
    };
    // The offset of `bytes`' first multiple of `align` (wgmma's swizzles
    // XOR the bits of absolute shared addresses).
    auto alignedStart = [&](Value bytes, int64_t align) {
      Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, bytes);
      return g.rem(g.sub(g.idx(align), g.rem(base, align)), align);
    };
    if (launch.body == cuda::Body::flash) {
      // The ring of key tiles, the ring of value tiles, then (staged
      // queries) the query tile: flashSharedBytes. On wgmma the key
      // ring, the query tile and the value ring, from the next multiple
      // of the swizzle's period (wgmma swizzles absolute addresses).
      int64_t D = cast<AttentionOp>(op).getHeadDim();
      MemRefType keys = cuda::flashKeyTileType(ctx, halfType(), D, flashTile);
      MemRefType values = cuda::flashValueTileType(ctx, halfType(), D, flashTile);
      Value bytes = dynamicShared();
      if (cuda::flashOnWgmma(D, flashTile)) {
        MemRefType queries = cuda::flashQueryTileType(ctx, halfType(), D, flashTile);
        Value start = alignedStart(bytes, cuda::kFlashSwizzleBytes);
        assert(keys.getNumElements() * 2 % cuda::kFlashSwizzleBytes == 0 &&
               queries.getNumElements() * 2 % cuda::kFlashSwizzleBytes == 0 &&
               "each tile starts at a multiple of the swizzle's period");
        flashKeys = view(bytes, keys, start);
        flashQueries = view(bytes, queries, g.add(start, keys.getNumElements() * 2));
        flashValues =
            view(bytes, values,
                 g.add(start, (keys.getNumElements() + queries.getNumElements()) * 2));
      } else {
        flashKeys = view(bytes, keys, g.idx(0));
        flashValues = view(bytes, values, g.idx(keys.getNumElements() * 2));
        if (cuda::flashStagesQueries(D, flashTile))
          flashQueries =
              view(bytes, cuda::flashQueryTileType(ctx, halfType(), D, flashTile),
                   g.idx((keys.getNumElements() + values.getNumElements()) * 2));
      }
    }
    if (launch.body == cuda::Body::tiledMma) {
      // The ring of stages in dynamic shared memory (launch.sharedBytes:
      // past the 48 KB a block may have statically), the activation
      // tiles of every stage, then the weight tiles; rows unpadded
      // (tiledProjection swizzles their 16-byte chunks).
      // wgmma reads it by swizzled absolute addresses: from the next
      // multiple of the swizzle's period (TiledGemm::sharedBytes has room).
      Value bytes = dynamicShared();
      Value start = g.idx(0);
      const int64_t kStep =
          tiled.kStep(lastDim(cast<ProjectionOpInterface>(op).getInput().getType()));
      if (int64_t align = tiled.ringAlign(kStep))
        start = alignedStart(bytes, align);
      auto ring = [&](int64_t rows, Value offset) {
        return view(bytes,
                    MemRefType::get({tiled.stages, rows, kStep}, halfType(),
                                    MemRefLayoutAttrInterface{}, workgroupSpace),
                    offset);
      };
      tileA = ring(cuda::kTiledRows, start);
      tileB = ring(tiled.cols,
                   g.add(start, cast<MemRefType>(tileA.getType()).getNumElements() * 2));
      // The epilogue's accumulators, over the ring (wgmma: accumulatorBytes).
      if (int64_t bytesOfAccs = tiled.accumulatorBytes()) {
        const int64_t threads = 32 * tiled.warps;
        accTile = view(bytes,
                       MemRefType::get({bytesOfAccs / 4 / threads, threads}, b.getF32Type(),
                                       MemRefLayoutAttrInterface{}, workgroupSpace),
                       g.idx(0));
      }
    }
    ValueRange all = fn.getArguments().take_front(fn.getFunctionType().getNumInputs());
    ValueRange scalars = all.take_back(nScalars);
    T = all[all.size() - nScalars - 2];
    past = all[all.size() - nScalars - 1];
    window = Value();
    if (auto a = dyn_cast<AttentionOp>(op))
      window = emitAttentionWindow(b, loc, a, a.getWindowSize() ? scalars.back() : Value());
    ValueRange in = all.take_front(nIn), out = all.slice(nIn, nOut);
    alignedRows.clear();
    for (unsigned i = 0; i < nIn; ++i)
      if (alignment.rowsAligned16(kernel, i))
        alignedRows.insert(in[i]);
    ValueRange caches = cached ? all.slice(nIn + nOut, 2) : ValueRange{};
    scratch = scratchSize ? all[nIn + nOut + caches.size()] : Value();
    staging = stagingK ? all[nIn + nOut + caches.size() + (scratchSize ? 1 : 0)] : Value();
    if (dependentLaunch) {
      // Nothing above reads global memory. The kernel before this one may
      // still run: only weights (never written) are touched before the
      // wait, after which everything before is done and visible. The next
      // kernel launches once every block is past the wait, so at most one
      // kernel ahead is resident and prefetching.
      prefetchWeightRows(op, launch, in, out);
      g.waitForPrerequisiteGrids();
      g.launchDependents();
    }
    if (failed(emit(op, launch, in, out, caches)))
      return failure();
    // The runtime passes a cacheless kernel 0 positions (KernelABI.h).
    if (!cached && !past.use_empty())
      return op->emitError("a kernel without key/value caches reads the cached positions "
                           "(KernelABI.h: the runtime passes it 0)");
    gpu::ReturnOp::create(b, loc);
  }
  return success();
}

LogicalResult Emitter::emit(Operation *op, const cuda::Launch &launch, ValueRange in,
                            ValueRange out, ValueRange caches) {
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](AttentionOp a) {
        if (launch.body == cuda::Body::cacheAppend)
          return appendToCaches(in[1], in[2], caches);
        return attention(a, launch.body, in[0], in[1], in[2],
                         a.getRelativeBias() ? in[3] : Value(), caches, out[0]);
      })
      .Case([&](LinearOp l) {
        return projection(launch, in[0], in[1], l.getBias() ? in[2] : Value(), Value(), {},
                          out[0], std::nullopt, 0.0, std::nullopt, false, std::nullopt,
                          std::nullopt, nullptr, Value());
      })
      .Case([&](FusedLinearOp f) {
        unsigned next = 2;
        Value bias = f.getBias() ? in[next++] : Value();
        Value corr = f.getMeanCorrection() ? in[next++] : Value();
        InputGain gain{f.getGain() ? in[next++] : Value(),
                       f.getGainOffset() ? f.getGainOffset()->convertToDouble() : 0.0};
        std::optional<double> scale, cap;
        if (f.getScale())
          scale = f.getScale()->convertToDouble();
        if (f.getSoftcap())
          cap = f.getSoftcap()->convertToDouble();
        std::optional<Rotary> rope;
        if (RotaryEpilogueAttr attr = f.getRopeAttr()) {
          Value positions = in[next++];
          Value lengths = f.getLengths() ? in[next++] : Value();
          rope.emplace(b, loc, attr, gpuModule, "rope_inv_freq_" + std::to_string(index),
                       positions, lengths);
        }
        Value residual = f.getResidual() ? in[next++] : Value();
        return projection(launch, in[0], in[1], bias, corr, gain, out[0], f.getNorm(),
                          f.getEps() ? f.getEps()->convertToDouble() : 0.0, f.getAct(),
                          f.getGlu(), scale, cap, rope ? &*rope : nullptr, residual);
      })
      .Case([&](NormOpInterface n) {
        return rowNorm(n.getNormKind(), Value(), in[0], in[1],
                       n.getNormBias() ? in[2] : Value(), Value(), out[0],
                       n.getEpsAttr().getValueAsDouble(), n.getGainOffsetValue(),
                       n.getNumGroups());
      })
      .Case([&](NormAddOp n) {
        double off = n.getGainOffsetValue();
        return rowNorm(n.getKind(), Value(), in[0], in[2], n.getBias() ? in[3] : Value(),
                       Value(), out[0], n.getEps().convertToDouble(), off, 1, in[1]);
      })
      .Case([&](AddNormOp n) {
        double off = n.getGainOffsetValue();
        return rowNorm(n.getKind(), in[0], in[1], in[2], n.getBias() ? in[3] : Value(),
                       out[0], out[1], n.getEps().convertToDouble(), off, 1);
      })
      .Case([&](EmbeddingOp e) {
        std::optional<double> scale;
        if (e.getScale())
          scale = e.getScale()->convertToDouble();
        return pointwise(width(out[0]), [&](Value t, Value c) {
          Value row = g.toIndex(g.load(in[1], t));
          Value v = g.load(in[0], {row, c});
          if (scale)
            v = g.fmul(v, g.f32(*scale));
          g.store(v, out[0], {t, c});
        });
      })
      .Case([&](SplitOp s) {
        int64_t groups = s.getNumGroups(), perGroup = width(in[0]) / groups;
        // Thread c reads input column c and writes it to its result.
        return pointwise(width(in[0]), [&](Value t, Value c) {
          Value v = g.load(in[0], {t, c});
          Value grp = g.div(c, perGroup), j = g.rem(c, perGroup);
          int64_t at = 0;
          for (Value o : out) {
            int64_t w = width(o) / groups;
            Value mine = g.andi(
                arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, j, g.idx(at)),
                g.lt(j, at + w));
            g.ifThen(mine, [&] {
              g.store(v, o, {t, g.add(g.mul(grp, w), g.sub(j, g.idx(at)))});
            });
            at += w;
          }
        });
      })
      .Case([&](RopeOp r) {
        return rope(r, in[0], in[1], r.getLengths() ? in[2] : Value(), out[0]);
      })
      .Case([&](SinusoidalPositionsOp s) {
        double base = s.getBase().convertToDouble();
        int64_t w = width(out[0]);
        return pointwise(w, [&](Value t, Value c) {
          Value odd = g.rem(c, 2);
          Value even = g.sub(c, odd);
          Value e = arith::UIToFPOp::create(
              b, loc, b.getF32Type(),
              arith::IndexCastOp::create(b, loc, b.getI32Type(), even));
          Value denom = math::PowFOp::create(b, loc, g.f32(base), g.fdiv(e, g.f32(double(w))));
          Value angle = g.fdiv(g.toF32(g.load(in[0], t)), denom);
          Value v = g.select(g.eq(odd, 0), math::SinOp::create(b, loc, angle),
                             math::CosOp::create(b, loc, angle));
          g.store(v, out[0], {t, c});
        });
      })
      .Case([&](GluOp op) {
        Activation act = op.getAct();
        return pointwise(width(out[0]), [&](Value t, Value c) {
          Value y = g.fmul(emitActivation(b, loc, act, g.load(in[0], {t, c})),
                           g.load(in[1], {t, c}));
          g.store(y, out[0], {t, c});
        });
      })
      .Case([&](ActivationOp op) {
        Activation act = op.getAct();
        return pointwise(width(out[0]), [&](Value t, Value c) {
          g.store(emitActivation(b, loc, act, g.load(in[0], {t, c})), out[0], {t, c});
        });
      })
      .Case([&](SoftcapOp op) {
        double cap = op.getCap().convertToDouble();
        return pointwise(width(out[0]), [&](Value t, Value c) {
          g.store(emitSoftcap(b, loc, cap, g.load(in[0], {t, c})), out[0], {t, c});
        });
      })
      .Case([&](ScaleOp op) {
        double factor = op.getFactor().convertToDouble();
        return pointwise(width(out[0]), [&](Value t, Value c) {
          g.store(g.fmul(g.load(in[0], {t, c}), g.f32(factor)), out[0], {t, c});
        });
      })
      .Case([&](ClipOp op) {
        double limit = op.getLimit().convertToDouble();
        return pointwise(width(out[0]), [&](Value t, Value c) {
          g.store(emitClip(b, loc, limit, g.load(in[0], {t, c})), out[0], {t, c});
        });
      })
      .Case([&](AddOp) {
        return pointwise(width(out[0]), [&](Value t, Value c) {
          g.store(g.fadd(g.load(in[0], {t, c}), g.load(in[1], {t, c})), out[0], {t, c});
        });
      })
      .Default([&](Operation *o) { return o->emitOpError("has no CUDA lowering"); });
}

} // namespace tbc::cuda

namespace {
struct TbcLowerToGPUPass : tbc::impl::TbcLowerToGPUBase<TbcLowerToGPUPass> {
  using TbcLowerToGPUBase::TbcLowerToGPUBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto [option, value] : {std::pair{"weight-type", &weightType},
                                 std::pair{"kv-cache-type", &kvCacheType}})
      if (!isStorageType(*value)) {
        module.emitError(option) << " must be f32, bf16 or f16, not '" << *value << "'";
        return signalPassFailure();
      }
    cuda::TiledGemm tiled{tiledStages, tiledWarps, tiledWgmma, tiledCols, tiledK};
    if (std::string why = tiled.check(); !why.empty()) {
      module.emitError("tiled-") << why;
      return signalPassFailure();
    }
    cuda::FlashTile flashTile{flashKeys, flashRows, flashPasses, flashWgmma, flashOverlap};
    if (std::string why = flashTile.check(); !why.empty()) {
      module.emitError("flash-") << why;
      return signalPassFailure();
    }
    if (decodeSplits < 0 || decodeSplits > cuda::kDecodeMaxSplits) {
      module.emitError("decode-splits must be 0 (chosen by the heads) or 1 to ")
          << cuda::kDecodeMaxSplits << ", not " << decodeSplits;
      return signalPassFailure();
    }
    if (flashWgmma && kvCacheType != weightType) {
      module.emitError("flash-wgmma reads the KV cache from a ring of cp.async copies: "
                       "kv-cache-type must be the weight-type");
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> kernels, others;
    for (auto fn : module.getOps<func::FuncOp>())
      (fn->hasAttr(TbcDialect::KernelAttrHelper::getNameStr()) ? kernels : others).push_back(fn);
    for (func::FuncOp fn : kernels)
      for (Type t : llvm::concat<const Type>(fn.getArgumentTypes(), fn.getResultTypes())) {
        if (isScalarOperand(t))
          continue;
        Type e = cast<ShapedType>(t).getElementType();
        if (!e.isF32() && !e.isInteger(32)) {
          fn.emitError("the CUDA backend computes in f32 so far; kernel @")
              << fn.getSymName() << " uses " << t << ": compile with --dtype f32";
          return signalPassFailure();
        }
      }
    // The schedule (non-kernel functions) was recorded by the module writer;
    // what it says of the kernels' operands is read before it goes.
    RowAlignment alignment(module);
    for (func::FuncOp fn : others)
      fn.erase();
    OpBuilder b(module.getContext());
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(), b.getUnitAttr());
    b.setInsertionPointToEnd(module.getBody());
    auto gpuModule = gpu::GPUModuleOp::create(b, module.getLoc(), "tbc_kernels");
    int index = 0;
    for (func::FuncOp kernel : kernels) {
      cuda::Emitter emitter(b, kernel.getLoc(), gpuModule, index++, weightType, flashAttention,
                      flashTile, tiled, kvCacheType, dependentLaunch, decodeSplits,
                      alignment);
      if (failed(emitter.lower(kernel)))
        return signalPassFailure();
      kernel.erase();
    }
  }
};
} // namespace
