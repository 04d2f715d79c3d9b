//===- Safetensors.h - memory-mapped safetensors checkpoints -----*- C++ -*-===//
//
// Reads single-file and sharded (model.safetensors.index.json) checkpoints
// without copying: tensors point into read-only mappings. Enforces the
// format's own rules (bounded header, known dtypes, byte ranges that match
// shapes, in bounds, neither overlapping nor leaving holes). LLVM-free: the
// compiler and the runtime share this one reader.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_SUPPORT_SAFETENSORS_H
#define TBC_SUPPORT_SAFETENSORS_H

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tbc::rt {

enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, Bool, F8E4M3, F8E5M2 };

/// "F32", "BF16", ... as safetensors spells them.
const char *dtypeName(DType d);
std::optional<DType> parseDType(const std::string &name);
size_t dtypeSize(DType d);
bool isFloatDType(DType d); // f32, f16, bf16: what tbc binds as weights

struct TensorView {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const uint8_t *data = nullptr;
  size_t nbytes = 0;
  std::string file; // the file holding it, for messages
  int64_t numElements() const;
};

/// One read-only mapped .safetensors file.
class SafetensorsFile {
public:
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile &) = delete;
  SafetensorsFile &operator=(const SafetensorsFile &) = delete;

  /// Opens and validates `path`; on failure returns nullptr and sets `error`.
  static std::unique_ptr<SafetensorsFile> open(const std::string &path,
                                               std::string &error);
  const std::vector<TensorView> &tensors() const { return tensors_; }
  const std::map<std::string, std::string> &metadata() const { return metadata_; }

private:
  SafetensorsFile() = default;
  void *map_ = nullptr;
  size_t size_ = 0;
  std::vector<TensorView> tensors_;
  std::map<std::string, std::string> metadata_;
};

/// All tensors of a checkpoint: a .safetensors file, a sharded index, or a
/// folder holding either.
class WeightStore {
public:
  static std::unique_ptr<WeightStore> open(const std::string &path,
                                           std::string &error);
  /// Looks `name` up; nullptr when absent.
  const TensorView *find(const std::string &name) const;
  /// Looks up a parameter the way checkpoints name it: exactly, or without
  /// a leading "transformer." (GPT-2's original upload omits it).
  const TensorView *resolve(const std::string &name) const;
  const std::map<std::string, const TensorView *> &all() const { return byName_; }
  /// True when `path` is a folder holding a checkpoint.
  static bool folderHasWeights(const std::string &dir);
  /// The folder the checkpoint's files are in (where its config.json is).
  const std::string &folder() const { return folder_; }

private:
  std::string folder_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const TensorView *> byName_;
};

} // namespace tbc::rt

#endif // TBC_SUPPORT_SAFETENSORS_H
