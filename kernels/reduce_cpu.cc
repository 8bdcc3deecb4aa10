#include "kernels/reduce_cpu.h"

#include <algorithm>
#include <type_traits>

namespace mpizip::kernels::cpu {
namespace {

// Elements folded at a time: the partial results of a chunk stay in cache while every input's
// chunk streams through once.
constexpr uint64_t kChunk = 2048;

template <reduce::Type T, reduce::Op O>
void fold(const void* const* inputs, int n, void* out, uint64_t count) {
  using F = reduce::Fold<T, O>;
  using S = typename F::Storage;
  typename F::State acc[kChunk];
  for (uint64_t first = 0; first < count; first += kChunk) {
    const uint64_t len = std::min(kChunk, count - first);
    const S* x0 = static_cast<const S*>(inputs[0]) + first;
    for (uint64_t i = 0; i < len; ++i) acc[i] = F::first(x0[i]);
    for (int r = 1; r < n; ++r) {
      const S* xr = static_cast<const S*>(inputs[r]) + first;
      for (uint64_t i = 0; i < len; ++i) acc[i] = F::next(acc[i], xr[i]);
    }
    S* y = static_cast<S*>(out) + first;
    for (uint64_t i = 0; i < len; ++i) y[i] = F::last(acc[i]);
  }
}

}  // namespace

Status reduce(reduce::Type t, reduce::Op op, const void* const* inputs, int n_inputs, void* out,
              uint64_t count) {
  if (n_inputs < 1 || inputs == nullptr || !reduce::valid(t, op)) {
    return Status::kInvalidArgument;
  }
  if (count == 0) return Status::kOk;
  if (out == nullptr) return Status::kInvalidArgument;
  for (int r = 0; r < n_inputs; ++r) {
    if (inputs[r] == nullptr) return Status::kInvalidArgument;
  }
  return reduce::dispatch(t, op, [&](auto type, auto o) {
    fold<decltype(type)::value, decltype(o)::value>(inputs, n_inputs, out, count);
    return Status::kOk;
  });
}

}  // namespace mpizip::kernels::cpu
