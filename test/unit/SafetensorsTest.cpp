//===- SafetensorsTest.cpp - every rule of the safetensors format ---------===//
//
// Table-driven: one hostile file per rule the reader enforces, each with the
// exact error it must produce (docs/robustness.md lists them).
//
//===----------------------------------------------------------------------===//

#include "tbc/Support/Safetensors.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <unistd.h>

using namespace tbc::rt;

namespace {
/// 8-byte little-endian header length, header, data.
std::string file(const std::string &header, const std::string &data,
                 int64_t declaredLength = -1) {
  uint64_t n = declaredLength >= 0 ? uint64_t(declaredLength) : header.size();
  std::string out;
  for (int i = 0; i < 8; ++i)
    out.push_back(char((n >> (8 * i)) & 0xff));
  return out + header + data;
}

std::string writeTemp(const std::string &bytes) {
  char path[] = "/tmp/tbc-safetensors-XXXXXX";
  int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(write(fd, bytes.data(), bytes.size()), ssize_t(bytes.size()));
  close(fd);
  return path;
}

struct Case {
  const char *rule;
  std::string bytes;
  const char *error; // expected substring after "<path>: "
};

const std::string f32x2 = std::string(8, '\0');
} // namespace

TEST(Safetensors, AcceptsAWellFormedFile) {
  std::string path = writeTemp(file(
      R"({"__metadata__": {"format": "pt"}, "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
      R"( "b": {"dtype": "BF16", "shape": [1, 2], "data_offsets": [8, 12]}})",
      f32x2 + std::string(4, '\0')));
  std::string error;
  auto f = SafetensorsFile::open(path, error);
  ASSERT_TRUE(f) << error;
  EXPECT_EQ(f->tensors().size(), 2u);
  EXPECT_EQ(f->metadata().at("format"), "pt");
  unlink(path.c_str());
}

TEST(Safetensors, RejectsEveryRuleViolationWithItsMessage) {
  const std::string ok = R"("dtype": "F32", "shape": [2], "data_offsets": [0, 8])";
  std::vector<Case> cases = {
      {"shorter than the length field", std::string("\x05\0\0", 3),
       "truncated: shorter than the 8-byte header length"},
      {"header length over 100 MB", file("{}", "", 100000001),
       "header length 100000001 exceeds the format's 100 MB limit"},
      {"header length past the end", file("{}", "", 64),
       "header length 64 runs past the end of the 10-byte file"},
      {"header not JSON", file("{\"a\": ", ""), "header is not valid JSON"},
      {"header not an object", file("[1, 2]", ""), "header is not a JSON object"},
      {"invalid UTF-8", file("{\"\xff\": 1}", ""), "invalid UTF-8 in string"},
      {"duplicate tensor names",
       file("{\"a\": {" + ok + "}, \"a\": {" + ok + "}}", f32x2),
       "duplicate key 'a'"},
      {"entry not an object", file(R"({"a": 3})", ""), "tensor 'a': entry is not an object"},
      {"missing dtype", file(R"({"a": {"shape": [2], "data_offsets": [0, 8]}})", f32x2),
       "tensor 'a': missing string 'dtype'"},
      {"unknown dtype",
       file(R"({"a": {"dtype": "F128", "shape": [2], "data_offsets": [0, 8]}})", f32x2),
       "tensor 'a': unknown dtype 'F128'"},
      {"missing shape", file(R"({"a": {"dtype": "F32", "data_offsets": [0, 8]}})", f32x2),
       "tensor 'a': missing array 'shape'"},
      {"negative dimension",
       file(R"({"a": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", f32x2),
       "tensor 'a': shape entries must be non-negative integers"},
      {"absurd shape",
       file(R"({"a": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 8]}})", f32x2),
       "tensor 'a': shape is too large"},
      // 2^62 F32 elements are 2^64 bytes: a product that wraps to 0 would
      // match the empty byte range [0, 0].
      {"shape whose byte count wraps",
       file(R"({"a": {"dtype": "F32", "shape": [4611686018427387904], "data_offsets": [0, 0]}})", ""),
       "tensor 'a': shape is too large"},
      {"fractional shape",
       file(R"({"a": {"dtype": "F32", "shape": [2.0], "data_offsets": [0, 8]}})", f32x2),
       "tensor 'a': shape entries must be non-negative integers"},
      {"header past the value budget",
       file("[" + [] {
         std::string zeros;
         for (int i = 0; i < (1 << 21) + 1; ++i)
           zeros += i ? ",0" : "0";
         return zeros;
       }() + "]", ""),
       "header is not valid JSON (line 1, column 4194304): document holds more than 2097152 values"},
      {"malformed offsets",
       file(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0]}})", f32x2),
       "tensor 'a': 'data_offsets' must be two non-negative integers"},
      {"offsets out of bounds",
       file(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 16]}})", f32x2),
       "tensor 'a': data_offsets [0, 16] lie outside the 8-byte data section"},
      {"offsets reversed",
       file(R"({"a": {"dtype": "F32", "shape": [0], "data_offsets": [8, 0]}})", f32x2),
       "tensor 'a': data_offsets [8, 0] lie outside the 8-byte data section"},
      {"byte range does not match shape x dtype",
       file(R"({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", f32x2),
       "tensor 'a': byte range of 8 bytes does not match shape x dtype (12 bytes)"},
      {"overlapping ranges",
       file(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
            R"( "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", f32x2),
       "tensor byte ranges overlap at offset 4"},
      {"a hole between ranges",
       file(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", f32x2),
       "tensor byte ranges leave a hole at offset 0"},
      {"trailing bytes",
       file(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", f32x2),
       "data section has 4 trailing bytes not covered by any tensor"},
      {"metadata not an object", file(R"({"__metadata__": 3})", ""),
       "__metadata__ must be an object of strings"},
      {"metadata value not a string", file(R"({"__metadata__": {"k": 1}})", ""),
       "__metadata__ value 'k' is not a string"},
  };
  for (const Case &c : cases) {
    std::string path = writeTemp(c.bytes);
    std::string error;
    EXPECT_FALSE(SafetensorsFile::open(path, error)) << c.rule;
    EXPECT_NE(error.find(c.error), std::string::npos)
        << c.rule << ": got '" << error << "'";
    EXPECT_EQ(error.rfind(path + ": ", 0), 0u) << c.rule << ": names the file";
    unlink(path.c_str());
  }
}

TEST(Safetensors, ShardedIndexMustPointAtItsShards) {
  char dir[] = "/tmp/tbc-shards-XXXXXX";
  ASSERT_TRUE(mkdtemp(dir));
  std::string d = dir;
  std::ofstream(d + "/model-1.safetensors", std::ios::binary)
      << file(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", f32x2);
  std::ofstream(d + "/model.safetensors.index.json")
      << R"({"weight_map": {"a": "model-1.safetensors", "b": "model-1.safetensors"}})";
  std::string error;
  EXPECT_FALSE(WeightStore::open(d, error));
  EXPECT_NE(error.find("weight_map names 'b' in model-1.safetensors, which does not hold it"),
            std::string::npos) << error;
  std::ofstream(d + "/model.safetensors.index.json")
      << R"({"weight_map": {"a": "../etc/passwd"}})";
  EXPECT_FALSE(WeightStore::open(d, error));
  EXPECT_NE(error.find("expected a file name in the same folder"), std::string::npos) << error;
  std::ofstream(d + "/model.safetensors.index.json") << R"({"weight_map": {"a": "model-1.safetensors"}})";
  auto store = WeightStore::open(d, error);
  ASSERT_TRUE(store) << error;
  EXPECT_TRUE(store->find("a"));
  std::remove((d + "/model-1.safetensors").c_str());
  std::remove((d + "/model.safetensors.index.json").c_str());
  rmdir(dir);
}
