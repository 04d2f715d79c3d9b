//===- HugePageAllocator.h - large buffers on 2 MiB pages -------*- C++ -*-===//
//
// Decoding streams every weight once per token; with 4 KiB pages each page
// is a TLB miss and a stop for the hardware prefetcher, which does not cross
// pages. On an Intel host, AVX2 code, hidden 4096, that held bf16 decode at
// 26 GB/s where the same loop on 2 MiB pages streams 35 (bench/NOTES.md,
// 2026-11-25). Linux grants 2 MiB pages to an anonymous mapping that is
// aligned to 2 MiB and marked MADV_HUGEPAGE whenever transparent huge pages
// are `always` or `madvise` (the usual default); with `never` the mapping
// simply stays on 4 KiB pages. Smaller buffers, and other systems, take the
// ordinary heap.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_RUNTIME_HUGEPAGEALLOCATOR_H
#define TBC_RUNTIME_HUGEPAGEALLOCATOR_H

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace tbc::rt {

/// Storage of at least `bytes`, zeroed: on 2 MiB pages where the system
/// grants them when `bytes` is at least one such page, else from the heap.
/// Throws std::bad_alloc when there is no memory.
void *allocateLarge(size_t bytes);
/// Frees what allocateLarge(bytes) returned (the same `bytes`).
void freeLarge(void *p, size_t bytes) noexcept;

/// Bytes of this process's memory on transparent huge pages now (Linux's
/// AnonHugePages), or -1 where the system does not say.
int64_t hugePageBytes();

/// A std allocator over allocateLarge: vectors of weights, caches and the
/// bandwidth probe's buffer get 2 MiB pages without changing how they are
/// used.
template <typename T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U> &) noexcept {}
  T *allocate(size_t n) {
    if (n > size_t(-1) / sizeof(T))
      throw std::bad_alloc();
    return static_cast<T *>(allocateLarge(n * sizeof(T)));
  }
  void deallocate(T *p, size_t n) noexcept { freeLarge(p, n * sizeof(T)); }
  template <typename U>
  bool operator==(const HugePageAllocator<U> &) const noexcept {
    return true;
  }
  template <typename U>
  bool operator!=(const HugePageAllocator<U> &) const noexcept {
    return false;
  }
};

/// A vector whose storage takes 2 MiB pages once it is large.
template <typename T>
using LargeVector = std::vector<T, HugePageAllocator<T>>;

} // namespace tbc::rt

#endif // TBC_RUNTIME_HUGEPAGEALLOCATOR_H
