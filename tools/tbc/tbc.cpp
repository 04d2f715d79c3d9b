//===- tbc.cpp - the tbc driver: dispatches to its sub-commands -----------===//

#include "tbc/Driver/Driver.h"
#include "RunCommands/RunCommand.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <unistd.h>
#include <string>
#include <vector>

static const char *const kUsage =
    "tbc: a transformer-block compiler\n\n"
    "USAGE: tbc <command> [options]\n\n"
    "COMMANDS:\n"
    "  compile MODEL   compile a Hugging Face folder / config.json, a native\n"
    "                  spec, or tbc IR (see `tbc compile --help`)\n"
    "  run MODULE      run a compiled module on token ids (see `tbc run --help`)\n"
    "  bench MODULE    time prefill and decode, decode against its memory-\n"
    "                  bandwidth roofline measured in the same run\n"
    "  inspect PATH    show a checkpoint's tensors or a model description\n"
    "  verify MODEL    check a Hugging Face checkpoint's compiled module\n"
    "                  against transformers, tap by tap, prefill and decode\n"
    "                  (Python: needs torch and transformers; `tbc verify -h`)\n\n"
    "Run `tbc <command> --help` for a command's options.\n";

/// `tbc verify` is the Python program installed beside this binary
/// (tools/tbc-verify): it runs this tbc, then transformers. TBC_PYTHON picks
/// the interpreter (default python3: the one with torch).
static int verifyCommand(int argc, char **argv) {
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec)
    self = argv[0];
  std::string script = (self.parent_path() / "tbc-verify").string();
  if (!std::filesystem::exists(script)) {
    std::fprintf(stderr, "tbc verify: %s is missing (it is built with tbc)\n", script.c_str());
    return 2;
  }
  const char *python = std::getenv("TBC_PYTHON");
  std::string interpreter = python && *python ? python : "python3";
  std::vector<char *> args{interpreter.data(), script.data()};
  for (int i = 2; i < argc; ++i)
    args.push_back(argv[i]);
  args.push_back(nullptr);
  std::string tbc = self.string();
  if (!std::getenv("TBC"))
    setenv("TBC", tbc.c_str(), 1);
  execvp(interpreter.c_str(), args.data());
  std::fprintf(stderr, "tbc verify: cannot run %s: %s (set TBC_PYTHON to a Python with torch "
                       "and transformers)\n",
               interpreter.c_str(), std::strerror(errno));
  return 2;
}

int main(int argc, char **argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") ||
      !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 1 : 0;
  }
  std::string command = argv[1];
  std::string name = std::string("tbc ") + command;
  std::vector<char *> args{name.data()};
  for (int i = 2; i < argc; ++i)
    args.push_back(argv[i]);
  int n = int(args.size());
  if (command == "compile")
    return tbc::compileMain(n, args.data());
  if (command == "run")
    return tbc::rt::runCommand(n, args.data());
  if (command == "bench")
    return tbc::rt::benchCommand(n, args.data());
  if (command == "inspect")
    return tbc::inspectMain(n, args.data());
  if (command == "verify")
    return verifyCommand(argc, argv);
  std::fprintf(stderr, "tbc: error: unknown command '%s'\n\n%s",
               command.c_str(), kUsage);
  return 1;
}
