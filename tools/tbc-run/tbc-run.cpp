//===- tbc-run.cpp - run a .tbcm module without LLVM ----------------------===//
//
// The same commands as `tbc run` and `tbc bench`, built with the runtime
// alone (-DTBC_RUNTIME_ONLY=ON) for hosts that have no LLVM:
//   tbc-run MODULE.tbcm ...         (tbc run)
//   tbc-run bench MODULE.tbcm ...   (tbc bench)
//
//===----------------------------------------------------------------------===//

#include "RunCommands/RunCommand.h"

#include <cstring>

int main(int argc, char **argv) {
  if (argc > 1 && !std::strcmp(argv[1], "bench"))
    return tbc::rt::benchCommand(argc - 1, argv + 1);
  return tbc::rt::runCommand(argc, argv);
}
