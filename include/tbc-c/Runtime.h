/*===- tbc-c/Runtime.h - the tbc runtime's C API ---------------------------===*
 *
 * Load a compiled module (.tbcm), bind weights from safetensors, and run
 * token sequences with a KV cache. No LLVM/MLIR needed: link libTbcRuntime.
 *
 * Errors: functions that can fail return 0 / NULL and, when `error` is not
 * NULL, set *error to a message the caller frees with tbc_free_error. No
 * function throws, aborts or crashes on bad arguments: NULL handles, NULL
 * buffers, negative or absurd counts, and handles already freed (in the
 * same thread, before the memory is reused) are errors. Functions that
 * cannot report an error (the getters) return -1 for a bad handle.
 *
 * Ownership and lifetime:
 *  - tbc_module_load returns a module the caller owns; tbc_module_free
 *    releases the caller's handle. Sessions keep their module alive: a
 *    module freed while sessions exist is destroyed with its last session.
 *  - Weights are bound once, before the first session is created; binding a
 *    module that has live sessions is an error. The safetensors files are
 *    read during binding only (the module keeps converted copies).
 *  - tbc_session_create returns a session the caller owns
 *    (tbc_session_free). `logits` and `tokens` buffers are the caller's and
 *    are only read or written during the call.
 *
 * Threads: a bound module may be shared by any number of sessions on any
 * number of threads at once. One session must be used by one thread at a
 * time: a forward on a session that is already running one returns an
 * error. Freeing a handle while another thread uses it is undefined.
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
/* A .safetensors file, a sharded index, or a Hugging Face folder (whose
 * config.json must agree with the one the module was compiled from). */
int tbc_module_bind_weights(tbc_module *module, const char *path, char **error);
/* Deterministic random weights, for trying a module without a checkpoint. */
int tbc_module_bind_random_weights(tbc_module *module, uint64_t seed,
                                   char **error);
/* The vocabulary size (logits per token), or -1 for a bad handle. */
int64_t tbc_module_vocab_size(const tbc_module *module);
/* NULL is accepted and ignored. */
void tbc_module_free(tbc_module *module);

/* capacity: most positions the sequence may reach, 1 to 2^24 (0: the
 * model's maximum). The key/value cache grows as the sequence does. */
tbc_session *tbc_session_create(const tbc_module *module, int64_t capacity,
                                char **error);
/* Runs n >= 1 tokens after those already seen; logits receives n * vocab
 * floats. Fails on token ids outside the vocabulary, a sequence past the
 * capacity, and non-finite logits (logits are written then too). */
int tbc_session_forward(tbc_session *session, const int32_t *tokens, int64_t n,
                        float *logits, char **error);
/* As tbc_session_forward, but logits receives the last token's vocab floats
 * only: what generation needs, and cheaper for a prompt (the layers' work
 * after the last attention runs for the last position alone). */
int tbc_session_forward_last(tbc_session *session, const int32_t *tokens, int64_t n,
                             float *logits, char **error);
/* Positions seen so far, or -1 for a bad handle. */
int64_t tbc_session_position(const tbc_session *session);
/* NULL is accepted and ignored. */
void tbc_session_free(tbc_session *session);

void tbc_free_error(char *error);

#ifdef __cplusplus
}
#endif

#endif /* TBC_RUNTIME_C_H */
