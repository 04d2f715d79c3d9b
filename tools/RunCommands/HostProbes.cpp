//===- HostProbes.cpp - the host's ceilings, measured now -------------------===//
//
// What `tbc bench` sets its numbers against: a streaming read over every
// core (decode's roofline) and independent FMA chains on every core
// (prefill projections' ceiling). Measured in the same process, on the
// same pool as the kernels; a VM reports no clock or bandwidth to compute
// them from, and its neighbours move both.
//
//===----------------------------------------------------------------------===//

#include "HostProbes.h"

#include "tbc/Runtime/HugePageAllocator.h"
#include "tbc/Runtime/ThreadPool.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

using namespace tbc::rt;
using Clock = std::chrono::steady_clock;

/// Bytes per second of a streaming read over every core: the ceiling for
/// work that must read each weight once. The buffer takes 2 MiB pages
/// where the system grants them, as the runtime's weights do: on 4 KiB
/// pages the probe itself runs at about half the speed on some hosts
/// (TLB misses, the prefetcher stopping at every page), which would make
/// the roofline a floor. `onHugePages` says whether it got them.
double tbc::rt::measureReadBandwidth(bool &onHugePages) {
  const size_t words = size_t(512) << 20 >> 3; // 512 MiB, far beyond caches
  int64_t hugeBefore = hugePageBytes();
  LargeVector<uint64_t> data(words);
  for (size_t i = 0; i < words; ++i)
    data[i] = i;
  onHugePages = hugeBefore >= 0 && hugePageBytes() - hugeBefore >= int64_t(words * 8 / 2);
  ThreadPool &pool = ThreadPool::shared();
  unsigned parts = pool.size();
  std::vector<uint64_t> sinks(parts * 8);
  double best = 0;
  for (int run = 0; run < 5; ++run) { // best of 5: the machine is shared
    auto t0 = Clock::now();
    pool.run([&](unsigned part) {
      size_t begin = words * part / parts, end = words * (part + 1) / parts;
      // Four independent chains keep loads, not adds, the limit; a software
      // prefetch 8 KiB ahead into L2, one per cache line, as the decode
      // kernels issue (without it the kernels outran this probe by 5-7%).
      uint64_t a = 0, b = 0, c = 0, d = 0;
      size_t i = begin;
      constexpr size_t kAhead = 8192 / sizeof(uint64_t);
      for (; i + 8 <= end; i += 8) {
        __builtin_prefetch(&data[std::min(i + kAhead, end - 1)], 0, 2);
        a += data[i] + data[i + 4];
        b ^= data[i + 1] ^ data[i + 5];
        c += data[i + 2] + data[i + 6];
        d ^= data[i + 3] ^ data[i + 7];
      }
      for (; i < end; ++i)
        a += data[i];
      sinks[part * 8] = a + b + c + d;
    });
    double s = secondsSince(t0);
    best = std::max(best, double(words * 8) / s);
  }
  uint64_t keep = 0;
  for (uint64_t s : sinks)
    keep ^= s;
  if (keep == 0x5a5a5a5a5a5a5a5aull) // never: stops the reads being elided
    std::fputs("", stderr);
  return best;
}

#if defined(__x86_64__)
// One probe body for both widths (V the vector type, the rest its
// intrinsics), compiled for the ISA that `isa` names. Twelve independent
// chains: enough to cover 2 FMA pipes x 4-6 cycles of latency, and few
// enough to stay in 16 ymm registers. Written out, not looped over, so that
// no compiler keeps them in memory.
#define TBC_FMA_PROBE(name, isa, V, fma, set1, add, store, lanes)                \
  __attribute__((target(isa))) static float name(long iterations) {              \
    V x = set1(0.999999f), y = set1(1e-7f);                                      \
    V a0 = set1(0), a1 = set1(1), a2 = set1(2), a3 = set1(3), a4 = set1(4),       \
      a5 = set1(5), a6 = set1(6), a7 = set1(7), a8 = set1(8), a9 = set1(9),       \
      a10 = set1(10), a11 = set1(11);                                            \
    for (long n = 0; n < iterations; ++n) {                                      \
      a0 = fma(a0, x, y); a1 = fma(a1, x, y); a2 = fma(a2, x, y);                \
      a3 = fma(a3, x, y); a4 = fma(a4, x, y); a5 = fma(a5, x, y);                \
      a6 = fma(a6, x, y); a7 = fma(a7, x, y); a8 = fma(a8, x, y);                \
      a9 = fma(a9, x, y); a10 = fma(a10, x, y); a11 = fma(a11, x, y);            \
    }                                                                            \
    V s = add(add(add(a0, a1), add(a2, a3)), add(add(a4, a5), add(a6, a7)));     \
    s = add(s, add(add(a8, a9), add(a10, a11)));                                 \
    float out[lanes];                                                            \
    store(out, s);                                                               \
    return out[0] + out[lanes - 1];                                              \
  }

TBC_FMA_PROBE(fmaChainsZmm, "avx512f", __m512, _mm512_fmadd_ps, _mm512_set1_ps, _mm512_add_ps,
              _mm512_storeu_ps, 16)
TBC_FMA_PROBE(fmaChainsYmm, "avx2,fma", __m256, _mm256_fmadd_ps, _mm256_set1_ps, _mm256_add_ps,
              _mm256_storeu_ps, 8)
#undef TBC_FMA_PROBE
#endif

double tbc::rt::measureFmaPeak(const char *&registers) {
  registers = nullptr;
#if defined(__x86_64__)
  __builtin_cpu_init();
  bool zmm = __builtin_cpu_supports("avx512f");
  if (!zmm && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")))
    return 0;
  registers = zmm ? "zmm" : "ymm";
  const long iterations = 20000000; // ~0.1 s a core at 2 FMAs a cycle
  const double lanes = zmm ? 16 : 8;
  ThreadPool &pool = ThreadPool::shared();
  unsigned parts = pool.size();
  std::vector<float> sinks(parts * 16);
  double best = 0;
  for (int run = 0; run < 3; ++run) { // best of 3: the machine is shared
    auto t0 = Clock::now();
    pool.run([&](unsigned part) {
      sinks[part * 16] = zmm ? fmaChainsZmm(iterations) : fmaChainsYmm(iterations);
    });
    double s = secondsSince(t0);
    best = std::max(best, 2.0 * lanes * 12 * double(iterations) * parts / s);
  }
  float keep = 0;
  for (float s : sinks)
    keep += s;
  if (keep == 1234.5f) // never: stops the chains being elided
    std::fputs("", stderr);
  return best;
#else
  return 0;
#endif
}
