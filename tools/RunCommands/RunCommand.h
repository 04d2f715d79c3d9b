//===- RunCommand.h - `tbc run` / `tbc-run` ---------------------*- C++ -*-===//

#ifndef TBC_TOOLS_RUNCOMMAND_H
#define TBC_TOOLS_RUNCOMMAND_H

#include <cstdint>
#include <string>

namespace tbc::rt {

class Module;

/// `tbc run MODULE.tbcm ...` (argv[0] is the program name). LLVM-free, so
/// GPU hosts without LLVM run modules with the `tbc-run` tool.
int runCommand(int argc, char **argv);

/// `tbc bench MODULE.tbcm ...`: prefill and decode speed, decode against
/// its memory-bandwidth roofline measured in the same run.
int benchCommand(int argc, char **argv);

/// Binds a checkpoint (`weights`: a safetensors file, a sharded index or a
/// Hugging Face folder) or, when `weights` is empty, deterministic random
/// weights from `seed`.
bool bindModuleWeights(Module &module, const std::string &weights,
                       uint64_t seed, std::string &error);

} // namespace tbc::rt

#endif // TBC_TOOLS_RUNCOMMAND_H
