//===- tbc-run.cpp - run a .tbcm module without LLVM ----------------------===//
//
// The same command as `tbc run`, built with the runtime alone
// (-DTBC_RUNTIME_ONLY=ON) for hosts that have no LLVM.
//
//===----------------------------------------------------------------------===//

#include "tbc/Runtime/RunCommand.h"

int main(int argc, char **argv) { return tbc::rt::runCommand(argc, argv); }
