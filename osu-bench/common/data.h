// What the benchmark buffers hold. Every kind is reproducible: element i of rank r is a function of
// (kind, type, r, i) alone, so any rank can regenerate what any other rank sent, and a prefix of a
// large buffer equals the smaller buffer.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "osu-bench/common/elem_type.h"

namespace osub {

enum class DataKind {
  kConstant,  // one repeated byte, as OSU fills its buffers: compresses to nothing
  kUniform,   // U[-1,1] drawn in fp32, then cast
  kNormal,    // N(0,1) drawn in fp32, then cast
  kReal,      // trained fp32 weights (see RealWeights), cast, repeated to fill the buffer
  kBits,      // random bit patterns of the element's width (NaNs included): does not compress
};

std::string_view data_kind_name(DataKind k);
std::optional<DataKind> data_kind_from_name(std::string_view name);
// One line for the benchmark header, e.g. "uniform U[-1,1] (drawn in fp32, cast to bf16)".
std::string data_kind_label(DataKind k, ElemType t);

// The byte OSU's benchmarks fill send buffers with.
inline constexpr unsigned char kConstantByte = 'a';

// Trained weights: a raw file of little-endian fp32 values written by
// osu-bench/data/fetch-real-weights.sh.
class RealWeights {
 public:
  // The file named by MPIZIP_REAL_WEIGHTS, else real_fp32.bin in MPIZIP_DATA_DIR, else in the
  // build tree's cache directory.
  static std::string default_path();
  // Loads the file; on failure returns nullopt and says why in error.
  static std::optional<RealWeights> load(const std::string& path, std::string& error);

  std::span<const float> values() const { return values_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::vector<float> values_;
};

// Fills out with count elements of type t: what rank sends. real must be set for kReal.
void generate_data(DataKind kind, ElemType t, int rank, size_t count, const RealWeights* real,
                   std::byte* out);
// Elements [first, first + count) of the same sequence: generate_data is generate_data_range
// from 0, so consecutive ranges (a model's tensors) are distinct parts of one rank's data.
void generate_data_range(DataKind kind, ElemType t, int rank, size_t first, size_t count,
                         const RealWeights* real, std::byte* out);

}  // namespace osub
