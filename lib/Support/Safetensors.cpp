//===- Safetensors.cpp - memory-mapped safetensors checkpoints ------------===//

#include "tbc/Support/Safetensors.h"

#include "tbc/Support/FileIO.h"
#include "tbc/Support/Json.h"
#include "tbc/Support/Limits.h"

#include <algorithm>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <set>
#include <sstream>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace tbc;
using namespace tbc::rt;

namespace {
struct DTypeInfo {
  DType dtype;
  const char *name;
  size_t size;
};
const DTypeInfo kDTypes[] = {
    {DType::F64, "F64", 8},  {DType::F32, "F32", 4},
    {DType::F16, "F16", 2},  {DType::BF16, "BF16", 2},
    {DType::I64, "I64", 8},  {DType::I32, "I32", 4},
    {DType::I16, "I16", 2},  {DType::I8, "I8", 1},
    {DType::U8, "U8", 1},    {DType::Bool, "BOOL", 1},
    {DType::F8E4M3, "F8_E4M3", 1}, {DType::F8E5M2, "F8_E5M2", 1}};

/// Safetensors headers are capped at 100 MB by the format.
constexpr uint64_t kMaxHeader = limits::kSafetensorsHeader.maxBytes;
} // namespace

const char *tbc::rt::dtypeName(DType d) {
  for (const DTypeInfo &i : kDTypes)
    if (i.dtype == d)
      return i.name;
  return "?";
}
std::optional<DType> tbc::rt::parseDType(const std::string &name) {
  for (const DTypeInfo &i : kDTypes)
    if (name == i.name)
      return i.dtype;
  return std::nullopt;
}
size_t tbc::rt::dtypeSize(DType d) {
  for (const DTypeInfo &i : kDTypes)
    if (i.dtype == d)
      return i.size;
  return 0;
}
bool tbc::rt::isFloatDType(DType d) {
  return d == DType::F32 || d == DType::F16 || d == DType::BF16;
}

int64_t TensorView::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

SafetensorsFile::~SafetensorsFile() {
  if (map_)
    ::munmap(map_, size_);
}

std::unique_ptr<SafetensorsFile>
SafetensorsFile::open(const std::string &path, std::string &error) {
  auto fail = [&](const std::string &msg) {
    error = path + ": " + msg;
    return nullptr;
  };
  uint64_t fileSize = 0;
  std::string why;
  int fd = openRegularFile(path, fileSize, why);
  if (fd < 0) {
    error = why;
    return nullptr;
  }
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->size_ = size_t(fileSize);
  if (f->size_ < 8) {
    ::close(fd);
    return fail("truncated: shorter than the 8-byte header length");
  }
  f->map_ = ::mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (f->map_ == MAP_FAILED) {
    f->map_ = nullptr;
    return fail(std::string("cannot map: ") + std::strerror(errno));
  }
  const uint8_t *bytes = static_cast<const uint8_t *>(f->map_);
  uint64_t headerLen = 0;
  for (int i = 7; i >= 0; --i)
    headerLen = (headerLen << 8) | bytes[i];
  if (headerLen > kMaxHeader)
    return fail("header length " + std::to_string(headerLen) +
                " exceeds the format's 100 MB limit");
  if (headerLen > f->size_ - 8)
    return fail("header length " + std::to_string(headerLen) +
                " runs past the end of the " + std::to_string(f->size_) +
                "-byte file");
  std::string_view header(reinterpret_cast<const char *>(bytes + 8),
                          size_t(headerLen));
  json::ParseError pe;
  std::optional<json::Value> root =
      json::parse(header, pe, limits::kSafetensorsHeader);
  if (!root)
    return fail("header is not valid JSON (line " +
                std::to_string(pe.pos.line) + ", column " +
                std::to_string(pe.pos.column) + "): " + pe.message);
  if (!root->isObject())
    return fail("header is not a JSON object");
  const uint8_t *data = bytes + 8 + headerLen;
  uint64_t dataSize = f->size_ - 8 - headerLen;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto &[name, v] : root->members()) {
    if (name == "__metadata__") {
      if (!v.isObject())
        return fail("__metadata__ must be an object of strings");
      for (const auto &[k, mv] : v.members()) {
        if (!mv.isString())
          return fail("__metadata__ value '" + k + "' is not a string");
        f->metadata_[k] = mv.asString();
      }
      continue;
    }
    std::string where = "tensor '" + name + "': ";
    if (!v.isObject())
      return fail(where + "entry is not an object");
    const json::Value *dt = v.get("dtype"), *shape = v.get("shape"),
                      *offs = v.get("data_offsets");
    if (!dt || !dt->isString())
      return fail(where + "missing string 'dtype'");
    std::optional<DType> dtype = parseDType(dt->asString());
    if (!dtype)
      return fail(where + "unknown dtype '" + dt->asString() + "'");
    if (!shape || !shape->isArray())
      return fail(where + "missing array 'shape'");
    TensorView t;
    t.name = name;
    t.dtype = *dtype;
    t.file = path;
    uint64_t elements = 1;
    for (const json::Value &d : shape->elements()) {
      if (!d.isInteger() || d.asInt() < 0)
        return fail(where + "shape entries must be non-negative integers");
      // Elements x 8 bytes must not wrap (2^62 F32 elements would make
      // 0 bytes); nothing real comes near 2^56.
      uint64_t dim = uint64_t(d.asInt());
      if (dim != 0 && elements > (uint64_t(1) << 56) / dim)
        return fail(where + "shape is too large");
      elements *= dim;
      t.shape.push_back(d.asInt());
    }
    if (!offs || !offs->isArray() || offs->elements().size() != 2 ||
        !offs->elements()[0].isInteger() || !offs->elements()[1].isInteger() ||
        offs->elements()[0].asInt() < 0 || offs->elements()[1].asInt() < 0)
      return fail(where + "'data_offsets' must be two non-negative integers");
    uint64_t begin = uint64_t(offs->elements()[0].asInt());
    uint64_t end = uint64_t(offs->elements()[1].asInt());
    if (begin > end || end > dataSize)
      return fail(where + "data_offsets [" + std::to_string(begin) + ", " +
                  std::to_string(end) + "] lie outside the " +
                  std::to_string(dataSize) + "-byte data section");
    if (end - begin != elements * dtypeSize(*dtype))
      return fail(where + "byte range of " + std::to_string(end - begin) +
                  " bytes does not match shape x dtype (" +
                  std::to_string(elements * dtypeSize(*dtype)) + " bytes)");
    t.data = data + begin;
    t.nbytes = size_t(end - begin);
    ranges.emplace_back(begin, end);
    f->tensors_.push_back(std::move(t));
  }
  std::sort(ranges.begin(), ranges.end());
  uint64_t cursor = 0;
  for (const auto &[b, e] : ranges) {
    if (b < cursor)
      return fail("tensor byte ranges overlap at offset " + std::to_string(b));
    if (b > cursor)
      return fail("tensor byte ranges leave a hole at offset " +
                  std::to_string(cursor));
    cursor = e;
  }
  if (cursor != dataSize)
    return fail("data section has " + std::to_string(dataSize - cursor) +
                " trailing bytes not covered by any tensor");
  return f;
}

static bool isDir(const std::string &p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
// lstat: a dangling symlink exists too, so that opening it reports the
// broken link instead of the folder silently having no weights.
static bool exists(const std::string &p) {
  struct stat st;
  return ::lstat(p.c_str(), &st) == 0;
}

bool WeightStore::folderHasWeights(const std::string &dir) {
  return exists(dir + "/model.safetensors") ||
         exists(dir + "/model.safetensors.index.json");
}

std::unique_ptr<WeightStore> WeightStore::open(const std::string &pathIn,
                                               std::string &error) {
  std::string path = pathIn;
  if (isDir(path)) {
    if (exists(path + "/model.safetensors.index.json"))
      path += "/model.safetensors.index.json";
    else if (exists(path + "/model.safetensors"))
      path += "/model.safetensors";
    else {
      error = pathIn + ": folder holds neither model.safetensors nor "
                       "model.safetensors.index.json";
      return nullptr;
    }
  }
  auto store = std::make_unique<WeightStore>();
  size_t slash = path.find_last_of('/');
  store->folder_ = slash == std::string::npos ? "." : path.substr(0, slash);
  auto add = [&](std::unique_ptr<SafetensorsFile> f) -> bool {
    for (const TensorView &t : f->tensors()) {
      if (store->byName_.count(t.name)) {
        error = t.file + ": tensor '" + t.name + "' also appears in " +
                store->byName_[t.name]->file;
        return false;
      }
      store->byName_[t.name] = &t;
    }
    store->files_.push_back(std::move(f));
    return true;
  };
  const std::string indexSuffix = ".index.json";
  if (path.size() > indexSuffix.size() &&
      path.compare(path.size() - indexSuffix.size(), indexSuffix.size(),
                   indexSuffix) == 0) {
    std::string text;
    if (std::string why = readRegularFile(path, limits::kIndexJson.maxBytes, text); !why.empty()) {
      error = why;
      return nullptr;
    }
    json::ParseError pe;
    std::optional<json::Value> root = json::parse(text, pe, limits::kIndexJson);
    if (!root) {
      error = path + ":" + std::to_string(pe.pos.line) + ":" +
              std::to_string(pe.pos.column) + ": invalid JSON: " + pe.message;
      return nullptr;
    }
    const json::Value *map = root->get("weight_map");
    if (!map || !map->isObject()) {
      error = path + ": field 'weight_map': missing or not an object";
      return nullptr;
    }
    std::string dir = path.substr(0, path.find_last_of('/') + 1);
    std::set<std::string> shards;
    for (const auto &[name, file] : map->members()) {
      if (!file.isString() || file.asString().find('/') != std::string::npos) {
        error = path + ": field 'weight_map." + name +
                "': expected a file name in the same folder";
        return nullptr;
      }
      shards.insert(file.asString());
    }
    for (const std::string &shard : shards) {
      auto f = SafetensorsFile::open(dir + shard, error);
      if (!f || !add(std::move(f)))
        return nullptr;
    }
    for (const auto &[name, file] : map->members())
      if (!store->find(name) ||
          store->find(name)->file != dir + file.asString()) {
        error = path + ": weight_map names '" + name + "' in " +
                file.asString() + ", which does not hold it";
        return nullptr;
      }
    return store;
  }
  auto f = SafetensorsFile::open(path, error);
  if (!f || !add(std::move(f)))
    return nullptr;
  return store;
}

const TensorView *WeightStore::find(const std::string &name) const {
  auto it = byName_.find(name);
  return it == byName_.end() ? nullptr : it->second;
}

const TensorView *WeightStore::resolve(const std::string &name) const {
  if (const TensorView *t = find(name))
    return t;
  const std::string prefix = "transformer.";
  if (name.compare(0, prefix.size(), prefix) == 0)
    return find(name.substr(prefix.size()));
  return nullptr;
}
