//===- HugePageAllocator.cpp - large buffers on 2 MiB pages ---------------===//

#include "tbc/Runtime/HugePageAllocator.h"

#include <cstdio>
#include <cstdlib>

#ifdef __linux__
#include <sys/mman.h>
#endif

namespace tbc::rt {

static constexpr size_t kHugePage = size_t(2) << 20;

static size_t roundUpToHugePage(size_t bytes) {
  return (bytes + kHugePage - 1) / kHugePage * kHugePage;
}

void *allocateLarge(size_t bytes) {
#ifdef __linux__
  if (bytes >= kHugePage) {
    if (bytes > size_t(-1) - 2 * kHugePage)
      throw std::bad_alloc();
    // Over-map by one huge page and trim both ends so that the mapping
    // starts on a 2 MiB boundary: only aligned 2 MiB ranges can be huge.
    size_t length = roundUpToHugePage(bytes), mapped = length + kHugePage;
    void *raw = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
      throw std::bad_alloc();
    uintptr_t begin = reinterpret_cast<uintptr_t>(raw);
    uintptr_t aligned = (begin + kHugePage - 1) / kHugePage * kHugePage;
    if (size_t head = aligned - begin)
      munmap(raw, head);
    if (size_t tail = begin + mapped - (aligned + length))
      munmap(reinterpret_cast<void *>(aligned + length), tail);
    void *p = reinterpret_cast<void *>(aligned);
    // Advice, not a requirement: with transparent huge pages off it fails
    // or is ignored, and the pages are simply 4 KiB ones.
    (void)madvise(p, length, MADV_HUGEPAGE);
    return p;
  }
#endif
  void *p = std::calloc(bytes ? bytes : 1, 1);
  if (!p)
    throw std::bad_alloc();
  return p;
}

void freeLarge(void *p, size_t bytes) noexcept {
  if (!p)
    return;
#ifdef __linux__
  if (bytes >= kHugePage) {
    munmap(p, roundUpToHugePage(bytes));
    return;
  }
#endif
  std::free(p);
}

int64_t hugePageBytes() {
#ifdef __linux__
  FILE *f = std::fopen("/proc/self/smaps_rollup", "r");
  if (!f)
    return -1;
  char line[256];
  int64_t kb = -1;
  while (std::fgets(line, sizeof line, f)) {
    long long v;
    if (std::sscanf(line, "AnonHugePages: %lld kB", &v) == 1) {
      kb = v;
      break;
    }
  }
  std::fclose(f);
  return kb < 0 ? -1 : kb * 1024;
#else
  return -1;
#endif
}

} // namespace tbc::rt
