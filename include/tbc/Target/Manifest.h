//===- Manifest.h - the schedule of an outlined module as JSON --*- C++ -*-===//
//
// After --tbc-outline-kernels, @forward and the layer functions are a
// schedule: parameters, bind-time weight transforms, kernel calls and views.
// This flattens it (one entry per layer call) into the manifest the runtime
// executes; docs/module-format.md describes every field.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_TARGET_MANIFEST_H
#define TBC_TARGET_MANIFEST_H

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace tbc {

/// Returns the manifest JSON, or fails with a diagnostic on the module.
/// `sourceConfig` (a JSON object, or empty) is the config.json fields the
/// model was read from (ModelSpec::sourceConfig): the runtime checks a
/// checkpoint's config against it when binding weights.
class TargetBackend;
struct TargetOptions;

mlir::FailureOr<std::string> buildManifest(mlir::ModuleOp outlined,
                                           const TargetBackend &target,
                                           const TargetOptions &options,
                                           llvm::StringRef sourceConfig = "");

} // namespace tbc

#endif // TBC_TARGET_MANIFEST_H
