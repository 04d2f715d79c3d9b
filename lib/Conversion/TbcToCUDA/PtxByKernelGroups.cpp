//===- PtxByKernelGroups.cpp - PTX for every target, kernels in groups ----===//
//
// Why: a CUDA compile for sm_80 and sm_90 used to translate, optimise and
// generate every kernel once per architecture, the architectures on two
// threads: LLVM's optimiser ran twice over identical IR, and one thread did
// a whole architecture. The optimised IR does not depend on the chip (the
// NVPTX back end picks instructions, the optimiser does not), so a group of
// kernels is optimised once and only code generation runs per target; the
// groups give the threads equal shares of the work.
//
//===----------------------------------------------------------------------===//

#include "PtxByKernelGroups.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Target/LLVM/NVVM/Utils.h"
#include "llvm/IR/CallingConv.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/Utils/Cloning.h"

#include <chrono>
#include <numeric>
#include <optional>

using namespace mlir;

namespace tbc::cuda {

namespace {

bool isKernel(LLVM::LLVMFuncOp f) {
  return f->hasAttr(gpu::GPUDialect::getKernelFuncAttrName()) ||
         f->hasAttr(NVVM::NVVMDialect::getKernelFuncAttrName());
}

/// Gives a group's own definitions (libdevice's functions and tables, the
/// kernels' constants) names of their own, so that the groups' PTX can share
/// one text. Kernels keep theirs: the runtime looks them up by name.
void renameApart(llvm::Module &module, unsigned group) {
  std::string suffix = "_g" + std::to_string(group);
  for (llvm::GlobalValue &value : module.global_values()) {
    if (value.isDeclaration() || value.getName().starts_with("llvm."))
      continue;
    if (auto *f = dyn_cast<llvm::Function>(&value);
        f && f->getCallingConv() == llvm::CallingConv::PTX_Kernel)
      continue;
    value.setName(value.getName() + suffix);
  }
}

/// The N of a plain `sm_N` chip; none for an architecture-specific one
/// (`sm_90a`), whose PTX runs on that architecture alone.
std::optional<unsigned> portableChip(StringRef chip) {
  unsigned n = 0;
  if (!chip.consume_front("sm_") || chip.getAsInteger(10, n))
    return std::nullopt;
  return n;
}

} // namespace

SmallVector<size_t> codegenSources(ArrayRef<NVVM::NVVMTargetAttr> targets, bool share) {
  SmallVector<size_t> source(targets.size());
  for (size_t i = 0; i < targets.size(); ++i) {
    source[i] = i;
    std::optional<unsigned> chip = portableChip(targets[i].getChip());
    if (!share || !chip)
      continue;
    for (size_t j = 0; j < targets.size(); ++j) {
      std::optional<unsigned> other = portableChip(targets[j].getChip());
      std::optional<unsigned> best = portableChip(targets[source[i]].getChip());
      if (other && targets[j].getFeatures() == targets[i].getFeatures() && *other < *best)
        source[i] = j;
    }
  }
  return source;
}

FailureOr<std::string> retargetPtx(StringRef ptx, StringRef from, StringRef to) {
  std::string line = "\n.target " + from.str();
  size_t at = ptx.find(line);
  if (at == StringRef::npos)
    return failure();
  size_t end = at + line.size();
  if (end < ptx.size() && ptx[end] != '\n' && ptx[end] != ',')
    return failure();
  // Said in the text itself, for whoever reads --emit ptx.
  std::string out = "// Instructions selected for " + from.str() + " (the same PTX ISA), "
                    "assembled for " + to.str() + ".\n";
  out += ptx.substr(0, at).str();
  out += "\n.target " + to.str();
  out += ptx.substr(end).str();
  return out;
}

namespace {

/// Upstream's NVVM serializer up to optimised LLVM IR (translation, libdevice,
/// the O-level pipeline, all for the first target), then PTX for each target.
class GroupSerializer final : public NVVM::SerializeGPUModuleBase {
public:
  GroupSerializer(KernelGroup &group, ArrayRef<NVVM::NVVMTargetAttr> targets,
                  const gpu::TargetOptions &options, bool shareCodegen)
      : SerializeGPUModuleBase(group.clone->getBody()->front(), targets.front(), options),
        group(group), targets(targets), shareCodegen(shareCodegen) {}

protected:
  FailureOr<SmallVector<char, 0>> moduleToObject(llvm::Module &module) override {
    if (group.index > 0)
      renameApart(module, group.index);
    SmallVector<size_t> source = codegenSources(targets, shareCodegen);
    SmallVector<std::string> ptx(targets.size());
    SmallVector<int64_t> ms(targets.size(), 0);
    for (size_t i = 0; i < targets.size(); ++i) {
      if (source[i] != i)
        continue;
      NVVM::NVVMTargetAttr target = targets[i];
      std::string error;
      llvm::Triple triple(target.getTriple());
      const llvm::Target *backend = llvm::TargetRegistry::lookupTarget(triple, error);
      if (!backend)
        return getOperation().emitError("no LLVM target for ") << target.getTriple() << ": "
                                                                << error;
      std::unique_ptr<llvm::TargetMachine> machine(backend->createTargetMachine(
          triple, target.getChip(), target.getFeatures(), {}, {}));
      if (!machine)
        return getOperation().emitError("no NVPTX target machine for ") << target.getChip();
      // Code generation rewrites the IR it reads (CodeGenPrepare and the
      // like): every code generation but the last reads a copy.
      bool last = llvm::none_of(llvm::drop_begin(source, i + 1), [&](size_t s) { return s > i; });
      std::unique_ptr<llvm::Module> copy = last ? nullptr : llvm::CloneModule(module);
      auto start = std::chrono::steady_clock::now();
      FailureOr<SmallString<0>> text = translateModuleToISA(
          copy ? *copy : module, *machine, [&] { return getOperation().emitError(); });
      if (failed(text))
        return failure();
      ms[i] = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::steady_clock::now() - start)
                  .count();
      ptx[i] = text->str().str();
    }
    for (size_t i = 0; i < targets.size(); ++i) {
      if (source[i] == i)
        continue;
      FailureOr<std::string> moved =
          retargetPtx(ptx[source[i]], targets[source[i]].getChip(), targets[i].getChip());
      if (failed(moved))
        return getOperation().emitError("the PTX for ")
               << targets[source[i]].getChip() << " has no .target line";
      ptx[i] = std::move(*moved);
    }
    group.ptx.assign(ptx.begin(), ptx.end());
    group.codegenMs.assign(ms.begin(), ms.end());
    return SmallVector<char, 0>();
  }

private:
  KernelGroup &group;
  ArrayRef<NVVM::NVVMTargetAttr> targets;
  bool shareCodegen;
};

} // namespace

SmallVector<KernelGroup> shareOutKernels(gpu::GPUModuleOp module, unsigned groups) {
  SmallVector<LLVM::LLVMFuncOp> kernels;
  SmallVector<int64_t> sizes;
  for (auto f : module.getOps<LLVM::LLVMFuncOp>())
    if (isKernel(f)) {
      int64_t n = 0;
      f.walk([&](Operation *) { ++n; });
      kernels.push_back(f);
      sizes.push_back(n);
    }
  unsigned count = std::clamp<unsigned>(kernels.size(), 1, std::max(groups, 1u));

  // Runs of consecutive kernels of about total / count operations each:
  // the joined PTX then lists the kernels in the module's order. A group
  // moves on once its share is full (by a kernel's middle operation) or
  // when the kernels left are just enough to give each later group one.
  int64_t total = std::accumulate(sizes.begin(), sizes.end(), int64_t(0));
  SmallVector<unsigned> groupOf(kernels.size(), 0);
  unsigned g = 0;
  int64_t done = 0;
  for (size_t k = 0; k < kernels.size(); ++k) {
    size_t later = count - 1 - g, left = kernels.size() - k;
    bool started = k > 0 && groupOf[k - 1] == g;
    if (started && later > 0 &&
        (left == later || done + sizes[k] / 2 >= int64_t(g + 1) * total / count))
      ++g;
    groupOf[k] = g;
    done += sizes[k];
  }

  // Each group's module: the original's attributes and everything in it
  // but the other groups' kernels (cloned one op at a time: a whole clone
  // to erase most of was a tenth of the stage with a group per kernel).
  SmallVector<KernelGroup> out;
  for (unsigned g = 0; g < count; ++g) {
    KernelGroup group;
    group.module = module;
    group.index = g;
    group.clone = ModuleOp::create(module.getLoc());
    OpBuilder b = OpBuilder::atBlockEnd(group.clone->getBody());
    auto copy = gpu::GPUModuleOp::create(b, module.getLoc(), module.getName());
    copy->setAttrs(module->getAttrDictionary());
    b.setInsertionPointToStart(copy.getBody());
    size_t k = 0;
    for (Operation &op : *module.getBody()) {
      auto f = dyn_cast<LLVM::LLVMFuncOp>(op);
      if (op.hasTrait<OpTrait::IsTerminator>() || (f && isKernel(f) && groupOf[k++] != g))
        continue;
      b.clone(op);
    }
    out.push_back(std::move(group));
  }
  return out;
}

FailureOr<SmallVector<NVVM::NVVMTargetAttr>> sharedOptimisationTargets(gpu::GPUModuleOp module) {
  SmallVector<NVVM::NVVMTargetAttr> targets;
  if (!module.getTargetsAttr())
    return module.emitError("the module has no target attributes");
  for (Attribute attr : module.getTargetsAttr()) {
    auto target = dyn_cast<NVVM::NVVMTargetAttr>(attr);
    if (!target)
      return module.emitError("kernel-groups compiles NVVM targets only, not ") << attr;
    if (!targets.empty()) {
      NVVM::NVVMTargetAttr first = targets.front();
      if (target.getTriple() != first.getTriple() || target.getO() != first.getO() ||
          target.getFlags() != first.getFlags() || target.getLink() != first.getLink())
        return module.emitError("kernel-groups optimises once for all targets, and ")
               << target << " differs from " << first
               << " in more than its chip and features";
    }
    targets.push_back(target);
  }
  if (targets.empty())
    return module.emitError("the module has no target attributes");
  return targets;
}

LogicalResult serializeGroup(KernelGroup &group, ArrayRef<NVVM::NVVMTargetAttr> targets,
                             const gpu::TargetOptions &options, bool shareCodegen) {
  GroupSerializer serializer(group, targets, options, shareCodegen);
  serializer.init();
  if (!serializer.run() || group.ptx.size() != targets.size())
    return group.module.emitError("serializing kernel group ")
           << group.index << " for " << targets.front() << " failed";
  return success();
}

FailureOr<std::string> joinPtx(ArrayRef<std::string> pieces) {
  std::string out = pieces.front();
  for (StringRef piece : pieces.drop_front()) {
    // LLVM writes the header first; the body starts after .address_size.
    size_t at = piece.find("\n.address_size");
    if (at == StringRef::npos)
      return failure();
    size_t end = piece.find('\n', at + 1);
    out += '\n';
    if (end != StringRef::npos)
      out += piece.substr(end + 1).str();
  }
  return out;
}

} // namespace tbc::cuda
