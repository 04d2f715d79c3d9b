//===- Generate.cpp - batched generation over sessions --------------------===//

#include "tbc/Runtime/Generate.h"

#include <algorithm>

using namespace tbc::rt;

BatchGenerator::BatchGenerator(const Module &module, std::vector<std::vector<int32_t>> prompts,
                               const GenerationOptions &options)
    : options_(options), vocab_(module.vocabSize()), prompts_(std::move(prompts)) {
  for (size_t i = 0; i < prompts_.size(); ++i) {
    sessions_.push_back(std::make_unique<Session>(module, options.capacity));
    samplers_.emplace_back(options.sampling);
  }
  room_ = sessions_.empty() ? 0
                            : std::min(sessions_[0]->capacity(), module.positionLimit());
  seen_ = prompts_;
  generated_.resize(prompts_.size());
  next_.resize(prompts_.size());
  stop_.assign(prompts_.size(), Stop::Length);
}

size_t BatchGenerator::runningCount() const {
  return size_t(std::count(stop_.begin(), stop_.end(), Stop::Running));
}

bool BatchGenerator::prefill(std::string &error,
                             std::vector<std::vector<float>> *promptLogits) {
  std::vector<Session *> all;
  for (auto &s : sessions_)
    all.push_back(s.get());
  if (all.empty())
    return true;
  std::vector<std::vector<float>> logits;
  if (!Session::forwardBatch(all, prompts_, logits, error,
                             promptLogits ? LogitRows::All : LogitRows::Last))
    return false;
  if (options_.maxNewTokens > 0) {
    for (size_t i = 0; i < all.size(); ++i) {
      next_[i] = samplers_[i].next(logits[i].data() + logits[i].size() - size_t(vocab_),
                                   vocab_, seen_[i]);
      stop_[i] = Stop::Running;
    }
    accept();
  }
  if (promptLogits)
    promptLogits->swap(logits);
  return true;
}

bool BatchGenerator::step(std::string &error) {
  std::vector<Session *> active;
  std::vector<size_t> which;
  std::vector<std::vector<int32_t>> tokens;
  for (size_t i = 0; i < sessions_.size(); ++i)
    if (stop_[i] == Stop::Running) {
      active.push_back(sessions_[i].get());
      which.push_back(i);
      tokens.push_back({next_[i]});
    }
  if (active.empty())
    return true;
  std::vector<std::vector<float>> logits;
  if (!Session::forwardBatch(active, tokens, logits, error, LogitRows::Last))
    return false;
  for (size_t j = 0; j < which.size(); ++j)
    next_[which[j]] = samplers_[which[j]].next(logits[j].data(), vocab_, seen_[which[j]]);
  accept();
  return true;
}

void BatchGenerator::accept() {
  ++produced_;
  const std::vector<int32_t> &stops = options_.stopTokens;
  for (size_t i = 0; i < sessions_.size(); ++i) {
    if (stop_[i] != Stop::Running)
      continue;
    generated_[i].push_back(next_[i]);
    seen_[i].push_back(next_[i]);
    if (std::find(stops.begin(), stops.end(), next_[i]) != stops.end())
      stop_[i] = Stop::StopToken;
    else if (int64_t(generated_[i].size()) >= options_.maxNewTokens)
      stop_[i] = Stop::Length;
    else if (sessions_[i]->position() >= room_)
      stop_[i] = room_ == sessions_[i]->capacity() ? Stop::Capacity : Stop::PositionTable;
  }
}
