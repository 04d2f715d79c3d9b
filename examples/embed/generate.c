/* generate.c - embedding the tbc runtime in a C program.
 *
 *   generate MODULE.tbcm WEIGHTS N TOKEN...
 *
 * Loads a module compiled by `tbc compile`, binds a checkpoint, runs the
 * prompt, then greedily generates N tokens one at a time through the KV
 * cache, printing each new id. Build: see CMakeLists.txt in this folder.
 */
#include "tbc-c/Runtime.h"

#include <stdio.h>
#include <stdlib.h>

static int32_t argmax(const float *row, int64_t n) {
  int32_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (row[i] > row[best])
      best = (int32_t)i;
  return best;
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s MODULE.tbcm WEIGHTS N TOKEN...\n", argv[0]);
    return 2;
  }
  char *error = NULL;
  tbc_module *module = tbc_module_load(argv[1], &error);
  if (!module || !tbc_module_bind_weights(module, argv[2], &error)) {
    fprintf(stderr, "error: %s\n", error);
    tbc_free_error(error);
    return 1;
  }
  int n = atoi(argv[3]), prompt = argc - 4;
  int64_t vocab = tbc_module_vocab_size(module);
  int32_t *tokens = malloc(sizeof(int32_t) * prompt);
  float *logits = malloc(sizeof(float) * vocab * prompt);
  for (int i = 0; i < prompt; ++i)
    tokens[i] = atoi(argv[4 + i]);

  tbc_session *session = tbc_session_create(module, 0, &error);
  int ok = session && tbc_session_forward(session, tokens, prompt, logits, &error);
  int32_t next = argmax(logits + (prompt - 1) * vocab, vocab);
  for (int i = 0; ok && i < n; ++i) {
    printf("%d%s", next, i + 1 < n ? "," : "\n");
    ok = tbc_session_forward(session, &next, 1, logits, &error);
    next = argmax(logits, vocab);
  }
  if (!ok) {
    fprintf(stderr, "error: %s\n", error);
    tbc_free_error(error);
  }
  tbc_session_free(session);
  tbc_module_free(module);
  free(tokens);
  free(logits);
  return ok ? 0 : 1;
}
