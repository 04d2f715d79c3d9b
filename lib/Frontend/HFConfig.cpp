//===- HFConfig.cpp - Hugging Face config.json -> ModelSpec ---------------===//
//
// `architectures` -> its family's reader (HFReaders.h), then the checks
// every spec passes and the config fields the module depends on.
//
//===----------------------------------------------------------------------===//

#include "HFReaders.h"
#include "tbc/Frontend/ModelReaders.h"

#include <functional>
#include <map>

using namespace tbc;

namespace {
using namespace tbc::hf;

using ArchReader = std::function<void(JsonFields &, ModelSpec &)>;

const std::vector<std::pair<std::string, ArchReader>> &archReaders() {
  static const std::vector<std::pair<std::string, ArchReader>> readers = {
      {"LlamaForCausalLM", readLlama},
      {"MistralForCausalLM", readMistral},
      // Ministral: Mistral's block and defaults, its windows per layer_types.
      {"MinistralForCausalLM", readMistral},
      {"Qwen2ForCausalLM", readQwen2},
      {"Qwen3ForCausalLM", readQwen3},
      {"GemmaForCausalLM", readGemma1},
      {"Gemma2ForCausalLM",
       [](JsonFields &f, ModelSpec &s) { readGemma(f, s, false); }},
      {"Gemma3ForCausalLM",
       [](JsonFields &f, ModelSpec &s) { readGemma(f, s, true); }},
      {"OlmoForCausalLM", readOlmo},
      {"Olmo2ForCausalLM", readOlmo2},
      {"Olmo3ForCausalLM", readOlmo3},
      {"Exaone4ForCausalLM", readExaone4},
      {"FalconForCausalLM", readFalcon},
      {"GraniteForCausalLM", readGranite},
      {"CohereForCausalLM", readCohere},
      {"Cohere2ForCausalLM", readCohere2},
      {"PhiForCausalLM", readPhi},
      {"Phi3ForCausalLM", readPhi3},
      {"StableLmForCausalLM", readStableLm},
      {"ArceeForCausalLM", readArcee},
      {"NemotronForCausalLM", readNemotron},
      {"PersimmonForCausalLM", readPersimmon},
      {"GlmForCausalLM", [](JsonFields &f, ModelSpec &s) { readGlm(f, s, false); }},
      {"Glm4ForCausalLM", [](JsonFields &f, ModelSpec &s) { readGlm(f, s, true); }},
      {"SmolLM3ForCausalLM", readSmolLM3},
      {"VaultGemmaForCausalLM", readVaultGemma},
      {"HeliumForCausalLM", readHelium},
      {"SeedOssForCausalLM", readSeedOss},
      {"Ernie4_5ForCausalLM", readErnie45},
      {"HunYuanDenseV1ForCausalLM", readHunYuanDense},
      {"NanoChatForCausalLM", readNanoChat},
      {"Starcoder2ForCausalLM", readStarcoder2},
      {"GPTNeoXForCausalLM", readGPTNeoX},
      {"GPTJForCausalLM", readGPTJ},
      {"GPT2LMHeadModel", readGPT2},
      {"GPTBigCodeForCausalLM", readGPTBigCode},
      {"GPTNeoForCausalLM", readGPTNeo},
      {"OPTForCausalLM", readOPT},
      {"BloomForCausalLM", readBloom},
      {"MptForCausalLM", readMpt},
      // MosaicML's own uploads name their remote-code class; transformers
      // runs them as MptForCausalLM.
      {"MPTForCausalLM", readMpt},
  };
  return readers;
}

/// Canonical validation keys -> the config fields that may hold them, most
/// specific first; the first one present in the file is reported.
std::string hfFieldFor(const std::string &key, const json::Value &config) {
  static const std::map<std::string, std::vector<std::string>> candidates = {
      {"hidden_size", {"hidden_size", "n_embd", "n_embed", "d_model"}},
      {"num_layers", {"num_hidden_layers", "n_layer", "n_layers"}},
      {"heads", {"num_attention_heads", "n_head", "n_heads"}},
      {"kv_heads", {"num_key_value_heads", "num_attention_heads", "n_head"}},
      {"ffn_size", {"intermediate_size", "n_inner"}},
      {"rotary_dim", {"rotary_dim", "partial_rotary_factor", "rotary_pct", "head_dim"}},
      {"residual_scale", {"residual_multiplier"}},
      {"logit_scale", {"logit_scale", "logits_scaling"}},
      {"embedding_scale", {"embedding_multiplier"}},
      {"rope_theta", {"rope_theta", "rotary_emb_base"}},
      {"window", {"sliding_window"}},
      {"max_positions", {"max_position_embeddings", "n_positions"}}};
  auto it = candidates.find(key);
  if (it == candidates.end())
    return key;
  for (const std::string &field : it->second)
    if (config.get(field))
      return field;
  return it->second.front();
}
} // namespace

const std::vector<std::string> &tbc::supportedArchitectures() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const auto &[name, reader] : archReaders())
      n.push_back(name);
    return n;
  }();
  return names;
}

std::optional<ModelSpec> tbc::readHFConfig(const json::Value &rootIn,
                                           const std::string &file,
                                           SourceError &error) {
  if (!rootIn.isObject()) {
    error = {file, rootIn.pos().line, rootIn.pos().column, "",
             "expected a JSON object"};
    return std::nullopt;
  }
  std::set<std::string> read;
  JsonFields top(rootIn, file, error);
  top.trackReads(&read);
  const json::Value *archs = top.raw("architectures");
  if (!archs || !archs->isArray() || archs->elements().size() != 1 ||
      !archs->elements()[0].isString()) {
    top.fail("architectures",
             archs ? "expected an array holding one architecture name"
                   : "required field is missing");
    return std::nullopt;
  }
  std::string arch = archs->elements()[0].asString();
  const ArchReader *reader = nullptr;
  for (const auto &[name, r] : archReaders())
    if (name == arch)
      reader = &r;
  if (!reader) {
    std::string list;
    for (const std::string &n : supportedArchitectures())
      list += (list.empty() ? "" : ", ") + n;
    top.fail("architectures",
             "unknown architecture '" + arch + "' (supported: " + list + ")");
    return std::nullopt;
  }
  // Multimodal Gemma 3 checkpoints keep the text model under text_config.
  const json::Value &root =
      top.raw("text_config") && top.raw("text_config")->isObject()
          ? *top.raw("text_config")
          : rootIn;
  JsonFields f(root, file, error);
  f.trackReads(&read, &root == &rootIn ? "" : "text_config");
  ModelSpec spec;
  spec.architecture = arch;
  (*reader)(f, spec);
  if (!f.ok())
    return std::nullopt;
  if (std::optional<SpecViolation> v = validateModelSpec(spec)) {
    f.fail(hfFieldFor(v->key, root), v->message);
    return std::nullopt;
  }
  // What the module depends on, as the file has it (null: absent).
  std::set<std::string> topLevel;
  for (const std::string &path : read)
    topLevel.insert(path.substr(0, path.find('.')));
  std::string config = "{";
  for (const std::string &key : topLevel) {
    const json::Value *v = rootIn.get(key);
    config += (config.size() > 1 ? ", " : "") + json::quote(key) + ": " +
              (v ? json::serialize(*v) : "null");
  }
  spec.sourceConfig = config + "}";
  return spec;
}
