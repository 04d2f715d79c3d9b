//===- Inspect.cpp - `tbc inspect` ----------------------------------------===//
//
// Shows what tbc sees in a file: the tensors of a checkpoint, or the
// normalised description of a model (layer kinds, attention, norms).
//
//===----------------------------------------------------------------------===//

#include "tbc/Driver/Driver.h"

#include "Options.h"

#include "tbc/Frontend/ModelReaders.h"
#include "tbc/Support/Safetensors.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

namespace cl = llvm::cl;
#include <fmt/format.h>
#include <fmt/ranges.h>

using namespace tbc;

/// ", qk-norm layer per head, a gain per head", or nothing without one.
static std::string qkNormText(const ModelSpec &s) {
  if (s.qkNorm == QKNormKind::None)
    return "";
  const NormSpec &n = s.qkNormOrBlockNorm();
  std::string text = std::string(", qk-norm ") + (n.kind == NormType::RMSNorm ? "rms" : "layer");
  switch (s.qkNorm) {
  case QKNormKind::None:
    break;
  case QKNormKind::PerHead:
    text += n.gain ? " per head, one gain" : " per head, no gain";
    break;
  case QKNormKind::PerHeadStacked:
  case QKNormKind::PerHeadTensors:
    text += " per head, a gain per head";
    break;
  case QKNormKind::Full:
    text += " over all heads";
    break;
  }
  return text + (n.kind == NormType::LayerNorm && n.bias ? " and bias" : "") +
         (s.qkNormAfterRope ? ", after rope" : "");
}

static void printSpec(const ModelSpec &s, llvm::raw_ostream &os) {
  static const char *placements[] = {"pre", "post", "branch_post", "sandwich"};
  // In PositionKind's order.
  static const char *positions[] = {"rope",  "learned",  "sinusoidal",
                                    "alibi", "relative", "none"};
  os << "architecture: " << s.architecture << "\n"
     << "vocab " << s.vocabSize << ", hidden " << s.hiddenSize << ", layers "
     << s.numLayers << ", ffn " << s.ffnSize << "\n"
     << "attention: " << s.numHeads << " heads, " << s.numKvHeads
     << " kv heads, head_dim " << s.headDim
     << (s.attnSoftcap ? ", logit soft-cap" : "") << qkNormText(s) << "\n"
     << "norm: " << (s.norm.kind == NormType::RMSNorm ? "rms" : "layer")
     << (s.norm.gainOffset != 0 ? " (gain " + json::formatNumber(s.norm.gainOffset) + " + w)" : "")
     << (!s.norm.gain ? " (no learned gain)" : "")
     << ", " << placements[int(s.placement)]
     << (!s.parallelBlock        ? ", serial block"
         : s.sharedParallelNorm ? ", parallel block sharing one norm"
                                : ", parallel block")
     << "\n"
     << "ffn: " << (s.ffnKind == FfnKind::Glu ? "glu " : "mlp ")
     << s.activation << "\n"
     << "lm head: " << (s.tiedEmbeddings ? "the embedding table" : "own weights")
     << (s.lmHeadBias ? ", bias" : "") << (s.finalSoftcap ? ", soft-cap" : "") << "\n"
     << "positions: " << positions[int(s.positions)];
  if (s.positions == PositionKind::Alibi)
    os << ", slopes " << s.alibiSlopes.front() << " ... " << s.alibiSlopes.back();
  if (s.positions == PositionKind::Relative)
    os << ", " << s.relative.numBuckets << " buckets up to distance "
       << s.relative.maxDistance
       << (s.relative.bidirectional ? ", bidirectional" : ", causal")
       << (s.relative.perLayer ? ", a table per layer" : ", one shared table");
  os << "\n";
  for (int64_t i = 0; i < s.numLayers; ++i) {
    const LayerVariant &l = s.layers[i];
    os << "  layer " << i << ": "
       << (l.window ? "window " + std::to_string(l.window) : "global");
    if (s.positions == PositionKind::Rope && l.noRope) {
      os << ", no rope";
    } else if (s.positions == PositionKind::Rope) {
      os << ", rope " << (l.rope.gptjStyle ? "gptj " : "") << (s.reverseRope ? "reversed " : "")
         << "theta " << l.rope.theta
         << " dims " << l.rope.rotaryDim;
      const RopeScalingSpec &sc = l.rope.scaling;
      if (sc.kind) {
        os << ", " << stringifyRopeScalingKind(*sc.kind) << " x" << json::formatNumber(sc.factor);
        if (*sc.kind != RopeScalingKind::linear)
          os << " from " << sc.originalMaxPosition << " positions";
        if (sc.attentionFactor != 1.0)
          os << ", attention factor " << json::formatNumber(sc.attentionFactor);
      }
    }
    os << "\n";
  }
}

int tbc::inspectMain(int argc, char **argv) {
  static cl::OptionCategory cat("tbc inspect options");
  static cl::opt<std::string> path(
      cl::Positional, cl::Required, cl::cat(cat),
      cl::desc("<checkpoint (.safetensors, index, folder) or model "
               "description>"));
  hideUnrelatedOptions(cat);
  cl::ParseCommandLineOptions(argc, argv,
                              "tbc inspect: show a checkpoint's tensors or a "
                              "model description as tbc reads it\n");
  std::string p = path;
  auto endsWith = [&](const std::string &suffix) {
    return p.size() >= suffix.size() &&
           p.compare(p.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (endsWith(".safetensors") || endsWith(".index.json")) {
    std::string error;
    auto store = rt::WeightStore::open(p, error);
    if (!store) {
      llvm::errs() << "tbc inspect: error: " << error << "\n";
      return 1;
    }
    for (const auto &[name, t] : store->all()) {
      llvm::outs() << fmt::format("{}  {}  [{}]\n", name, rt::dtypeName(t->dtype),
                                  fmt::join(t->shape, ", "));
    }
    return 0;
  }
  SourceError error;
  std::string configPath;
  std::optional<DescriptionKind> kind = classifyModelPath(p, configPath, error);
  if (kind == DescriptionKind::TbcIR) {
    llvm::errs() << "tbc inspect: error: " << p
                 << ": use tbc-opt to read tbc IR\n";
    return 1;
  }
  std::optional<ModelSpec> spec =
      kind ? readModelDescription(configPath, *kind, error) : std::nullopt;
  if (!spec) {
    llvm::errs() << "tbc inspect: error: " << error.str() << "\n";
    return 1;
  }
  printSpec(*spec, llvm::outs());
  return 0;
}
