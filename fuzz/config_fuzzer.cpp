//===- config_fuzzer.cpp - libFuzzer target: config.json / native specs ---===//

#include "tbc/Frontend/ModelReaders.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  tbc::json::ParseError pe;
  std::optional<tbc::json::Value> root = tbc::json::parse(text, pe);
  if (!root || !root->isObject())
    return 0;
  tbc::SourceError error;
  tbc::readHFConfig(*root, "fuzz.json", error);
  error = {};
  tbc::readNativeSpec(*root, "fuzz.json", error);
  return 0;
}
