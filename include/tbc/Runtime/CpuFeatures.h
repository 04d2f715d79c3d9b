//===- CpuFeatures.h - can this CPU run a module's host code? ---*- C++ -*-===//
//
// `tbc compile` generates host code for the CPU it runs on and records which
// instruction-set extensions that code may use (the module's `host.cpu`
// blob: "x86_64 avx avx2 fma avx512f ..."). A module carried to an older
// machine would die of SIGILL in its first kernel; the runtime refuses it
// with a message instead.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_RUNTIME_CPUFEATURES_H
#define TBC_RUNTIME_CPUFEATURES_H

#include <string>

namespace tbc::rt {

/// What of `requirements` this CPU lacks ("" when it can run the code): the
/// architecture when that differs, else the missing extensions.
std::string missingCpuFeatures(const std::string &requirements);

} // namespace tbc::rt

#endif // TBC_RUNTIME_CPUFEATURES_H
