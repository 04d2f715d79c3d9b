//===- HoistWeightTransforms.cpp - weight transforms onto the parameters --===//
//
// Fusion inside a shared layer function leaves bind-time weight transforms
// on the function's weight arguments. Moving them to the call sites puts
// them on that layer's tbc.params, where the runtime evaluates them once.
//
//===----------------------------------------------------------------------===//

#include "tbc/Transforms/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace tbc {
#define GEN_PASS_DEF_TBCHOISTWEIGHTTRANSFORMS
#include "tbc/TbcTransforms.h.inc"
} // namespace tbc

using namespace tbc;

namespace {
/// "fold_gain(concat(self_attn.q_proj.weight, ...), input_layernorm.weight)":
/// names a new argument after the transforms and arguments it comes from,
/// for readers of the IR.
std::string describe(Value v, func::FuncOp fn) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (auto name = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                    TbcDialect::NameAttrHelper::getNameStr()))
      return name.getValue().str();
    return "arg" + std::to_string(arg.getArgNumber());
  }
  Operation *op = v.getDefiningOp();
  std::string text = op->getName().stripDialect().str() + "(";
  for (auto [i, operand] : llvm::enumerate(op->getOperands()))
    text += (i ? ", " : "") + describe(operand, fn);
  return text + ")";
}

LogicalResult hoistFrom(func::FuncOp fn, ArrayRef<func::CallOp> calls) {
  Block &body = fn.getBody().front();
  // Transforms computed only from arguments and other such transforms.
  llvm::SetVector<Operation *> hoisted;
  for (Operation &op : body) {
    if (!op.hasTrait<WeightTransform>())
      continue;
    bool fromArgs = llvm::all_of(op.getOperands(), [&](Value v) {
      if (auto arg = dyn_cast<BlockArgument>(v))
        return arg.getOwner() == &body;
      return hoisted.contains(v.getDefiningOp());
    });
    if (fromArgs)
      hoisted.insert(&op);
  }
  if (hoisted.empty())
    return success();

  // Results still needed inside become new arguments.
  SmallVector<Value> exported;
  for (Operation *op : hoisted)
    for (Value r : op->getResults())
      if (llvm::any_of(r.getUsers(),
                       [&](Operation *u) { return !hoisted.contains(u); }))
        exported.push_back(r);
  unsigned firstNew = fn.getNumArguments();
  for (Value r : exported) {
    unsigned index = fn.getNumArguments();
    if (failed(fn.insertArgument(index, r.getType(), {}, r.getLoc())))
      return failure();
    fn.setArgAttr(index, TbcDialect::NameAttrHelper::getNameStr(),
                  StringAttr::get(fn.getContext(),
                                  describe(r, fn)));
    // Hoisted users keep reading the op result: they move along with it.
    r.replaceUsesWithIf(fn.getArgument(index), [&](OpOperand &use) {
      return !hoisted.contains(use.getOwner());
    });
  }

  // Each call site evaluates the transforms on its own parameters.
  for (func::CallOp call : calls) {
    OpBuilder b(call);
    IRMapping map;
    for (unsigned i = 0; i < firstNew; ++i)
      map.map(fn.getArgument(i), call->getOperand(i));
    for (Operation *op : hoisted)
      b.clone(*op, map);
    SmallVector<Value> operands(call->getOperands());
    for (Value r : exported)
      operands.push_back(map.lookup(r));
    auto newCall = func::CallOp::create(b, call.getLoc(), fn, operands);
    newCall->setDiscardableAttrs(call->getDiscardableAttrDictionary()); // a layer's tap
    call.replaceAllUsesWith(newCall.getResults());
    call.erase();
  }
  for (Operation *op : llvm::reverse(hoisted))
    op->erase();

  // Drop arguments nothing reads any more (weights now only transformed).
  llvm::BitVector unused(fn.getNumArguments());
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    unused[i] = fn.getArgument(i).use_empty();
  if (unused.none())
    return success();
  SmallVector<func::CallOp> newCalls;
  // (Keep the optional alive: ranging over `*getSymbolUses(...)` would
  // iterate a destroyed temporary.)
  std::optional<SymbolTable::UseRange> uses =
      SymbolTable::getSymbolUses(fn, fn->getParentOp());
  for (const SymbolTable::SymbolUse &use : *uses)
    newCalls.push_back(cast<func::CallOp>(use.getUser()));
  if (failed(fn.eraseArguments(unused)))
    return failure();
  for (func::CallOp call : newCalls) {
    SmallVector<Value> operands;
    for (auto [i, v] : llvm::enumerate(call->getOperands()))
      if (!unused[i])
        operands.push_back(v);
    OpBuilder b(call);
    auto newCall = func::CallOp::create(b, call.getLoc(), fn, operands);
    newCall->setDiscardableAttrs(call->getDiscardableAttrDictionary());
    call.replaceAllUsesWith(newCall.getResults());
    call.erase();
  }
  return success();
}

struct TbcHoistWeightTransformsPass
    : tbc::impl::TbcHoistWeightTransformsBase<TbcHoistWeightTransformsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto fn : llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
      if (fn.isExternal() || fn.isPublic())
        continue; // public functions' signatures belong to their callers
      std::optional<SymbolTable::UseRange> uses =
          SymbolTable::getSymbolUses(fn, module);
      if (!uses)
        continue;
      SmallVector<func::CallOp> calls;
      bool onlyCalls = true;
      for (const SymbolTable::SymbolUse &use : *uses) {
        auto call = dyn_cast<func::CallOp>(use.getUser());
        onlyCalls &= bool(call);
        if (call)
          calls.push_back(call);
      }
      if (!onlyCalls)
        continue;
      if (failed(hoistFrom(fn, calls)))
        return signalPassFailure();
    }
    // Parameters left without users (now read only through transforms that
    // replaced them) are dead.
    module.walk([](ParamOp p) {
      if (p->use_empty())
        p->erase();
    });
  }
};
} // namespace
