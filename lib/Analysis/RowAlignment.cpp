//===- RowAlignment.cpp - which kernel operands' rows are 16-byte aligned -===//

#include "tbc/Analysis/RowAlignment.h"

#include "tbc/Dialect/TbcDialect.h"

using namespace mlir;
using namespace tbc;

RowAlignment::RowAlignment(ModuleOp outlined) : module(outlined) {
  auto forward = outlined.lookupSymbol<func::FuncOp>("forward");
  if (!forward || forward.isExternal())
    return;
  // @forward's operands are token ids and positions (sequence inputs).
  SmallVector<Place> args(forward.getNumArguments()), results;
  visit(forward, args, results);
}

bool RowAlignment::rowsAligned16(func::FuncOp kernel, unsigned index) const {
  auto it = aligned.find(kernel);
  return it != aligned.end() && index < it->second.size() && it->second[index];
}

static int64_t lastDim(Type t) {
  auto shaped = dyn_cast<RankedTensorType>(t);
  return shaped && shaped.getRank() > 0 ? shaped.getShape().back() : 0;
}

void RowAlignment::visit(func::FuncOp fn, ArrayRef<Place> args,
                         SmallVectorImpl<Place> &results) {
  DenseMap<Value, Place> places;
  for (auto [a, p] : llvm::zip(fn.getArguments(), args))
    places[a] = p;
  auto placeOf = [&](Value v) { return places.lookup(v); };
  for (Operation &op : fn.getBody().front()) {
    if (auto split = dyn_cast<SplitOp>(op)) {
      // A split the schedule keeps (one group) makes views: consecutive
      // column ranges of its input's root.
      Place in = placeOf(split.getInput());
      int64_t offset = in.offset;
      for (Value r : split.getResults()) {
        places[r] = {in.known, in.rootWidth, offset};
        offset += lastDim(r.getType());
      }
      continue;
    }
    if (auto call = dyn_cast<func::CallOp>(op)) {
      auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
      if (!callee || callee.isExternal())
        continue;
      SmallVector<Place> operands;
      for (Value v : call.getOperands())
        operands.push_back(placeOf(v));
      if (!callee->hasAttr(TbcDialect::KernelAttrHelper::getNameStr())) {
        SmallVector<Place> out;
        visit(callee, operands, out);
        for (auto [r, p] : llvm::zip(call.getResults(), out))
          places[r] = p;
        continue;
      }
      // A kernel's results are buffers of their own.
      for (Value r : call.getResults())
        places[r] = {true, lastDim(r.getType()), 0};
      // An operand is aligned where it is at every call.
      SmallVector<bool> &flags = aligned[callee];
      flags.resize(operands.size(), true);
      for (auto [i, p] : llvm::enumerate(operands))
        flags[i] = flags[i] && p.known && p.rootWidth % 4 == 0 && p.offset % 4 == 0;
      continue;
    }
    if (auto ret = dyn_cast<func::ReturnOp>(op))
      for (Value v : ret.getOperands())
        results.push_back(placeOf(v));
    // Parameters and weight transforms: weights, never rows of a buffer.
  }
}
