//===- HFNoRope.cpp - learned positions and ALiBi -------------------------===//
//
// GPT-2 (learned absolute positions, Conv1D [in, out] weights), GPT-BigCode
// (GPT-2's block with multi-query attention), GPT-Neo (GPT-2's block with
// local layers), OPT (learned positions from row 2 of their table), BLOOM
// and MPT (ALiBi with each family's slopes).
//
//===----------------------------------------------------------------------===//

#include "HFReaders.h"
#include "tbc/Dialect/PositionBias.h"

using namespace tbc;
using namespace tbc::hf;

namespace {
using L = SpecLimits;

/// Fields BLOOM and MPT share: one [q; k; v] projection per layer, all
/// heads sharing keys and values (no GQA), ALiBi, LayerNorm, a plain GELU MLP
/// of 4 x hidden, tied embeddings.
void readAlibiCommon(JsonFields &f, ModelSpec &s, const char *hiddenKey,
                     const char *layersKey, const char *headsKey) {
  if (!readSizes(f, s, hiddenKey, layersKey, headsKey))
    return;
  s.ffnSize = 4 * s.hiddenSize;
  s.ffnKind = FfnKind::Mlp;
  s.positions = PositionKind::Alibi;
  s.tiedEmbeddings = f.getBool("tie_word_embeddings", true);
  s.names = {};
  s.names.lmHead = "lm_head.weight";
  layerWindows(f, s, 0, [](int64_t) { return false; });
}

/// What GPT-2, GPT-BigCode and GPT-Neo share: learned positions, LayerNorms
/// (ln_1, ln_2, ln_f), an MLP (mlp.c_fc, mlp.c_proj) of activation_function,
/// tied embeddings and GPT-2's names but for the attention's.
void readGpt2Layout(JsonFields &f, ModelSpec &s, const char *classActivation) {
  s.norm = {NormType::LayerNorm, f.getNumber("layer_norm_epsilon", 1e-5), 0.0, true};
  s.ffnKind = FfnKind::Mlp;
  s.activation = activationFromHF(f, "activation_function", classActivation);
  s.positions = PositionKind::Learned;
  s.tiedEmbeddings = f.getBool("tie_word_embeddings", true);
  // save_pretrained's names; the weight binder also accepts them without
  // the "transformer." prefix (the original upload).
  s.names = {};
  s.names.embed = "transformer.wte.weight";
  s.names.positionEmbed = "transformer.wpe.weight";
  s.names.layerPrefix = "transformer.h.{i}.";
  s.names.finalNorm = "transformer.ln_f";
  s.names.lmHead = "lm_head.weight";
  s.names.attnPreNorm = "ln_1";
  s.names.ffnPreNorm = "ln_2";
  s.names.up = "mlp.c_fc";
  s.names.down = "mlp.c_proj";
}

/// GPT-2's block, which GPT-BigCode keeps: learned absolute positions,
/// LayerNorms, a biased GELU-tanh MLP of n_inner (4 x hidden), biases on
/// every projection, tied embeddings, GPT-2's names.
void readGpt2Block(JsonFields &f, ModelSpec &s, const char *classActivation) {
  if (!readSizes(f, s, "n_embd", "n_layer", "n_head"))
    return;
  s.maxPositions = f.getInt("n_positions", 1024, 1, L::kMaxPositions);
  s.ffnSize = f.getInt("n_inner", 4 * s.hiddenSize, 1, L::kMaxFfn);
  if (f.ok() && f.getBool("scale_attn_by_inverse_layer_idx", false))
    f.fail("scale_attn_by_inverse_layer_idx", "is not supported");
  if (f.ok() && !f.getBool("scale_attn_weights", true))
    f.fail("scale_attn_weights", "unscaled attention is not supported");
  if (!f.ok())
    return;
  readGpt2Layout(f, s, classActivation);
  s.qkvBias = s.oBias = s.ffnBias = s.downBias = true;
  s.names.qkv = "attn.c_attn";
  s.names.o = "attn.c_proj";
  layerWindows(f, s, 0, [](int64_t) { return false; });
}
} // namespace

/// GPT-2: Conv1D weights ([in, out], transposed at bind time), one c_attn
/// of [q k v] columns.
void hf::readGPT2(JsonFields &f, ModelSpec &s) {
  readGpt2Block(f, s, "gelu_new");
  s.qkvLayout = QkvLayout::FusedInOut;
  s.weightsInOut = true;
}

/// GPT-BigCode (StarCoder, SantaCoder, WizardCoder): GPT-2's block on
/// nn.Linear weights; with multi_query (the default) one key/value head, its
/// c_attn rows [q heads; k; v], else per head [q k v].
void hf::readGPTBigCode(JsonFields &f, ModelSpec &s) {
  readGpt2Block(f, s, "gelu_pytorch_tanh");
  if (!f.ok())
    return;
  bool multiQuery = f.getBool("multi_query", true);
  s.numKvHeads = multiQuery ? 1 : s.numHeads;
  s.qkvLayout = multiQuery ? QkvLayout::FusedRows : QkvLayout::FusedPerHead;
}

/// GPT-Neo: GPT-2's block on nn.Linear weights (attn.attention.{q,k,v}_proj
/// without biases, out_proj with one), learned positions, attention logits
/// left unscaled (no head_dim^-0.5), and local layers that see the last
/// window_size positions. attention_types spells the layers' kinds as runs:
/// [[["global", "local"], 12]] (the default) is 12 global-local pairs.
void hf::readGPTNeo(JsonFields &f, ModelSpec &s) {
  if (!readSizes(f, s, "hidden_size", "num_layers", "num_heads"))
    return;
  s.maxPositions = f.getInt("max_position_embeddings", 2048, 1, L::kMaxPositions);
  s.ffnSize = f.getInt("intermediate_size", 4 * s.hiddenSize, 1, L::kMaxFfn);
  int64_t window = f.getInt("window_size", 256, 1, L::kMaxPositions);
  std::vector<bool> local;
  const json::Value *types = f.raw("attention_types");
  if (!types) {
    for (int64_t i = 0; i < 24; ++i)
      local.push_back(i % 2 == 1);
  } else {
    bool wellFormed = types->isArray();
    for (size_t r = 0; wellFormed && r < types->elements().size(); ++r) {
      const json::Value &run = types->elements()[r];
      wellFormed = run.isArray() && run.elements().size() == 2 && run.elements()[0].isArray() &&
                   run.elements()[1].isInteger() && run.elements()[1].asInt() >= 0 &&
                   run.elements()[1].asInt() <= L::kMaxLayers;
      for (int64_t k = 0; wellFormed && k < run.elements()[1].asInt(); ++k)
        for (const json::Value &t : run.elements()[0].elements()) {
          wellFormed = t.isString() && (t.asString() == "global" || t.asString() == "local") &&
                       int64_t(local.size()) < L::kMaxLayers;
          if (!wellFormed)
            break;
          local.push_back(t.asString() == "local");
        }
    }
    if (!wellFormed) {
      f.fail("attention_types", "expected runs [[\"global\" | \"local\", ...], count]");
      return;
    }
  }
  if (int64_t(local.size()) != s.numLayers) {
    f.fail("attention_types", "names " + std::to_string(local.size()) + " layers, num_layers is " +
                                  std::to_string(s.numLayers));
    return;
  }
  readGpt2Layout(f, s, "gelu_new");
  s.oBias = s.ffnBias = s.downBias = true;
  s.attnScale = 1.0;
  s.names.q = "attn.attention.q_proj";
  s.names.k = "attn.attention.k_proj";
  s.names.v = "attn.attention.v_proj";
  s.names.o = "attn.attention.out_proj";
  layerWindows(f, s, window, [&](int64_t i) { return local[i]; });
}

/// OPT: learned positions read from row 2 of their table on (the offset of
/// OPTLearnedPositionalEmbedding), LayerNorms before each sub-layer (after
/// it without do_layer_norm_before), without gain or bias when not
/// layer_norm_elementwise_affine, biases on every projection (enable_bias),
/// a ReLU MLP of ffn_dim, tied embeddings. Embeddings narrower than the
/// blocks (word_embed_proj_dim: OPT-350m's project_in / project_out) are
/// refused.
void hf::readOPT(JsonFields &f, ModelSpec &s) {
  if (!readSizes(f, s, "hidden_size", "num_hidden_layers", "num_attention_heads"))
    return;
  s.ffnSize = f.getInt("ffn_dim", 3072, 1, L::kMaxFfn);
  s.maxPositions = f.getInt("max_position_embeddings", 2048, 1, L::kMaxPositions);
  if (f.ok() && f.getInt("word_embed_proj_dim", s.hiddenSize, 1, L::kMaxHidden) != s.hiddenSize)
    f.fail("word_embed_proj_dim", "embeddings of another width than hidden_size (OPT-350m's "
                                  "project_in and project_out) are not supported");
  if (!f.ok())
    return;
  bool before = f.getBool("do_layer_norm_before", true);
  bool affine = f.getBool("layer_norm_elementwise_affine", true);
  s.norm = {NormType::LayerNorm, 1e-5, 0.0, affine, affine};
  s.ffnKind = FfnKind::Mlp;
  s.activation = activationFromHF(f, "activation_function", "relu");
  s.qkvBias = s.oBias = s.ffnBias = s.downBias = f.getBool("enable_bias", true);
  s.positions = PositionKind::Learned;
  s.positionOffset = 2;
  s.tiedEmbeddings = f.getBool("tie_word_embeddings", true);
  s.names = {};
  s.names.embed = "model.decoder.embed_tokens.weight";
  s.names.positionEmbed = "model.decoder.embed_positions.weight";
  s.names.layerPrefix = "model.decoder.layers.{i}.";
  s.names.lmHead = "lm_head.weight";
  s.names.q = "self_attn.q_proj";
  s.names.k = "self_attn.k_proj";
  s.names.v = "self_attn.v_proj";
  s.names.o = "self_attn.out_proj";
  s.names.up = "fc1";
  s.names.down = "fc2";
  if (before) {
    s.names.attnPreNorm = "self_attn_layer_norm";
    s.names.ffnPreNorm = "final_layer_norm";
    s.finalNorm = !f.getBool("_remove_final_layer_norm", false);
    s.names.finalNorm = "model.decoder.final_layer_norm";
  } else {
    s.placement = NormPlacement::Post;
    s.names.attnPostNorm = "self_attn_layer_norm";
    s.names.ffnPostNorm = "final_layer_norm";
    s.finalNorm = false;
  }
  layerWindows(f, s, 0, [](int64_t) { return false; });
}

/// BLOOM: per-head interleaved query_key_value, biases everywhere, a
/// LayerNorm right after the embeddings, tanh GELU, the paper's slopes.
void hf::readBloom(JsonFields &f, ModelSpec &s) {
  readAlibiCommon(f, s, f.has("n_embed") ? "n_embed" : "hidden_size", "n_layer",
                  "n_head");
  if (!f.ok())
    return;
  if (f.getBool("apply_residual_connection_post_layernorm", false)) {
    f.fail("apply_residual_connection_post_layernorm",
           "residuals taken after the norm are not supported");
    return;
  }
  s.norm = {NormType::LayerNorm, f.getNumber("layer_norm_epsilon", 1e-5), 0.0,
            true};
  s.activation = "gelu_tanh";
  s.qkvBias = s.oBias = s.ffnBias = s.downBias = true;
  s.qkvLayout = QkvLayout::FusedPerHead;
  s.alibiSlopes = bloomAlibiSlopes(s.numHeads);
  s.names.embed = "transformer.word_embeddings.weight";
  s.names.embedNorm = "transformer.word_embeddings_layernorm";
  s.names.layerPrefix = "transformer.h.{i}.";
  s.names.finalNorm = "transformer.ln_f";
  s.names.attnPreNorm = "input_layernorm";
  s.names.ffnPreNorm = "post_attention_layernorm";
  s.names.qkv = "self_attention.query_key_value";
  s.names.o = "self_attention.dense";
  s.names.up = "mlp.dense_h_to_4h";
  s.names.down = "mlp.dense_4h_to_h";
}

/// MPT as transformers' MptForCausalLM runs it: no biases and bias-free
/// LayerNorms (whatever `no_bias` says), exact GELU, ALiBi with MPT's own
/// slope order, an optional clamp of the fused QKV output (clip_qkv), and
/// `attn_config.softmax_scale`. Options transformers does not implement are
/// refused rather than silently ignored.
void hf::readMpt(JsonFields &f, ModelSpec &s) {
  readAlibiCommon(f, s, "d_model", "n_layers", "n_heads");
  if (!f.ok())
    return;
  if (f.getInt("expansion_ratio", 4, 1, 64) != 4)
    f.fail("expansion_ratio", "only 4 is supported (transformers' MPT builds "
                              "a 4 x d_model MLP whatever it says)");
  if (f.ok() && !f.getBool("no_bias", true))
    f.fail("no_bias", "MPT with biases is not supported (transformers' MPT "
                      "has none)");
  if (f.ok() && f.has("logit_scale"))
    f.fail("logit_scale", "is not supported (transformers' MPT ignores it)");
  double maxBias = 8.0;
  if (const json::Value *ac = f.getObject("attn_config")) {
    JsonFields a = f.nested(*ac, "attn_config");
    for (const char *unsupported : {"prefix_lm", "qk_ln", "attn_uses_sequence_id"})
      if (a.ok() && a.getBool(unsupported, false))
        a.fail(unsupported, "is not supported");
    if (a.ok() && !a.getBool("alibi", true))
      a.fail("alibi", "MPT without ALiBi is not supported (transformers' MPT "
                      "always uses it)");
    if (a.ok() && a.getString("attn_type", "multihead_attention") !=
                      "multihead_attention")
      a.fail("attn_type", "only multihead_attention is supported");
    maxBias = a.optPositive("alibi_bias_max").value_or(8.0);
    s.clipQkv = a.optPositive("clip_qkv");
    s.attnScale = a.optPositive("softmax_scale").value_or(0.0);
  }
  if (!f.ok())
    return;
  s.norm = {NormType::LayerNorm, f.getNumber("layer_norm_epsilon", 1e-5), 0.0,
            false};
  s.activation = "gelu";
  s.qkvLayout = QkvLayout::FusedRows;
  s.alibiSlopes = mptAlibiSlopes(s.numHeads, maxBias);
  s.names.embed = "transformer.wte.weight";
  s.names.layerPrefix = "transformer.blocks.{i}.";
  s.names.finalNorm = "transformer.norm_f";
  s.names.attnPreNorm = "norm_1";
  s.names.ffnPreNorm = "norm_2";
  s.names.qkv = "attn.Wqkv";
  s.names.o = "attn.out_proj";
  s.names.up = "ffn.up_proj";
  s.names.down = "ffn.down_proj";
}
