//===- Options.h - shared command-line helpers of the driver ---*- C++ -*-===//

#ifndef TBC_LIB_DRIVER_OPTIONS_H
#define TBC_LIB_DRIVER_OPTIONS_H

#include "llvm/Support/CommandLine.h"

namespace tbc {

/// libLLVM.so registers hundreds of backend options; `--help` shows only the
/// sub-command's own options and MLIR's `--mlir-*` ones (the rest stay
/// usable and are listed by `--help-hidden`).
inline void hideUnrelatedOptions(llvm::cl::OptionCategory &own) {
  for (auto &entry : llvm::cl::getRegisteredOptions()) {
    llvm::cl::Option *opt = entry.second;
    llvm::StringRef name = entry.first;
    bool mine = llvm::is_contained(opt->Categories, &own);
    if (!mine && !name.starts_with("mlir-") && name != "help" &&
        name != "help-hidden" && name != "version")
      opt->setHiddenFlag(llvm::cl::Hidden);
  }
}

} // namespace tbc

#endif // TBC_LIB_DRIVER_OPTIONS_H
