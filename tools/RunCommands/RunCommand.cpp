//===- RunCommand.cpp - `tbc run` / `tbc-run` -----------------------------===//

#include "RunCommand.h"

#include "CommandLine.h"
#include "tbc/Runtime/Runtime.h"
#include "tbc/Runtime/Generate.h"
#include "tbc/Support/Json.h"
#include "tbc/Support/FileIO.h"
#include "tbc/Support/Limits.h"
#include "tbc/Support/Npy.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

using namespace tbc;
using namespace tbc::rt;
namespace fs = std::filesystem;

namespace {
/// `tbc run --dump DIR`: each call's taps as .npy files, written into a
/// sibling directory that becomes DIR, with its index, only once complete.
class TapDump {
public:
  explicit TapDump(std::string dir) : dir_(std::move(dir)) {
    if (!dir_.empty())
      partial_ = dir_ + ".partial-" + std::to_string(::getpid());
  }
  ~TapDump() {
    std::error_code ec;
    if (!partial_.empty())
      fs::remove_all(partial_, ec); // an unfinished dump leaves nothing
  }
  bool active() const { return !dir_.empty(); }

  /// Writes call `name`'s taps (and its logits, if any) to `name`/.
  bool add(const std::string &name, const std::vector<int32_t> &tokens,
           const std::vector<Session::Tap> &taps, const std::vector<float> &logits,
           int64_t vocab, std::string &error) {
    std::error_code ec;
    fs::create_directories(fs::path(partial_) / name, ec);
    if (ec) {
      error = "--dump: cannot create " + (fs::path(partial_) / name).string() + ": " +
              ec.message();
      return false;
    }
    std::string ids, files;
    for (int32_t t : tokens)
      ids += (ids.empty() ? "" : ", ") + std::to_string(t);
    for (const Session::Tap &t : taps) {
      std::string file = name + "/" + t.name + ".npy";
      if (!write(file, encodeNpy(t.data, {t.rows, t.width}), error))
        return false;
      files += std::string(files.empty() ? "" : ",") + "\n      {\"name\": " +
               json::quote(t.name) + ", \"file\": " + json::quote(file) + ", \"shape\": [" +
               std::to_string(t.rows) + ", " + std::to_string(t.width) + "]}";
    }
    std::string call = "    {\"name\": " + json::quote(name) + ", \"tokens\": [" + ids + "]";
    if (!logits.empty()) {
      std::string file = name + "/logits.npy";
      if (!write(file, encodeNpy(logits, {int64_t(logits.size()) / vocab, vocab}), error))
        return false;
      call += ", \"logits\": " + json::quote(file);
    }
    calls_.push_back(call + ", \"taps\": [" + files + "]}");
    return true;
  }

  /// Writes the index and moves the dump to its place.
  bool finish(const std::string &module, std::string &error) {
    std::string index = "{\"module\": " + json::quote(module) + ",\n  \"calls\": [\n";
    for (size_t i = 0; i < calls_.size(); ++i)
      index += calls_[i] + (i + 1 < calls_.size() ? ",\n" : "\n");
    if (!write("index.json", index + "  ]\n}\n", error))
      return false;
    std::error_code ec;
    fs::rename(partial_, dir_, ec);
    if (ec) {
      error = "--dump: cannot move " + partial_ + " to " + dir_ + ": " + ec.message();
      return false;
    }
    partial_.clear();
    return true;
  }

private:
  bool write(const std::string &file, std::string_view data, std::string &error) {
    std::string why = writeFileAtomically((fs::path(partial_) / file).string(), data);
    if (!why.empty())
      error = "--dump: " + why;
    return why.empty();
  }
  std::string dir_, partial_;
  std::vector<std::string> calls_;
};
} // namespace

static const char *kUsage =
    "USAGE: tbc run MODULE.tbcm (--weights DIR|FILE.safetensors | "
    "--random-weights [--seed N])\n"
    "               (--tokens 1,2,3 | --tokens-file FILE) [--output logits.npy]\n"
    "               [--generate N [sampling options]] [--max-tokens N]\n\n"
    "Runs a compiled module on one or more token sequences.\n"
    "  --weights PATH      bind weights from a safetensors file, a sharded\n"
    "                      index, or a Hugging Face folder (by name; f32,\n"
    "                      bf16 or f16, converted to how the module stores\n"
    "                      weights: a 16-bit checkpoint for a module of that\n"
    "                      type is bound as it is, never widened)\n"
    "  --random-weights    deterministic random weights (--seed N, default 0),\n"
    "                      the same for every target and weight type (each\n"
    "                      value exact in bf16)\n"
    "  --tokens LIST       comma-separated token ids of one sequence\n"
    "  --tokens-file FILE  one sequence per line (ids separated by commas or\n"
    "                      spaces); the lines run as one batch: one prefill\n"
    "                      step over all prompts, one decode step over all\n"
    "                      sequences still generating (each weight read once\n"
    "                      per step)\n"
    "  --output FILE.npy   logits as float32: [seq, vocab] for one sequence,\n"
    "                      [batch, seq, vocab] for equal-length sequences\n"
    "  --generate N        greedy decoding of N new tokens after the prompt,\n"
    "                      through the KV cache; prints 'generated: a,b,...'\n"
    "  --max-tokens N      positions a sequence may reach (default: the\n"
    "                      model's maximum)\n"
    "Generation (greedy unless --temperature is above 0; as transformers'\n"
    "generate(): repetition penalty, then temperature, top-k, top-p):\n"
    "  --temperature T     sample from softmax(logits / T) (default 0: greedy)\n"
    "  --top-k K           only the K most likely tokens (default 0: all)\n"
    "  --top-p P           only the most likely tokens up to probability P\n"
    "                      (default 1: all)\n"
    "  --repetition-penalty R  divide the logits of tokens already in the\n"
    "                      sequence by R (multiply when negative; default 1)\n"
    "  --sample-seed N     seed of the draws (default 0); every sequence of a\n"
    "                      batch draws its own stream from it, so a line\n"
    "                      samples the same wherever it is in the file\n"
    "  --stop-token ID     stop a sequence when it generates ID (repeatable;\n"
    "                      default: eos_token_id of the weights folder's\n"
    "                      generation_config.json, else its config.json)\n"
    "  --ignore-eos        never stop before --generate tokens\n"
    "  --dump DIR          write the module's tensor taps (tbc compile --taps)\n"
    "                      for one sequence: DIR/prefill/<module path>.npy\n"
    "                      ([prompt tokens, width] float32), DIR/decode<i>/...\n"
    "                      for each generated token, each call's logits.npy,\n"
    "                      and DIR/index.json (taps, calls, their tokens).\n"
    "                      DIR must not exist; it appears complete or not at all\n";

static int fail(const std::string &message) {
  std::fprintf(stderr, "tbc run: error: %s\n", message.c_str());
  return 1;
}

static bool parseTokens(const std::string &text, std::vector<int32_t> &out,
                        std::string &error) {
  if (text.find('\0') != std::string::npos) {
    error = "holds a NUL byte (not a text file of token ids?)";
    return false;
  }
  std::string s = text;
  std::replace(s.begin(), s.end(), ',', ' ');
  std::istringstream in(s);
  std::string word;
  while (in >> word) {
    char *end = nullptr;
    errno = 0;
    long long v = std::strtoll(word.c_str(), &end, 10);
    if (*end != '\0' || errno != 0 || v < 0 || v > INT32_MAX) {
      error = "'" + word + "' is not a token id";
      return false;
    }
    out.push_back(int32_t(v));
  }
  return true;
}

/// The end-of-sequence ids of a Hugging Face folder (`eos_token_id`, a
/// number or a list, of generation_config.json, else of config.json);
/// empty when neither names one. `weights` may be the folder or a file in it.
static bool readStopTokens(const std::string &weights, std::vector<int32_t> &out,
                           std::string &error) {
  struct stat st;
  std::string dir = weights;
  if (::stat(weights.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    size_t slash = weights.find_last_of('/');
    dir = slash == std::string::npos ? "." : weights.substr(0, slash);
  }
  for (const char *name : {"generation_config.json", "config.json"}) {
    std::string path = dir + "/" + name;
    if (::stat(path.c_str(), &st) != 0)
      continue;
    json::Value doc;
    if (std::string why = json::readObjectFile(path, limits::kConfigJson, doc); !why.empty()) {
      error = why;
      return false;
    }
    const json::Value *eos = doc.get("eos_token_id");
    if (!eos || eos->isNull())
      continue;
    std::vector<const json::Value *> ids;
    if (eos->isArray())
      for (const json::Value &v : eos->elements())
        ids.push_back(&v);
    else
      ids.push_back(eos);
    for (const json::Value *v : ids) {
      if (!v->isNumber() || !v->isInteger() || v->asInt() < 0 || v->asInt() > INT32_MAX) {
        error = path + ": field 'eos_token_id' must be a token id or a list of them";
        return false;
      }
      out.push_back(int32_t(v->asInt()));
    }
    return true;
  }
  return true;
}

bool tbc::rt::bindModuleWeights(Module &module, const std::string &weights,
                                uint64_t seed, std::string &error) {
  if (weights.empty()) {
    module.bindRandomWeights(seed);
    return true;
  }
  std::unique_ptr<WeightStore> store = WeightStore::open(weights, error);
  std::vector<std::string> warnings;
  if (!store || !module.bindWeights(*store, error, &warnings))
    return false;
  for (const std::string &w : warnings)
    std::fprintf(stderr, "tbc: warning: %s\n", w.c_str());
  return true;
}

int tbc::rt::runCommand(int argc, char **argv) {
  std::string modulePath, tokensArg, tokensFile, output, dumpDir;
  WeightChoice w;
  int64_t generate = 0, maxTokens = 0;
  SamplingOptions sampling;
  std::vector<int32_t> stopTokens;
  bool ignoreEos = false, stopGiven = false;
  auto real = [](const std::string &text, double &out) {
    char *end = nullptr;
    out = std::strtod(text.c_str(), &end);
    return !text.empty() && *end == '\0';
  };
  OptionReader opts(argc, argv);
  while (opts.next()) {
    if (opts.is("--help") || opts.is("-h")) {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (std::string why; opts.weightOption(w, why)) {
      if (!why.empty())
        return fail(why);
    } else if (opts.is("--tokens")) {
      if (!opts.value(tokensArg))
        return fail("--tokens needs a list of ids");
    } else if (opts.is("--tokens-file")) {
      if (!opts.value(tokensFile))
        return fail("--tokens-file needs a path");
    } else if (opts.is("--output") || opts.is("-o")) {
      if (!opts.value(output) || output.empty())
        return fail("--output needs a path");
    } else if (opts.is("--dump")) {
      if (!opts.value(dumpDir) || dumpDir.empty())
        return fail("--dump needs a directory");
    } else if (opts.is("--generate")) {
      if (!opts.number(generate))
        return fail("--generate needs a non-negative integer");
    } else if (opts.is("--temperature") || opts.is("--top-p") ||
               opts.is("--repetition-penalty")) {
      std::string name = opts.arg(), text;
      double v = 0;
      if (!opts.value(text) || !real(text, v))
        return fail(name + " needs a number");
      (name == "--temperature" ? sampling.temperature
       : name == "--top-p"     ? sampling.topP
                               : sampling.repetitionPenalty) = v;
    } else if (opts.is("--top-k")) {
      if (!opts.number(sampling.topK))
        return fail("--top-k needs a non-negative integer");
    } else if (opts.is("--sample-seed")) {
      if (!opts.number(sampling.seed))
        return fail("--sample-seed needs a non-negative integer");
    } else if (opts.is("--stop-token")) {
      int64_t id = 0;
      if (!opts.number(id, 0, INT32_MAX))
        return fail("--stop-token needs a token id");
      stopTokens.push_back(int32_t(id));
      stopGiven = true;
    } else if (opts.is("--ignore-eos")) {
      ignoreEos = true;
    } else if (opts.is("--max-tokens")) {
      if (!opts.number(maxTokens, 0, limits::kMaxPositions))
        return fail("--max-tokens needs an integer in [0, " +
                    std::to_string(limits::kMaxPositions) + "] (0: the model's maximum)");
    } else if (std::string why = opts.positional(modulePath, kUsage); !why.empty()) {
      return fail(why);
    }
  }
  if (modulePath.empty())
    return fail(std::string("no module given\n\n") + kUsage);
  if (w.random == !w.path.empty())
    return fail("give exactly one of --weights PATH and --random-weights");
  if (tokensArg.empty() == tokensFile.empty())
    return fail("give exactly one of --tokens and --tokens-file");
  if (std::string why = sampling.check(); !why.empty())
    return fail(why);
  std::string stopError;
  if (!stopGiven && !ignoreEos && !w.path.empty() &&
      !readStopTokens(w.path, stopTokens, stopError))
    return fail(stopError);
  if (ignoreEos)
    stopTokens.clear();
  // Checked before any work: an output must not destroy an input.
  if (!output.empty())
    if (std::string why = checkOutputPath(output, {modulePath, w.path, tokensFile});
        !why.empty())
      return fail(why);

  std::vector<std::vector<int32_t>> batch;
  std::string error;
  if (!tokensArg.empty()) {
    batch.emplace_back();
    if (!parseTokens(tokensArg, batch.back(), error))
      return fail("--tokens: " + error);
  } else {
    std::string text;
    if (std::string why = readRegularFile(tokensFile, limits::kTokensFileBytes, text);
        !why.empty())
      return fail(why);
    std::istringstream in(text);
    std::string line;
    int lineNo = 0;
    while (std::getline(in, line)) {
      ++lineNo;
      std::vector<int32_t> seq;
      if (!parseTokens(line, seq, error))
        return fail(tokensFile + ":" + std::to_string(lineNo) + ": " + error);
      if (!seq.empty())
        batch.push_back(std::move(seq));
    }
  }
  if (batch.empty() || batch[0].empty())
    return fail("no tokens given");

  if (!dumpDir.empty() && batch.size() != 1)
    return fail("--dump writes the taps of one sequence; " + std::to_string(batch.size()) +
                " were given");
  if (!dumpDir.empty() && fs::exists(dumpDir))
    return fail("--dump: " + dumpDir + " exists; give a new directory");

  std::unique_ptr<Module> module = Module::load(modulePath, error);
  if (!module)
    return fail(error);
  if (!dumpDir.empty() && module->tapNames().empty())
    return fail("--dump: " + modulePath +
                " has no taps; compile it with --taps layers or --taps all");
  if (!bindModuleWeights(*module, w.path, w.seed, error))
    return fail(error);
  TapDump dump(dumpDir);

  using Clock = std::chrono::steady_clock;
  double prefillSeconds = 0, decodeSeconds = 0;
  int64_t prefillTokens = 0, decodeTokens = 0;
  std::vector<float> allLogits;
  int64_t vocab = module->vocabSize();
  // The lines run as one batch (BatchGenerator): one prefill step over
  // every prompt, then one decode step over every sequence still
  // generating, each weight read once per step for all of them. Without
  // --output only the prompts' last positions need logits.
  GenerationOptions options{generate, sampling, stopTokens, maxTokens};
  BatchGenerator generator(*module, batch, options);
  if (dump.active())
    generator.session(0).setTapping(true);
  std::vector<std::vector<float>> logits;
  auto t0 = Clock::now();
  if (!generator.prefill(error, output.empty() && !dump.active() ? nullptr : &logits))
    return fail(error);
  if (dump.active() &&
      !dump.add("prefill", batch[0], generator.session(0).taps(), logits[0], vocab, error))
    return fail(error);
  size_t decodeCalls = 0;
  prefillSeconds += std::chrono::duration<double>(Clock::now() - t0).count();
  for (size_t i = 0; i < batch.size(); ++i)
    prefillTokens += int64_t(batch[i].size());
  for (const std::vector<float> &rows : logits)
    allLogits.insert(allLogits.end(), rows.begin(), rows.end());
  if (generate > 0) {
    std::string failure;
    while (generator.running()) {
      int64_t running = int64_t(generator.runningCount());
      auto t1 = Clock::now();
      if (!generator.step(error)) {
        failure = "generation stopped after " + std::to_string(generator.produced()) +
                  " tokens: " + error;
        break;
      }
      decodeSeconds += std::chrono::duration<double>(Clock::now() - t1).count();
      decodeTokens += running;
      if (dump.active()) {
        // The token this call ran: the one generated before it.
        const std::vector<int32_t> &made = generator.generated(0);
        std::vector<int32_t> ran{made[made.size() - 2]};
        if (!dump.add("decode" + std::to_string(++decodeCalls), ran,
                      generator.session(0).taps(), {}, vocab, error))
          return fail(error);
      }
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      std::string ids;
      for (int32_t t : generator.generated(i))
        ids += (ids.empty() ? "" : ",") + std::to_string(t);
      std::printf("generated: %s\n", ids.c_str());
    }
    std::fflush(stdout);
    if (!failure.empty())
      return fail(failure);
    for (size_t i = 0; i < batch.size(); ++i) {
      int64_t made = int64_t(generator.generated(i).size());
      switch (generator.stop(i)) {
      case BatchGenerator::Stop::StopToken:
        std::fprintf(stderr, "tbc run: sequence %zu ended at stop token %d after %lld token(s)\n",
                     i, generator.generated(i).back(), (long long)made);
        break;
      case BatchGenerator::Stop::Capacity:
      case BatchGenerator::Stop::PositionTable:
        std::fprintf(stderr,
                     "tbc run: generation stopped after %lld of %lld tokens: the sequence "
                     "reached %lld positions, %s\n",
                     (long long)made, (long long)generate, (long long)generator.room(),
                     generator.stop(i) == BatchGenerator::Stop::Capacity
                         ? "the session's capacity (--max-tokens)"
                         : "the model's position table");
        break;
      default:
        break;
      }
    }
  }
  std::fprintf(stderr, "prefill: %lld tokens in %.3f ms (%.1f tokens/s)\n",
               (long long)prefillTokens, prefillSeconds * 1e3,
               prefillSeconds > 0 ? prefillTokens / prefillSeconds : 0.0);
  if (decodeTokens > 0)
    std::fprintf(stderr, "decode: %lld tokens in %.3f ms (%.1f tokens/s)\n",
                 (long long)decodeTokens, decodeSeconds * 1e3,
                 decodeSeconds > 0 ? decodeTokens / decodeSeconds : 0.0);

  if (!output.empty()) {
    std::vector<int64_t> shape;
    bool sameLength = std::all_of(batch.begin(), batch.end(), [&](auto &s) {
      return s.size() == batch[0].size();
    });
    if (!sameLength)
      return fail("--output needs sequences of equal length");
    if (batch.size() > 1)
      shape.push_back(int64_t(batch.size()));
    shape.push_back(int64_t(batch[0].size()));
    shape.push_back(vocab);
    std::string why = writeFileAtomically(output, encodeNpy(allLogits, shape));
    if (!why.empty())
      return fail(why);
  }
  if (dump.active()) {
    if (!dump.finish(modulePath, error))
      return fail(error);
    std::fprintf(stderr, "tbc run: wrote %zu tap(s) per call to %s\n", module->tapNames().size(),
                 dumpDir.c_str());
  }
  return 0;
}
