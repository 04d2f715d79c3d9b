//===- CpuBackend.cpp - the CPU target: kernels -> a host shared object ---===//
//
// The code is generated for the CPU `tbc compile` runs on, or for the one
// --cpu / --cpu-features name; the projections' register tile (tileFor) is
// chosen from that CPU's vector registers, and the module records which
// extensions the code uses (host.cpu) so that a runtime on an older CPU
// refuses it instead of dying of SIGILL.
//
//===----------------------------------------------------------------------===//

#include "tbc/Conversion/TbcToCPU/KernelABI.h"
#include "tbc/Support/CpuFeatureList.h"
#include "tbc/Target/HostCodegen.h"
#include "tbc/Target/TargetBackend.h"

using namespace mlir;
using namespace tbc;

namespace {
#define TBC_AMX_NAME(name, bit) name,
constexpr const char *kAmxFeatures[] = {TBC_FOR_EACH_AMX_FEATURE(TBC_AMX_NAME)};
#undef TBC_AMX_NAME

HostTarget hostTarget(const TargetOptions &options) {
  return HostTarget{options.cpu, options.cpuFeatures};
}

/// Whether `cpu`'s decode tiles read four weight panels side by side
/// (decodeStreamsFor). A Zen 3 core under KVM reads memory faster the more
/// streams its prefetchers follow (a read microbenchmark, two threads on
/// 2 MiB pages: 25.2 GB/s from one stream a thread, 26.9 from two, 31.4 from
/// four, 32.5 from eight; torch.sum 34.4); four against two: decode 4-11%
/// faster in f32 and, with the software prefetch off, 16-23% in bf16
/// (bench/NOTES.md 2026-11-28). A Zen 5 (AVX-512) reads bf16 panels faster
/// so too: four streams without prefetch against one with 4 KB, interleaved
/// rounds, 740 against 601 tok/s at hidden 1024 and 264 against 242 at 2048
/// when the host streamed 80 GB/s, level at 4096; f32 level (bench/NOTES.md
/// 2026-11-28, "Zen 5"). An Emerald Rapids reads four as well, but keeps
/// Intel's 8 KB of prefetch (decodePrefetchFor): four streams with it
/// against one, interleaved rounds under KVM at 23-26 GB/s, decode +4% in
/// f32 and +1-4% in bf16 at hidden 1024-4096, where four without prefetch
/// lost 12-15% in bf16 (bench/NOTES.md 2026-11-29, "Emerald Rapids"). A Zen
/// 4 reads one as fast as two and faster than four (bf16 hidden 2048, nine
/// interleaved rounds: 1.01x and 0.93x one; bench/NOTES.md 2026-12-02,
/// "Zen 4"); other Intel cores are unmeasured and keep one.
bool readsFourDecodeStreams(StringRef cpu) {
  return cpu == "znver3" || cpu == "znver5" || cpu == "emeraldrapids";
}

/// How far ahead a decode tile prefetches its weight panel on `cpu`. Intel's
/// cores stream a panel faster with 8 KB of software prefetch into L2 (f32
/// decode +31%, bf16 +50% on a Sapphire Rapids; bench/NOTES.md 2026-11-25),
/// with four streams too (Emerald Rapids: one stream without it 0.83x).
/// AMD's Zen streams f32 panels faster with its hardware prefetcher alone
/// (+6-11% without on Zen 3) and 16-bit ones, which take twice the
/// instructions per byte, with 4 KB (Zen 3 with two streams; bench/NOTES.md
/// 2026-11-26) -- except where measured since: Zen 3 and Zen 5 with their
/// four streams (Zen 3: 1-9% faster without; bench/NOTES.md 2026-11-28,
/// "four decode streams") and Zen 4 with its one (bf16 decode 0.90x at hidden
/// 2048 and 0.84x at 1024 with 4 KB, interleaved rounds; bench/NOTES.md
/// 2026-12-02, "Zen 4"). Zen 1 and 2 keep the first rule.
bool readsPanelsWithoutPrefetch(StringRef cpu) {
  return cpu == "znver3" || cpu == "znver4" || cpu == "znver5";
}

int64_t decodePrefetchFor(StringRef cpu, StringRef weightType) {
  if (!cpu.starts_with("znver"))
    return kDefaultDecodePrefetch;
  if (weightType == "f32" || readsPanelsWithoutPrefetch(cpu))
    return 0;
  return 4096;
}

/// How many weight panels a decode tile reads side by side on `cpu`: four
/// where measured faster (above; four is as many as the unrolled k steps,
/// one each), one elsewhere.
int64_t decodeStreamsFor(StringRef cpu) { return readsFourDecodeStreams(cpu) ? 4 : 1; }

/// The register tile for the target: with AVX-512's 32 zmm registers 8 rows x
/// 32 columns; with AVX2's 16 ymm, 6 rows x 16 columns (the 8 x 32 tile
/// needs 32 ymm accumulators there and spills in its inner loop).
CpuTile tileFor(const TargetOptions &options) {
  HostTarget target = hostTarget(options);
  CpuTile tile = hostTargetHas(target, "avx512f") ? kAvx512Tile : kAvx2Tile;
  const bool amx = options.cpuDot == "amx" || options.cpuDot == "amx-f32";
  tile.bf16Dot = options.cpuDot == "bf16" || amx;
  tile.amx = amx;
  // amx-f32: f32 activations as three bf16 terms, exactly (KernelABI.h).
  tile.activationTerms = options.cpuDot == "amx-f32" ? 3 : 1;
  tile.decodePrefetch = options.cpuDecodePrefetch >= 0
                            ? options.cpuDecodePrefetch
                            : decodePrefetchFor(hostTargetCpu(target), options.weightType);
  tile.decodeStreams = options.cpuDecodeStreams > 0 ? options.cpuDecodeStreams
                                                    : decodeStreamsFor(hostTargetCpu(target));
  tile.promptTiles = options.cpuPromptAttention == "tiles";
  return tile;
}

class CpuBackend final : public TargetBackend {
public:
  StringRef name() const override { return "cpu"; }

  std::string checkOptions(const TargetOptions &options) const override {
    if (std::string why = checkHostTarget(hostTarget(options)); !why.empty())
      return why;
    if (options.cpuDecodeStreams != 0 && !isDecodeStreamCount(options.cpuDecodeStreams))
      return "--cpu-decode-streams " + std::to_string(options.cpuDecodeStreams) +
             ": a decode tile reads 1, 2 or 4 panels side by side (0: the target CPU's choice)";
    if (options.cpuDecodePrefetch < -1 || options.cpuDecodePrefetch > (1 << 20))
      return "--cpu-decode-prefetch " + std::to_string(options.cpuDecodePrefetch) +
             ": bytes ahead, 0 (none) to 1048576 (-1: the target CPU's choice)";
    if (options.cpuPromptAttention != "tiles" && options.cpuPromptAttention != "rows")
      return "unknown --cpu-prompt-attention '" + options.cpuPromptAttention +
             "' (tiles or rows)";
    const bool amx = options.cpuDot == "amx" || options.cpuDot == "amx-f32";
    if (options.cpuDot != "f32" && options.cpuDot != "bf16" && !amx)
      return "unknown --cpu-dot '" + options.cpuDot + "' (f32, bf16, amx or amx-f32)";
    if (options.cpuDot == "f32")
      return "";
    if (options.weightType != "bf16")
      return "--cpu-dot " + options.cpuDot + " multiplies bf16 weights: compile with --dtype bf16";
    std::string target =
        (options.cpu == "host" ? std::string("this machine's") : "--cpu " + options.cpu) +
        (options.cpuFeatures.empty() ? "" : " --cpu-features " + options.cpuFeatures);
    if (!hostTargetHas(hostTarget(options), "avx512bf16"))
      return "--cpu-dot " + options.cpuDot +
             " needs AVX512-BF16 (vdpbf16ps), which the target CPU lacks (" + target +
             "); compile for one that has it, e.g. --cpu " +
             (amx ? "sapphirerapids" : "znver4 or sapphirerapids");
    for (const char *feature : kAmxFeatures)
      if (amx && !hostTargetHas(hostTarget(options), feature))
        return "--cpu-dot " + options.cpuDot +
               " needs AMX-BF16 (tdpbf16ps), which the target CPU lacks (" + target +
               "); compile for one that has it, e.g. --cpu sapphirerapids";
    return "";
  }

  std::vector<TargetStage> stages(const TargetOptions &options) const override {
    return {
        {"linalg", "linalg/scf/vector on memrefs (--tbc-lower-to-cpu)",
         [weightType = options.weightType, tile = tileFor(options)](OpPassManager &pm) {
           buildLinalgPipeline(pm, weightType, tile);
           return success();
         }},
        {"llvm", "the LLVM dialect", buildLLVMPipeline},
    };
  }

  std::optional<PackedOperand> packedOperand(Operation *op,
                                             const TargetOptions &options) const override {
    std::optional<unsigned> p = tbc::packedOperand(op);
    if (!p)
      return std::nullopt;
    bool inOut = packedOperandInOut(op);
    auto shape = cast<ShapedType>(op->getOperand(*p).getType()).getShape();
    CpuTile tile = tileFor(options);
    return PackedOperand{*p, inOut, packedWeightShape(shape, inOut, tile.panel),
                         options.weightType, tile.bf16Dot};
  }

  std::optional<manifest::WorkRange> workRange(func::FuncOp kernel,
                                               const TargetOptions &options) const override {
    return tbc::workRange(kernel, tileFor(options).panel);
  }

  std::string symbol(func::FuncOp kernel) const override {
    return (kernel.getSymName() + "_packed").str();
  }

  FailureOr<std::vector<rt::CodeBlob>> serialize(ModuleOp lowered, const TargetOptions &options,
                                                 std::string &error) const override {
    HostTarget target = hostTarget(options);
    FailureOr<std::string> so = emitHostSharedObject(lowered, target, error);
    if (failed(so))
      return failure();
    // A module whose tiles use AMX records its extensions besides the
    // target's vector ones: the runtime asks the CPU and the kernel for them.
    std::string requirements = hostCpuRequirements(target);
    if (tileFor(options).amx)
      for (const char *feature : kAmxFeatures)
        requirements += std::string(" ") + feature;
    return std::vector<rt::CodeBlob>{{"host.so", *so}, {"host.cpu", requirements}};
  }
};
} // namespace

std::unique_ptr<TargetBackend> tbc::createCpuBackend() {
  return std::make_unique<CpuBackend>();
}
