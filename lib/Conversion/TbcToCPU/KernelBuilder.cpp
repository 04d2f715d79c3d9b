//===- KernelBuilder.cpp - linalg-on-memref building blocks ---------------===//

#include "KernelBuilder.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace tbc;

Value KernelBuilder::f32(double v) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(float(v)));
}

void tbc::emitForLoop(OpBuilder &b, Location loc, Value lo, Value hi, Value step,
                      function_ref<void(OpBuilder &, Value)> body) {
  scf::ForOp::create(b, loc, lo, hi, step, ValueRange{},
                     [&](OpBuilder &lb, Location, Value i, ValueRange) {
                       body(lb, i);
                       scf::YieldOp::create(lb, loc);
                     });
}

Value KernelBuilder::idx(int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

Value KernelBuilder::dim(Value memref, int64_t i) {
  return memref::DimOp::create(b, loc, memref, i);
}

Value KernelBuilder::alloc(ArrayRef<int64_t> shape, ValueRange dynamic) {
  auto type = MemRefType::get(shape, b.getF32Type());
  return memref::AllocOp::create(b, loc, type, dynamic);
}

void KernelBuilder::dealloc(Value buffer) {
  memref::DeallocOp::create(b, loc, buffer);
}

void KernelBuilder::fill(Value buffer, double value) {
  linalg::FillOp::create(b, loc, ValueRange{f32(value)}, ValueRange{buffer});
}

Value KernelBuilder::slice(Value memref, unsigned d, Value begin, Value size) {
  auto type = cast<MemRefType>(memref.getType());
  SmallVector<OpFoldResult> offsets, sizes, strides;
  for (int64_t i = 0; i < type.getRank(); ++i) {
    bool sliced = i == int64_t(d);
    offsets.push_back(sliced ? OpFoldResult(begin) : b.getIndexAttr(0));
    if (sliced)
      sizes.push_back(size);
    else if (type.isDynamicDim(i))
      sizes.push_back(dim(memref, i));
    else
      sizes.push_back(b.getIndexAttr(type.getDimSize(i)));
    strides.push_back(b.getIndexAttr(1));
  }
  return memref::SubViewOp::create(b, loc, memref, offsets, sizes, strides);
}

Value KernelBuilder::splitLastDim(Value memref, int64_t groups) {
  auto type = cast<MemRefType>(memref.getType());
  int64_t rank = type.getRank();
  SmallVector<int64_t> shape(type.getShape());
  int64_t last = shape.back();
  shape.back() = groups;
  shape.push_back(last / groups);
  SmallVector<ReassociationIndices> reassoc;
  for (int64_t i = 0; i + 1 < rank; ++i)
    reassoc.push_back({i});
  reassoc.push_back({rank - 1, rank});
  FailureOr<MemRefType> resultType =
      memref::ExpandShapeOp::computeExpandedType(type, shape, reassoc);
  assert(succeeded(resultType) && "last dim has unit stride");
  SmallVector<OpFoldResult> outShape;
  for (int64_t i = 0; i < rank + 1; ++i) {
    if (ShapedType::isDynamic(shape[i]))
      outShape.push_back(dim(memref, i));
    else
      outShape.push_back(b.getIndexAttr(shape[i]));
  }
  return memref::ExpandShapeOp::create(b, loc, *resultType, memref, reassoc,
                                       outShape);
}

void KernelBuilder::generic(ValueRange ins, ValueRange outs,
                            ArrayRef<AffineMap> maps,
                            ArrayRef<utils::IteratorType> iterators,
                            BodyFn body) {
  linalg::GenericOp::create(b, loc, TypeRange{}, ins, outs, maps, iterators,
                            body);
}

AffineMap KernelBuilder::map(unsigned numDims, ArrayRef<AffineExpr> exprs) {
  return AffineMap::get(numDims, 0, exprs, b.getContext());
}

AffineMap KernelBuilder::identity(unsigned numDims) {
  return b.getMultiDimIdentityMap(numDims);
}

SmallVector<utils::IteratorType> KernelBuilder::iterators(unsigned parallel,
                                                          unsigned reduction) {
  SmallVector<utils::IteratorType> it(parallel, utils::IteratorType::parallel);
  it.append(reduction, utils::IteratorType::reduction);
  return it;
}
