//===- Compile.cpp - `tbc compile` ----------------------------------------===//
//
// MODEL (Hugging Face folder or config.json, native spec, or tbc IR) -> tbc
// IR -> the requested stage. Accepts the standard MLIR pass-manager flags
// (--mlir-print-ir-after-all, --mlir-timing, ...). Errors name the file and
// field or IR location, exit non-zero and leave no output file behind.
//
//===----------------------------------------------------------------------===//

#include "tbc/Driver/Driver.h"

#include "Options.h"

#include "tbc/Analysis/Cost.h"
#include "tbc/Dialect/TbcDialect.h"
#include "tbc/Frontend/BuildModel.h"
#include "tbc/Frontend/ModelReaders.h"
#include "tbc/Frontend/WeightCheck.h"
#include "tbc/InitAll.h"
#include "tbc/Support/ModuleFile.h"
#include "tbc/Support/FileIO.h"
#include "tbc/Support/IRNesting.h"
#include "tbc/Support/Limits.h"
#include "tbc/Target/Manifest.h"
#include "tbc/Target/TargetBackend.h"
#include "tbc/Transforms/Passes.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <set>

using namespace mlir;
using namespace tbc;
namespace cl = llvm::cl;

namespace {
int fail(const std::string &message) {
  llvm::errs() << "tbc compile: error: " << message << "\n";
  return 1;
}

std::string join(llvm::ArrayRef<std::string> items, llvm::StringRef separator = ", ") {
  std::string s;
  for (const std::string &i : items)
    s += (s.empty() ? "" : separator.str()) + i;
  return s;
}

/// The frontend: a model description (HF config, native spec) or tbc IR
/// -> a tbc module. On failure returns null with `why` set (empty when the
/// IR parser has reported the error with its location).
OwningOpRef<ModuleOp> buildModule(MLIRContext &context, const std::string &model,
                                  Type (*eltType)(MLIRContext *),
                                  std::optional<DescriptionKind> &kind,
                                  std::string &configPath, std::string &sourceConfig,
                                  std::string &why) {
  SourceError error;
  auto fail = [&](const std::string &message) {
    why = message;
    return OwningOpRef<ModuleOp>();
  };
  kind = classifyModelPath(model, configPath, error);
  if (!kind)
    return fail(error.str());
  if (*kind == DescriptionKind::TbcIR) {
    std::string text;
    if (std::string problem = readRegularFile(model, limits::kIRFileBytes, text);
        !problem.empty())
      return fail(problem);
    if (std::string problem = checkIRNesting(text, limits::kIRNesting); !problem.empty())
      return fail(model + ": " + problem);
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, model),
                                 llvm::SMLoc());
    SourceMgrDiagnosticHandler handler(sourceMgr, &context);
    OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
    if (!module)
      return fail(""); // the parser reported the location
    return module;
  }
  std::optional<ModelSpec> spec = readModelDescription(configPath, *kind, error);
  if (!spec)
    return fail(error.str());
  sourceConfig = spec->sourceConfig;
  return buildModelIR(context, *spec, eltType(&context));
}

/// Every parameter of `module` against the checkpoint at `path` ("" when
/// they match).
std::string checkCheckpoint(ModuleOp module, const std::string &path) {
  std::string why;
  std::unique_ptr<rt::WeightStore> store = rt::WeightStore::open(path, why);
  if (!store)
    return why;
  std::string problems = checkWeights(module, *store);
  if (!problems.empty())
    return "the checkpoint does not match the model:\n" + problems;
  return "";
}

/// The (relative) paths of the module's taps, in walk order.
static std::vector<std::string> tapNames(ModuleOp module) {
  std::vector<std::string> names;
  module.walk([&](Operation *op) {
    if (auto tap = op->getAttrOfType<StringAttr>(TbcDialect::TapAttrHelper::getNameStr()))
      names.push_back(tap.getValue().str());
  });
  return names;
}

/// Taps whose value fusion removed: no fused kernel writes them.
static void reportDroppedTaps(const std::vector<std::string> &before,
                              const std::vector<std::string> &after) {
  std::multiset<std::string> kept(after.begin(), after.end());
  std::vector<std::string> dropped;
  for (const std::string &name : before) {
    auto it = kept.find(name);
    if (it != kept.end())
      kept.erase(it);
    else if (std::find(dropped.begin(), dropped.end(), name) == dropped.end())
      dropped.push_back(name);
  }
  if (dropped.empty())
    return;
  std::string list;
  for (const std::string &name : dropped)
    list += (list.empty() ? "" : ", ") + name;
  llvm::errs() << "tbc compile: " << dropped.size()
               << " tap(s) not available after fusion, their values computed inside "
                  "fused kernels and never written (a norm inside its projections, q/k/v "
                  "in one merged projection, gate/up inside the GLU, RoPE in the QKV "
                  "epilogue, a post-norm added to its residual); compile with --no-fuse to "
                  "tap them: "
               << list << "\n";
}

/// `--report`: the cost tables before and after fusion, and what it saved.
void printReport(ModuleOp unfused, ModuleOp fused, int64_t tokens) {
  llvm::raw_ostream &os = llvm::errs();
  os << "== cost per op, " << tokens << " token(s) per sequence, before fusion\n";
  printCostReport(unfused, tokens, os);
  os << "== after fusion\n";
  printCostReport(fused, tokens, os);
  printCostSummary(unfused, fused, tokens, os);
}

/// Writes the result to stdout or, atomically, to `output`.
int writeOutput(const std::string &output, const std::string &bytes, bool isModule) {
  if (output == "-") {
    llvm::outs() << bytes;
    return 0;
  }
  if (std::string why = writeFileAtomically(output, bytes); !why.empty())
    return fail(why);
  if (isModule)
    llvm::errs() << "tbc compile: wrote " << output << " (" << bytes.size() / 1024
                 << " KiB)\n";
  return 0;
}
} // namespace

int tbc::compileMain(int argc, char **argv) {
  static cl::OptionCategory cat("tbc compile options");
  static cl::opt<std::string> model(
      cl::Positional, cl::Required, cl::cat(cat),
      cl::desc("<MODEL: Hugging Face folder | config.json | native spec .json "
               "| tbc IR .mlir>"));
  static cl::opt<std::string> output(
      "o", cl::cat(cat), cl::init("-"), cl::value_desc("file"),
      cl::desc("Output file ('-' for stdout); written atomically"));
  static cl::opt<std::string> emit(
      "emit", cl::cat(cat), cl::init("module"), cl::value_desc("stage"),
      cl::desc("Stage to emit: tbc (the model as built), fused (after "
               "tbc-fuse), kernels (one function per kernel + the schedule), "
               "then the target's stages (cpu: linalg, llvm; cuda: gpu, nvvm, "
               "ptx), module (a runnable .tbcm; the default)"));
  static cl::opt<std::string> target(
      "target", cl::cat(cat), cl::init("cpu"), cl::value_desc("cpu|cuda"),
      cl::desc("Code generation target: cpu (this machine's CPU, through LLVM) "
               "or cuda (PTX through LLVM's NVPTX backend)"));
  static cl::list<std::string> cudaArch(
      "cuda-arch", cl::cat(cat), cl::CommaSeparated, cl::value_desc("sm_80,sm_90"),
      cl::desc("GPU architectures of --target cuda (default sm_80,sm_90): one "
               "PTX per architecture in the module. sm_90a alone: H100/H200 only, "
               "the prefill GEMM on wgmma"));
  static cl::opt<std::string> cudaAttention(
      "cuda-attention", cl::cat(cat), cl::init("flash"), cl::value_desc("flash|split-kv"),
      cl::desc("--target cuda with 16-bit weights: prefill attention as the "
               "tensor-core flash kernel (default) or the split-KV kernel that "
               "decoding and f32 modules use"));
  static cl::opt<int64_t> cudaFlashKeys(
      "cuda-flash-keys", cl::cat(cat), cl::init(32), cl::value_desc("32|64"),
      cl::desc("--target cuda with 16-bit weights: positions of the flash "
               "kernel's key and value tiles, 32 (the default) or 64 (head "
               "dims up to 128; past that 32): twice the tensor-core work for "
               "a tile's fixed costs, twice its shared memory. For tuning on a "
               "GPU (bench/gpu_ab.py)"));
  static cl::opt<int64_t> cudaFlashRows(
      "cuda-flash-rows", cl::cat(cat), cl::init(64), cl::value_desc("64|128"),
      cl::desc("--target cuda with 16-bit weights: query rows of a flash "
               "kernel's block, 64 (the default: 16 a warp) or 128 (two MMA "
               "tiles a warp, as FlashAttention-2 runs head dim 128: each key "
               "and value fragment feeds twice the multiplies; queries staged "
               "in shared memory; head dims up to 128, past that 64). For "
               "tuning on a GPU (bench/gpu_ab.py)"));
  static cl::opt<int64_t> cudaFlashPasses(
      "cuda-flash-passes", cl::cat(cat), cl::init(2), cl::value_desc("2|1"),
      cl::desc("--target cuda with 16-bit weights: walks of the flash "
               "kernel over the positions past head dim 128 (Gemma's 256): "
               "2 (the default: one per half of the output dims, computing "
               "the scores twice) or 1 (the queries staged in shared memory "
               "leave registers for the whole head's accumulators: a third "
               "fewer tensor-core multiplies; needs the KV cache in the "
               "weights' type). For tuning on a GPU (bench/gpu_ab.py)"));
  static cl::opt<bool> cudaFlashWgmma(
      "cuda-flash-wgmma", cl::cat(cat), cl::init(false),
      cl::desc("--target cuda --cuda-arch sm_90a with 16-bit weights: the "
               "flash kernel's products on wgmma.mma_async, a warpgroup's "
               "64 rows at a time (two warpgroups a block with "
               "--cuda-flash-rows 128), the next tile's scores in flight "
               "behind a tile's softmax (head dims 64 and 128, tiles of 32 "
               "positions, or 64 in blocks of 128 rows; the KV cache in the "
               "weights' type). For tuning on a GPU (bench/gpu_ab.py)"));
  static cl::opt<bool> cudaFlashOverlap(
      "cuda-flash-overlap", cl::cat(cat), cl::init(false),
      cl::desc("--cuda-flash-wgmma: each tile's P V stays in flight "
               "through the next tile's softmax, beside that tile's scores "
               "(FlashAttention-3's order within a warpgroup; a ring of 5 "
               "stages). For tuning on a GPU (bench/gpu_ab.py)"));
  static cl::opt<bool> cudaDependentLaunch(
      "cuda-pdl", cl::cat(cat), cl::init(false),
      cl::desc("--target cuda for sm_90 and later (--cuda-arch sm_90 or "
               "sm_90a): programmatic dependent launch. Each kernel waits "
               "for the ones before it inside the kernel "
               "(griddepcontrol.wait) rather than at its launch, so the "
               "runtime starts it while its predecessor drains; a decode "
               "GEMV first prefetches the start of its weight rows into L2 "
               "(weights are never written). For tuning on a GPU "
               "(bench/gpu_ab.py)"));
  static cl::opt<int64_t> cudaDecodeSplits(
      "cuda-decode-splits", cl::cat(cat), cl::init(0), cl::value_desc("1-16"),
      cl::desc("--target cuda: blocks each decoding head's cached positions "
               "are split over (flash-decoding), each block a slice, the last "
               "to finish merging them. Default: as many as give about 256 "
               "blocks in all, at most 16; fewer suit a GPU of fewer SMs or "
               "short caches (the emulated tests' tiny models). For tuning on "
               "a GPU (bench/gpu_ab.py)"));
  static cl::opt<int64_t> cudaGemmStages(
      "cuda-gemm-stages", cl::cat(cat), cl::init(4), cl::value_desc("2-8"),
      cl::desc("--target cuda with 16-bit weights: stages of the prefill "
               "projections' ring of shared memory (16 KB each, more with "
               "--cuda-gemm-cols 256 or --cuda-gemm-k 64; at most 227 KB in "
               "all; stages - 1 k steps of both operands in flight while the "
               "tensor cores multiply one). For tuning on a GPU: "
               "bench/gpu_ab.py times builds with different values against "
               "each other"));
  static cl::opt<int64_t> cudaGemmWarps(
      "cuda-gemm-warps", cl::cat(cat), cl::init(8), cl::value_desc("4|8"),
      cl::desc("--target cuda with 16-bit weights: warps of a prefill "
               "projection's block of 128 x 128 outputs: 8 (the default; 64 x "
               "32 a warp, one block an SM) or 4 (64 x 64 a warp, two blocks "
               "an SM)"));
  static cl::opt<int64_t> cudaGemmCols(
      "cuda-gemm-cols", cl::cat(cat), cl::init(128), cl::value_desc("128|256"),
      cl::desc("--target cuda with 16-bit weights: GEMM columns of a prefill "
               "projection's block of 128 rows: 128 (the default), or 256 "
               "with --cuda-arch sm_90a (each warpgroup's wgmma 64 x 256, one "
               "block an SM, a quarter less L2 traffic a multiply)"));
  static cl::opt<int64_t> cudaGemmK(
      "cuda-gemm-k", cl::cat(cat), cl::init(32), cl::value_desc("32|64"),
      cl::desc("--target cuda with 16-bit weights: k step of the prefill "
               "projections: 32 (the default), or 64 with --cuda-arch sm_90a "
               "(wgmma's 128-byte swizzle: one barrier for twice the "
               "multiplies; stages twice the bytes, at most 227 KB in all)"));
  static cl::opt<std::string> cudaKvCache(
      "cuda-kv-cache", cl::cat(cat), cl::value_desc("f32|bf16|f16"),
      cl::desc("--target cuda: element type of the device KV caches (default: "
               "the --dtype of the weights, as a bf16 model keeps its cache in "
               "bf16; f32 keeps decoding's attention in f32 for tight checks)"));
  static cl::opt<std::string> cpu(
      "cpu", cl::cat(cat), cl::init("host"), cl::value_desc("name"),
      cl::desc("--target cpu: the processor to generate code for (host: this one; "
               "an LLVM CPU name such as znver3, skylake-avx512, x86-64-v3); the "
               "projections' register tile follows its vector registers"));
  static cl::opt<std::string> cpuFeatures(
      "cpu-features", cl::cat(cat), cl::value_desc("+a,-b"),
      cl::desc("--target cpu: extensions to add or remove, e.g. -avx512f"));
  static cl::opt<std::string> cpuDot(
      "cpu-dot", cl::cat(cat), cl::init("f32"), cl::value_desc("f32|bf16|amx|amx-f32"),
      cl::desc("--target cpu --dtype bf16: how projections multiply. f32 (the "
               "default): activations stay f32 and the bf16 weights are widened, "
               "exactly the checkpoint's products. bf16: activations are rounded "
               "to bf16 and multiplied two k at a time by AVX512-BF16's "
               "vdpbf16ps (as llama.cpp and bf16 GPU kernels do; about 1e-2 "
               "relative error in the logits, faster prefill); needs a CPU with "
               "avx512bf16. amx: the same rounding, with prompts and batches of 4 "
               "rows or more multiplied on Intel's AMX tiles (tdpbf16ps; Sapphire "
               "Rapids and later), fewer rows on vdpbf16ps; a prompt's attention "
               "on the tiles too (queries, keys, values and probabilities rounded "
               "to bf16; head_dim a multiple of 32, no ALiBi or relative bias). "
               "amx-f32: f32's arithmetic on the tiles: each activation split into "
               "three bf16 terms that sum to it exactly, every product taken once "
               "per term (so the checkpoint's exact products, as f32; attention "
               "in f32): prompts 1.4-2.2x f32's speed (a 2-core Xeon; bench/NOTES.md)"));
  static cl::opt<int64_t> cpuDecodeStreams(
      "cpu-decode-streams", cl::cat(cat), cl::init(0), cl::value_desc("0|1|2|4"),
      cl::desc("--target cpu: weight panels a decode (one-row) projection "
               "reads side by side, for the prefetchers to follow as many "
               "streams. 0 (the default): the target CPU's choice (4 on Zen 3, "
               "Zen 5 and Emerald Rapids, 1 elsewhere). For tuning on another CPU: "
               "bench/cpu_decode_ab.py times the choices against each other"));
  static cl::opt<int64_t> cpuDecodePrefetch(
      "cpu-decode-prefetch", cl::cat(cat), cl::init(-1), cl::value_desc("bytes"),
      cl::desc("--target cpu: how far ahead a decode projection prefetches "
               "its weights into L2 (0: none). -1 (the default): the target "
               "CPU's choice (8192 on Intel, 4096 for 16-bit weights on Zen 1 "
               "and 2, 0 otherwise)"));
  static cl::opt<std::string> cpuPromptAttention(
      "cpu-prompt-attention", cl::cat(cat), cl::init("tiles"), cl::value_desc("tiles|rows"),
      cl::desc("--target cpu: how a prompt's attention (4 queries or more, no "
               "ALiBi or relative bias) runs. tiles (the default): 4 query rows "
               "at a time against blocks of keys packed transposed, scores "
               "vectorised over keys (0.65-0.78x the time of rows on a Zen 3 "
               "at 512 tokens). rows: one query row a pass, as decoding does; "
               "for comparing the two on a host (bench/cpu_decode_ab.py). "
               "--cpu-dot amx keeps its own AMX attention"));
  static cl::opt<bool> noFuse(
      "no-fuse", cl::cat(cat),
      cl::desc("Skip the fusion pipeline (--emit fused then equals tbc)"));
  static cl::opt<std::string> taps(
      "taps", cl::cat(cat), cl::value_desc("layers|all"),
      cl::desc("Compile in tensor taps, named after the Hugging Face modules "
               "that produce them (tbc run --dump, tbc verify): layers (each "
               "layer's output: model.layers.3) or all (also every norm, "
               "projection and embedding output that survives fusion; the "
               "ones fusion removes are listed). Without it a module has none "
               "and pays nothing"));
  static cl::opt<bool> report(
      "report", cl::cat(cat),
      cl::desc("Print FLOPs and minimum bytes moved per op, per layer and for "
               "the model, before and after fusion"));
  static cl::opt<int64_t> reportTokens(
      "report-tokens", cl::cat(cat), cl::init(1), cl::value_desc("T"),
      cl::desc("Sequence length the --report counts for (default 1)"));
  static cl::opt<std::string> dtype(
      "dtype", cl::cat(cat), cl::value_desc("f32|bf16|f16"),
      cl::desc("--emit tbc|fused|kernels: the element type of the IR built "
               "from a model description. Code for a target: how it stores "
               "weights (f32, or bf16/f16 kept in 16 bits: widened in "
               "registers on the CPU, tensor-core operands on CUDA), "
               "activations and accumulation being f32. With 16-bit weights "
               "no norm gain is folded into a weight (that would round it "
               "twice). Default for code: the target's (cpu f32, cuda bf16)"));
  static cl::opt<std::string> weights(
      "weights", cl::cat(cat), cl::value_desc("dir|file.safetensors"),
      cl::desc("Check every parameter against this checkpoint (a Hugging "
               "Face folder's own weights are checked by default)"));

  tbc::registerAllPasses(); // the lowering pipelines are parsed by name
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  hideUnrelatedOptions(cat);
  cl::ParseCommandLineOptions(
      argc, argv,
      "tbc compile: compile a transformer model description\n\n"
      "  tbc compile examples/models/llama-3-8b --emit tbc -o llama.mlir\n"
      "  tbc compile spec.json --emit tbc --mlir-timing\n");

  const TargetBackend *backend = lookupTargetBackend(target);
  if (!backend)
    return fail("unknown --target '" + target + "' (this build generates code for: " +
                join(targetBackendNames()) + ")");
  // The target-independent stages, before the target's own.
  const std::vector<std::string> modelStages{"tbc", "fused", "kernels"};
  // Without --dtype, code takes the target's weight type; the stages before
  // code build the model in f32, as the lowerings read it.
  if (dtype.empty())
    dtype = llvm::is_contained(modelStages, emit.getValue()) ? "f32"
                                                              : backend->defaultDtype().str();
  TargetOptions targetOptions;
  targetOptions.cpu = cpu;
  targetOptions.cpuFeatures = cpuFeatures;
  if (!cudaArch.empty())
    targetOptions.cudaArchs.assign(cudaArch.begin(), cudaArch.end());
  if (cudaAttention != "flash" && cudaAttention != "split-kv")
    return fail("unknown --cuda-attention '" + cudaAttention + "' (flash or split-kv)");
  targetOptions.cudaFlashAttention = cudaAttention == "flash";
  targetOptions.cudaFlashKeys = cudaFlashKeys;
  targetOptions.cudaFlashRows = cudaFlashRows;
  targetOptions.cudaFlashPasses = cudaFlashPasses;
  targetOptions.cudaFlashWgmma = cudaFlashWgmma;
  targetOptions.cudaFlashOverlap = cudaFlashOverlap;
  targetOptions.cudaGemmStages = cudaGemmStages;
  targetOptions.cudaGemmWarps = cudaGemmWarps;
  targetOptions.cudaGemmCols = cudaGemmCols;
  targetOptions.cudaGemmK = cudaGemmK;
  targetOptions.cudaKvCache = cudaKvCache;
  targetOptions.cudaDependentLaunch = cudaDependentLaunch;
  targetOptions.cudaDecodeSplits = cudaDecodeSplits;
  targetOptions.cpuDot = cpuDot;
  targetOptions.cpuDecodeStreams = cpuDecodeStreams;
  targetOptions.cpuPromptAttention = cpuPromptAttention;
  targetOptions.cpuDecodePrefetch = cpuDecodePrefetch;
  // Options are checked against the weights' type too (--cpu-dot bf16/amx need
  // bf16 weights); --dtype itself is checked once code is generated.
  targetOptions.weightType = dtype;
  if (std::string why = backend->checkOptions(targetOptions); !why.empty())
    return fail(why);
  // The stages `--emit` can stop at, in pipeline order.
  std::vector<TargetStage> targetStages = backend->stages(targetOptions);
  std::vector<std::string> stageNames = modelStages;
  for (const TargetStage &s : targetStages)
    stageNames.push_back(s.name);
  stageNames.push_back("module");
  auto stageIndex = [&](llvm::StringRef stage) -> int64_t {
    return std::find(stageNames.begin(), stageNames.end(), stage) - stageNames.begin();
  };
  if (stageIndex(emit) == int64_t(stageNames.size()))
    return fail("unknown --emit stage '" + emit + "' (available for --target " +
                target + ": " + join(stageNames) + ")");
  if (emit == "module" && output == "-")
    return fail("a module is binary: give -o FILE.tbcm (or --emit " +
                join(llvm::ArrayRef(stageNames).drop_back(), "|") + " for text)");
  // Past the target-independent stages, --dtype is how the backend stores
  // weights; the model itself is built in f32 (activations are f32).
  bool lowering = stageIndex(emit) > stageIndex("kernels");
  if (lowering) {
    if (std::string why = backend->checkDtype(dtype); !why.empty())
      return fail(why);
    targetOptions.weightType = dtype;
    targetStages = backend->stages(targetOptions);
  }
  if (reportTokens < 1)
    return fail("--report-tokens must be at least 1");
  if (output.empty())
    return fail("-o needs a path ('-' for stdout)");
  // Checked before any work: the output must not destroy an input.
  if (output != "-")
    if (std::string why = checkOutputPath(output, {model, weights}); !why.empty())
      return fail(why);
  Type (*eltType)(MLIRContext *) = nullptr;
  if (dtype == "f32" || lowering)
    eltType = [](MLIRContext *c) -> Type { return Float32Type::get(c); };
  else if (dtype == "bf16")
    eltType = [](MLIRContext *c) -> Type { return BFloat16Type::get(c); };
  else if (dtype == "f16")
    eltType = [](MLIRContext *c) -> Type { return Float16Type::get(c); };
  else
    return fail("unknown --dtype '" + dtype + "' (expected f32, bf16 or f16)");

  DefaultTimingManager tm;
  applyDefaultTimingManagerCLOptions(tm);
  TimingScope timing = tm.getRootScope();

  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();

  std::string sourceConfig; // the config.json fields the model depends on
  std::optional<DescriptionKind> kind;
  std::string configPath, why;
  OwningOpRef<ModuleOp> module;
  {
    TimingScope t = timing.nest("frontend");
    module = buildModule(context, model, eltType, kind, configPath, sourceConfig, why);
  }
  if (!module)
    return why.empty() ? 1 : fail(why); // empty: the IR parser reported it
  {
    TimingScope t = timing.nest("verify");
    if (failed(verify(*module)))
      return fail(model + ": the IR does not verify");
  }
  std::string weightsPath = weights;
  if (weightsPath.empty() && *kind == DescriptionKind::HFConfig &&
      configPath != model && rt::WeightStore::folderHasWeights(model))
    weightsPath = model;
  if (!weightsPath.empty()) {
    TimingScope t = timing.nest("check weights");
    if (std::string problem = checkCheckpoint(*module, weightsPath); !problem.empty())
      return fail(problem);
  }

  // The pipeline, stage by stage up to the requested one; the MLIR
  // pass-manager flags (--mlir-print-ir-*, --mlir-timing) apply to each.
  OwningOpRef<ModuleOp> unfused;
  if (report)
    unfused = module->clone();
  int64_t last = stageIndex(emit);
  auto runStage = [&](StringRef name,
                      llvm::function_ref<LogicalResult(OpPassManager &)> build)
      -> LogicalResult {
    PassManager pm(&context);
    if (failed(applyPassManagerCLOptions(pm)) || failed(build(pm)))
      return failure();
    TimingScope passTiming = timing.nest(name);
    pm.enableTiming(passTiming);
    return pm.run(*module);
  };
  if (!taps.empty()) {
    if (taps != "layers" && taps != "all")
      return fail("--taps must be layers or all, not '" + taps + "'");
    if (failed(runStage("insert taps", [&](OpPassManager &pm) {
          pm.addPass(createTbcInsertTaps(TbcInsertTapsOptions{taps.getValue()}));
          return success();
        })))
      return fail("inserting taps failed");
  }
  std::vector<std::string> tapsBeforeFusion = tapNames(*module);
  if (last >= stageIndex("fused") && !noFuse &&
      failed(runStage("fuse", [&](OpPassManager &pm) {
        FusePipelineOptions fuseOptions;
        fuseOptions.weightType = dtype.getValue();
        fuseOptions.normGainOnActivation = backend->takesNormGainOnActivation();
        buildFusePipeline(pm, fuseOptions);
        return success();
      })))
    return fail("the fusion pipeline failed");
  reportDroppedTaps(tapsBeforeFusion, tapNames(*module));

  if (report)
    printReport(*unfused, *module, reportTokens);

  std::string manifest;
  if (last >= stageIndex("kernels")) {
    if (failed(runStage("outline kernels", [](OpPassManager &pm) {
          pm.addPass(createTbcOutlineKernels());
          return success();
        })))
      return fail("outlining kernels failed");
    FailureOr<std::string> m = buildManifest(*module, *backend, targetOptions, sourceConfig);
    if (failed(m))
      return fail("the model cannot be scheduled");
    manifest = *m;
  }
  for (const TargetStage &stage : targetStages)
    if (last >= stageIndex(stage.name) &&
        failed(runStage("lower to " + stage.name, stage.build)))
      return fail("lowering to " + stage.name + " (" + stage.description + ") failed");

  TimingScope t = timing.nest("output");
  std::string bytes;
  if (emit == "module") {
    TimingScope codegen = t.nest("code generation (" + target + ")");
    FailureOr<std::vector<rt::CodeBlob>> blobs =
        backend->serialize(*module, targetOptions, why);
    if (failed(blobs))
      return fail(why);
    bytes = rt::encodeModuleFile(rt::ModuleFile{manifest, *blobs});
  } else {
    llvm::raw_string_ostream os(bytes);
    module->print(os);
    os << "\n"; // as tbc-opt ends its output
  }
  return writeOutput(output, bytes, emit == "module");
}
