//===- InitAll.h - register tbc and the upstream pieces it uses -*- C++ -*-===//

#ifndef TBC_INITALL_H
#define TBC_INITALL_H

#include "mlir/IR/DialectRegistry.h"

namespace tbc {
/// The tbc dialect plus every upstream dialect our pipelines produce.
void registerAllDialects(mlir::DialectRegistry &registry);
/// tbc's passes and pipelines (tbc-fuse, every target stage) plus the
/// upstream passes our pipelines use.
void registerAllPasses();
} // namespace tbc

#endif // TBC_INITALL_H
