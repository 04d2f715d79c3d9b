//===- conformance.cpp - compare a module with transformers' logits -------===//
//
//   tbc-conformance MODULE.tbcm FIXTURE_DIR [--tolerance 1e-4] [--batch-tolerance 1e-5]
//                   [--prefill N]
//
// --batch-tolerance bounds batch-1 (a batched sequence against itself run
// token by token). 1e-5 holds wherever a module computes a row the same way
// whatever the chunk: not in a 16-bit CUDA module, whose kernels are
// variants by chunk size that round differently (tensor-core projections
// round activations to 16 bits, the decode GEMV does not; flash attention
// rounds P, split-KV does not), so there it is the module's tolerance.
//
// FIXTURE_DIR comes from scripts/make_fixtures.py. Checks, each as
// max |tbc - ref| / max |ref|:
//   prefill  the whole token sequence at once against logits.npy;
//   decode   the same tokens one at a time through the KV cache, then the
//            greedy tokens, against logits.npy rows and decode_logits.npy
//            (--prefill N: the first N in one call, then one at a time, and
//            so too the batch's sequence B below; the emulated CUDA checks
//            of 80-token prompts decode from 64 on);
//   greedy   that tbc picks the tokens transformers generated.
// LLVM-free: links only the runtime.
//
//===----------------------------------------------------------------------===//

#include "tbc/Runtime/Runtime.h"
#include "tbc/Support/Npy.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

using namespace tbc;
using namespace tbc::rt;

static std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

static std::vector<int32_t> readIds(const std::string &path) {
  std::string text = readFile(path);
  std::replace(text.begin(), text.end(), ',', ' ');
  std::istringstream in(text);
  std::vector<int32_t> ids;
  int32_t v;
  while (in >> v)
    ids.push_back(v);
  return ids;
}

static bool loadNpy(const std::string &path, std::vector<float> &data,
                    std::vector<int64_t> &shape) {
  std::string error;
  if (!decodeNpy(readFile(path), data, shape, error)) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), error.c_str());
    return false;
  }
  return true;
}

/// max |a - b| / max |b| over `n` values; infinite when either holds a NaN
/// or an infinity (std::max would skip a NaN and pass all-NaN logits).
static double relError(const float *a, const float *b, size_t n) {
  double diff = 0, ref = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i]))
      return INFINITY;
    diff = std::max(diff, double(std::fabs(a[i] - b[i])));
    ref = std::max(ref, double(std::fabs(b[i])));
  }
  return ref > 0 ? diff / ref : diff;
}

/// `--compare A.npy B.npy [--tolerance T]`: max|a - b| / max|b| of two
/// logit arrays of one shape (fused against unfused modules).
static int compareNpy(int argc, char **argv) {
  std::vector<float> a, b;
  std::vector<int64_t> sa, sb;
  if (argc < 4 || !loadNpy(argv[2], a, sa) || !loadNpy(argv[3], b, sb))
    return 2;
  double tolerance = argc >= 6 ? std::atof(argv[5]) : 1e-5;
  if (sa != sb) {
    std::printf("compare  shapes differ  FAIL\n");
    return 1;
  }
  double err = relError(a.data(), b.data(), a.size());
  bool pass = err <= tolerance;
  std::printf("compare  max|d|/max|ref| = %.3g  %s\n", err, pass ? "ok" : "FAIL");
  return pass ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc >= 2 && std::string(argv[1]) == "--compare")
    return compareNpy(argc, argv);
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODULE.tbcm FIXTURE_DIR [--tolerance T] [--batch-tolerance B] [--prefill N]\n",
                 argv[0]);
    return 2;
  }
  std::string modulePath = argv[1], dir = argv[2];
  double tolerance = 1e-4, batchTolerance = 1e-5;
  size_t prefillTokens = 0;
  for (int i = 3; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--tolerance") {
      tolerance = std::atof(argv[i + 1]);
    } else if (flag == "--batch-tolerance") {
      batchTolerance = std::atof(argv[i + 1]);
    } else if (flag == "--prefill") {
      prefillTokens = size_t(std::atol(argv[i + 1]));
    } else {
      std::fprintf(stderr, "error: unknown option %s\n", flag.c_str());
      return 2;
    }
  }

  std::string error;
  std::unique_ptr<Module> module = Module::load(modulePath, error);
  std::unique_ptr<WeightStore> weights = WeightStore::open(dir, error);
  if (!module || !weights || !module->bindWeights(*weights, error)) {
    std::fprintf(stderr, "error: %s\n", error.c_str());
    return 1;
  }
  std::vector<int32_t> tokens = readIds(dir + "/tokens.txt");
  std::vector<int32_t> generated = readIds(dir + "/generated.txt");
  std::vector<float> ref, decodeRef;
  std::vector<int64_t> refShape, decodeShape;
  if (!loadNpy(dir + "/logits.npy", ref, refShape) ||
      !loadNpy(dir + "/decode_logits.npy", decodeRef, decodeShape))
    return 1;
  int64_t vocab = module->vocabSize();
  if (refShape != std::vector<int64_t>{int64_t(tokens.size()), vocab}) {
    std::fprintf(stderr, "error: logits.npy does not match tokens x vocab\n");
    return 1;
  }

  bool ok = true;
  auto report = [&](const char *what, double err) {
    bool pass = err <= tolerance;
    ok &= pass;
    std::printf("%-8s max|d|/max|ref| = %.3g  %s\n", what, err, pass ? "ok" : "FAIL");
  };

  Session prefill(*module);
  std::vector<float> logits;
  if (!prefill.forward(tokens, logits, error)) {
    std::fprintf(stderr, "error: %s\n", error.c_str());
    return 1;
  }
  report("prefill", relError(logits.data(), ref.data(), ref.size()));
  // Only the last position's logits (LogitRows::Last: the steps after the
  // last attention run on the last row alone), as generation asks for them.
  {
    Session last(*module);
    if (!last.forward(tokens, logits, error, LogitRows::Last) ||
        logits.size() != size_t(vocab)) {
      std::fprintf(stderr, "error: last-position forward: %s\n", error.c_str());
      return 1;
    }
    report("last", relError(logits.data(), ref.data() + (tokens.size() - 1) * vocab,
                            size_t(vocab)));
  }

  Session decode(*module);
  std::vector<float> oneByOne; // the decode session's logits, position by position
  double worst = 0;
  std::vector<int32_t> picked;
  int differ = 0, withinMargin = 0;
  // Position i's logits `mine`: against the reference, and from the last
  // prompt position on, whether they pick the token transformers generated.
  auto check = [&](size_t i, const float *mine) {
    const float *expect = i < tokens.size()
                              ? ref.data() + i * vocab
                              : decodeRef.data() + (i + 1 - tokens.size()) * vocab;
    worst = std::max(worst, relError(mine, expect, size_t(vocab)));
    oneByOne.insert(oneByOne.end(), mine, mine + vocab);
    if (i + 1 < tokens.size())
      return;
    int32_t pick = int32_t(std::max_element(mine, mine + vocab) - mine);
    int32_t want = generated[picked.size()];
    picked.push_back(pick);
    // A different pick is excused only where the reference itself barely
    // prefers its token: its logit beats ours by at most the tolerance
    // (relative to the row's largest magnitude), as reduced precision may.
    float scale = 0;
    for (int64_t v = 0; v < vocab; ++v)
      scale = std::max(scale, std::fabs(expect[v]));
    if (pick != want && expect[want] - expect[pick] <= tolerance * scale)
      ++withinMargin;
    else if (pick != want)
      ++differ;
  };
  // A module whose logits depend on the sequence's length per call
  // (LongRoPE, dynamic NTK) matches transformers only when the prompt comes
  // in one call, as generate() gives it: the prompt is prefilled, then the
  // generated tokens decoded. Otherwise every token goes alone, but the
  // first --prefill ones.
  bool lengthDependent = module->lengthDependent();
  size_t next = 0;
  if (lengthDependent)
    prefillTokens = tokens.size();
  prefillTokens = std::min(prefillTokens, tokens.size());
  if (prefillTokens) {
    std::vector<int32_t> prompt(tokens.begin(), tokens.begin() + prefillTokens);
    if (!decode.forward(prompt, logits, error)) {
      std::fprintf(stderr, "error: %s\n", error.c_str());
      return 1;
    }
    for (; next < prefillTokens; ++next)
      check(next, logits.data() + next * vocab);
  }
  for (size_t i = next; i < tokens.size() + generated.size() - 1; ++i) {
    int32_t t = i < tokens.size() ? tokens[i] : generated[i - tokens.size()];
    if (!decode.forward({t}, logits, error)) {
      std::fprintf(stderr, "error: %s\n", error.c_str());
      return 1;
    }
    check(i, logits.data());
  }
  report("decode", worst);

  // Batched (Session::forwardBatch): three sequences of the same tokens on
  // different schedules share every step: A prefills the whole prompt then
  // decodes, B takes one token a step from the start (a decode next to A's
  // prefill), C prefills the prompt in two halves. Each position's logits
  // must match transformers' as the single-sequence runs do.
  {
    int64_t T = int64_t(tokens.size()), length = T + int64_t(generated.size()) - 1;
    auto tokenAt = [&](int64_t p) { return p < T ? tokens[p] : generated[p - T]; };
    auto expectAt = [&](int64_t p) {
      return p < T ? ref.data() + p * vocab : decodeRef.data() + (p + 1 - T) * vocab;
    };
    std::vector<std::vector<int64_t>> schedules(3);
    schedules[0].push_back(T);
    schedules[2] = {T / 2, T - T / 2};
    // --prefill N: B prefills N beside A's prompt, then one token a step
    // (C's second half is then the chunk beside B's and A's decodes).
    if (prefillTokens)
      schedules[1].push_back(int64_t(prefillTokens));
    // Length-dependent modules: transformers' logits exist for a prompt
    // prefilled at once, so all three sequences take schedule A.
    if (lengthDependent)
      schedules[1] = schedules[2] = schedules[0];
    for (auto &chunks : schedules) {
      int64_t done = 0;
      for (int64_t c : chunks)
        done += c;
      while (done < length)
        chunks.push_back(1), ++done;
    }
    std::vector<std::unique_ptr<Session>> sessions;
    for (int i = 0; i < 3; ++i)
      sessions.push_back(std::make_unique<Session>(*module));
    double batchWorst = 0, againstSingle = 0;
    for (size_t step = 0;; ++step) {
      std::vector<Session *> active;
      std::vector<std::vector<int32_t>> stepTokens;
      for (int i = 0; i < 3; ++i) {
        if (step >= schedules[i].size())
          continue;
        std::vector<int32_t> chunk;
        for (int64_t p = sessions[i]->position(); int64_t(chunk.size()) < schedules[i][step]; ++p)
          chunk.push_back(tokenAt(p));
        active.push_back(sessions[i].get());
        stepTokens.push_back(std::move(chunk));
      }
      if (active.empty())
        break;
      std::vector<int64_t> starts;
      for (Session *a : active)
        starts.push_back(a->position());
      std::vector<std::vector<float>> out;
      if (!Session::forwardBatch(active, stepTokens, out, error)) {
        std::fprintf(stderr, "error: batch step %zu: %s\n", step, error.c_str());
        return 1;
      }
      for (size_t j = 0; j < active.size(); ++j)
        for (size_t r = 0; r < stepTokens[j].size(); ++r) {
          int64_t p = starts[j] + int64_t(r);
          batchWorst = std::max(batchWorst, relError(out[j].data() + r * vocab, expectAt(p),
                                                     size_t(vocab)));
          againstSingle = std::max(
              againstSingle, relError(out[j].data() + r * vocab,
                                      oneByOne.data() + p * vocab, size_t(vocab)));
        }
    }
    report("batch", batchWorst);
    // Against the same sequence run alone, token by token: within 1e-5
    // (the batch's projections split and tile rows differently), or
    // --batch-tolerance.
    bool same = againstSingle <= batchTolerance;
    ok &= same;
    std::printf("batch-1  max|d|/max|one by one| = %.3g  %s\n", againstSingle,
                same ? "ok" : "FAIL");
  }
  if (differ == 0 && withinMargin == 0)
    std::printf("greedy   same tokens as transformers\n");
  else if (differ == 0)
    std::printf("greedy   %d token(s) differ where transformers' top two are within the "
                "tolerance\n", withinMargin);
  else
    std::printf("greedy   DIFFERENT tokens (%d beyond the top-2 margin)\n", differ);
  ok &= differ == 0;
  return ok ? 0 : 1;
}
