//===- CpuFeatures.cpp - can this CPU run a module's host code? -----------===//

#include "tbc/Runtime/CpuFeatures.h"

#include "tbc/Support/CpuFeatureList.h"

#include <sstream>

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

/// Whether this CPU has `feature`; names it does not know count as present
/// (the compiler records only those of CpuFeatureList.h).
static bool hasFeature(const std::string &feature) {
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
  while (in >> feature)
    if (!hasFeature(feature))
      missing += (missing.empty() ? "" : " ") + feature;
  return missing;
}
