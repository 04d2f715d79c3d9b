//===- CpuFeatures.cpp - can this CPU run a module's host code? -----------===//

#include "tbc/Runtime/CpuFeatures.h"

#include "tbc/Support/CpuFeatureList.h"

#include <sstream>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

using namespace tbc::rt;

static const char *thisArchitecture() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#else
  return "unknown";
#endif
}

/// AMX's `feature`'s bit in CPUID leaf 7's EDX, or -1 for another feature.
static int amxBit(const std::string &feature) {
#define TBC_AMX_BIT(name, bit)                                                 \
  if (feature == name)                                                         \
    return bit;
  TBC_FOR_EACH_AMX_FEATURE(TBC_AMX_BIT)
#undef TBC_AMX_BIT
  return -1;
}

static bool isAmx(const std::string &feature) { return amxBit(feature) >= 0; }

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/// Whether CPUID reports AMX's `feature`.
static bool cpuidHasAmx(const std::string &feature) {
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx))
    return false;
  return (edx >> amxBit(feature)) & 1;
}

/// Whether Linux lets this process use AMX's tiles. It hands a process the
/// 8 KB of tile state only when asked (arch_prctl ARCH_REQ_XCOMP_PERM for
/// XFEATURE_XTILEDATA, Linux 5.16 and later): without that the first tile
/// instruction dies of SIGILL. Asked once, for the whole process, here: the
/// check before loading AMX code is what makes it runnable.
static bool amxGranted() {
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  static const bool granted = syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  return granted;
}
#else
static bool cpuidHasAmx(const std::string &) { return false; }
static bool amxGranted() { return false; }
#endif

/// Whether this CPU has `feature`; names it does not know count as present
/// (the compiler records only those of CpuFeatureList.h).
static bool hasFeature(const std::string &feature) {
  if (isAmx(feature))
    return cpuidHasAmx(feature) && amxGranted();
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  // __builtin_cpu_supports takes string literals only.
#define TBC_CPU_FEATURE(name)                                                  \
  if (feature == name)                                                         \
    return __builtin_cpu_supports(name);
  TBC_FOR_EACH_CPU_FEATURE(TBC_CPU_FEATURE)
#undef TBC_CPU_FEATURE
#else
  (void)feature;
#endif
  return true;
}

std::string tbc::rt::missingCpuFeatures(const std::string &requirements) {
  std::istringstream in(requirements);
  std::string arch, feature, missing;
  if (!(in >> arch))
    return "";
  if (arch != thisArchitecture())
    return arch;
  bool refusedByKernel = false;
  while (in >> feature)
    if (!hasFeature(feature)) {
      missing += (missing.empty() ? "" : " ") + feature;
      // The CPU has it; the kernel is what says no.
      refusedByKernel |= isAmx(feature) && cpuidHasAmx(feature);
    }
  if (refusedByKernel)
    missing += " (AMX is in the CPU, but Linux did not grant this process its tile state; "
               "Linux 5.16 or later does)";
  return missing;
}
