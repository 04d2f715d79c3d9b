//===- Npy.cpp - NumPy .npy float32 arrays --------------------------------===//

#include "tbc/Support/Npy.h"

#include <cstring>

std::string tbc::encodeNpy(const std::vector<float> &data,
                           const std::vector<int64_t> &shape) {
  std::string dims;
  for (int64_t d : shape)
    dims += std::to_string(d) + ", ";
  if (shape.size() > 1)
    dims.erase(dims.size() - 2); // (3, 4) but (3,)
  else if (!shape.empty())
    dims.erase(dims.size() - 1);
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" +
                       dims + "), }";
  // Magic + version + 2-byte length + header + '\n', padded to 64 bytes.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(char(header.size() & 0xff));
  out.push_back(char(header.size() >> 8));
  out += header;
  out.append(reinterpret_cast<const char *>(data.data()), data.size() * 4);
  return out;
}

bool tbc::decodeNpy(const std::string &bytes, std::vector<float> &data,
                    std::vector<int64_t> &shape, std::string &error) {
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) {
    error = "not a .npy file";
    return false;
  }
  size_t len = uint8_t(bytes[8]) | (size_t(uint8_t(bytes[9])) << 8);
  if (10 + len > bytes.size()) {
    error = "truncated .npy header";
    return false;
  }
  std::string header = bytes.substr(10, len);
  bool f64 = header.find("'<f8'") != std::string::npos;
  if (!f64 && header.find("'<f4'") == std::string::npos) {
    error = "only little-endian float32/float64 .npy files are supported";
    return false;
  }
  if (header.find("'fortran_order': False") == std::string::npos) {
    error = "only C-order .npy files are supported";
    return false;
  }
  size_t open = header.find('(', header.find("'shape'")),
         close = header.find(')', open);
  shape.clear();
  int64_t n = 1;
  for (size_t i = open + 1; i < close;) {
    while (i < close && (header[i] == ' ' || header[i] == ','))
      ++i;
    if (i >= close)
      break;
    int64_t d = std::stoll(header.substr(i));
    shape.push_back(d);
    n *= d;
    while (i < close && isdigit(uint8_t(header[i])))
      ++i;
  }
  size_t elt = f64 ? 8 : 4;
  if (bytes.size() - 10 - len != size_t(n) * elt) {
    error = ".npy data size does not match its shape";
    return false;
  }
  data.resize(size_t(n));
  const char *p = bytes.data() + 10 + len;
  for (int64_t i = 0; i < n; ++i) {
    if (f64) {
      double d;
      std::memcpy(&d, p + 8 * i, 8);
      data[i] = float(d);
    } else {
      std::memcpy(&data[i], p + 4 * i, 4);
    }
  }
  return true;
}
