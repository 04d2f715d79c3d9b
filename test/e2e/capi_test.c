/* The C API under misuse and under threads (issue 9): every entry point
 * turns bad arguments into errors, handles survive in the documented order,
 * and two sessions of one module on two threads give the logits they give
 * one after the other. Usage: tbc-capi-test MODULE.tbcm WEIGHTS */

#include "tbc-c/Runtime.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

/* Expects a failed call: `ok` false and an error message set. */
#define EXPECT_ERROR(what, call)                                               \
  do {                                                                         \
    char *error = NULL;                                                        \
    int ok = (call);                                                           \
    expectError(what, ok, error);                                              \
  } while (0)
static void expectError(const char *what, int ok, char *error) {
  if (ok || !error) {
    fprintf(stderr, "FAIL: %s: expected an error\n", what);
    ++failures;
  } else {
    printf("%s: %s\n", what, error);
  }
  tbc_free_error(error);
}

#define PROMPT 5
#define STEPS 6
static const int32_t kPrompt[PROMPT] = {4, 15, 25, 86, 67};

struct run {
  tbc_module *module;
  int64_t vocab;
  float *logits; /* (PROMPT + STEPS) * vocab */
  int ok;
};

/* A prompt, then STEPS greedy tokens; every row of logits kept. */
static void *generate(void *arg) {
  struct run *r = arg;
  char *error = NULL;
  tbc_session *s = tbc_session_create(r->module, 0, &error);
  r->ok = s && tbc_session_forward(s, kPrompt, PROMPT, r->logits, &error);
  for (int i = 0; r->ok && i < STEPS; ++i) {
    const float *last = r->logits + (PROMPT + i - 1) * r->vocab;
    int32_t next = 0;
    for (int64_t v = 1; v < r->vocab; ++v)
      if (last[v] > last[next])
        next = (int32_t)v;
    r->ok = tbc_session_forward(s, &next, 1, r->logits + (PROMPT + i) * r->vocab, &error);
  }
  if (error) {
    fprintf(stderr, "generate: %s\n", error);
    tbc_free_error(error);
  }
  tbc_session_free(s);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: tbc-capi-test MODULE.tbcm WEIGHTS\n");
    return 2;
  }
  EXPECT_ERROR("load NULL", tbc_module_load(NULL, &error) != NULL);
  EXPECT_ERROR("load missing", tbc_module_load("/nonexistent.tbcm", &error) != NULL);

  char *error = NULL;
  tbc_module *m = tbc_module_load(argv[1], &error);
  if (!m) {
    fprintf(stderr, "load: %s\n", error);
    return 1;
  }
  EXPECT_ERROR("session before weights", tbc_session_create(m, 0, &error) != NULL);
  EXPECT_ERROR("bind NULL module", tbc_module_bind_weights(NULL, argv[2], &error));
  EXPECT_ERROR("bind NULL path", tbc_module_bind_weights(m, NULL, &error));
  if (!tbc_module_bind_weights(m, argv[2], &error)) {
    fprintf(stderr, "bind: %s\n", error);
    return 1;
  }
  int64_t vocab = tbc_module_vocab_size(m);
  if (tbc_module_vocab_size(NULL) != -1 || tbc_session_position(NULL) != -1) {
    fprintf(stderr, "FAIL: getters on NULL\n");
    ++failures;
  }
  EXPECT_ERROR("capacity INT64_MAX", tbc_session_create(m, INT64_MAX, &error) != NULL);
  EXPECT_ERROR("capacity -1", tbc_session_create(m, -1, &error) != NULL);
  EXPECT_ERROR("session of NULL module", tbc_session_create(NULL, 0, &error) != NULL);

  tbc_session *s = tbc_session_create(m, 0, &error);
  float *logits = malloc(sizeof(float) * vocab * (PROMPT + STEPS));
  EXPECT_ERROR("bind under a live session", tbc_module_bind_weights(m, argv[2], &error));
  EXPECT_ERROR("forward n = -1", tbc_session_forward(s, kPrompt, -1, logits, &error));
  EXPECT_ERROR("forward n = 0", tbc_session_forward(s, kPrompt, 0, logits, &error));
  EXPECT_ERROR("forward NULL tokens", tbc_session_forward(s, NULL, 1, logits, &error));
  EXPECT_ERROR("forward NULL logits", tbc_session_forward(s, kPrompt, 1, NULL, &error));
  EXPECT_ERROR("forward NULL session", tbc_session_forward(NULL, kPrompt, 1, logits, &error));
  int32_t bad = (int32_t)vocab;
  EXPECT_ERROR("forward token past vocab", tbc_session_forward(s, &bad, 1, logits, &error));
  if (tbc_session_position(s) != 0) {
    fprintf(stderr, "FAIL: a refused forward moved the position\n");
    ++failures;
  }

  /* One after the other, then two threads at once, several times. */
  struct run serial = {m, vocab, logits, 0};
  generate(&serial);
  if (!serial.ok)
    return 1;
  for (int round = 0; round < 10; ++round) {
    struct run r[2];
    pthread_t t[2];
    for (int i = 0; i < 2; ++i) {
      r[i] = (struct run){m, vocab, malloc(sizeof(float) * vocab * (PROMPT + STEPS)), 0};
      pthread_create(&t[i], NULL, generate, &r[i]);
    }
    for (int i = 0; i < 2; ++i) {
      pthread_join(t[i], NULL);
      if (!r[i].ok || memcmp(r[i].logits, logits, sizeof(float) * vocab * (PROMPT + STEPS))) {
        fprintf(stderr, "FAIL: round %d thread %d: logits differ from the serial run\n", round, i);
        ++failures;
      }
      free(r[i].logits);
    }
  }
  printf("two sessions on two threads: same logits as one after the other (10 rounds)\n");

  /* tbc_session_forward_last: the prompt's last row only, the same values
   * as that row of a full forward (within rounding: other kernels' splits). */
  {
    tbc_session *l = tbc_session_create(m, 0, &error);
    float *last = malloc(sizeof(float) * vocab);
    if (!l || !tbc_session_forward_last(l, kPrompt, PROMPT, last, &error)) {
      fprintf(stderr, "FAIL: forward_last: %s\n", error ? error : "?");
      ++failures;
    } else {
      double worst = 0, scale = 0;
      for (int64_t v = 0; v < vocab; ++v) {
        double d = last[v] - logits[(PROMPT - 1) * vocab + v];
        worst = d < 0 ? (-d > worst ? -d : worst) : (d > worst ? d : worst);
        double a = logits[(PROMPT - 1) * vocab + v];
        scale = a < 0 ? (-a > scale ? -a : scale) : (a > scale ? a : scale);
      }
      if (worst > 1e-5 * scale || tbc_session_position(l) != PROMPT) {
        fprintf(stderr, "FAIL: forward_last differs from the last row (%g)\n", worst);
        ++failures;
      } else {
        printf("forward_last: the last row of a full forward\n");
      }
    }
    EXPECT_ERROR("forward_last NULL logits", tbc_session_forward_last(l, kPrompt, 1, NULL, &error));
    free(last);
    tbc_session_free(l);
  }

  /* Lifetimes: a session keeps its module; freed handles are errors. */
  tbc_module_free(m);
  if (tbc_module_vocab_size(m) != -1) {
    fprintf(stderr, "FAIL: a freed module still answers\n");
    ++failures;
  }
  if (!tbc_session_forward(s, kPrompt, 2, logits, &error)) {
    fprintf(stderr, "FAIL: a session whose module handle was freed: %s\n", error);
    tbc_free_error(error);
    ++failures;
  }
  tbc_session_free(s);
  EXPECT_ERROR("forward after free", tbc_session_forward(s, kPrompt, 1, logits, &error));
  tbc_session_free(s);    /* a second free is ignored */
  tbc_module_free(NULL);  /* as is NULL */
  tbc_session_free(NULL);
  free(logits);
  if (failures)
    return 1;
  printf("capi ok\n");
  return 0;
}
