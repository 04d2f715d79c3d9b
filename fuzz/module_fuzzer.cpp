//===- module_fuzzer.cpp - libFuzzer target: the .tbcm container+manifest -===//
//
// Code blobs are never loaded here: a module is code, and the runtime trusts
// it once the container and manifest check out (docs/robustness.md).
//
//===----------------------------------------------------------------------===//

#include "tbc/Support/ModuleFile.h"
#include "tbc/Runtime/Runtime.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string bytes(reinterpret_cast<const char *>(data), size);
  tbc::rt::ModuleFile file;
  std::string error;
  // Raw bytes as a container, and (so the fuzzer reaches the manifest
  // checks without forging checksums) as a bare manifest.
  if (tbc::rt::decodeModuleFile(bytes, file, error))
    tbc::rt::Module::checkManifest(file.manifest, error);
  tbc::rt::Module::checkManifest(bytes, error);
  return 0;
}
