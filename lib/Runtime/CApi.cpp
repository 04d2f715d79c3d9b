//===- CApi.cpp - the tbc runtime's C API ---------------------------------===//

#include "tbc/runtime.h"

#include "tbc/Runtime/Runtime.h"

#include <cstdlib>
#include <cstring>

using namespace tbc::rt;

struct tbc_module {
  std::unique_ptr<Module> module;
};
struct tbc_session {
  Session session;
  int64_t vocab;
};

static void setError(char **error, const std::string &message) {
  if (error)
    *error = strdup(message.c_str());
}

tbc_module *tbc_module_load(const char *path, char **error) {
  std::string why;
  std::unique_ptr<Module> m = Module::load(path, why);
  if (!m) {
    setError(error, why);
    return nullptr;
  }
  return new tbc_module{std::move(m)};
}

int tbc_module_bind_weights(tbc_module *module, const char *path, char **error) {
  std::string why;
  std::unique_ptr<WeightStore> store = WeightStore::open(path, why);
  if (!store || !module->module->bindWeights(*store, why)) {
    setError(error, why);
    return 0;
  }
  return 1;
}

void tbc_module_bind_random_weights(tbc_module *module, uint64_t seed) {
  module->module->bindRandomWeights(seed);
}

int64_t tbc_module_vocab_size(const tbc_module *module) {
  return module->module->vocabSize();
}

void tbc_module_free(tbc_module *module) { delete module; }

tbc_session *tbc_session_create(const tbc_module *module, int64_t capacity) {
  return new tbc_session{Session(*module->module, capacity),
                         module->module->vocabSize()};
}

int tbc_session_forward(tbc_session *session, const int32_t *tokens, int64_t n,
                        float *logits, char **error) {
  std::vector<float> out;
  std::string why;
  if (!session->session.forward(std::vector<int32_t>(tokens, tokens + n), out,
                                why)) {
    setError(error, why);
    return 0;
  }
  std::memcpy(logits, out.data(), out.size() * sizeof(float));
  return 1;
}

int64_t tbc_session_position(const tbc_session *session) {
  return session->session.position();
}

void tbc_session_free(tbc_session *session) { delete session; }

void tbc_free_error(char *error) { std::free(error); }
