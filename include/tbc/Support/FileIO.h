//===- FileIO.h - reading strangers' files, writing outputs safely -*- C++ -*-===//
//
// Every file tbc reads may be hostile or a mistake: a FIFO that blocks
// `open()` forever, a symlink to /dev/zero that never ends, a document far
// larger than any real one. Every output may point at an input. These are
// the checks each reader and writer shares.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_SUPPORT_FILEIO_H
#define TBC_SUPPORT_FILEIO_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tbc {

/// Reads a whole regular file of at most `maxBytes` bytes into `out`.
/// Opens without blocking (a FIFO does not hang), refuses anything that is
/// not a regular file of known size, and reads no more than the size said.
/// Returns "" on success, else "<path>: <reason>".
std::string readRegularFile(const std::string &path, uint64_t maxBytes,
                            std::string &out);

/// Opens `path` for reading without blocking and checks that it is a
/// regular file: the descriptor (>= 0) and its size, or -1 and `error`.
int openRegularFile(const std::string &path, uint64_t &size, std::string &error);

/// Whether an output may be written at `path` without destroying one of
/// `inputs` or a special file: it must be the null device (the output is
/// discarded), a new path or an existing regular file (a symlink counts as
/// what it points at) that is none of the inputs
/// (compared by device and inode, so another spelling of the same file is
/// caught too; an input folder protects the .json and .safetensors files
/// inside it). Returns "" or the reason.
std::string checkOutputPath(const std::string &path,
                            const std::vector<std::string> &inputs);

/// Writes `data` to a temporary file beside `path`, flushes it and renames it
/// over `path`: readers see the old file or the whole new one, never half.
/// A symlink at `path` is resolved first, so the link survives. Writes
/// nothing to the null device; refuses any other `path` that exists and is
/// not a regular file. Returns an empty string on success, else the reason.
std::string writeFileAtomically(const std::string &path, std::string_view data);

} // namespace tbc

#endif // TBC_SUPPORT_FILEIO_H
