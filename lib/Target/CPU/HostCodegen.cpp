//===- HostCodegen.cpp - CPU kernels to a host shared object --------------===//

#include "tbc/Target/HostCodegen.h"

#include "tbc/Transforms/Passes.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;

void tbc::buildLinalgPipeline(OpPassManager &pm) {
  pm.addPass(createTbcLowerToLinalg());
}

LogicalResult tbc::buildLLVMPipeline(OpPassManager &pm) {
  return parsePassPipeline(
      // Polynomials for exp/tanh/erf first; then math ops with an LLVM
      // intrinsic (fma, floor, sqrt, ...) become intrinsics, and only what
      // is left (sin, cos of the RoPE tables) calls libm.
      "tbc-approximate-math,convert-linalg-to-loops,lower-affine,expand-strided-metadata,"
      "lower-affine,convert-scf-to-cf,convert-vector-to-llvm,convert-math-to-llvm,"
      "convert-math-to-libm,finalize-memref-to-llvm,convert-arith-to-llvm,"
      "convert-index-to-llvm,convert-cf-to-llvm,convert-func-to-llvm,"
      "reconcile-unrealized-casts",
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

llvm::TargetMachine *hostMachine(std::string &error) {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  llvm::Triple triple(llvm::sys::getProcessTriple());
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return nullptr;
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  std::string featureString;
  for (auto &f : features)
    featureString += (f.second ? "+" : "-") + f.first().str() + ",";
  return target->createTargetMachine(
      triple, llvm::sys::getHostCPUName(), featureString, llvm::TargetOptions(),
      llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Aggressive);
}

FailureOr<std::unique_ptr<llvm::Module>>
toOptimisedModule(ModuleOp module, llvm::LLVMContext &ctx,
                  llvm::TargetMachine *tm, std::string &error) {
  registerBuiltinDialectTranslation(*module.getContext());
  registerLLVMDialectTranslation(*module.getContext());
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

std::string tbc::hostCpuRequirements() {
  llvm::Triple triple(llvm::sys::getProcessTriple());
  std::string out = triple.getArchName().str();
  // The extensions the runtime knows how to ask the CPU about
  // (include/tbc/Runtime/CpuFeatures.h keeps the same list).
  static const char *watched[] = {"sse4.2",  "avx",      "avx2",
                                  "fma",     "avx512f",  "avx512bw",
                                  "avx512dq", "avx512vl", "avx512cd"};
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  for (const char *f : watched)
    if (features.lookup(f))
      out += std::string(" ") + f;
  return out;
}

FailureOr<std::string> tbc::emitHostSharedObject(ModuleOp module,
                                                 std::string &error) {
  std::unique_ptr<llvm::TargetMachine> tm(hostMachine(error));
  if (!tm)
    return failure();
  llvm::LLVMContext ctx;
  auto m = toOptimisedModule(module, ctx, tm.get(), error);
  if (failed(m))
    return failure();

  SmallString<128> objPath, soPath;
  if (llvm::sys::fs::createTemporaryFile("tbc-kernels", "o", objPath) ||
      llvm::sys::fs::createTemporaryFile("tbc-kernels", "so", soPath)) {
    error = "cannot create temporary files";
    return failure();
  }
  llvm::scope_exit cleanup([&] {
    llvm::sys::fs::remove(objPath);
    llvm::sys::fs::remove(soPath);
  });
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(objPath, ec);
    if (ec) {
      error = "cannot write " + objPath.str().str() + ": " + ec.message();
      return failure();
    }
    llvm::legacy::PassManager pm;
    if (tm->addPassesToEmitFile(pm, os, nullptr,
                                llvm::CodeGenFileType::ObjectFile)) {
      error = "the host target cannot emit object files";
      return failure();
    }
    pm.run(**m);
  }
  // The system linker turns the object into a loadable shared object; the
  // runtime then needs only dlopen (no LLVM).
  llvm::ErrorOr<std::string> cc = llvm::sys::findProgramByName("cc");
  if (!cc) {
    error = "no system C compiler ('cc') to link the kernels; install gcc";
    return failure();
  }
  SmallVector<StringRef> argv{*cc, "-shared", "-o", soPath, objPath, "-lm"};
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
