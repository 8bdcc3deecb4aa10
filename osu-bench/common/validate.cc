#include "osu-bench/common/validate.h"

#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>

namespace osub {

namespace {

// OSU fills receive buffers with 'b'; it only has to differ from what arrives.
constexpr uint8_t kPoisonByte = 'b';

template <typename T>
T load(const std::byte* p, size_t i) {
  T v;
  std::memcpy(&v, p + i * sizeof(T), sizeof(T));
  return v;
}

// The reference a float type is checked against: the rank-order sum, exact or within the bound.
template <typename T, typename Wide>
bool float_sum_ok(const std::vector<std::vector<std::byte>>& inputs, size_t i, T got) {
  T ordered = load<T>(inputs[0].data(), i);
  Wide exact = ordered, magnitude = std::fabs(Wide(ordered));
  for (size_t r = 1; r < inputs.size(); ++r) {
    T x = load<T>(inputs[r].data(), i);
    ordered += x;
    exact += x;
    magnitude += std::fabs(Wide(x));
  }
  if (std::memcmp(&ordered, &got, sizeof(T)) == 0) return true;
  if (inputs.size() <= 2 || !std::isfinite(got)) return false;
  Wide u = std::numeric_limits<T>::epsilon() / 2;
  // Twice the order bound also covers the wide reference's own rounding, which is far smaller.
  Wide bound = 2 * Wide(inputs.size() - 1) * u * magnitude;
  return std::fabs(Wide(got) - exact) <= bound;
}

template <typename T>
bool integer_sum_ok(const std::vector<std::vector<std::byte>>& inputs, size_t i, T got) {
  T sum = 0;
  for (const auto& in : inputs) sum = T(sum + load<T>(in.data(), i));  // wraps, as MPI_SUM does
  return sum == got;
}

template <typename T, typename Check>
bool check_all(const std::vector<std::vector<std::byte>>& inputs, size_t first,
               std::span<const std::byte> result, Check ok) {
  size_t count = result.size() / sizeof(T);
  for (size_t i = 0; i < count; ++i) {
    T got = load<T>(result.data(), i);
    if (!ok(inputs, first + i, got)) {
      std::fprintf(stderr, "validation: element %zu of the result differs from the reference\n",
                   first + i);
      return false;
    }
  }
  return true;
}

uint64_t fnv1a(std::span<const std::byte> bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (std::byte b : bytes) h = (h ^ uint64_t(b)) * 0x100000001b3ull;
  return h;
}

}  // namespace

void poison(const Context& ctx, Buffer& buf, size_t n) {
  if (ctx.opts.validate) buf.fill(kPoisonByte, n);
}

bool agree_valid(bool local) {
  int mine = local, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  return all != 0;
}

bool gathered(std::span<const std::byte> got, const std::vector<std::vector<std::byte>>& inputs,
              size_t bytes) {
  if (got.size() < bytes * inputs.size()) return false;
  for (size_t r = 0; r < inputs.size(); ++r)
    if (inputs[r].size() < bytes || std::memcmp(got.data() + r * bytes, inputs[r].data(), bytes) != 0)
      return false;
  return true;
}

bool exchanged(std::span<const std::byte> got, const std::vector<std::vector<std::byte>>& inputs,
               int rank, size_t bytes) {
  const size_t mine = size_t(rank) * bytes;
  if (got.size() < bytes * inputs.size()) return false;
  for (size_t r = 0; r < inputs.size(); ++r)
    if (inputs[r].size() < mine + bytes ||
        std::memcmp(got.data() + r * bytes, inputs[r].data() + mine, bytes) != 0)
      return false;
  return true;
}

bool blocks_placed(const Context& ctx, const Buffer& buf, const VLayout& layout,
                   const std::function<const std::byte*(int k)>& source) {
  std::vector<std::byte> expected(layout.extent * ctx.elem_size, std::byte{kPoisonByte});
  for (size_t k = 0; k < layout.counts.size(); ++k)
    std::memcpy(expected.data() + size_t(layout.displs[k]) * ctx.elem_size, source(int(k)),
                size_t(layout.counts[k]) * ctx.elem_size);
  return equals_bytes(buf, expected);
}

bool gathered_v(const Context& ctx, const Buffer& buf, const VLayout& layout,
                const std::vector<std::vector<std::byte>>& inputs) {
  return blocks_placed(ctx, buf, layout, [&](int k) { return inputs[size_t(k)].data(); });
}

bool equals_bytes(const Buffer& buf, std::span<const std::byte> expected) {
  std::vector<std::byte> got(expected.size());
  buf.download(got.data(), got.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != expected[i]) {
      std::fprintf(stderr, "validation: byte %zu received 0x%02x, sent 0x%02x\n", i,
                   unsigned(got[i]), unsigned(expected[i]));
      return false;
    }
  }
  return true;
}

bool check_sum(const Context& ctx, const std::vector<std::vector<std::byte>>& inputs, size_t first,
               std::span<const std::byte> result) {
  switch (ctx.opts.type) {
    case ElemType::kFloat:
      return check_all<float>(inputs, first, result, float_sum_ok<float, double>);
    case ElemType::kDouble:
      return check_all<double>(inputs, first, result, float_sum_ok<double, long double>);
    case ElemType::kBf16:
    case ElemType::kFp16:
      return check_all<uint16_t>(inputs, first, result, integer_sum_ok<uint16_t>);
    case ElemType::kFp8E4M3:
    case ElemType::kFp8E5M2:
    case ElemType::kChar:
    case ElemType::kByte:
      return check_all<uint8_t>(inputs, first, result, integer_sum_ok<uint8_t>);
  }
  return false;
}

bool same_on_all_ranks(const Buffer& buf, size_t n) {
  std::vector<std::byte> bytes(n);
  buf.download(bytes.data(), n);
  unsigned long long h = fnv1a(bytes), lo = 0, hi = 0;
  MPI_Allreduce(&h, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&h, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  return lo == hi;
}

const char* sum_check_description(const Context& ctx) {
  if (ctx.mpi.reduces_as_integer)
    return "Validation: bit-exact against the rank-order sum (integer MPI_SUM wraps around)";
  if (ctx.nranks <= 2) return "Validation: bit-exact against the rank-order sum";
  return "Validation: bit-exact against the rank-order sum, or within the bound of another "
         "association order ((n-1) u sum|x|): MPI may reduce in any order";
}

}  // namespace osub
