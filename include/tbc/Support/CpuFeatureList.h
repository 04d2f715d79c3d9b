//===- CpuFeatureList.h - the CPU extensions a module records ---*- C++ -*-===//
//
// One list, read by both sides: the CPU backend records which of these the
// host code may use (the module's `host.cpu` blob) and the runtime asks the
// CPU for each before loading the code. An X-macro, because the runtime's
// __builtin_cpu_supports takes only string literals.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_SUPPORT_CPUFEATURELIST_H
#define TBC_SUPPORT_CPUFEATURELIST_H

#define TBC_FOR_EACH_CPU_FEATURE(X)                                            \
  X("sse4.2")                                                                  \
  X("avx")                                                                     \
  X("avx2")                                                                    \
  X("fma")                                                                     \
  X("avx512f")                                                                 \
  X("avx512bw")                                                                \
  X("avx512dq")                                                                \
  X("avx512vl")                                                                \
  X("avx512cd")                                                                \
  X("avx512bf16")

/// AMX's extensions, each with its bit in CPUID leaf 7's EDX: recorded only by
/// a module whose projections use the tiles (--cpu-dot amx), and checked by
/// the runtime with CPUID and Linux's grant of the tile state, not with
/// __builtin_cpu_supports.
#define TBC_FOR_EACH_AMX_FEATURE(X)                                            \
  X("amx-tile", 24)                                                            \
  X("amx-bf16", 22)

#endif // TBC_SUPPORT_CPUFEATURELIST_H
