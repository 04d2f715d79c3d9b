//===- Npy.h - NumPy .npy float32 arrays -------------------------*- C++ -*-===//

#ifndef TBC_SUPPORT_NPY_H
#define TBC_SUPPORT_NPY_H

#include <cstdint>
#include <string>
#include <vector>

namespace tbc {

/// The bytes of a little-endian float32 C-order .npy file (format 1.0).
std::string encodeNpy(const std::vector<float> &data,
                      const std::vector<int64_t> &shape);

/// Parses a float32 (or float64, converted) C-order .npy file.
bool decodeNpy(const std::string &bytes, std::vector<float> &data,
               std::vector<int64_t> &shape, std::string &error);

} // namespace tbc

#endif // TBC_SUPPORT_NPY_H
