//===- ModelReaders.h - config.json / native spec -> ModelSpec --*- C++ -*-===//

#ifndef TBC_FRONTEND_MODELREADERS_H
#define TBC_FRONTEND_MODELREADERS_H

#include "tbc/Frontend/ModelSpec.h"
#include "tbc/Frontend/SourceError.h"
#include "tbc/Support/Json.h"

#include <optional>
#include <string>

namespace tbc {

/// The Hugging Face `architectures` tbc understands.
const std::vector<std::string> &supportedArchitectures();

/// Reads a parsed Hugging Face config.json (`file` names it in errors).
std::optional<ModelSpec> readHFConfig(const json::Value &config,
                                      const std::string &file,
                                      SourceError &error);

/// Reads a parsed native spec (docs/spec.md).
std::optional<ModelSpec> readNativeSpec(const json::Value &spec,
                                        const std::string &file,
                                        SourceError &error);

/// Reads a file and parses it as JSON, with line/column on syntax errors.
std::optional<json::Value> readJsonFile(const std::string &path,
                                        SourceError &error);

/// What kind of model description a path holds.
enum class DescriptionKind { HFConfig, NativeSpec, TbcIR };

/// Resolves MODEL as the driver accepts it: a Hugging Face folder (its
/// config.json), a config.json, a native spec (.json with "tbc_spec"), or
/// tbc IR (.mlir). `configPath` receives the file to read.
std::optional<DescriptionKind> classifyModelPath(const std::string &model,
                                                 std::string &configPath,
                                                 SourceError &error);

/// Reads an HF config or a native spec into a validated ModelSpec.
std::optional<ModelSpec> readModelDescription(const std::string &configPath,
                                              DescriptionKind kind,
                                              SourceError &error);

} // namespace tbc

#endif // TBC_FRONTEND_MODELREADERS_H
