//===- OutlineKernels.cpp - one kernel function per compute op ------------===//

#include "tbc/Transforms/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

#include <map>
#include <set>

using namespace mlir;

namespace tbc {
#define GEN_PASS_DEF_TBCOUTLINEKERNELS
#include "tbc/TbcTransforms.h.inc"
} // namespace tbc

using namespace tbc;

/// Ops that stay in the schedule: parameters and bind-time transforms (the
/// runtime evaluates them when binding weights) and last-dimension splits
/// (views of their input).
static bool staysInSchedule(Operation *op) {
  if (isa<ParamOp>(op) || op->hasTrait<WeightTransform>())
    return true;
  if (auto split = dyn_cast<SplitOp>(op))
    return split.getNumGroups() == 1;
  return false;
}

/// What an op computes, for sharing kernels: its name, attributes (less
/// `dropped`), operand and result types.
static SmallVector<const void *> computeKey(Operation *op, ArrayRef<StringRef> dropped = {}) {
  NamedAttrList attrs(op->getAttrDictionary());
  for (StringRef name : dropped)
    attrs.erase(name);
  SmallVector<const void *> key{op->getName().getAsOpaquePointer(),
                                attrs.getDictionary(op->getContext()).getAsOpaquePointer()};
  for (Type t : op->getOperandTypes())
    key.push_back(t.getAsOpaquePointer());
  key.push_back(nullptr); // operands | results
  for (Type t : op->getResultTypes())
    key.push_back(t.getAsOpaquePointer());
  return key;
}

/// Attention ops alike but for their static window (Gemma's local and
/// global layers) take it as a value instead, a constant before each (0:
/// none), so that they share one kernel: a second attention trio (prefill,
/// decode, split-KV) is about a quarter of a Gemma module's CUDA compile.
/// Where every layer has the same window it stays an attribute, which the
/// kernels fold into their loop bounds.
static void windowsAsValues(ModuleOp module) {
  std::map<SmallVector<const void *>, SmallVector<AttentionOp>> alike;
  module.walk([&](AttentionOp a) {
    if (!a.getWindowSize())
      alike[computeKey(a, {a.getWindowAttrName().getValue(),
                           TbcDialect::TapAttrHelper::getNameStr()})]
          .push_back(a);
  });
  for (auto &[key, ops] : alike) {
    std::set<int64_t> windows;
    for (AttentionOp a : ops)
      windows.insert(a.getWindow().value_or(0));
    if (windows.size() < 2)
      continue;
    for (AttentionOp a : ops) {
      OpBuilder b(a);
      Value w = arith::ConstantIntOp::create(b, a.getLoc(), a.getWindow().value_or(0), 64);
      a.getWindowSizeMutable().assign(w);
      a.removeWindowAttr();
    }
  }
}

namespace {
struct TbcOutlineKernelsPass
    : tbc::impl::TbcOutlineKernelsBase<TbcOutlineKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    windowsAsValues(module);
    SymbolTable symbols(module);
    OpBuilder b(module.getContext());
    int counter = 0;
    // Ops that compute the same thing (same op, attributes and types: the
    // norms of Gemma's sandwich, everything but attention in its local and
    // global layers) share one kernel; each call site still gets its own
    // buffers and KV caches from the schedule.
    std::map<SmallVector<const void *>, func::FuncOp> kernelsByKey;
    SmallVector<func::FuncOp> functions(module.getOps<func::FuncOp>());
    for (func::FuncOp fn : functions) {
      if (fn->hasAttr(TbcDialect::KernelAttrHelper::getNameStr()) || fn.isExternal())
        continue;
      SmallVector<Operation *> compute;
      fn.walk([&](Operation *op) {
        if (isa<TbcDialect>(op->getDialect()) && !staysInSchedule(op))
          compute.push_back(op);
      });
      for (Operation *op : compute) {
        // A tap names a call site's result, not what the kernel computes: it
        // moves to the call (the schedule), and tapped ops share kernels.
        StringRef tapName = TbcDialect::TapAttrHelper::getNameStr();
        Attribute tap = op->removeAttr(tapName);
        func::FuncOp &kernel = kernelsByKey[computeKey(op)];
        if (!kernel)
          kernel = outline(op, "k" + std::to_string(counter++) + "_" +
                                   op->getName().stripDialect().str(),
                           b, symbols);
        b.setInsertionPoint(op);
        auto call = func::CallOp::create(b, op->getLoc(), kernel,
                                         op->getOperands());
        if (tap)
          call->setAttr(tapName, tap);
        op->replaceAllUsesWith(call.getResults());
        op->erase();
      }
    }
  }

  /// A private kernel function holding a copy of `op`.
  func::FuncOp outline(Operation *op, const std::string &name, OpBuilder &b,
                       SymbolTable &symbols) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(getOperation().getBody());
    auto kernel = func::FuncOp::create(
        b, op->getLoc(), name,
        b.getFunctionType(op->getOperandTypes(), op->getResultTypes()));
    kernel.setPrivate();
    kernel->setAttr(TbcDialect::KernelAttrHelper::getNameStr(), b.getUnitAttr());
    // Attention keeps a KV cache per call site (the runtime passes each its
    // own). How a kernel's work splits is the target's business (its
    // KernelABI.h), decided from the op, not recorded here.
    if (isa<AttentionOp>(op))
      kernel->setAttr(TbcDialect::KvCacheAttrHelper::getNameStr(), b.getUnitAttr());
    Block *body = kernel.addEntryBlock();
    b.setInsertionPointToEnd(body);
    IRMapping map;
    map.map(op->getOperands(), body->getArguments());
    Operation *clone = b.clone(*op, map);
    func::ReturnOp::create(b, op->getLoc(), clone->getResults());
    symbols.insert(kernel);
    return kernel;
  }
};
} // namespace
