//===- BFloat16.h - f32 <-> bf16 as the hardware rounds it ------*- C++ -*-===//
//
// bf16 is the top half of an f32. Weights stored in bf16 (the CUDA
// backend's tensor-core projections) are rounded to nearest even, as
// PyTorch's .to(torch.bfloat16) does, once, at bind time.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_SUPPORT_BFLOAT16_H
#define TBC_SUPPORT_BFLOAT16_H

#include <cstdint>
#include <cstring>

namespace tbc {

/// The bf16 bits of `f`, rounded to nearest even (a NaN stays a NaN).
inline uint16_t toBF16Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((u >> 16) | 0x40);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/// The f32 value of bf16 bits.
inline float fromBF16Bits(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// `f` rounded to the nearest bf16 value.
inline float roundToBF16(float f) { return fromBF16Bits(toBF16Bits(f)); }

} // namespace tbc

#endif // TBC_SUPPORT_BFLOAT16_H
