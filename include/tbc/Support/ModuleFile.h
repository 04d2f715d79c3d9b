//===- ModuleFile.h - the .tbcm container (reader and writer) ---*- C++ -*-===//
//
// One definition of the module file, shared by the compiler (writer) and the
// runtime (reader), LLVM-free:
//
//   offset  size  field
//        0     8  magic "TBCMODUL"
//        8     4  format version (little endian), currently 1
//       12     4  number of code blobs
//       16     8  manifest size in bytes
//       24     8  FNV-1a 64 checksum of everything from offset 32 on
//       32     M  manifest (JSON, UTF-8)
//   then per blob: 8-byte name length, name, 8-byte size, bytes
//
//===----------------------------------------------------------------------===//

#ifndef TBC_SUPPORT_MODULEFILE_H
#define TBC_SUPPORT_MODULEFILE_H

#include <cstdint>
#include <string>
#include <vector>

namespace tbc::rt {

constexpr uint32_t kModuleFormatVersion = 1;

struct CodeBlob {
  std::string name; // e.g. "host.so", later "sm_90.ptx"
  std::string bytes;
};

struct ModuleFile {
  std::string manifest;
  std::vector<CodeBlob> blobs;
};

/// Serialises `file` (the writer then stores it atomically).
std::string encodeModuleFile(const ModuleFile &file);

/// Parses and validates a module file's bytes; on failure returns false and
/// sets `error` (truncated, bad magic, wrong version, bad checksum, ...).
bool decodeModuleFile(const std::string &bytes, ModuleFile &file,
                      std::string &error);

uint64_t fnv1a64(const char *data, size_t size);

} // namespace tbc::rt

#endif // TBC_SUPPORT_MODULEFILE_H
