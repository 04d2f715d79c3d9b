//===- ModelSpec.h - one description for every supported model -*- C++ -*-===//
//
// Hugging Face configs and native specs are both read into a ModelSpec; the
// IR builder only ever sees a ModelSpec. Every design choice a supported
// model makes is one field here, so new combinations need no new code.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_FRONTEND_MODELSPEC_H
#define TBC_FRONTEND_MODELSPEC_H

#include "tbc/Dialect/TbcDialect.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tbc {

enum class NormType { RMSNorm, LayerNorm };

/// Where a block's norms sit relative to its two sub-layers f (attention, FFN):
///   Pre        x + f(n(x))                     Llama, GPT-2, GPT-NeoX
///   Post       n(x + f(x))                     original Transformer, BERT
///   BranchPost x + n(f(x))                     OLMo 2
///   Sandwich   x + n_post(f(n_pre(x)))         Gemma 2/3
enum class NormPlacement { Pre, Post, BranchPost, Sandwich };

/// Rope rotates q/k; Learned and Sinusoidal add to the embeddings; Alibi
/// and Relative add a bias inside attention (BLOOM/MPT slopes, T5 buckets).
enum class PositionKind { Rope, Learned, Sinusoidal, Alibi, Relative, None };
/// A norm of the queries and keys before RoPE (QK-norm), and how the
/// checkpoint stores its gains.
enum class QKNormKind {
  None,
  PerHead,        // each head apart, one gain for all: q_norm.weight [head_dim]
                  // (Qwen3, Gemma 3; Phi's q_layernorm with a bias)
  PerHeadStacked, // each head its own gain, stacked: q_norm.weight [heads, head_dim]
                  // (Cohere's use_qk_norm: Command R+)
  PerHeadTensors, // each head its own gain, a tensor each: q_layernorm.norms.{h}.weight
                  // [head_dim] (StableLM 2's qk_layernorm: StableLM 2 12B)
  Full,           // the whole projection: q_norm.weight [heads * head_dim] (OLMo 2)
};
enum class FfnKind { Mlp, Glu };

/// How the checkpoint stores the q/k/v projections.
enum class QkvLayout {
  Separate,        // q_proj, k_proj, v_proj
  FusedRows,       // one [q; k; v] weight (Phi-3 qkv_proj)
  // Per key/value head: [kv_heads, (heads / kv_heads + 2) * head_dim], each
  // group's query heads, then its key, then its value (GPT-NeoX's and BLOOM's
  // query_key_value with a query head a group; Falcon's new decoder).
  FusedPerHead,
  FusedInOut,      // one [in, q|k|v] Conv1D weight (GPT-2 c_attn)
};

struct NormSpec {
  NormType kind = NormType::RMSNorm;
  double eps = 1e-5;
  double gainOffset = 0.0; // 1 for Gemma's (1 + w)
  bool bias = false;       // LayerNorm only
  /// False: no learned gain (nor bias), the checkpoint holds no tensor for
  /// the norm (OLMo 1's non-parametric LayerNorm); its gain is a tbc.fill
  /// of ones.
  bool gain = true;
};

/// The fields of #tbc.rope_scaling (its kind is the dialect's enum: one
/// spelling of the scalings from the config reader to the lowering).
struct RopeScalingSpec {
  std::optional<RopeScalingKind> kind; // none: unscaled
  double factor = 1.0, lowFreqFactor = 1.0, highFreqFactor = 4.0;
  int64_t originalMaxPosition = 8192;
  double attentionFactor = 1.0, betaFast = 32.0, betaSlow = 1.0;
  bool truncate = true;
  std::vector<double> shortFactor, longFactor; // longrope
  bool operator==(const RopeScalingSpec &o) const {
    return kind == o.kind && factor == o.factor &&
           lowFreqFactor == o.lowFreqFactor &&
           highFreqFactor == o.highFreqFactor &&
           originalMaxPosition == o.originalMaxPosition &&
           attentionFactor == o.attentionFactor && betaFast == o.betaFast &&
           betaSlow == o.betaSlow && truncate == o.truncate &&
           shortFactor == o.shortFactor && longFactor == o.longFactor;
  }
};

struct RopeSpec {
  bool gptjStyle = false; // false: neox (rotate halves)
  int64_t rotaryDim = 0;
  double theta = 10000.0;
  RopeScalingSpec scaling;
  bool operator==(const RopeSpec &o) const {
    return gptjStyle == o.gptjStyle && rotaryDim == o.rotaryDim &&
           theta == o.theta && scaling == o.scaling;
  }
};

/// T5's learned relative-position bias (#tbc.relative_buckets and the
/// [num_buckets, heads] table `WeightNames::relativeBias`).
struct RelativeBiasSpec {
  int64_t numBuckets = 32, maxDistance = 128;
  bool bidirectional = false;
  bool perLayer = false; // a table per layer, else one shared by all layers
};

/// What may differ from one layer to the next. Layers with equal variants
/// share one function in the IR.
struct LayerVariant {
  int64_t window = 0; // sliding window in tokens, 0 = global attention
  RopeSpec rope;      // only meaningful with RoPE positions
  /// NoPE: a layer of a RoPE model whose queries and keys are not rotated
  /// (SmolLM3's no_rope_layers, Cohere 2's global layers).
  bool noRope = false;
  bool operator==(const LayerVariant &o) const {
    return window == o.window && rope == o.rope && noRope == o.noRope;
  }
};

/// Checkpoint tensor names. Layer names are relative to `layerPrefix` (which
/// contains `{i}`) and carry no ".weight"/".bias" suffix; empty = absent.
struct WeightNames {
  std::string embed, positionEmbed, embedNorm, finalNorm, lmHead, lmHeadBias;
  /// The relative-bias table, with ".weight": layer-relative when per layer.
  std::string relativeBias;
  std::string layerPrefix;
  std::string attnPreNorm, attnPostNorm, ffnPreNorm, ffnPostNorm;
  std::string q, k, v, qkv, o, qNorm, kNorm;
  std::string gate, up, gateUp, down;
};

struct ModelSpec {
  std::string architecture; // e.g. "LlamaForCausalLM" or "native spec"
  /// A config.json's fields this spec was read from, as a JSON object
  /// (null for fields read but absent); empty for native specs. Recorded in
  /// a module so that binding can check a checkpoint's config against it.
  std::string sourceConfig;
  int64_t vocabSize = 0, hiddenSize = 0, numLayers = 0;
  int64_t numHeads = 0, numKvHeads = 0, headDim = 0, ffnSize = 0;
  int64_t maxPositions = 0;

  NormSpec norm;
  NormPlacement placement = NormPlacement::Pre;
  bool parallelBlock = false; // x + attn(n1 x) + ffn(n2 x)
  /// A parallel block whose two branches read one norm, x + attn(n x) +
  /// ffn(n x) (GPT-J, Phi-1/2, StableLM): names.ffnPreNorm is empty.
  bool sharedParallelNorm = false;

  FfnKind ffnKind = FfnKind::Glu;
  std::string activation = "silu"; // a tbc::Activation keyword
  bool qkvBias = false, oBias = false, ffnBias = false, downBias = false;

  PositionKind positions = PositionKind::Rope;
  /// Learned positions: rows of the table before position 0's (OPT's 2).
  int64_t positionOffset = 0;
  double sinusoidalBase = 10000.0;
  std::vector<double> alibiSlopes; // one per head (PositionKind::Alibi)
  RelativeBiasSpec relative;       // PositionKind::Relative
  QKNormKind qkNorm = QKNormKind::None;
  /// The QK-norm's kind, epsilon, gain offset and bias where they are not
  /// the blocks' norm's (StableLM 2: LayerNorms without the blocks' bias).
  std::optional<NormSpec> qkNormSpec;
  /// The QK-norm's kind, epsilon, gain offset and bias, whoever sets them.
  const NormSpec &qkNormOrBlockNorm() const { return qkNormSpec ? *qkNormSpec : norm; }
  /// The QK-norm normalises the rotated queries and keys, after RoPE
  /// (HunYuan, NanoChat), not before it.
  bool qkNormAfterRope = false;
  /// RoPE turns q and k by -theta (NanoChat's rotate_half is cat(x2, -x1)):
  /// built as NeoX's on q/k weights whose heads' halves are swapped at bind
  /// time (tbc.swap_halves; q.k is the same). Full-width NeoX RoPE only.
  bool reverseRope = false;
  bool causal = true;
  double attnScale = 0; // 0: head_dim^-0.5
  std::optional<double> attnSoftcap;
  std::optional<double> clipQkv; // MPT, OLMo: clamp q, k and v
  std::vector<LayerVariant> layers; // one per layer

  double embeddingScale = 1.0;
  /// Multiplies each sub-layer's output before its residual add (Granite's
  /// residual_multiplier), and the logits (Cohere's logit_scale, Granite's
  /// 1 / logits_scaling).
  double residualScale = 1.0, logitScale = 1.0;
  bool finalNorm = true;
  bool tiedEmbeddings = false;
  bool lmHeadBias = false; // GPT-J, Phi-1/2: names.lmHeadBias, [vocab]
  std::optional<double> finalSoftcap;

  QkvLayout qkvLayout = QkvLayout::Separate;
  bool fusedGateUp = false;   // Phi-3 gate_up_proj: [gate; up] rows
  bool weightsInOut = false;  // GPT-2 Conv1D: every projection is [in, out]
  WeightNames names;
};

/// A rule a spec breaks: `key` is one of the canonical names below, which
/// each reader maps to its own field name so the error points into the file.
///   vocab_size hidden_size num_layers heads kv_heads head_dim ffn_size
///   rotary_dim rope_theta rope_scaling window max_positions alibi_slopes
///   num_buckets max_distance clip_qkv residual_scale logit_scale embedding_scale
struct SpecViolation {
  std::string key;
  std::string message;
};

/// Checks the cross-field rules every spec must satisfy (divisibility,
/// ranges, absurd sizes that would exhaust memory).
std::optional<SpecViolation> validateModelSpec(const ModelSpec &spec);

/// Upper bounds on sizes, so absurd configs are refused before allocating.
struct SpecLimits {
  static constexpr int64_t kMaxVocab = int64_t(1) << 24;       // 16.7M
  static constexpr int64_t kMaxHidden = int64_t(1) << 17;      // 131072
  static constexpr int64_t kMaxLayers = 4096;
  static constexpr int64_t kMaxHeads = 4096;
  static constexpr int64_t kMaxHeadDim = 4096;
  static constexpr int64_t kMaxFfn = int64_t(1) << 20;
  static constexpr int64_t kMaxPositions = int64_t(1) << 24;
  /// Elements in any one weight tensor (2^36 = 256 GiB in f32).
  static constexpr int64_t kMaxTensorElements = int64_t(1) << 36;
};

} // namespace tbc

#endif // TBC_FRONTEND_MODELSPEC_H
