//===- HalfFloats.h - f32 <-> bf16 and f16, rounded as hardware does -*- C++ -*-===//
//
// The 16-bit weight types: bf16 (the top half of an f32) and IEEE f16.
// Weights stored in 16 bits (`tbc compile --dtype bf16|f16`) are rounded to
// nearest even, as PyTorch's .to(dtype) does, once, at bind time; f16
// checkpoints are read through fromHalfBits.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_SUPPORT_HALFFLOATS_H
#define TBC_SUPPORT_HALFFLOATS_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace tbc {

/// Whether `type` names a storage type of weights and KV caches (`--dtype`,
/// `--cuda-kv-cache`, the manifest's `dtype`s): f32, bf16 or f16.
inline bool isStorageType(std::string_view type) {
  return type == "f32" || type == "bf16" || type == "f16";
}

/// Bytes per element of a storage type: 4 for f32, 2 for bf16 and f16.
inline size_t storageTypeBytes(std::string_view type) { return type == "f32" ? 4 : 2; }

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

/// The f32 value of IEEE half-precision bits (subnormals included).
inline float fromHalfBits(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else { // subnormal: normalise the mantissa
      exp = 127 - 15 + 1;
      while (!(mant & 0x400)) {
        mant <<= 1;
        --exp;
      }
      bits = sign | (exp << 23) | ((mant & 0x3ff) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000 | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// The IEEE half-precision bits of `f`, rounded to nearest even: overflow
/// to infinity, small values to subnormals or zero, NaN kept a NaN.
inline uint16_t toHalfBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  uint32_t sign = (u >> 16) & 0x8000, absu = u & 0x7fffffff;
  if (absu > 0x7f800000) // NaN
    return uint16_t(sign | 0x7e00);
  if (absu >= 0x477ff000) // rounds to 65520 or more: infinity
    return uint16_t(sign | 0x7c00);
  if (absu < 0x38800000) { // below 2^-14: a subnormal (or zero)
    // value = mant * 2^(e - 150) with the implicit bit in mant; in units of
    // the smallest subnormal (2^-24) that is mant >> (126 - e), rounded to
    // nearest even. Below half of it (shift > 24) it is zero.
    uint32_t mant = (absu & 0x7fffff) | 0x800000;
    int shift = 126 - int(absu >> 23);
    if (shift > 24)
      return uint16_t(sign);
    uint32_t q = mant >> shift, rest = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rest > half || (rest == half && (q & 1)))
      ++q;
    return uint16_t(sign | q);
  }
  // Normal: rebias the exponent, round the 13 dropped mantissa bits.
  uint32_t h = ((absu >> 13) - ((127 - 15) << 10));
  uint32_t rest = absu & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
    ++h; // may carry into the exponent, which is right (up to infinity)
  return uint16_t(sign | h);
}

/// `f` rounded to the nearest f16 value.
inline float roundToHalf(float f) { return fromHalfBits(toHalfBits(f)); }

/// The 16 bits of `f` in `dtype` ("bf16" or "f16").
inline uint16_t toHalfWidthBits(float f, bool bf16) { return bf16 ? toBF16Bits(f) : toHalfBits(f); }

} // namespace tbc

#endif // TBC_SUPPORT_HALFFLOATS_H
