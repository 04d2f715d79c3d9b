//===- ModelReaders.cpp - find and read a model description ---------------===//

#include "tbc/Frontend/ModelReaders.h"

#include "tbc/Support/FileIO.h"
#include "tbc/Support/Limits.h"

#include <algorithm>
#include <sys/stat.h>

using namespace tbc;

static bool isDirectory(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

static bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::optional<json::Value> tbc::readJsonFile(const std::string &path,
                                             SourceError &error) {
  std::string text;
  if (std::string why = readRegularFile(path, limits::kConfigJson.maxBytes, text);
      !why.empty()) {
    // readRegularFile names the path; SourceError adds it again.
    error = {path, 0, 0, "", why.substr(std::min(why.size(), path.size() + 2))};
    return std::nullopt;
  }
  json::ParseError pe;
  std::optional<json::Value> v = json::parse(text, pe, limits::kConfigJson);
  if (!v)
    error = {path, pe.pos.line, pe.pos.column, "",
             "invalid JSON: " + pe.message};
  return v;
}

std::optional<DescriptionKind>
tbc::classifyModelPath(const std::string &model, std::string &configPath,
                       SourceError &error) {
  if (isDirectory(model)) {
    configPath = model + "/config.json";
    struct stat st; // lstat: a FIFO or dangling link is reported when read
    if (::lstat(configPath.c_str(), &st) != 0) {
      error = {model, 0, 0, "",
               "not a Hugging Face model folder: it has no config.json"};
      return std::nullopt;
    }
    // A folder's config.json may also hold a native spec (with its
    // checkpoint beside it): classified by its content below.
  } else {
    configPath = model;
  }
  if (endsWith(configPath, ".mlir"))
    return DescriptionKind::TbcIR;
  if (!endsWith(configPath, ".json")) {
    error = {model, 0, 0, "",
             "unknown model description (expected a Hugging Face folder, a "
             "config.json, a native spec .json, or tbc IR .mlir)"};
    return std::nullopt;
  }
  std::optional<json::Value> root = readJsonFile(configPath, error);
  if (!root)
    return std::nullopt;
  if (root->get("tbc_spec"))
    return DescriptionKind::NativeSpec;
  if (root->get("architectures"))
    return DescriptionKind::HFConfig;
  error = {configPath, 1, 1, "",
           "neither a Hugging Face config (no 'architectures') nor a native "
           "spec (no 'tbc_spec')"};
  return std::nullopt;
}

std::optional<ModelSpec> tbc::readModelDescription(const std::string &path,
                                                   DescriptionKind kind,
                                                   SourceError &error) {
  std::optional<json::Value> root = readJsonFile(path, error);
  if (!root)
    return std::nullopt;
  if (!root->isObject()) {
    error = {path, root->pos().line, root->pos().column, "",
             "expected a JSON object"};
    return std::nullopt;
  }
  return kind == DescriptionKind::NativeSpec ? readNativeSpec(*root, path, error)
                                             : readHFConfig(*root, path, error);
}
