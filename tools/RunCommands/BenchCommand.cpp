//===- BenchCommand.cpp - `tbc bench`: prefill/decode speed vs roofline ---===//
//
// Times a module's prefill and KV-cached decode and sets decode speed
// against its roofline, measured in the same run: decoding one token reads
// every projection weight once, so no implementation can beat
// (memory bandwidth) / (weight bytes per token). The bandwidth is a
// streaming read over all cores, measured here, now; no number is assumed.
// So is a CPU module's compute ceiling, the cores' FMA peak, which the
// profile sets prefill's projections against (HostProbes.cpp).
//
//===----------------------------------------------------------------------===//

#include "RunCommand.h"

#include "CommandLine.h"
#include "HostProbes.h"
#include "tbc/Support/Limits.h"
#include "tbc/Runtime/HugePageAllocator.h"
#include "tbc/Runtime/ThreadPool.h"
#include "tbc/Runtime/Runtime.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

using namespace tbc;
using namespace tbc::rt;

static const char *kUsage =
    "USAGE: tbc bench MODULE.tbcm [--weights DIR|FILE.safetensors | "
    "--random-weights [--seed N]]\n"
    "                 [--prompt N] [--decode N] [--batch B] [--repeat N] [--profile]\n"
    "                 [--logits last|all]\n\n"
    "Times prefill of an N-token prompt (logits of its last position, as\n"
    "generation needs) and greedy decoding of N more\n"
    "tokens through the KV cache, best of --repeat runs, and compares decode\n"
    "with its roofline: memory bandwidth (measured now) / weight bytes read\n"
    "per token. For a CPU module it also measures the cores' FMA peak (12\n"
    "independent chains a core in the widest vectors), the ceiling of the\n"
    "projections' multiply-adds.\n"
    "  --weights PATH      bind a checkpoint (default: --random-weights)\n"
    "  --random-weights    deterministic random weights (--seed N, default 0)\n"
    "  --prompt N          prompt length (default 128, capped by the model)\n"
    "  --decode N          decode steps (default 32)\n"
    "  --batch B           B sequences at once (default 1): their prompts in\n"
    "                      one batched prefill, then decode steps over all B\n"
    "                      (Session::forwardBatch); tokens/s counts all B\n"
    "  --repeat N          runs of each, best is reported (default 3)\n"
    "  --profile           time every kernel call and print where prefill and\n"
    "                      decode spend their time, per kernel, with the\n"
    "                      checkpoint tensors each reads and the GFLOP/s of\n"
    "                      projections in their own time (on a GPU: CUDA\n"
    "                      events around each kernel's launches), from\n"
    "                      --repeat more runs: the times above come from\n"
    "                      the runs without\n"
    "  --logits last|all   the prefill computes the last position's logits\n"
    "                      (default: generation needs no more; the CPU then\n"
    "                      runs the last layer's feed-forward for that row\n"
    "                      only) or every position's (what a kernel profile\n"
    "                      of full-size projections needs)\n";

using Clock = std::chrono::steady_clock;

/// The kernels that took the most time, with their share, the time per run
/// (`runs`: forward calls the times add up over) and, for projections, the
/// rate of their multiply-adds in their own time: where prefill's
/// projections stand against the CPU's FMA peak, without the attention and
/// norms between them.
/// `fmaPeak`: the CPU's, FLOP/s, when the kernels ran on it (else 0).
static void printProfile(const char *what, std::vector<Session::KernelTime> kernels,
                         int64_t runs, double fmaPeak) {
  double total = 0, matmulSeconds = 0, matmulFlops = 0;
  for (const Session::KernelTime &k : kernels) {
    total += k.seconds;
    if (k.matmulFlops > 0) {
      matmulSeconds += k.seconds;
      matmulFlops += k.matmulFlops;
    }
  }
  std::sort(kernels.begin(), kernels.end(),
            [](const auto &a, const auto &b) { return a.seconds > b.seconds; });
  std::printf("  %s profile (%.3f ms per forward call in kernels", what,
              total / double(runs) * 1e3);
  if (matmulSeconds > 0) {
    double rate = matmulFlops / matmulSeconds;
    std::printf("; projections %.1f GFLOP/s", rate / 1e9);
    if (fmaPeak > 0)
      std::printf(" (%.0f%% of the FMA peak)", 100 * rate / fmaPeak);
    std::printf(" in their %.3f ms", matmulSeconds / double(runs) * 1e3);
  }
  std::printf("):\n");
  for (size_t i = 0; i < kernels.size() && kernels[i].calls > 0; ++i) {
    std::string name = kernels[i].name;
    if (name.size() > 7 && name.compare(name.size() - 7, 7, "_packed") == 0)
      name.resize(name.size() - 7);
    // What it reads last: bench/gpu_bench.py finds the projections by it.
    char rate[32] = "";
    if (kernels[i].matmulFlops > 0 && kernels[i].seconds > 0)
      std::snprintf(rate, sizeof(rate), "%8.1f GFLOP/s",
                    kernels[i].matmulFlops / kernels[i].seconds / 1e9);
    std::printf("    %-28s %5.1f%%  %9.4f ms  %15s  %4lld calls per forward call%s%s\n",
                name.c_str(), total > 0 ? 100.0 * kernels[i].seconds / total : 0.0,
                kernels[i].seconds / double(runs) * 1e3, rate,
                (long long)(kernels[i].calls / runs), kernels[i].reads.empty() ? "" : "  reads ",
                kernels[i].reads.c_str());
  }
}

static int fail(const std::string &message) {
  std::fprintf(stderr, "tbc bench: error: %s\n", message.c_str());
  return 1;
}

int tbc::rt::benchCommand(int argc, char **argv) {
  std::string modulePath;
  WeightChoice w;
  int64_t prompt = 128, decode = 32, repeat = 3, batch = 1;
  bool profile = false;
  LogitRows prefillRows = LogitRows::Last;
  OptionReader opts(argc, argv);
  while (opts.next()) {
    if (opts.is("--help") || opts.is("-h")) {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (std::string why; opts.weightOption(w, why)) {
      if (!why.empty())
        return fail(why);
    } else if (opts.is("--prompt")) {
      if (!opts.number(prompt, 1, limits::kMaxPositions))
        return fail("--prompt needs a positive integer");
    } else if (opts.is("--decode")) {
      if (!opts.number(decode, 0, limits::kMaxPositions))
        return fail("--decode needs a non-negative integer");
    } else if (opts.is("--batch")) {
      if (!opts.number(batch, 1, 1024))
        return fail("--batch needs an integer from 1 to 1024");
    } else if (opts.is("--profile")) {
      profile = true;
    } else if (opts.is("--logits")) {
      std::string which;
      if (!opts.value(which) || (which != "last" && which != "all"))
        return fail("--logits needs 'last' or 'all'");
      prefillRows = which == "all" ? LogitRows::All : LogitRows::Last;
    } else if (opts.is("--repeat")) {
      if (!opts.number(repeat, 1, 1000000))
        return fail("--repeat needs a positive integer");
    } else if (std::string why = opts.positional(modulePath, kUsage); !why.empty()) {
      return fail(why);
    }
  }
  if (modulePath.empty())
    return fail(std::string("no module given\n\n") + kUsage);
  if (w.random && !w.path.empty())
    return fail("give at most one of --weights PATH and --random-weights");

  std::string error;
  std::unique_ptr<Module> module = Module::load(modulePath, error);
  if (!module)
    return fail(error);
  if (!bindModuleWeights(*module, w.path, w.seed, error))
    return fail(error);

  // A session holds the model's maximum positions: shorten the prompt, not
  // the decode, when both do not fit.
  int64_t capacity = Session(*module).capacity();
  if (decode >= capacity)
    return fail("--decode " + std::to_string(decode) + " leaves no room for a "
                "prompt in the model's " + std::to_string(capacity) + " positions");
  prompt = std::min(prompt, capacity - decode);
  std::vector<int32_t> tokens(static_cast<size_t>(prompt));
  uint64_t state = w.seed * 6364136223846793005ull + 1442695040888963407ull;
  for (int32_t &t : tokens) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    t = int32_t((state >> 33) % uint64_t(module->vocabSize()));
  }

  // Measured before and after the timed runs, the best kept: the machine
  // may be shared, and the roofline must be an upper bound.
  int64_t hugeWeights = hugePageBytes(); // the bound weights' (the probe's comes and goes)
  bool probeOnHugePages = false;
  double bandwidth = measureReadBandwidth(probeOnHugePages);
  Module::TokenCost cost = module->tokenCost();
  double bestPrefill = 1e300, bestDecode = 1e300;
  std::vector<Session::KernelTime> prefillProfile, decodeProfile;
  auto accumulate = [](std::vector<Session::KernelTime> &into, Session &session) {
    const std::vector<Session::KernelTime> &p = session.profile();
    if (into.empty())
      into = p;
    else
      for (size_t k = 0; k < p.size(); ++k) {
        into[k].seconds += p[k].seconds;
        into[k].calls += p[k].calls;
        into[k].matmulFlops += p[k].matmulFlops;
      }
    session.clearProfile();
  };
  // B sequences (--batch): prompts of the same length (each its own
  // tokens) prefilled in one batched step, then decode steps over all B.
  std::vector<std::vector<int32_t>> prompts(static_cast<size_t>(batch), tokens);
  for (int64_t i = 1; i < batch; ++i)
    std::rotate(prompts[i].begin(), prompts[i].begin() + i % prompt, prompts[i].end());
  int64_t vocab = module->vocabSize();
  std::vector<std::vector<float>> out;
  // With --profile, `repeat` more runs time every kernel call; the wall
  // times come from the runs without, which timing each kernel would slow
  // (on a GPU it also turns a decode step's CUDA graph back into launches).
  for (int64_t r = 0; r < (profile ? 2 : 1) * repeat; ++r) {
    const bool profiling = r >= repeat;
    std::vector<std::unique_ptr<Session>> owned;
    std::vector<Session *> sessions;
    for (int64_t i = 0; i < batch; ++i) {
      owned.push_back(std::make_unique<Session>(*module));
      owned.back()->setProfiling(profiling);
      sessions.push_back(owned.back().get());
    }
    auto t0 = Clock::now();
    // Generation needs the prompt's last logits only (LogitRows::Last, the
    // default); --logits all times every position's.
    if (!Session::forwardBatch(sessions, prompts, out, error, prefillRows))
      return fail(error);
    if (!profiling)
      bestPrefill = std::min(bestPrefill, secondsSince(t0));
    else
      accumulate(prefillProfile, *sessions[0]);
    if (decode == 0)
      continue;
    std::vector<std::vector<int32_t>> next(static_cast<size_t>(batch));
    for (int64_t i = 0; i < batch; ++i)
      next[i] = {prompts[i].back()};
    auto t1 = Clock::now();
    for (int64_t d = 0; d < decode; ++d) {
      if (!Session::forwardBatch(sessions, next, out, error))
        return fail(error);
      for (int64_t i = 0; i < batch; ++i)
        next[i] = {int32_t(std::max_element(out[i].begin(), out[i].begin() + vocab) -
                           out[i].begin())};
    }
    if (!profiling)
      bestDecode = std::min(bestDecode, secondsSince(t1));
    else
      accumulate(decodeProfile, *sessions[0]);
  }

  bandwidth = std::max(bandwidth, measureReadBandwidth(probeOnHugePages));
  std::printf("tbc bench: %s, %s weights, %.1f MB read per token, %u threads\n",
              module->architecture().empty() ? "model" : module->architecture().c_str(),
              w.path.empty() ? "random" : "checkpoint",
              cost.weightBytes / 1e6, ThreadPool::shared().size());
  std::printf("  memory bandwidth  %8.2f GB/s (streaming read, all cores, %s pages, best of 10 "
              "now)\n",
              bandwidth / 1e9, probeOnHugePages ? "2 MiB" : "4 KiB");
  // Host memory on transparent huge pages: the CPU executor's weights and
  // caches ask for them (HugePageAllocator.h); with THP off they stay on
  // 4 KiB pages and decoding streams them more slowly.
  if (hugeWeights >= 0)
    std::printf("  2 MiB pages       %8.1f MB of the process's memory (transparent huge pages)\n",
                double(hugeWeights) / 1e6);
  // The ceiling of a CPU module's projections (prefill is compute-bound).
  double fmaPeak = 0;
  const char *registers = nullptr;
  if (module->runsOnHostCpu() && (fmaPeak = measureFmaPeak(registers)) > 0)
    std::printf("  FMA peak          %8.1f GFLOP/s (12 independent chains a core in %s, all "
                "cores, best of 3 now)\n",
                fmaPeak / 1e9, registers);
  int64_t prefillTokens = prompt * batch;
  // With the last logits only, the steps after the last attention ran on
  // each prompt's last row.
  double prefillFlops = cost.matmulFlops * double(prefillTokens);
  if (prefillRows == LogitRows::Last)
    prefillFlops -= cost.tailMatmulFlops * double((prompt - 1) * batch);
  std::printf("  prefill %5lld tokens  %9.3f ms  %9.1f tokens/s  %7.2f GFLOP/s in projections%s\n",
              (long long)prefillTokens, bestPrefill * 1e3, double(prefillTokens) / bestPrefill,
              prefillFlops / bestPrefill / 1e9,
              batch > 1 ? (" (" + std::to_string(batch) + " prompts in one batch)").c_str()
                        : "");
  if (decode > 0) {
    double perStep = bestDecode / double(decode);
    double roofline = bandwidth / cost.weightBytes;
    if (batch == 1) {
      std::printf("  decode  %5lld tokens  %9.3f ms/token  %7.1f tokens/s\n",
                  (long long)decode, perStep * 1e3, 1.0 / perStep);
      std::printf("  decode roofline   %9.1f tokens/s (bandwidth / bytes per token): "
                  "tbc at %.2fx of it\n",
                  roofline, (1.0 / perStep) / roofline);
    } else {
      // A batched step reads the weights once for all B sequences: the
      // roofline is on steps, not tokens.
      std::printf("  decode  %5lld steps x %lld sequences  %9.3f ms/step  %7.1f tokens/s\n",
                  (long long)decode, (long long)batch, perStep * 1e3,
                  double(batch) / perStep);
      std::printf("  decode roofline   %9.1f steps/s (bandwidth / weight bytes): "
                  "tbc at %.2fx of it\n",
                  roofline, (1.0 / perStep) / roofline);
    }
  }
  if (profile) {
    printProfile("prefill", prefillProfile, repeat, fmaPeak);
    if (decode > 0)
      printProfile("decode", decodeProfile, repeat * decode, fmaPeak);
  }
  return 0;
}
