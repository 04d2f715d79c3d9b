//===- Limits.h - the size budgets of every reader ------------*- C++ -*-===//
//
// One place for what tbc will read before refusing: far beyond any real
// file of the kind, small enough that a hostile one cannot take gigabytes of
// memory (a parsed JSON value costs ~150 bytes) or overflow a size_t.
// docs/robustness.md lists them.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_SUPPORT_LIMITS_H
#define TBC_SUPPORT_LIMITS_H

#include "tbc/Support/Json.h"

#include <cstdint>

namespace tbc::limits {

/// config.json, native specs, generation configs: real ones are a few KB.
inline constexpr json::Limits kConfigJson{size_t(16) << 20, size_t(1) << 20};
/// model.safetensors.index.json: one entry per tensor (~100 bytes each).
inline constexpr json::Limits kIndexJson{size_t(64) << 20, size_t(1) << 21};
/// A safetensors header: the format caps it at 100 MB; about six values per
/// tensor, so 2M values is ~300k tensors in one file.
inline constexpr json::Limits kSafetensorsHeader{size_t(100) * 1000 * 1000,
                                                 size_t(1) << 21};
/// A module's manifest (an 8B model's is ~200 KB).
inline constexpr json::Limits kManifest{size_t(64) << 20, size_t(1) << 20};
/// A whole .tbcm file (manifest + host code).
inline constexpr uint64_t kModuleFileBytes = uint64_t(2) << 30;
/// A tokens file for `tbc run --tokens-file`.
inline constexpr uint64_t kTokensFileBytes = uint64_t(256) << 20;
/// tbc IR: bytes, and how deeply brackets may nest before MLIR's recursive
/// parser sees it (real IR nests a few levels; the parser's stack does not
/// survive tens of thousands).
inline constexpr uint64_t kIRFileBytes = uint64_t(1) << 30;
inline constexpr int kIRNesting = 256;
/// Positions one session may hold (2^24 = 16M tokens): bounds every
/// position-times-width product the runtime forms.
inline constexpr int64_t kMaxPositions = int64_t(1) << 24;
/// Most f32 values of scratch a kernel may ask a session for (1 GiB).
inline constexpr int64_t kMaxScratchFloats = int64_t(1) << 28;
/// Widest row of a kernel's staging array (real ones: a model's widest
/// projection input, ~50k); with kMaxPositions rows, far from overflowing.
inline constexpr int64_t kMaxStagingWidth = int64_t(1) << 20;
/// Most i64 scalars a kernel may take after its buffers (real ones: an
/// attention's window, 1).
inline constexpr int64_t kMaxKernelScalars = 8;
/// A CUDA session's staging array (the tiled projection's 16-bit
/// activations) holds its rows in multiples of this many: the tiled
/// projection copies whole tiles of 128 rows without clamping the last
/// (TiledProjection.cpp, tiledProjection).
inline constexpr int64_t kStagingRowMultiple = 128;
/// Most dynamic shared memory a launch may ask a block for (an H100's or
/// H200's 227 KB; a GPU with less refuses the launch at load).
inline constexpr int64_t kMaxDynamicSharedBytes = int64_t(227) << 10;

} // namespace tbc::limits

#endif // TBC_SUPPORT_LIMITS_H
