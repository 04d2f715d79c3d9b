//===- HugePageAllocatorTest.cpp - large buffers on 2 MiB pages -----------===//

#include "tbc/Runtime/HugePageAllocator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>

using namespace tbc::rt;

namespace {

constexpr uintptr_t kHugePage = uintptr_t(2) << 20;

TEST(HugePageAllocator, LargeBuffersStartOnAHugePageAndAreZeroed) {
  // Sizes around and between huge pages: the trimmed mapping must keep
  // every byte the caller asked for, from a 2 MiB boundary.
  for (size_t bytes : {size_t(2) << 20, (size_t(2) << 20) + 4, size_t(5) << 20,
                       (size_t(8) << 20) - 1}) {
    auto *p = static_cast<unsigned char *>(allocateLarge(bytes));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kHugePage, 0u) << bytes;
    EXPECT_EQ(p[0], 0);
    EXPECT_EQ(p[bytes - 1], 0);
    p[0] = 1;
    p[bytes - 1] = 2; // the last byte is writable
    freeLarge(p, bytes);
  }
}

TEST(HugePageAllocator, SmallBuffersComeFromTheHeap) {
  for (size_t bytes : {size_t(0), size_t(1), size_t(4096), (size_t(2) << 20) - 1}) {
    auto *p = static_cast<unsigned char *>(allocateLarge(bytes));
    ASSERT_NE(p, nullptr);
    if (bytes) {
      EXPECT_EQ(p[bytes - 1], 0);
    }
    freeLarge(p, bytes);
  }
}

TEST(HugePageAllocator, VectorsGrowAndKeepTheirValues) {
  LargeVector<float> v(1000, 1.5f);
  v.resize(size_t(3) << 20, 2.5f); // moves from the heap to a mapping
  EXPECT_EQ(v[999], 1.5f);
  EXPECT_EQ(v[1000], 2.5f);
  EXPECT_EQ(v.back(), 2.5f);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data()) % kHugePage, 0u);
  LargeVector<float> w = v;
  EXPECT_EQ(w, v);
  LargeVector<float>().swap(v);
  EXPECT_TRUE(v.empty());
  EXPECT_THROW(LargeVector<float>().reserve(size_t(-1) / 2), std::length_error);
}

#ifdef __linux__
static std::string sysfsLine(const char *path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

TEST(HugePageAllocator, TouchedBuffersGetHugePagesWhereTheKernelGrantsThem) {
  int64_t before = hugePageBytes();
  ASSERT_GE(before, 0) << "/proc/self/smaps_rollup has no AnonHugePages";
  // Where the kernel grants huge pages to mappings that ask (`always` or
  // `madvise`) and may compact memory to find them, touching 16 MiB puts
  // most of it on them: without the advice (or the alignment) none would
  // be under `madvise`, the usual default.
  std::string enabled = sysfsLine("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string defrag = sysfsLine("/sys/kernel/mm/transparent_hugepage/defrag");
  LargeVector<char> v(size_t(16) << 20, 1);
  int64_t gained = hugePageBytes() - before;
  if (enabled.empty() || enabled.find("[never]") != std::string::npos ||
      defrag.find("[never]") != std::string::npos)
    GTEST_SKIP() << "transparent huge pages: enabled '" << enabled << "', defrag '" << defrag
                 << "'; got " << gained << " bytes on them";
  EXPECT_GE(gained, int64_t(8) << 20) << "enabled '" << enabled << "', defrag '" << defrag << "'";
}
#endif

} // namespace
