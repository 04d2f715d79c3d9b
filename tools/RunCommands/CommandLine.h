//===- CommandLine.h - option reading for the runtime's commands -*- C++ -*-===//
//
// `tbc run` and `tbc bench` live on the LLVM-free side (tbc-run runs them on
// GPU hosts without LLVM), so they cannot use llvm::cl; this is the little
// they share: walk argv, take an option's value or number, and say what is
// wrong with anything else.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_LIB_RUNTIME_COMMANDLINE_H
#define TBC_LIB_RUNTIME_COMMANDLINE_H

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace tbc::rt {

/// Where a command's weights come from: a checkpoint, or random from a seed.
struct WeightChoice {
  std::string path;
  bool random = false;
  uint64_t seed = 0;
};

class OptionReader {
public:
  OptionReader(int argc, char **argv) : argc_(argc), argv_(argv) {}

  /// Moves to the next argument; false when there is none.
  bool next() {
    if (++i_ >= argc_)
      return false;
    arg_ = argv_[i_];
    return true;
  }
  const std::string &arg() const { return arg_; }
  bool is(const char *name) const { return arg_ == name; }

  /// The current option's value (the next argument).
  bool value(std::string &out) {
    if (i_ + 1 >= argc_)
      return false;
    out = argv_[++i_];
    return true;
  }
  /// The current option's value as an integer in [least, most]: digits
  /// only, no sign, no overflow (a value past the range is an error, never
  /// clamped).
  bool number(int64_t &out, int64_t least = 0, int64_t most = INT64_MAX) {
    uint64_t n = 0;
    if (!digits(n) || n > uint64_t(most) || int64_t(n) < least)
      return false;
    out = int64_t(n);
    return true;
  }
  bool number(uint64_t &out) { return digits(out); }

  /// Takes --weights PATH, --random-weights and --seed N into `w`: true
  /// when the current argument was one of them (`error` says what was wrong
  /// with its value, if anything).
  bool weightOption(WeightChoice &w, std::string &error) {
    if (is("--weights")) {
      if (!value(w.path) || w.path.empty())
        error = "--weights needs a path";
    } else if (is("--random-weights")) {
      w.random = true;
    } else if (is("--seed")) {
      if (!number(w.seed))
        error = "--seed needs an integer in [0, 2^64)";
    } else {
      return false;
    }
    return true;
  }

  /// For an argument no option took: stores the first positional one in
  /// `positional`; returns the error for an unknown option or a second
  /// positional argument, "" otherwise.
  std::string positional(std::string &positional, const char *usage) const {
    if (!arg_.empty() && arg_[0] == '-')
      return "unknown option '" + arg_ + "'\n\n" + usage;
    if (!positional.empty())
      return "unexpected argument '" + arg_ + "'";
    positional = arg_;
    return "";
  }

private:
  bool digits(uint64_t &out) {
    std::string v;
    if (!value(v) || v.empty() || v.size() > 20 ||
        v.find_first_not_of("0123456789") != std::string::npos)
      return false;
    errno = 0;
    out = std::strtoull(v.c_str(), nullptr, 10);
    return errno == 0;
  }

  int argc_;
  char **argv_;
  int i_ = 0;
  std::string arg_;
};

} // namespace tbc::rt

#endif // TBC_LIB_RUNTIME_COMMANDLINE_H
