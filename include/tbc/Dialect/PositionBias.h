//===- PositionBias.h - ALiBi slopes and T5 relative buckets ----*- C++ -*-===//
//
// One definition of the attention position biases' constants, used by the
// frontends (which slopes a checkpoint's architecture implies) and by both
// lowerings (the bucket of a relative distance).
//
//===----------------------------------------------------------------------===//

#ifndef TBC_DIALECT_POSITIONBIAS_H
#define TBC_DIALECT_POSITIONBIAS_H

#include "tbc/Dialect/TbcDialect.h"

#include <cstdint>
#include <vector>

namespace tbc {

/// ALiBi slopes of BLOOM (transformers' _get_alibi_slopes, the paper's
/// rule): 2^(-8i/n) for i = 1..n with n the largest power of two <= heads;
/// the remaining heads take every other slope of the 2n rule.
std::vector<double> bloomAlibiSlopes(int64_t heads);

/// ALiBi slopes of MPT (build_mpt_alibi_tensor): 2^(-i * maxBias / n) for
/// i = 1..n with n the smallest power of two >= heads; with fewer heads the
/// odd-numbered slopes come first, then the even ones, cut to `heads`.
std::vector<double> mptAlibiSlopes(int64_t heads, double maxBias);

/// Buckets on each side of the query: all of them for causal buckets, half
/// for bidirectional ones (the upper half is for keys after the query). The
/// first half of a side's buckets are exact distances, so a side's exact
/// range is relativeBucketsPerSide(...) / 2.
inline int64_t relativeBucketsPerSide(int64_t numBuckets, bool bidirectional) {
  return bidirectional ? numBuckets / 2 : numBuckets;
}

/// bucket[n] for the distances n = 0..max_distance on one side of the
/// query (the bidirectional upper half adds num_buckets / 2 for keys after
/// it), as transformers' T5Attention._relative_position_bucket computes it
/// in float32; distances past max_distance share bucket[max_distance].
std::vector<int32_t> relativeBucketTable(RelativeBucketsAttr buckets);

} // namespace tbc

#endif // TBC_DIALECT_POSITIONBIAS_H
