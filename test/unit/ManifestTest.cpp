//===- ManifestTest.cpp - the manifest schema, written and read back ------===//

#include "tbc/Support/Manifest.h"

#include <gtest/gtest.h>

#include <cstdint>

using namespace tbc;
using namespace tbc::manifest;

namespace {
/// A two-step schedule: an embedding gather, then a projection to the
/// logits through a packed weight, on the CUDA-style launch fields too.
Manifest sample() {
  Manifest m;
  m.target = "cpu";
  m.model = {"LlamaForCausalLM", 96, 64, std::nullopt};
  m.params = {{"embed.weight", {96, 16}}, {"head.weight", {96, 16}}};
  Weight embed{"param", 0, {}, 0, 0, false, {96, 16}};
  Weight head{"param", 1, {}, 0, 0, false, {96, 16}};
  Weight packed{"pack", -1, {1}, 0, 0, false, {3, 16, 32}};
  Weight gain{"fold_gain", -1, {0}, 0, 1.0, false, {96, 16}};
  m.weights = {embed, head, packed, gain};
  m.buffers = {{"token_ids"}, {"positions"}, {"activation", 16}, {"activation", 96},
               {"view", 8, 2, 8}};
  Kernel gather{"k0_embedding", "k0_embedding_packed", "embedding", false, true,
                std::nullopt, {{96, 16}, {-1, -1}, {-1, -1, 16}}, {}};
  Kernel proj{"k1_linear", "k1_linear_packed", "projection", false, true,
              WorkRange{"columns", 96, 32}, {{-1, -1, 16}, {3, 16, 32}, {-1, -1, 96}, {2}},
              {Launch{"k1_linear", 32, 8, 12, 8}}};
  m.kernels = {gather, proj};
  m.steps = {{0, {{true, 0}, {false, 0}, {false, 2}}, {}},
             {1, {{false, 2}, {true, 2}, {false, 3}}, {}}};
  m.output = 3;
  return m;
}
} // namespace

TEST(Manifest, WrittenManifestReadsBack) {
  Manifest in = sample();
  std::string text = write(in);
  Manifest out;
  std::string error;
  ASSERT_TRUE(read(text, out, error)) << error << "\n" << text;
  EXPECT_EQ(out.target, "cpu");
  EXPECT_EQ(out.model.vocabSize, 96);
  EXPECT_EQ(out.model.maxPositions, 64);
  ASSERT_EQ(out.weights.size(), 4u);
  EXPECT_EQ(out.weights[2].op, "pack");
  EXPECT_EQ(out.weights[2].inputs, std::vector<int>{1});
  EXPECT_EQ(out.weights[2].shape, (std::vector<int64_t>{3, 16, 32}));
  EXPECT_EQ(out.weights[3].offset, 1.0);
  ASSERT_EQ(out.buffers.size(), 5u);
  EXPECT_EQ(out.buffers[4].kind, "view");
  EXPECT_EQ(out.buffers[4].of, 2);
  EXPECT_EQ(out.buffers[4].offset, 8);
  ASSERT_EQ(out.kernels.size(), 2u);
  EXPECT_EQ(out.kernels[0].role, "embedding");
  EXPECT_FALSE(out.kernels[0].work);
  ASSERT_TRUE(out.kernels[1].work);
  EXPECT_EQ(out.kernels[1].work->unit, "columns");
  EXPECT_EQ(out.kernels[1].work->count, 96);
  EXPECT_EQ(out.kernels[1].work->align, 32);
  ASSERT_EQ(out.kernels[1].launches.size(), 1u);
  EXPECT_EQ(out.kernels[1].launches[0].gridX, 12);
  EXPECT_EQ(out.kernels[1].signature, in.kernels[1].signature);
  ASSERT_EQ(out.steps.size(), 2u);
  EXPECT_TRUE(out.steps[1].args[1].weight);
  EXPECT_EQ(out.steps[1].args[1].id, 2);
  EXPECT_EQ(out.output, 3);
  // Writing what was read gives the same text: nothing is lost either way.
  EXPECT_EQ(write(out), text);
}

// Version 3 (before kernels took scalars) still reads, as it was written;
// older and newer versions are refused.
TEST(Manifest, AnotherVersionIsRefused) {
  std::string text = write(sample());
  size_t at = text.find("\"version\": 4");
  ASSERT_NE(at, std::string::npos);
  Manifest out;
  std::string error;
  std::string v3 = text;
  EXPECT_TRUE(read(v3.replace(at, 12, "\"version\": 3"), out, error)) << error;
  for (const char *other : {"\"version\": 2", "\"version\": 5"}) {
    std::string t = text;
    EXPECT_FALSE(read(t.replace(at, 12, other), out, error)) << other;
    EXPECT_NE(error.find("this runtime reads versions 3 to 4; compile the model again"),
              std::string::npos)
        << error;
  }
}

TEST(Manifest, ReferencesAreChecked) {
  Manifest m = sample();
  m.steps[1].args[1] = {true, 9}; // no weight 9
  Manifest out;
  std::string error;
  EXPECT_FALSE(read(write(m), out, error));
  EXPECT_EQ(error, "manifest: a step argument refers to an unknown buffer or weight");

  m = sample();
  m.kernels[1].work->align = 0;
  EXPECT_FALSE(read(write(m), out, error));
  EXPECT_EQ(error, "manifest: kernel 'k1_linear_packed' has a malformed work range");
}

// A kernel's scratch (CUDA attention's decode slices) reads back, absent
// means none, and a count outside [1, kMaxScratchFloats] is refused.
TEST(Manifest, ScratchCountReadsBackAndIsBounded) {
  Manifest m = sample();
  m.kernels[1].scratch = 17280;
  Manifest out;
  std::string error;
  ASSERT_TRUE(read(write(m), out, error)) << error;
  EXPECT_EQ(out.kernels[0].scratch, 0);
  EXPECT_EQ(out.kernels[1].scratch, 17280);
  std::string text = write(m);
  size_t at = text.find("\"scratch\": 17280");
  ASSERT_NE(at, std::string::npos);
  for (const char *bad : {"\"scratch\": 0", "\"scratch\": -4", "\"scratch\": 1.5",
                          "\"scratch\": 999999999999"}) {
    std::string t = text;
    t.replace(at, 16, bad);
    EXPECT_FALSE(read(t, out, error)) << bad;
    EXPECT_NE(error.find("scratch must be a count of f32 values"), std::string::npos) << error;
  }
}

// A kernel's scalar operands (an attention's window): the count reads back
// (bounded), and each step passes exactly that many values of its own.
TEST(Manifest, ScalarsReadBackAndEveryStepPassesThem) {
  Manifest m = sample();
  m.kernels[1].scalars = 1;
  m.steps[1].scalars = {4096};
  Manifest out;
  std::string error;
  ASSERT_TRUE(read(write(m), out, error)) << error;
  EXPECT_EQ(out.kernels[0].scalars, 0);
  EXPECT_EQ(out.kernels[1].scalars, 1);
  EXPECT_TRUE(out.steps[0].scalars.empty());
  EXPECT_EQ(out.steps[1].scalars, std::vector<int64_t>{4096});
  EXPECT_EQ(write(out), write(m));

  for (std::vector<int64_t> wrong : {std::vector<int64_t>{}, std::vector<int64_t>{0, 4096}}) {
    Manifest bad = m;
    bad.steps[1].scalars = wrong;
    EXPECT_FALSE(read(write(bad), out, error));
    EXPECT_EQ(error, "manifest: a step of kernel 'k1_linear_packed' passes " +
                         std::to_string(wrong.size()) + " scalars; the kernel takes 1");
  }
  Manifest many = m;
  many.kernels[1].scalars = 9;
  EXPECT_FALSE(read(write(many), out, error));
  EXPECT_NE(error.find("scalars must be a count from 1 to 8"), std::string::npos) << error;
}

// Launch variants by chunk size: each serves its row range, and together
// they must serve every chunk, or a chunk would leave the kernel's results
// unwritten.
TEST(Manifest, LaunchVariantsServeEveryChunkSize) {
  Manifest m = sample();
  m.kernels[1].launches = {Launch{"k1_linear_row1", 32, 8, 12, 1, 1, 1},
                           Launch{"k1_linear_rows8", 32, 8, 12, 8, 2, 15},
                           Launch{"k1_linear", 32, 4, 3, 16, 16, 0}};
  Manifest out;
  std::string error;
  ASSERT_TRUE(read(write(m), out, error)) << error;
  const std::vector<Launch> &ls = out.kernels[1].launches;
  ASSERT_EQ(ls.size(), 3u);
  EXPECT_EQ(ls[1].minRows, 2);
  EXPECT_EQ(ls[1].maxRows, 15);
  EXPECT_TRUE(ls[0].serves(1));
  EXPECT_FALSE(ls[0].serves(2));
  EXPECT_TRUE(ls[1].serves(15));
  EXPECT_FALSE(ls[1].serves(16));
  EXPECT_TRUE(ls[2].serves(16));
  EXPECT_TRUE(ls[2].serves(1 << 20));

  m.kernels[1].launches[1].maxRows = 14; // 15 rows: no launch
  EXPECT_FALSE(read(write(m), out, error));
  EXPECT_EQ(error, "manifest: kernel 'k1_linear_packed' has no launch for some chunk sizes");
  m.kernels[1].launches[1].maxRows = 1; // [2, 1]
  EXPECT_FALSE(read(write(m), out, error));
  EXPECT_EQ(error, "manifest: kernel 'k1_linear_packed' has a launch with a malformed row range");
  m.kernels[1].launches[1].maxRows = INT64_MAX;
  EXPECT_FALSE(read(write(m), out, error));
  EXPECT_EQ(error, "manifest: kernel 'k1_linear_packed' has a launch with a malformed row range");
  m.kernels[1].launches = {Launch{"k1_linear", 32, 4, 3, 16, 1, 64}}; // none past 64
  EXPECT_FALSE(read(write(m), out, error));
  EXPECT_EQ(error, "manifest: kernel 'k1_linear_packed' has no launch for some chunk sizes");
}

TEST(Manifest, ConvertedWeightsCarryTheirType) {
  Manifest m = sample();
  Weight bf16{"convert", -1, {2}, 0, 0, false, {3, 16, 32}};
  bf16.dtype = "bf16";
  m.weights.push_back(bf16);
  m.steps[1].args[1] = {true, 4};
  Manifest out;
  std::string error;
  ASSERT_TRUE(read(write(m), out, error)) << error;
  EXPECT_EQ(out.weights[4].dtype, "bf16");
  EXPECT_EQ(out.weights[2].dtype, "f32");
  // Transforms compute in f32: a conversion is the last step of a weight.
  Weight after{"weight_row_sums", -1, {4}, 0, 0, false, {96}};
  m.weights.push_back(after);
  EXPECT_FALSE(read(write(m), out, error));
  EXPECT_EQ(error, "manifest: weight transform 'weight_row_sums' of a bf16 weight (convert "
                   "comes last)");
}

/// `w` appended to sample(), written and read back: the entry read.
static Weight readBack(const Weight &w) {
  Manifest m = sample(), out;
  m.weights.push_back(w);
  std::string error;
  EXPECT_TRUE(read(write(m), out, error)) << error;
  EXPECT_EQ(write(out), write(m));
  return out.weights.size() == m.weights.size() ? out.weights.back() : Weight{};
}

/// The error reading sample() plus `w` with `field` (its `, "key": value`
/// text) left out of the file.
static std::string errorWithout(const Weight &w, const std::string &field) {
  Manifest m = sample(), out;
  m.weights.push_back(w);
  std::string text = write(m), error;
  size_t at = text.find(field);
  if (at == std::string::npos)
    return "no " + field + " in the manifest";
  text.erase(at, field.size());
  EXPECT_FALSE(read(text, out, error));
  return error;
}

TEST(Manifest, FillWeightsCarryTheirValue) {
  Weight ones{"fill", -1, {}, 0, 0, false, {16}};
  ones.value = 1.0;
  Weight got = readBack(ones);
  EXPECT_EQ(got.op, "fill");
  EXPECT_TRUE(got.inputs.empty());
  EXPECT_EQ(got.value, 1.0);
  // A fill without its value is refused, not made of zeros.
  EXPECT_EQ(errorWithout(ones, ", \"value\": 1"), "manifest: a fill weight needs a finite value");
}

TEST(Manifest, RowSlicesCarryTheirStart) {
  Weight rows{"row_slice", -1, {0}, 0, 0, false, {90, 16}};
  rows.start = 2;
  Weight got = readBack(rows);
  EXPECT_EQ(got.op, "row_slice");
  EXPECT_EQ(got.start, 2);
  EXPECT_EQ(errorWithout(rows, ", \"start\": 2"),
            "manifest: a row_slice weight needs its start row");
}

TEST(Manifest, SwapHalvesCarryTheirBlock) {
  Weight swap{"swap_halves", -1, {0}, 0, 0, false, {90, 16}};
  swap.block = 18;
  Weight got = readBack(swap);
  EXPECT_EQ(got.op, "swap_halves");
  EXPECT_EQ(got.block, 18);
  EXPECT_EQ(errorWithout(swap, ", \"block\": 18"),
            "manifest: a swap_halves weight needs its block");
}

TEST(Manifest, TapsReadBackAndAreChecked) {
  Manifest m = sample();
  m.taps = {{"model.embed_tokens", 2}, {"model.layers.0.self_attn.q_proj", 4}};
  Manifest out;
  std::string error;
  ASSERT_TRUE(read(write(m), out, error)) << error;
  ASSERT_EQ(out.taps.size(), 2u);
  EXPECT_EQ(out.taps[1].name, "model.layers.0.self_attn.q_proj");
  EXPECT_EQ(out.taps[1].buffer, 4);
  EXPECT_EQ(write(out), write(m));
  // Without taps the list is not written at all.
  EXPECT_EQ(write(sample()).find("\"taps\""), std::string::npos);

  m.taps = {{"model.layers.0", 9}}; // no buffer 9
  EXPECT_FALSE(read(write(m), out, error));
  EXPECT_EQ(error, "manifest: a tap needs a name and a buffer of the schedule");
  m.taps = {{"token_ids", 0}};
  EXPECT_FALSE(read(write(m), out, error));
  EXPECT_EQ(error, "manifest: tap 'token_ids' must name an activation, not a token_ids buffer");
}
