/*===- runtime.h - the tbc runtime's C API ---------------------------------===*
 *
 * Load a compiled module (.tbcm), bind weights from safetensors, and run
 * token sequences with a KV cache. No LLVM/MLIR needed: link libTbcRuntime.
 * Functions that can fail return 0 / NULL and set *error to a message the
 * caller frees with tbc_free_error (error may be NULL).
 *
 *===----------------------------------------------------------------------===*/

#ifndef TBC_RUNTIME_C_H
#define TBC_RUNTIME_C_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tbc_module tbc_module;
typedef struct tbc_session tbc_session;

tbc_module *tbc_module_load(const char *path, char **error);
/* A .safetensors file, a sharded index, or a Hugging Face folder. */
int tbc_module_bind_weights(tbc_module *module, const char *path, char **error);
void tbc_module_bind_random_weights(tbc_module *module, uint64_t seed);
int64_t tbc_module_vocab_size(const tbc_module *module);
void tbc_module_free(tbc_module *module);

/* capacity: most positions the sequence may reach (0: the model's maximum). */
tbc_session *tbc_session_create(const tbc_module *module, int64_t capacity);
/* Runs n tokens after those already seen; logits receives n * vocab floats. */
int tbc_session_forward(tbc_session *session, const int32_t *tokens, int64_t n,
                        float *logits, char **error);
int64_t tbc_session_position(const tbc_session *session);
void tbc_session_free(tbc_session *session);

void tbc_free_error(char *error);

#ifdef __cplusplus
}
#endif

#endif /* TBC_RUNTIME_C_H */
