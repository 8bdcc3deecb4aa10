#include "osu-bench/common/data.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <numbers>

namespace osub {

namespace {

#ifndef OSUB_DATA_DIR
#define OSUB_DATA_DIR ".data"
#endif

constexpr const char* kRealWeightsFile = "real_fp32.bin";
constexpr uint64_t kBaseSeed = 0x4d50495a6970ull;  // "MPIZip"
// Ranks read the weights from different offsets, so reductions do not add a buffer to itself.
constexpr uint64_t kRealRankStride = 1000003;
// Generating in chunks bounds the fp32 scratch memory whatever the buffer size.
constexpr size_t kChunk = size_t(1) << 16;

// SplitMix64 finaliser: a counter-based generator, so element i needs no state from i - 1.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t rank_seed(int rank) { return mix(kBaseSeed + uint64_t(rank)); }

// A double in [0, 1) with 53 random bits.
double unit(uint64_t bits) { return double(bits >> 11) * 0x1p-53; }

// Drawn in double and rounded once to fp32, so small values keep a full fp32 mantissa.
float uniform_value(uint64_t seed, uint64_t i) {
  return float(2.0 * unit(mix(seed ^ mix(i))) - 1.0);
}

// Box-Muller on two independent counters; u1 is in (0, 1] so the logarithm is finite.
float normal_value(uint64_t seed, uint64_t i) {
  double u1 = 1.0 - unit(mix(seed ^ mix(2 * i)));
  double u2 = unit(mix(seed ^ mix(2 * i + 1)));
  return float(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2));
}

void fill_chunk(DataKind kind, int rank, uint64_t first, std::span<float> out,
                const RealWeights* real) {
  uint64_t seed = rank_seed(rank);
  switch (kind) {
    case DataKind::kUniform:
      for (size_t j = 0; j < out.size(); ++j) out[j] = uniform_value(seed, first + j);
      return;
    case DataKind::kNormal:
      for (size_t j = 0; j < out.size(); ++j) out[j] = normal_value(seed, first + j);
      return;
    case DataKind::kReal: {
      std::span<const float> w = real->values();
      uint64_t offset = uint64_t(rank) * kRealRankStride;
      for (size_t j = 0; j < out.size(); ++j) out[j] = w[(offset + first + j) % w.size()];
      return;
    }
    case DataKind::kConstant:
    case DataKind::kBits:
      return;  // not drawn in fp32: see generate_data_range
  }
}

}  // namespace

std::string_view data_kind_name(DataKind k) {
  switch (k) {
    case DataKind::kConstant:
      return "constant";
    case DataKind::kUniform:
      return "uniform";
    case DataKind::kNormal:
      return "normal";
    case DataKind::kReal:
      return "real";
    case DataKind::kBits:
      return "bits";
  }
  return "?";
}

std::optional<DataKind> data_kind_from_name(std::string_view name) {
  for (DataKind k : {DataKind::kConstant, DataKind::kUniform, DataKind::kNormal, DataKind::kReal,
                     DataKind::kBits})
    if (data_kind_name(k) == name) return k;
  return std::nullopt;
}

std::string data_kind_label(DataKind k, ElemType t) {
  std::string cast = t == ElemType::kFloat ? "" : ", cast to " + std::string(elem_type_name(t));
  switch (k) {
    case DataKind::kConstant:
      return "constant (OSU-style, compresses trivially)";
    case DataKind::kUniform:
      return "uniform U[-1,1] (drawn in fp32" + cast + ")";
    case DataKind::kNormal:
      return "normal N(0,1) (drawn in fp32" + cast + ")";
    case DataKind::kReal:
      return "real (trained fp32 weights" + cast + ", repeated)";
    case DataKind::kBits:
      return "bits (random bit patterns, NaNs included: incompressible)";
  }
  return "?";
}

std::string RealWeights::default_path() {
  if (const char* file = std::getenv("MPIZIP_REAL_WEIGHTS"); file && *file) return file;
  const char* dir = std::getenv("MPIZIP_DATA_DIR");
  return std::string(dir && *dir ? dir : OSUB_DATA_DIR) + "/" + kRealWeightsFile;
}

std::optional<RealWeights> RealWeights::load(const std::string& path, std::string& error) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) {
    error = "cannot open " + path +
            " (run osu-bench/data/fetch-real-weights.sh, or set "
            "MPIZIP_REAL_WEIGHTS)";
    return std::nullopt;
  }
  auto bytes = size_t(in.tellg());
  if (bytes == 0 || bytes % sizeof(float)) {
    error = path + " is not a non-empty file of fp32 values (" + std::to_string(bytes) + " bytes)";
    return std::nullopt;
  }
  static_assert(std::endian::native == std::endian::little, "the weights file is little-endian");
  RealWeights w;
  w.path_ = path;
  w.values_.resize(bytes / sizeof(float));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(w.values_.data()), std::streamsize(bytes));
  if (!in) {
    error = "cannot read " + path;
    return std::nullopt;
  }
  return w;
}

void generate_data(DataKind kind, ElemType t, int rank, size_t count, const RealWeights* real,
                   std::byte* out) {
  generate_data_range(kind, t, rank, 0, count, real, out);
}

void generate_data_range(DataKind kind, ElemType t, int rank, size_t first, size_t count,
                         const RealWeights* real, std::byte* out) {
  size_t elem = elem_type_size(t);
  if (kind == DataKind::kConstant) {
    std::memset(out, kConstantByte, count * elem);
    return;
  }
  if (kind == DataKind::kBits) {  // every byte from the counter: the element's width does not matter
    uint64_t seed = rank_seed(rank);
    for (size_t b = 0; b < count * elem; b += 8) {
      uint64_t word = mix(seed ^ mix(first * elem + b));
      std::memcpy(out + b, &word, std::min<size_t>(8, count * elem - b));
    }
    return;
  }
  std::vector<float> chunk(std::min(count, kChunk));
  for (size_t done = 0; done < count; done += kChunk) {
    std::span<float> part(chunk.data(), std::min(kChunk, count - done));
    fill_chunk(kind, rank, first + done, part, real);
    cast_from_float(t, part, out + done * elem);
  }
}

}  // namespace osub
