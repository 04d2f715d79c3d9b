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
#include <chrono>
#include <cstdio>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

using namespace tbc::rt;
using Clock = std::chrono::steady_clock;

static double secondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

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
// Twelve independent chains: enough to cover 2 FMA pipes x 4-6 cycles of
// latency, and few enough to stay in 16 ymm registers. Written out, not
// looped over, so that no compiler keeps them in memory.
#define TBC_FMA_CHAINS(FMA)                                                    \
  for (long n = 0; n < iterations; ++n) {                                      \
    a0 = FMA(a0, x, y); a1 = FMA(a1, x, y); a2 = FMA(a2, x, y);                \
    a3 = FMA(a3, x, y); a4 = FMA(a4, x, y); a5 = FMA(a5, x, y);                \
    a6 = FMA(a6, x, y); a7 = FMA(a7, x, y); a8 = FMA(a8, x, y);                \
    a9 = FMA(a9, x, y); a10 = FMA(a10, x, y); a11 = FMA(a11, x, y);            \
  }

__attribute__((target("avx512f"))) static float fmaChainsZmm(long iterations) {
  __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
  __m512 a0 = _mm512_set1_ps(0), a1 = _mm512_set1_ps(1), a2 = _mm512_set1_ps(2),
         a3 = _mm512_set1_ps(3), a4 = _mm512_set1_ps(4), a5 = _mm512_set1_ps(5),
         a6 = _mm512_set1_ps(6), a7 = _mm512_set1_ps(7), a8 = _mm512_set1_ps(8),
         a9 = _mm512_set1_ps(9), a10 = _mm512_set1_ps(10), a11 = _mm512_set1_ps(11);
  TBC_FMA_CHAINS(_mm512_fmadd_ps)
  __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                           _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
  s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
  float lanes[16];
  _mm512_storeu_ps(lanes, s);
  return lanes[0] + lanes[15];
}

__attribute__((target("avx2,fma"))) static float fmaChainsYmm(long iterations) {
  __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
  __m256 a0 = _mm256_set1_ps(0), a1 = _mm256_set1_ps(1), a2 = _mm256_set1_ps(2),
         a3 = _mm256_set1_ps(3), a4 = _mm256_set1_ps(4), a5 = _mm256_set1_ps(5),
         a6 = _mm256_set1_ps(6), a7 = _mm256_set1_ps(7), a8 = _mm256_set1_ps(8),
         a9 = _mm256_set1_ps(9), a10 = _mm256_set1_ps(10), a11 = _mm256_set1_ps(11);
  TBC_FMA_CHAINS(_mm256_fmadd_ps)
  __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                           _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
  s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
  float lanes[8];
  _mm256_storeu_ps(lanes, s);
  return lanes[0] + lanes[7];
}
#undef TBC_FMA_CHAINS
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
