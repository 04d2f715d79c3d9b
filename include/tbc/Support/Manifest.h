//===- Manifest.h - the schema of a module's manifest -----------*- C++ -*-===//
//
// The manifest is the part of a .tbcm the runtime follows: which checkpoint
// tensors to bind, the bind-time transforms, the buffers of a forward, the
// kernels (with their role, work range, signature and launch data) and the
// steps calling them. One set of structs, written by the compiler's module
// writer (lib/Target/Manifest.cpp) and read by the runtime, with one
// to-JSON and one from-JSON in this LLVM-free layer, so that the two sides
// cannot drift apart. docs/module-format.md documents every field.
//
//===----------------------------------------------------------------------===//

#ifndef TBC_SUPPORT_MANIFEST_H
#define TBC_SUPPORT_MANIFEST_H

#include "tbc/Support/Json.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tbc::manifest {

/// The manifest's format version, and the oldest one a runtime still
/// reads: it refuses any other. 4 added the kernels' and steps' `scalars`
/// (a version 3 manifest has none, so it reads as it was written), so that
/// a runtime without them refuses a module whose steps pass them.
inline constexpr int64_t kVersion = 4, kOldestVersion = 3;

struct Model {
  std::string architecture;
  int64_t vocabSize = 0;
  int64_t maxPositions = 0; // 0: no learned limit recorded
  /// The config.json fields the frontend read (Hugging Face models only).
  std::optional<json::Value> config;
};

/// A checkpoint tensor the module needs, by its exact name.
struct Param {
  std::string name;
  std::vector<int64_t> shape;
};

/// What a kernel reads: a param, or a bind-time transform of earlier weights.
/// The weight transforms that pack a matrix in panels of output columns:
/// `pack`, and `pack_pairs`, whose panels hold k in pairs (the CPU's bf16
/// dot products; tbc/Conversion/TbcToCPU/KernelABI.h).
inline bool isPackOp(const std::string &op) { return op == "pack" || op == "pack_pairs"; }

struct Weight {
  // param, fill, concat, row_slice, swap_halves, fold_gain, weight_row_sums, fold_bias, pack[_pairs], convert
  std::string op;
  int param = -1; // op == param
  std::vector<int> inputs;
  int64_t dim = 0;    // concat
  double offset = 0;  // fold_gain
  bool inOut = false; // the source is [in, out] (GPT-2)
  std::vector<int64_t> shape;
  /// How the kernels read it: f32, or bf16 / f16 (a `convert`, rounded to
  /// nearest even and kept in 16 bits).
  std::string dtype = "f32";
  double value = 0; // fill: every element
  int64_t start = 0; // row_slice: the first row taken
  int64_t block = 0; // swap_halves: rows a block (its halves swap)
};

/// Memory of one forward (kv_cache: of the session).
/// The model's per-row i32 inputs, [batch, seq]: token ids, positions, and
/// (for RoPE scalings that depend on it) each row's sequence length once
/// the call's tokens are in.
inline bool isSequenceInput(const std::string &kind) {
  return kind == "token_ids" || kind == "positions" || kind == "sequence_lengths";
}

struct Buffer {
  // token_ids, positions, sequence_lengths, activation, view, kv_cache
  std::string kind;
  int64_t width = 0;
  int of = -1;        // view: the root buffer
  int64_t offset = 0; // view: column offset in the root
  std::string cacheType = "f32"; // kv_cache: f32, bf16 or f16 (the target's choice)
  std::string dtype() const {
    return isSequenceInput(kind) ? "i32" : kind == "kv_cache" ? cacheType : "f32";
  }
};

/// A step operand: a weight or a buffer, by id.
struct Arg {
  bool weight = false;
  int id = -1;
};

/// The part of its work a kernel can be given ([begin, end) as its last
/// operand): `count` units (output columns, key/value heads), shares
/// starting at multiples of `align`.
struct WorkRange {
  std::string unit; // columns, kv_heads
  int64_t count = 0;
  int64_t align = 1;
};

/// One device function of a kernel and its launch geometry (CUDA). A
/// kernel's launches run in order, each only for chunks whose row count is
/// in [minRows, maxRows] (maxRows 0: no bound), so that one op can have
/// variants by chunk size (a GEMV for decoding, a tensor-core GEMM for
/// prefill) and the runtime picks per call.
struct Launch {
  std::string symbol;
  int64_t blockX = 1, blockY = 1, gridX = 1, rowsPerBlock = 1;
  int64_t minRows = 1, maxRows = 0;
  /// Bytes of dynamic shared memory a block takes (0: none; past 48 KB the
  /// runtime raises the function's limit first).
  int64_t sharedBytes = 0;
  /// The code waits for the kernels before it (griddepcontrol.wait) before
  /// it touches any memory but its weights: the runtime may launch it
  /// before they end (programmatic dependent launch, sm_90).
  bool programmatic = false;
  bool serves(int64_t rows) const { return rows >= minRows && (maxRows == 0 || rows <= maxRows); }
};

struct Kernel {
  std::string name;   // the outlined function (k3_fused_linear)
  std::string symbol; // what the code exports for it
  std::string role;   // embedding, projection, attention, norm, pointwise
  bool kvCache = false;
  bool rowParallel = false; // rows of a chunk are independent
  std::optional<WorkRange> work;
  /// Shapes of operands, results and caches the code was compiled for (-1:
  /// dynamic).
  std::vector<std::vector<int64_t>> signature;
  std::vector<Launch> launches; // empty on targets that launch by symbol
  std::string cacheType = "f32"; // kvCache: the caches' element type the code reads
  /// f32 values of scratch memory the code takes after the caches (a
  /// session's, reused by every step that needs it; 0: none).
  int64_t scratch = 0;
  /// The width K of a [T, K] array of 16-bit values the code takes after
  /// its scratch (T: the chunk's rows; the session's, reused; 0: none).
  int64_t staging = 0;
  /// i64 values the code takes last, each step's own (`Step::scalars`):
  /// its op's scalar operands (an attention's `window(%w)`, which lets
  /// layers of different windows share the kernel; tbc/Target/Manifest.h).
  int64_t scalars = 0;
};

struct Step {
  int kernel = -1;
  std::vector<Arg> args;
  std::vector<int> caches; // kv_cache buffer ids (attention)
  std::vector<int64_t> scalars; // as many as the kernel's `scalars`
};

/// A tensor tap (tbc compile --taps): buffer `buffer` holds, once written,
/// the output of the Hugging Face module at path `name`.
struct Tap {
  std::string name;
  int buffer = -1;
};

struct Manifest {
  std::string target;
  Model model;
  std::vector<Param> params;
  std::vector<Weight> weights;
  std::vector<Buffer> buffers;
  std::vector<Kernel> kernels;
  std::vector<Step> steps;
  int output = -1; // the logits buffer
  std::vector<Tap> taps; // in the order the schedule writes them
};

/// The manifest as JSON text (one entry per line within each list).
std::string write(const Manifest &m);

/// Parses and checks the structure of a manifest: every field present with
/// its type, every reference (param, weight, buffer, kernel) in range and to
/// something earlier, the output a vocab-wide activation some step writes.
/// On failure, `error` says what ("manifest: ...").
bool read(std::string_view text, Manifest &m, std::string &error);

} // namespace tbc::manifest

#endif // TBC_SUPPORT_MANIFEST_H
