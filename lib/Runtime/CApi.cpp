//===- CApi.cpp - the tbc runtime's C API ---------------------------------===//
//
// Nothing may cross `extern "C"` as an exception, and a C caller's mistakes
// (NULL, a freed handle, a negative count) must come back as errors: every
// entry point validates its handles against the set of live ones and runs
// its body inside guard().
//
//===----------------------------------------------------------------------===//

#include "tbc-c/Runtime.h"

#include "tbc/Runtime/Runtime.h"
#include "tbc/Support/Limits.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_set>

using namespace tbc::rt;

/// The handle and each of its sessions share the Module: the sessions alive
/// on a module are its use count less the handle's own.
struct tbc_module {
  std::shared_ptr<Module> module;
};
struct tbc_session {
  std::shared_ptr<Module> module; // keeps the module alive
  Session session;
  std::vector<float> logits;
};

namespace {
/// Handles handed out and not yet freed.
std::mutex liveMutex;
std::unordered_set<const void *> &live() {
  static auto *set = new std::unordered_set<const void *>();
  return *set;
}
void remember(const void *handle) {
  std::lock_guard<std::mutex> lock(liveMutex);
  live().insert(handle);
}
bool isLive(const void *handle) {
  std::lock_guard<std::mutex> lock(liveMutex);
  return handle && live().count(handle);
}
bool forget(const void *handle) {
  std::lock_guard<std::mutex> lock(liveMutex);
  return handle && live().erase(handle);
}

void setError(char **error, const std::string &message) {
  if (error)
    *error = strdup(message.c_str());
}

/// Runs `body`, turning any exception into an error and `fallback`.
template <typename T, typename F>
T guard(char **error, T fallback, F &&body) {
  if (error)
    *error = nullptr;
  try {
    return body();
  } catch (const std::bad_alloc &) {
    setError(error, "out of memory");
  } catch (const std::exception &e) {
    setError(error, std::string("internal error: ") + e.what());
  } catch (...) {
    setError(error, "internal error");
  }
  return fallback;
}

const char *kBadModule = "not a live tbc_module (NULL, freed, or not from tbc_module_load)";
const char *kBadSession =
    "not a live tbc_session (NULL, freed, or not from tbc_session_create)";
} // namespace

tbc_module *tbc_module_load(const char *path, char **error) {
  return guard<tbc_module *>(error, nullptr, [&]() -> tbc_module * {
    if (!path) {
      setError(error, "tbc_module_load: path is NULL");
      return nullptr;
    }
    std::string why;
    std::unique_ptr<Module> m = Module::load(path, why);
    if (!m) {
      setError(error, why);
      return nullptr;
    }
    auto *handle = new tbc_module{std::shared_ptr<Module>(std::move(m))};
    remember(handle);
    return handle;
  });
}

static bool bindable(tbc_module *module, char **error) {
  if (!isLive(module)) {
    setError(error, kBadModule);
    return false;
  }
  if (long sessions = module->module.use_count() - 1; sessions > 0) {
    setError(error, "weights must be bound before sessions are created "
                    "(this module has " + std::to_string(sessions) + " live)");
    return false;
  }
  return true;
}

int tbc_module_bind_weights(tbc_module *module, const char *path, char **error) {
  return guard(error, 0, [&] {
    if (!bindable(module, error))
      return 0;
    if (!path) {
      setError(error, "tbc_module_bind_weights: path is NULL");
      return 0;
    }
    std::string why;
    std::unique_ptr<WeightStore> store = WeightStore::open(path, why);
    if (!store || !module->module->bindWeights(*store, why)) {
      setError(error, why);
      return 0;
    }
    return 1;
  });
}

int tbc_module_bind_random_weights(tbc_module *module, uint64_t seed,
                                   char **error) {
  return guard(error, 0, [&] {
    if (!bindable(module, error))
      return 0;
    module->module->bindRandomWeights(seed);
    return 1;
  });
}

int64_t tbc_module_vocab_size(const tbc_module *module) {
  return isLive(module) ? module->module->vocabSize() : -1;
}

void tbc_module_free(tbc_module *module) {
  if (forget(module))
    delete module; // sessions still hold the Module itself
}

tbc_session *tbc_session_create(const tbc_module *module, int64_t capacity,
                                char **error) {
  return guard<tbc_session *>(error, nullptr, [&]() -> tbc_session * {
    if (!isLive(module)) {
      setError(error, kBadModule);
      return nullptr;
    }
    if (!module->module->bound()) {
      setError(error, "bind weights to the module before creating a session");
      return nullptr;
    }
    if (capacity < 0 || capacity > tbc::limits::kMaxPositions) {
      setError(error, "capacity " + std::to_string(capacity) +
                          " is outside [0, " +
                          std::to_string(tbc::limits::kMaxPositions) + "]");
      return nullptr;
    }
    auto *handle = new tbc_session{module->module, Session(*module->module, capacity), {}};
    remember(handle);
    return handle;
  });
}

static int forwardImpl(tbc_session *session, const int32_t *tokens, int64_t n,
                       float *logits, char **error, tbc::rt::LogitRows rows) {
  return guard(error, 0, [&] {
    if (!isLive(session)) {
      setError(error, kBadSession);
      return 0;
    }
    if (n < 1 || n > tbc::limits::kMaxPositions) {
      setError(error, "token count " + std::to_string(n) + " is outside [1, " +
                          std::to_string(tbc::limits::kMaxPositions) + "]");
      return 0;
    }
    if (!tokens || !logits) {
      setError(error, tokens ? "logits is NULL" : "tokens is NULL");
      return 0;
    }
    std::string why;
    std::vector<float> &out = session->logits;
    bool ok = session->session.forward(std::vector<int32_t>(tokens, tokens + n),
                                       out, why, rows);
    // Non-finite logits are an error that still delivers the logits.
    size_t wanted = rows == tbc::rt::LogitRows::Last ? 1 : size_t(n);
    if (out.size() == wanted * size_t(session->module->vocabSize()))
      std::memcpy(logits, out.data(), out.size() * sizeof(float));
    if (!ok)
      setError(error, why);
    return ok ? 1 : 0;
  });
}

int tbc_session_forward(tbc_session *session, const int32_t *tokens, int64_t n,
                        float *logits, char **error) {
  return forwardImpl(session, tokens, n, logits, error, tbc::rt::LogitRows::All);
}

int tbc_session_forward_last(tbc_session *session, const int32_t *tokens, int64_t n,
                             float *logits, char **error) {
  return forwardImpl(session, tokens, n, logits, error, tbc::rt::LogitRows::Last);
}

int64_t tbc_session_position(const tbc_session *session) {
  return isLive(session) ? session->session.position() : -1;
}

void tbc_session_free(tbc_session *session) {
  if (forget(session))
    delete session;
}

void tbc_free_error(char *error) { std::free(error); }
