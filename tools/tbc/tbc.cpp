//===- tbc.cpp - the tbc driver: dispatches to its sub-commands -----------===//

#include "tbc/Driver/Driver.h"
#include "RunCommands/RunCommand.h"

#include <cstdio>
#include <cstring>
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
    "  inspect PATH    show a checkpoint's tensors or a model description\n\n"
    "Run `tbc <command> --help` for a command's options.\n";

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
  std::fprintf(stderr, "tbc: error: unknown command '%s'\n\n%s",
               command.c_str(), kUsage);
  return 1;
}
