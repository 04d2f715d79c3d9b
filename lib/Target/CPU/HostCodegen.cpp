//===- HostCodegen.cpp - CPU kernels to a host shared object --------------===//

#include "tbc/Target/HostCodegen.h"

#include "tbc/Conversion/Passes.h"
#include "tbc/Support/CpuFeatureList.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

#include <algorithm>
#include <thread>

using namespace mlir;

void tbc::buildLinalgPipeline(OpPassManager &pm, StringRef weightType, const CpuTile &tile) {
  TbcLowerToCPUOptions options;
  options.weightType = weightType.str();
  options.vectorWidth = tile.vector;
  options.panelWidth = tile.panel;
  options.tileRows = tile.rows;
  options.bf16Dot = tile.bf16Dot;
  options.amx = tile.amx;
  options.activationTerms = tile.activationTerms;
  options.decodePrefetch = tile.decodePrefetch;
  options.decodeStreams = tile.decodeStreams;
  options.promptAttentionTiles = tile.promptTiles;
  pm.addPass(createTbcLowerToCPU(options));
}

LogicalResult tbc::buildLLVMPipeline(OpPassManager &pm) {
  return parsePassPipeline(
      // Polynomials for exp/tanh/erf first; then math ops with an LLVM
      // intrinsic (fma, floor, sqrt, ...) become intrinsics, and only what
      // is left (sin, cos of the RoPE tables) calls libm. x86vector ops
      // (the bf16 dot products) and amx ops (the AMX tiles) become their
      // intrinsics; LLVM configures the tiles (ldtilecfg) itself.
      // Whatever converts ops inside a function runs nested on func.func,
      // so the kernels convert side by side on the context's threads; only
      // the passes that add or rewrite module-level symbols (libm
      // declarations, memref globals, function signatures) run on the
      // module. The IR is the same as from one module-wide pass each.
      "func.func(tbc-approximate-math,convert-linalg-to-loops,lower-affine,"
      "expand-strided-metadata,lower-affine,convert-scf-to-cf,"
      "convert-vector-to-llvm{enable-x86vector enable-amx},convert-math-to-llvm),"
      "convert-math-to-libm,finalize-memref-to-llvm,"
      "func.func(convert-arith-to-llvm,convert-index-to-llvm,"
      "convert-to-llvm{filter-dialects=cf,amx}),"
      "convert-func-to-llvm,reconcile-unrealized-casts",
      pm);
}

namespace {
/// void <kernel>_packed(void **args) { _mlir_ciface_<kernel>(args[0], ...); }
void addPackedEntryPoints(llvm::Module &m) {
  llvm::LLVMContext &ctx = m.getContext();
  llvm::Type *ptr = llvm::PointerType::get(ctx, 0);
  SmallVector<llvm::Function *> ifaces;
  for (llvm::Function &f : m)
    if (f.getName().starts_with("_mlir_ciface_") && !f.isDeclaration())
      ifaces.push_back(&f);
  for (llvm::Function *f : ifaces) {
    std::string name =
        f->getName().drop_front(strlen("_mlir_ciface_")).str() + "_packed";
    auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr}, false);
    auto *packed = llvm::Function::Create(type, llvm::Function::ExternalLinkage,
                                          name, m);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", packed));
    SmallVector<llvm::Value *> args;
    for (unsigned i = 0; i < f->arg_size(); ++i) {
      llvm::Value *slot = b.CreateConstGEP1_64(ptr, packed->getArg(0), i);
      args.push_back(b.CreateLoad(ptr, slot));
    }
    b.CreateCall(f, args);
    b.CreateRetVoid();
  }
}

const llvm::Target *nativeTarget(std::string &error) {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  return llvm::TargetRegistry::lookupTarget(llvm::Triple(llvm::sys::getProcessTriple()), error);
}

/// The LLVM CPU name and feature string of `t`: this machine's own name and
/// features for "host", the user's additions last (they win).
std::pair<std::string, std::string> cpuAndFeatures(const tbc::HostTarget &t) {
  if (t.cpu != "host")
    return {t.cpu, t.features};
  // Probing the CPU is not free and the answer never changes: once per
  // process, not once per kernel that asks for the register tile.
  static const std::pair<std::string, std::string> host = [] {
    std::string features;
    for (auto &f : llvm::sys::getHostCPUFeatures())
      features += (f.second ? "+" : "-") + f.first().str() + ",";
    return std::make_pair(llvm::sys::getHostCPUName().str(), features);
  }();
  return {host.first, host.second + t.features};
}

llvm::TargetMachine *hostMachine(const tbc::HostTarget &t, std::string &error) {
  const llvm::Target *target = nativeTarget(error);
  if (!target)
    return nullptr;
  auto [cpu, features] = cpuAndFeatures(t);
  return target->createTargetMachine(llvm::Triple(llvm::sys::getProcessTriple()), cpu,
                                     features, llvm::TargetOptions(), llvm::Reloc::PIC_,
                                     std::nullopt, llvm::CodeGenOptLevel::Aggressive);
}

std::unique_ptr<llvm::MCSubtargetInfo> subtarget(const tbc::HostTarget &t) {
  std::string error;
  const llvm::Target *target = nativeTarget(error);
  if (!target)
    return nullptr;
  auto [cpu, features] = cpuAndFeatures(t);
  return std::unique_ptr<llvm::MCSubtargetInfo>(target->createMCSubtargetInfo(
      llvm::Triple(llvm::sys::getProcessTriple()), cpu, features));
}
} // namespace

std::string tbc::checkHostTarget(const HostTarget &t) {
  // Checked against a generic subtarget: LLVM warns on stderr when asked to
  // build one for a CPU or feature it does not know.
  std::unique_ptr<llvm::MCSubtargetInfo> sti = subtarget(HostTarget{"generic", ""});
  if (!sti)
    return "no LLVM target for this machine's architecture";
  if (t.cpu != "host" && !sti->isCPUStringValid(t.cpu))
    return "unknown --cpu '" + t.cpu + "' for " + llvm::sys::getProcessTriple() +
           " (an LLVM CPU name such as znver3, skylake-avx512 or x86-64-v3; or host)";
  for (llvm::StringRef f : llvm::split(t.features, ',')) {
    f = f.trim();
    if (f.empty())
      continue;
    auto known = sti->getAllProcessorFeatures();
    StringRef name = f.drop_front();
    if (!(f.starts_with("+") || f.starts_with("-")) ||
        std::none_of(known.begin(), known.end(),
                     [&](const llvm::SubtargetFeatureKV &kv) { return name == kv.Key; }))
      return "unknown --cpu-features entry '" + f.str() +
             "' (expected +name or -name of an LLVM feature, e.g. +avx2,-avx512f)";
  }
  return "";
}

std::string tbc::hostTargetCpu(const HostTarget &t) { return cpuAndFeatures(t).first; }

bool tbc::hostTargetHas(const HostTarget &t, StringRef feature) {
  std::unique_ptr<llvm::MCSubtargetInfo> sti = subtarget(t);
  return sti && sti->checkFeatures(("+" + feature).str());
}

namespace {
FailureOr<std::unique_ptr<llvm::Module>>
toOptimisedModule(ModuleOp module, llvm::LLVMContext &ctx,
                  llvm::TargetMachine *tm, std::string &error) {
  std::unique_ptr<llvm::Module> m = translateModuleToLLVMIR(module, ctx, "tbc");
  if (!m) {
    error = "translation to LLVM IR failed";
    return failure();
  }
  addPackedEntryPoints(*m);
  m->setTargetTriple(tm->getTargetTriple());
  m->setDataLayout(tm->createDataLayout());
  if (llvm::Error e = makeOptimizingTransformer(3, 0, tm)(m.get())) {
    error = llvm::toString(std::move(e));
    return failure();
  }
  return m;
}
} // namespace

std::string tbc::hostCpuRequirements(const HostTarget &target) {
  llvm::Triple triple(llvm::sys::getProcessTriple());
  std::string out = triple.getArchName().str();
  // The extensions the runtime knows how to ask the CPU about.
#define TBC_WATCHED(name) name,
  static const char *watched[] = {TBC_FOR_EACH_CPU_FEATURE(TBC_WATCHED)};
#undef TBC_WATCHED
  for (const char *f : watched)
    if (hostTargetHas(target, f))
      out += std::string(" ") + f;
  return out;
}

namespace {
/// Splits the module's kernels into at most `parts` modules of about equal
/// size, each kernel with its C-interface wrapper; every part keeps the
/// declarations and (private) constants, which the optimiser drops where
/// unused.
SmallVector<OwningOpRef<ModuleOp>> splitKernels(ModuleOp module, unsigned parts) {
  auto group = [](StringRef name) {
    name.consume_front("_mlir_ciface_");
    return name;
  };
  llvm::StringMap<int64_t> sizes;
  for (auto f : module.getOps<LLVM::LLVMFuncOp>())
    if (!f.isExternal()) {
      int64_t n = 0;
      f.walk([&](Operation *) { ++n; });
      sizes[group(f.getName())] += n;
    }
  // Largest first onto the least loaded part (deterministic: ties by name).
  std::vector<std::pair<int64_t, std::string>> order;
  for (auto &e : sizes)
    order.push_back({-e.second, e.first().str()});
  std::sort(order.begin(), order.end());
  parts = std::max(1u, std::min<unsigned>(parts, order.size()));
  std::vector<int64_t> load(parts, 0);
  llvm::StringMap<unsigned> partOf;
  for (auto &[negSize, name] : order) {
    unsigned p = unsigned(std::min_element(load.begin(), load.end()) - load.begin());
    partOf[name] = p;
    load[p] -= negSize;
  }
  SmallVector<OwningOpRef<ModuleOp>> out;
  for (unsigned p = 0; p < parts; ++p) {
    OwningOpRef<ModuleOp> part = cast<ModuleOp>(module->clone());
    for (auto f : llvm::make_early_inc_range(part->getOps<LLVM::LLVMFuncOp>()))
      if (!f.isExternal() && partOf.lookup(group(f.getName())) != p)
        f.erase();
    out.push_back(std::move(part));
  }
  return out;
}

/// LLVM dialect -> optimised object code for the host CPU, written to `path`.
LogicalResult emitObject(ModuleOp module, const tbc::HostTarget &target, StringRef path,
                         std::string &error) {
  std::unique_ptr<llvm::TargetMachine> tm(hostMachine(target, error));
  if (!tm)
    return failure();
  llvm::LLVMContext ctx;
  auto m = toOptimisedModule(module, ctx, tm.get(), error);
  if (failed(m))
    return failure();
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec) {
    error = "cannot write " + path.str() + ": " + ec.message();
    return failure();
  }
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile)) {
    error = "the host target cannot emit object files";
    return failure();
  }
  pm.run(**m);
  return success();
}
} // namespace

FailureOr<std::string> tbc::emitHostSharedObject(ModuleOp module, const HostTarget &target,
                                                 std::string &error) {
  // LLVM's optimiser and code generator are most of a compile: the kernels
  // are independent, so each core compiles its share into its own object.
  registerBuiltinDialectTranslation(*module.getContext());
  registerLLVMDialectTranslation(*module.getContext());
  // As many as the context's thread pool has: LLVM counts the CPUs this
  // process may run on (taskset, a container's cpuset), where
  // hardware_concurrency() counted the machine's and oversubscribed a
  // pinned compile; --mlir-disable-threading gives one.
  unsigned threads = module.getContext()->isMultithreadingEnabled()
                         ? std::max(1u, module.getContext()->getNumThreads())
                         : 1u;
  SmallVector<OwningOpRef<ModuleOp>> parts = splitKernels(module, threads);

  SmallVector<SmallString<128>> objPaths(parts.size());
  SmallString<128> soPath;
  bool madeFiles = !llvm::sys::fs::createTemporaryFile("tbc-kernels", "so", soPath);
  for (SmallString<128> &path : objPaths)
    madeFiles &= !llvm::sys::fs::createTemporaryFile("tbc-kernels", "o", path);
  llvm::scope_exit cleanup([&] {
    for (SmallString<128> &path : objPaths)
      if (!path.empty())
        llvm::sys::fs::remove(path);
    if (!soPath.empty())
      llvm::sys::fs::remove(soPath);
  });
  if (!madeFiles) {
    error = "cannot create temporary files";
    return failure();
  }
  std::vector<std::string> errors(parts.size());
  std::vector<bool> ok(parts.size(), false);
  {
    std::vector<std::thread> workers;
    for (size_t i = 1; i < parts.size(); ++i)
      workers.emplace_back([&, i] {
        ok[i] = succeeded(emitObject(*parts[i], target, objPaths[i], errors[i]));
      });
    ok[0] = succeeded(emitObject(*parts[0], target, objPaths[0], errors[0]));
    for (std::thread &w : workers)
      w.join();
  }
  for (size_t i = 0; i < parts.size(); ++i)
    if (!ok[i]) {
      error = errors[i];
      return failure();
    }

  // The system linker turns the objects into a loadable shared object; the
  // runtime then needs only dlopen (no LLVM).
  llvm::ErrorOr<std::string> cc = llvm::sys::findProgramByName("cc");
  if (!cc) {
    error = "no system C compiler ('cc') to link the kernels; install gcc";
    return failure();
  }
  SmallVector<StringRef> argv{*cc, "-shared", "-o", soPath};
  for (SmallString<128> &path : objPaths)
    argv.push_back(path);
  argv.push_back("-lm");
  std::string linkError;
  if (llvm::sys::ExecuteAndWait(*cc, argv, std::nullopt, {}, 0, 0,
                                &linkError) != 0) {
    error = "linking the kernels failed: " + linkError;
    return failure();
  }
  auto buffer = llvm::MemoryBuffer::getFile(soPath);
  if (!buffer) {
    error = "cannot read the linked kernels";
    return failure();
  }
  return (*buffer)->getBuffer().str();
}
