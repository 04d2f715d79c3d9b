//===- FileIO.h - atomic file output -----------------------------*- C++ -*-===//

#ifndef TBC_SUPPORT_FILEIO_H
#define TBC_SUPPORT_FILEIO_H

#include <string>
#include <string_view>

namespace tbc {

/// Writes `data` to a temporary file beside `path`, flushes it and renames it
/// over `path`: readers see the old file or the whole new one, never half.
/// Returns an empty string on success, else the reason.
std::string writeFileAtomically(const std::string &path, std::string_view data);

} // namespace tbc

#endif // TBC_SUPPORT_FILEIO_H
