//===- RunCommand.h - `tbc run` / `tbc-run` ---------------------*- C++ -*-===//

#ifndef TBC_RUNTIME_RUNCOMMAND_H
#define TBC_RUNTIME_RUNCOMMAND_H

namespace tbc::rt {

/// `tbc run MODULE.tbcm ...` (argv[0] is the program name). LLVM-free, so
/// GPU hosts without LLVM run modules with the `tbc-run` tool.
int runCommand(int argc, char **argv);

} // namespace tbc::rt

#endif // TBC_RUNTIME_RUNCOMMAND_H
