//===- HFReaders.h - one reader per family of config.json ------*- C++ -*-===//
//
// The Hugging Face config readers HFConfig.cpp dispatches to by
// `architectures`, and the field readers they share. Each reader fills a
// ModelSpec from its family's fields, following transformers'
// modeling_<arch>.py (see ../shared/docs/ARCHITECTURES.md); errors go
// through JsonFields, so they name the file, line and field.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_LIB_FRONTEND_HFREADERS_H
#define TBC_LIB_FRONTEND_HFREADERS_H

#include "JsonFields.h"
#include "tbc/Frontend/ModelSpec.h"

#include <functional>
#include <optional>
#include <string>

namespace tbc::hf {

//===--- HFCommon.cpp: fields many families share -------------------------===//

/// Maps transformers' activation names onto tbc::Activation keywords.
std::string activationFromHF(JsonFields &f, const std::string &key, const std::string &dflt);

/// Per-layer attention kinds from `layer_types` when present, else from
/// `isSliding(i)`.
void layerWindows(JsonFields &f, ModelSpec &spec, int64_t window,
                  const std::function<bool(int64_t)> &isSliding);

/// A family's config class defaults (transformers' <Family>Config), used
/// where a config.json does not name the field. Without kvHeads (or with
/// num_key_value_heads null) every head has its own keys and values; without
/// headDim (or with head_dim null) it is hidden_size / num_attention_heads.
struct LlamaDefaults {
  int64_t maxPositions = 0; // max_position_embeddings; 0: no limit of its own
  double rmsNormEps = 1e-6;
  std::optional<int64_t> kvHeads, headDim;
};

/// Fields every Llama-like config shares, with Llama's tensor names.
void readLlamaCommon(JsonFields &f, ModelSpec &s, const LlamaDefaults &defaults = {});

/// RoPE of every layer from rope_parameters (transformers 5) or rope_theta /
/// rope_scaling / partial_rotary_factor (4); true when per-layer-type
/// parameters were read. `phi3`: Phi-3's names for longrope.
bool readRope(JsonFields &f, ModelSpec &s, double defaultTheta, double defaultPartial = 1.0,
              bool phi3 = false);

/// sliding_window: `classDefault` when absent, 0 (none) when null.
int64_t slidingWindow(JsonFields &f, int64_t classDefault = 0);

/// The sizes of a config in its family's field names (GPT-2's n_embd,
/// n_layer, n_head, ...): vocab_size, hidden, layers and heads, as many
/// key/value heads as query heads, head_dim = hidden / heads, which must
/// divide. False, the error recorded in `f`, when a field is missing or wrong.
bool readSizes(JsonFields &f, ModelSpec &s, const char *hiddenKey, const char *layersKey,
               const char *headsKey);

/// The parallel block of GPT-J, Phi-1/2, StableLM, Falcon-7B and Cohere:
/// both branches read the layer's one norm, x + attn(n x) + ffn(n x).
void shareParallelNorm(ModelSpec &s);

//===--- HFLlamaLike.cpp: Llama's names and serial pre-norm blocks --------===//

void readLlama(JsonFields &f, ModelSpec &s);
void readMistral(JsonFields &f, ModelSpec &s);
void readQwen2(JsonFields &f, ModelSpec &s);
void readQwen3(JsonFields &f, ModelSpec &s);
void readPhi3(JsonFields &f, ModelSpec &s);
void readGemma1(JsonFields &f, ModelSpec &s);
void readGemma(JsonFields &f, ModelSpec &s, bool gemma3);
void readGranite(JsonFields &f, ModelSpec &s);
void readStarcoder2(JsonFields &f, ModelSpec &s);
void readStableLm(JsonFields &f, ModelSpec &s);
void readArcee(JsonFields &f, ModelSpec &s);
void readNemotron(JsonFields &f, ModelSpec &s);
void readPersimmon(JsonFields &f, ModelSpec &s);
void readGlm(JsonFields &f, ModelSpec &s, bool glm4);
void readSmolLM3(JsonFields &f, ModelSpec &s);
void readVaultGemma(JsonFields &f, ModelSpec &s);
void readOlmo(JsonFields &f, ModelSpec &s);
void readHelium(JsonFields &f, ModelSpec &s);
void readSeedOss(JsonFields &f, ModelSpec &s);
void readErnie45(JsonFields &f, ModelSpec &s);
void readHunYuanDense(JsonFields &f, ModelSpec &s);
void readNanoChat(JsonFields &f, ModelSpec &s);

//===--- HFPostNorm.cpp: norms after each sub-layer, none before ----------===//

void readOlmo2(JsonFields &f, ModelSpec &s);
void readOlmo3(JsonFields &f, ModelSpec &s);
void readExaone4(JsonFields &f, ModelSpec &s);

//===--- HFParallel.cpp: families built on parallel blocks ----------------===//

void readGPTNeoX(JsonFields &f, ModelSpec &s);
void readGPTJ(JsonFields &f, ModelSpec &s);
void readPhi(JsonFields &f, ModelSpec &s);
void readFalcon(JsonFields &f, ModelSpec &s);
void readCohere(JsonFields &f, ModelSpec &s);
void readCohere2(JsonFields &f, ModelSpec &s);
void readCohereBlock(JsonFields &f, ModelSpec &s);
void readCohereRope(JsonFields &f, ModelSpec &s, double classTheta);

//===--- HFNoRope.cpp: learned positions and ALiBi ------------------------===//

void readGPT2(JsonFields &f, ModelSpec &s);
void readGPTBigCode(JsonFields &f, ModelSpec &s);
void readGPTNeo(JsonFields &f, ModelSpec &s);
void readOPT(JsonFields &f, ModelSpec &s);
void readBloom(JsonFields &f, ModelSpec &s);
void readMpt(JsonFields &f, ModelSpec &s);

} // namespace tbc::hf

#endif // TBC_LIB_FRONTEND_HFREADERS_H
