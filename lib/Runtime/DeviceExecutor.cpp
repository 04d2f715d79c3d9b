//===- DeviceExecutor.cpp - executors by target ---------------------------===//

#include "DeviceExecutor.h"

using namespace tbc::rt;

std::unique_ptr<DeviceExecutor> tbc::rt::createDeviceExecutor(const std::string &target,
                                                              std::string &error) {
  if (target == "cpu")
    return createCpuExecutor(); // CpuExecutor.cpp
  if (target == "cuda")
    return createCudaExecutor(); // CudaExecutor.cpp
  error = "the module targets '" + target + "', which this runtime cannot run";
  return nullptr;
}
