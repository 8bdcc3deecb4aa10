// What the allreduce tests share (tests/coll/allreduce_test.cc on host buffers,
// tests/gpu/allreduce_device.cc on device buffers): the types and ops, each rank's data (which any
// rank can recompute), the two-shot's exact result (kernels/reduce.h's fold in rank order), the
// double-precision tolerance check, and result hashes compared across ranks.
#pragma once

#include <dlfcn.h>
#include <mpi.h>

#include <cinttypes>
#include <cstddef>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "kernels/reduce.h"

namespace allreduce_check {

using mpizip::format::DType;
using mpizip::kernels::reduce::Op;
namespace reduce = mpizip::kernels::reduce;

inline int rank = 0, nranks = 1;
inline int failures = 0;

#define CHECK(cond, ...)                                                                \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      std::fprintf(stderr, "rank %d: %s:%d: check failed: ", rank, __FILE__, __LINE__); \
      std::fprintf(stderr, __VA_ARGS__);                                                \
      std::fprintf(stderr, "\n");                                                       \
      ++failures;                                                                       \
    }                                                                                   \
  } while (0)

struct Type {
  const char* name;
  DType dtype;
  MPI_Datatype mpi;
  size_t bytes;
};

struct OpInfo {
  const char* name;
  Op op;
  MPI_Op mpi;
};

inline const OpInfo kOps[] = {{"sum", Op::kSum, MPI_SUM},
                              {"prod", Op::kProd, MPI_PROD},
                              {"min", Op::kMin, MPI_MIN},
                              {"max", Op::kMax, MPI_MAX}};

inline uint64_t mix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Rank r's element i for a case, as a float: U[-1, 1] for SUM, MIN and MAX (with signed zeros
// sprinkled in, and NaNs where `nan` says), 1 + U[-1/64, 1/64] for PROD, so products stay finite.
inline float value(int r, uint64_t i, Op op, uint64_t seed, bool nan) {
  const uint64_t h = mix(seed ^ mix(static_cast<uint64_t>(r) << 40 ^ i));
  const float u =
      static_cast<float>(static_cast<double>(h >> 40) / static_cast<double>(1ull << 23) - 1.0);
  if (op == Op::kProd) return 1.0f + u / 64.0f;
  if (i % 97 == 3) return (r % 2) ? -0.0f : 0.0f;
  if (nan && i % 101 == 5 && static_cast<int>((i / 101) % static_cast<uint64_t>(nranks)) == r) {
    return std::nanf("");
  }
  return u;
}

// Stores a float as an element of the type (bf16 and fp16 round to nearest even).
inline void store(const Type& t, float f, void* dst) {
  switch (t.dtype) {
    case DType::kFp32:
      std::memcpy(dst, &f, 4);
      break;
    case DType::kFp64: {
      const double d = f;
      std::memcpy(dst, &d, 8);
      break;
    }
    case DType::kBf16: {
      const uint16_t h = reduce::f32_to_bf16(f);
      std::memcpy(dst, &h, 2);
      break;
    }
    case DType::kE4m3: {
      const uint8_t b = reduce::f32_to_fp8<4, 3>(f);
      std::memcpy(dst, &b, 1);
      break;
    }
    case DType::kE5m2: {
      const uint8_t b = reduce::f32_to_fp8<5, 2>(f);
      std::memcpy(dst, &b, 1);
      break;
    }
    default: {
      const uint16_t h = reduce::f32_to_fp16(f);
      std::memcpy(dst, &h, 2);
      break;
    }
  }
}

inline double as_double(const Type& t, const void* p) {
  switch (t.dtype) {
    case DType::kFp32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case DType::kFp64: {
      double d;
      std::memcpy(&d, p, 8);
      return d;
    }
    case DType::kBf16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return reduce::bf16_to_f32(h);
    }
    case DType::kE4m3:
      return reduce::fp8_to_f32<4, 3>(*static_cast<const uint8_t*>(p));
    case DType::kE5m2:
      return reduce::fp8_to_f32<5, 2>(*static_cast<const uint8_t*>(p));
    default: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return reduce::fp16_to_f32(h);
    }
  }
}

inline std::vector<uint8_t> inputs_of(const Type& t, int r, uint64_t count, Op op, uint64_t seed,
                                      bool nan) {
  std::vector<uint8_t> v(count * t.bytes);
  for (uint64_t i = 0; i < count; ++i) store(t, value(r, i, op, seed, nan), v.data() + i * t.bytes);
  return v;
}

// The two-shot's result: kernels/reduce.h's fold over the ranks' inputs in rank order.
template <DType T, Op O>
void fold_all(const std::vector<std::vector<uint8_t>>& in, uint64_t count, uint8_t* out) {
  using F = reduce::Fold<reduce::type_of(T), O>;
  using S = typename F::Storage;
  for (uint64_t i = 0; i < count; ++i) {
    S x;
    std::memcpy(&x, in[0].data() + i * sizeof(S), sizeof(S));
    typename F::State acc = F::first(x);
    for (size_t r = 1; r < in.size(); ++r) {
      std::memcpy(&x, in[r].data() + i * sizeof(S), sizeof(S));
      acc = F::next(acc, x);
    }
    const S y = F::last(acc);
    std::memcpy(out + i * sizeof(S), &y, sizeof(S));
  }
}

template <DType T>
void fold_op(Op op, const std::vector<std::vector<uint8_t>>& in, uint64_t count, uint8_t* out) {
  switch (op) {
    case Op::kSum:
      fold_all<T, Op::kSum>(in, count, out);
      break;
    case Op::kProd:
      fold_all<T, Op::kProd>(in, count, out);
      break;
    case Op::kMin:
      fold_all<T, Op::kMin>(in, count, out);
      break;
    case Op::kMax:
      fold_all<T, Op::kMax>(in, count, out);
      break;
    default:  // the float types' ops only (the tests' kOps)
      break;
  }
}

inline std::vector<uint8_t> expected_fold(const Type& t, Op op,
                                          const std::vector<std::vector<uint8_t>>& in,
                                          uint64_t count) {
  std::vector<uint8_t> out(count * t.bytes);
  switch (t.dtype) {
    case DType::kFp32:
      fold_op<DType::kFp32>(op, in, count, out.data());
      break;
    case DType::kFp64:
      fold_op<DType::kFp64>(op, in, count, out.data());
      break;
    case DType::kBf16:
      fold_op<DType::kBf16>(op, in, count, out.data());
      break;
    case DType::kE4m3:
      fold_op<DType::kE4m3>(op, in, count, out.data());
      break;
    case DType::kE5m2:
      fold_op<DType::kE5m2>(op, in, count, out.data());
      break;
    default:
      fold_op<DType::kFp16>(op, in, count, out.data());
      break;
  }
  return out;
}

// The hierarchical collectives' result (coll/hierarchical.h) on nodes of `per_node` consecutive
// ranks: each node's inputs folded in rank order, then the nodes' results in node order (each fold
// kernels/reduce.h's, rounded to the element type). `per_node` 0: the flat rank-order fold.
inline std::vector<uint8_t> hierarchical_fold(const Type& t, Op op,
                                              const std::vector<std::vector<uint8_t>>& in,
                                              uint64_t count, int per_node) {
  if (per_node <= 0) return expected_fold(t, op, in, count);
  std::vector<std::vector<uint8_t>> nodes;
  for (size_t k = 0; k < in.size(); k += static_cast<size_t>(per_node)) {
    const std::vector<std::vector<uint8_t>> node(in.begin() + static_cast<std::ptrdiff_t>(k),
                                                 in.begin() + static_cast<std::ptrdiff_t>(k) + per_node);
    nodes.push_back(expected_fold(t, op, node, count));
  }
  return expected_fold(t, op, nodes, count);
}

// Whether `got` is within floating-point tolerance of the exact result of the inputs (computed in
// double precision): SUM within (P - 1) accumulation roundings of sum |x| plus the final rounding,
// PROD within as many relative roundings, MIN and MAX equal (+0 and -0 alike). Elements with a NaN
// input are not checked here (the fold comparison covers them).
// `staged`: the fold rounds to the element type between stages too (the hierarchical
// collectives; `stage_roundings` of them), each rounding within u_out of the magnitudes summed.
inline int tolerance_failures(const Type& t, Op op, const std::vector<std::vector<uint8_t>>& in,
                              uint64_t count, const uint8_t* got, bool staged = false,
                              int stage_roundings = 1) {
  // fp8: the fold comparison alone (a relative bound does not hold across its subnormals and its
  // overflow to NaN or infinity; tests/unit/reduce_cpu_test checks its rounding against the OCP
  // definition, every pair).
  if (t.dtype == DType::kE4m3 || t.dtype == DType::kE5m2) return 0;
  const double u_acc = t.dtype == DType::kFp64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
  const double u_out = t.dtype == DType::kBf16   ? std::ldexp(1.0, -8)
                       : t.dtype == DType::kFp16 ? std::ldexp(1.0, -11)
                                                 : 0.0;
  const double p = static_cast<double>(in.size());
  int bad = 0;
  for (uint64_t i = 0; i < count; ++i) {
    double ref = 0, mag = 0;
    bool nan = false;
    for (size_t r = 0; r < in.size(); ++r) {
      const double x = as_double(t, in[r].data() + i * t.bytes);
      nan = nan || std::isnan(x);
      if (r == 0)
        ref = x, mag = std::fabs(x);
      else if (op == Op::kSum)
        ref += x, mag += std::fabs(x);
      else if (op == Op::kProd)
        ref *= x;
      else if (op == Op::kMin)
        ref = std::fmin(ref, x);
      else
        ref = std::fmax(ref, x);
    }
    if (nan) continue;
    const double y = as_double(t, got + i * t.bytes);
    double bound = 0;
    // Twice the accumulation bound: the double-precision reference rounds too (fp64 inputs).
    if (op == Op::kSum) bound = 2 * (p - 1) * u_acc * mag + u_out * std::fabs(ref);
    if (op == Op::kProd) bound = (2 * (p - 1) * u_acc * 1.01 + u_out) * std::fabs(ref);
    if (staged && op == Op::kSum) bound += 1.01 * stage_roundings * u_out * mag;
    if (staged && op == Op::kProd) bound += 1.01 * stage_roundings * p * u_out * std::fabs(ref);
    if (!(std::fabs(y - ref) <= bound)) {
      if (bad++ < 3) {
        std::fprintf(stderr,
                     "rank %d: %s element %" PRIu64 ": %.17g, expected %.17g (bound %.3g)\n", rank,
                     t.name, i, y, ref, bound);
      }
    }
  }
  return bad;
}

inline uint64_t fnv1a(const uint8_t* p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

inline bool same_on_all_ranks(uint64_t h, MPI_Comm comm) {
  std::vector<uint64_t> all(static_cast<size_t>(nranks));
  MPI_Allgather(&h, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, comm);
  for (uint64_t x : all) {
    if (x != all[0]) return false;
  }
  return true;
}

// MPIZip's datatype `symbol` when the library is loaded, else MPI_DATATYPE_NULL.
inline MPI_Datatype lookup_type(const char* symbol) {
  auto* p = static_cast<MPI_Datatype*>(dlsym(RTLD_DEFAULT, symbol));
  return p != nullptr ? *p : MPI_DATATYPE_NULL;
}

// The types under test: MPI_FLOAT and MPI_DOUBLE, and MPIZIP_BF16 and MPIZIP_FP16 when MPIZip is
// loaded (`mpizip`).
// `fp8`: MPIZip's E4M3 and E5M2 too (their sums round to fp8 once, so a test of them must compare
// with the fold, never within a tolerance).
inline std::vector<Type> test_types(bool mpizip, bool fp8 = false) {
  std::vector<Type> types = {{"float", DType::kFp32, MPI_FLOAT, 4},
                             {"double", DType::kFp64, MPI_DOUBLE, 8}};
  if (mpizip) {
    types.push_back({"bf16", DType::kBf16, lookup_type("MPIZip_bf16"), 2});
    types.push_back({"fp16", DType::kFp16, lookup_type("MPIZip_fp16"), 2});
    if (fp8) {
      types.push_back({"fp8_e4m3", DType::kE4m3, lookup_type("MPIZip_fp8_e4m3"), 1});
      types.push_back({"fp8_e5m2", DType::kE5m2, lookup_type("MPIZip_fp8_e5m2"), 1});
    }
  }
  return types;
}

// Whether MPIZip is loaded and active in this process.
inline bool mpizip_active() {
  auto active = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "MPIZip_Active"));
  return active != nullptr && active();
}

}  // namespace allreduce_check
