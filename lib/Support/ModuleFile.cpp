//===- ModuleFile.cpp - the .tbcm container -------------------------------===//

#include "tbc/Support/ModuleFile.h"

#include <cstring>

using namespace tbc::rt;

namespace {
const char kMagic[8] = {'T', 'B', 'C', 'M', 'O', 'D', 'U', 'L'};
constexpr size_t kHeader = 32;

void put(std::string &out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(char((v >> (8 * i)) & 0xff));
}

uint64_t get(const std::string &in, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i)
    v = (v << 8) | uint8_t(in[at + i]);
  return v;
}
} // namespace

uint64_t tbc::rt::fnv1a64(const char *data, size_t size) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < size; ++i) {
    h ^= uint8_t(data[i]);
    h *= 1099511628211ull;
  }
  return h;
}

std::string tbc::rt::encodeModuleFile(const ModuleFile &file) {
  std::string body = file.manifest;
  for (const CodeBlob &b : file.blobs) {
    put(body, b.name.size(), 8);
    body += b.name;
    put(body, b.bytes.size(), 8);
    body += b.bytes;
  }
  std::string out(kMagic, sizeof kMagic);
  put(out, kModuleFormatVersion, 4);
  put(out, file.blobs.size(), 4);
  put(out, file.manifest.size(), 8);
  put(out, fnv1a64(body.data(), body.size()), 8);
  return out + body;
}

bool tbc::rt::decodeModuleFile(const std::string &bytes, ModuleFile &file,
                               std::string &error) {
  if (bytes.size() < kHeader) {
    error = "truncated: " + std::to_string(bytes.size()) +
            " bytes is shorter than the 32-byte header";
    return false;
  }
  if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    error = "not a tbc module (bad magic)";
    return false;
  }
  uint64_t version = get(bytes, 8, 4);
  if (version != kModuleFormatVersion) {
    error = "module format version " + std::to_string(version) +
            " is not supported (this runtime reads version " +
            std::to_string(kModuleFormatVersion) + "); recompile the model";
    return false;
  }
  uint64_t blobs = get(bytes, 12, 4);
  uint64_t manifestSize = get(bytes, 16, 8);
  uint64_t checksum = get(bytes, 24, 8);
  if (fnv1a64(bytes.data() + kHeader, bytes.size() - kHeader) != checksum) {
    error = "checksum mismatch: the file is corrupt or truncated";
    return false;
  }
  size_t at = kHeader;
  if (manifestSize > bytes.size() - at) {
    error = "manifest size runs past the end of the file";
    return false;
  }
  file.manifest = bytes.substr(at, manifestSize);
  at += manifestSize;
  file.blobs.clear();
  for (uint64_t i = 0; i < blobs; ++i) {
    CodeBlob blob;
    for (std::string *field : {&blob.name, &blob.bytes}) {
      if (bytes.size() - at < 8) {
        error = "code blob " + std::to_string(i) + " is truncated";
        return false;
      }
      uint64_t n = get(bytes, at, 8);
      at += 8;
      if (n > bytes.size() - at) {
        error = "code blob " + std::to_string(i) + " runs past the end";
        return false;
      }
      *field = bytes.substr(at, n);
      at += n;
    }
    file.blobs.push_back(std::move(blob));
  }
  if (at != bytes.size()) {
    error = "trailing bytes after the last code blob";
    return false;
  }
  return true;
}
