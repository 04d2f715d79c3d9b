//===- ModuleFileTest.cpp - .tbcm container and .npy round trips ----------===//

#include "tbc/Support/ModuleFile.h"
#include "tbc/Support/Npy.h"

#include <gtest/gtest.h>

using namespace tbc;
using namespace tbc::rt;

TEST(ModuleFile, RoundTrips) {
  ModuleFile in{"{\"format\": \"tbcm\"}", {{"host.so", std::string("\0\x7f" "ELF", 5)}, {"sm_90.ptx", "ptx"}}};
  std::string bytes = encodeModuleFile(in);
  ModuleFile out;
  std::string error;
  ASSERT_TRUE(decodeModuleFile(bytes, out, error)) << error;
  EXPECT_EQ(out.manifest, in.manifest);
  ASSERT_EQ(out.blobs.size(), 2u);
  EXPECT_EQ(out.blobs[0].bytes, in.blobs[0].bytes);
  EXPECT_EQ(out.blobs[1].name, "sm_90.ptx");
}

TEST(ModuleFile, RejectsEveryTruncation) {
  std::string bytes = encodeModuleFile({"{}", {{"host.so", "0123456789"}}});
  for (size_t n = 0; n < bytes.size(); ++n) {
    ModuleFile out;
    std::string error;
    EXPECT_FALSE(decodeModuleFile(bytes.substr(0, n), out, error)) << n;
    EXPECT_FALSE(error.empty());
  }
}

TEST(ModuleFile, RejectsEverySingleBitFlip) {
  std::string bytes = encodeModuleFile({"{\"a\": 1}", {{"host.so", "code"}}});
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] ^= 0x10;
    ModuleFile out;
    std::string error;
    EXPECT_FALSE(decodeModuleFile(bad, out, error)) << "byte " << i;
  }
}

TEST(Npy, RoundTripsAndPadsHeaderTo64Bytes) {
  std::vector<float> data{1.5f, -2.0f, 3.25f, 0.0f, 7.0f, 8.0f};
  std::string bytes = encodeNpy(data, {2, 3});
  EXPECT_EQ((bytes.size() - data.size() * 4) % 64, 0u);
  EXPECT_NE(bytes.find("'shape': (2, 3)"), std::string::npos);
  std::vector<float> back;
  std::vector<int64_t> shape;
  std::string error;
  ASSERT_TRUE(decodeNpy(bytes, back, shape, error)) << error;
  EXPECT_EQ(shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(back, data);
  ASSERT_TRUE(decodeNpy(encodeNpy({4.0f}, {1}), back, shape, error));
  EXPECT_EQ(shape, (std::vector<int64_t>{1}));
}
