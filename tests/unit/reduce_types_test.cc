// Every predefined MPI datatype and op that MPIZip reduces itself (src/core/reduce_type.h) gives
// MPI's result: the CPU reduce (kernels/reduce_cpu.h, the same arithmetic as the GPU reduce and the
// TMA engine's fold, kernels/reduce.h) against the C operators folded in rank order (written here,
// apart from kernels/reduce.h), and the MPI library's own fold of MPI_Reduce_local calls against
// the same (which checks the test's reading of each datatype), on every pair of 8-bit operands and on random and edge values of the wider
// integers, the pair types of MPI_MINLOC and MPI_MAXLOC (ties and NaN values included) and finite
// floats. Every pair that MPIZip takes must be one the MPI library accepts; the pairs MPI defines
// (C integers with every op but MINLOC/MAXLOC, the pair types with MINLOC/MAXLOC, ...) must be
// taken. One process, MPI initialised by the test.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "include/mpizip.h"
#include "kernels/reduce_cpu.h"
#include "src/core/reduce_type.h"

namespace mpizip {
namespace {

using kernels::reduce::Op;
using kernels::reduce::Type;

struct Named {
  MPI_Datatype t;
  const char* name;
};
struct NamedOp {
  MPI_Op op;
  const char* name;
};

std::vector<Named> datatypes() {
  std::vector<Named> v = {
      {MPI_CHAR, "MPI_CHAR"}, {MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR"},
      {MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR"}, {MPI_BYTE, "MPI_BYTE"},
      {MPI_SHORT, "MPI_SHORT"}, {MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT"}, {MPI_INT, "MPI_INT"},
      {MPI_UNSIGNED, "MPI_UNSIGNED"}, {MPI_LONG, "MPI_LONG"},
      {MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG"}, {MPI_LONG_LONG_INT, "MPI_LONG_LONG_INT"},
      {MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG"}, {MPI_INT8_T, "MPI_INT8_T"},
      {MPI_UINT8_T, "MPI_UINT8_T"}, {MPI_INT16_T, "MPI_INT16_T"}, {MPI_UINT16_T, "MPI_UINT16_T"},
      {MPI_INT32_T, "MPI_INT32_T"}, {MPI_UINT32_T, "MPI_UINT32_T"}, {MPI_INT64_T, "MPI_INT64_T"},
      {MPI_UINT64_T, "MPI_UINT64_T"}, {MPI_AINT, "MPI_AINT"}, {MPI_OFFSET, "MPI_OFFSET"},
      {MPI_COUNT, "MPI_COUNT"}, {MPI_C_BOOL, "MPI_C_BOOL"}, {MPI_FLOAT, "MPI_FLOAT"},
      {MPI_DOUBLE, "MPI_DOUBLE"}, {MPI_FLOAT_INT, "MPI_FLOAT_INT"},
      {MPI_DOUBLE_INT, "MPI_DOUBLE_INT"}, {MPI_LONG_INT, "MPI_LONG_INT"}, {MPI_2INT, "MPI_2INT"},
      {MPI_SHORT_INT, "MPI_SHORT_INT"}, {MPI_WCHAR, "MPI_WCHAR"},
      {MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE"}, {MPI_C_FLOAT_COMPLEX, "MPI_C_FLOAT_COMPLEX"},
  };
  if (MPI_INTEGER != MPI_DATATYPE_NULL) v.push_back({MPI_INTEGER, "MPI_INTEGER"});
  return v;
}

const NamedOp kOps[] = {{MPI_SUM, "MPI_SUM"},     {MPI_PROD, "MPI_PROD"},
                        {MPI_MIN, "MPI_MIN"},     {MPI_MAX, "MPI_MAX"},
                        {MPI_LAND, "MPI_LAND"},   {MPI_LOR, "MPI_LOR"},
                        {MPI_LXOR, "MPI_LXOR"},   {MPI_BAND, "MPI_BAND"},
                        {MPI_BOR, "MPI_BOR"},     {MPI_BXOR, "MPI_BXOR"},
                        {MPI_MINLOC, "MPI_MINLOC"}, {MPI_MAXLOC, "MPI_MAXLOC"},
                        {MPI_REPLACE, "MPI_REPLACE"}};

int extent_of(MPI_Datatype t) {
  MPI_Aint lb = 0, extent = 0;
  MPI_Type_get_extent(t, &lb, &extent);
  return static_cast<int>(extent);
}

// Values of `count` elements of `t` (MPIZip's type `rt`) for input `r` of a test seeded `seed`:
// edge values often, random bits otherwise; pairs with few distinct values (ties) and their padding
// zero; floats finite (the MPI library keeps NaN payloads its own way; kernels/reduce.h makes them
// canonical on purpose).
std::vector<uint8_t> values(Type rt, MPI_Datatype t, uint64_t count, int r, uint64_t seed) {
  const int ext = extent_of(t);
  std::vector<uint8_t> v(count * static_cast<uint64_t>(ext), 0);
  std::mt19937_64 g(seed * 1000003u + static_cast<uint64_t>(r) * 7919u + static_cast<uint64_t>(rt));
  for (uint64_t i = 0; i < count; ++i) {
    uint8_t* e = v.data() + i * static_cast<uint64_t>(ext);
    const uint64_t x = g();
    switch (rt) {
      case Type::kFp32: {
        const float f = static_cast<float>(static_cast<int64_t>(x % 2001) - 1000) / 64.0f;
        std::memcpy(e, &f, 4);
        break;
      }
      case Type::kFp64: {
        const double d = static_cast<double>(static_cast<int64_t>(x % 20001) - 10000) / 1024.0;
        std::memcpy(e, &d, 8);
        break;
      }
      case Type::kFloatInt: case Type::kDoubleInt: case Type::kLongInt: case Type::k2Int:
      case Type::kShortInt: {
        const int k = static_cast<int>((x >> 8) % 64) - 8;  // indices may tie and be negative
        const int64_t small = static_cast<int64_t>(x % 5) - 2;
        if (rt == Type::kFloatInt) {
          float f = static_cast<float>(small);
          if (x % 97 == 0) f = -0.0f;
          if (x % 89 == 0) f = INFINITY;
          if (x % 83 == 0) f = std::nanf("");
          std::memcpy(e, &f, 4);
          std::memcpy(e + 4, &k, 4);
        } else if (rt == Type::kDoubleInt) {
          double d = static_cast<double>(small);
          if (x % 97 == 0) d = -0.0;
          if (x % 83 == 0) d = std::nan("");
          std::memcpy(e, &d, 8);
          std::memcpy(e + 8, &k, 4);
        } else if (rt == Type::kLongInt) {
          const int64_t l = x % 31 == 0 ? INT64_MIN : small;
          std::memcpy(e, &l, 8);
          std::memcpy(e + 8, &k, 4);
        } else if (rt == Type::k2Int) {
          const int32_t s = x % 31 == 0 ? INT32_MAX : static_cast<int32_t>(small);
          std::memcpy(e, &s, 4);
          std::memcpy(e + 4, &k, 4);
        } else {
          const int16_t s = static_cast<int16_t>(small);
          std::memcpy(e, &s, 2);
          std::memcpy(e + 4, &k, 4);
        }
        break;
      }
      default: {  // integers: edges (0, 1, -1, the extremes) a third of the time
        uint64_t bits = x;
        switch (x % 9) {
          case 0: bits = 0; break;
          case 1: bits = 1; break;
          case 2: bits = ~uint64_t{0}; break;
          case 3: bits = uint64_t{1} << (8 * ext - 1); break;         // the most negative
          case 4: bits = (uint64_t{1} << (8 * ext - 1)) - 1; break;   // the most positive
          default: break;
        }
        if (t == MPI_C_BOOL) bits &= 1;  // a C bool holds 0 or 1
        std::memcpy(e, &bits, static_cast<size_t>(ext));
      }
    }
  }
  return v;
}

// The MPI library's fold of `in` in rank order: acc = in[0]; acc = acc (op) in[r].
int library_fold(const std::vector<std::vector<uint8_t>>& in, MPI_Datatype t, MPI_Op op, int count,
                 std::vector<uint8_t>* out) {
  *out = in[0];
  for (size_t r = 1; r < in.size(); ++r) {
    std::vector<uint8_t> next = in[r];
    const int rc = MPI_Reduce_local(out->data(), next.data(), count, t, op);
    if (rc != MPI_SUCCESS) return rc;
    *out = std::move(next);
  }
  return MPI_SUCCESS;
}

std::string hex_at(const std::vector<uint8_t>& v, uint64_t i, int ext) {
  std::string s;
  char b[4];
  for (int k = 0; k < ext; ++k) {
    std::snprintf(b, sizeof b, "%02x", v[i * static_cast<uint64_t>(ext) + static_cast<uint64_t>(k)]);
    s += b;
  }
  return s;
}

// MPI's definition of the op, written here apart from kernels/reduce.h: the C expression of each
// op on the C type, folded in rank order.
template <typename S>
S c_op(Op o, S a, S b) {
  using U = std::make_unsigned_t<S>;
  using W = std::conditional_t<(sizeof(S) < sizeof(unsigned)), unsigned, U>;
  switch (o) {
    case Op::kSum: return static_cast<S>(static_cast<W>(static_cast<U>(a)) + static_cast<W>(static_cast<U>(b)));
    case Op::kProd: return static_cast<S>(static_cast<W>(static_cast<U>(a)) * static_cast<W>(static_cast<U>(b)));
    case Op::kMax: return a > b ? a : b;
    case Op::kMin: return a < b ? a : b;
    case Op::kLand: return static_cast<S>(a && b);
    case Op::kLor: return static_cast<S>(a || b);
    case Op::kLxor: return static_cast<S>((a ? 1 : 0) ^ (b ? 1 : 0));
    case Op::kBand: return static_cast<S>(a & b);
    case Op::kBor: return static_cast<S>(a | b);
    case Op::kBxor: return static_cast<S>(a ^ b);
    default: return a;
  }
}
template <typename V>
void c_loc(Op o, const uint8_t* a, uint8_t* b) {  // b = a (op) b, as MPI's MINLOC/MAXLOC
  V av, bv;
  int ak, bk;
  std::memcpy(&av, a, sizeof av);
  std::memcpy(&bv, b, sizeof bv);
  constexpr size_t koff = sizeof(V) >= 4 ? sizeof(V) : 4;
  std::memcpy(&ak, a + koff, 4);
  std::memcpy(&bk, b + koff, 4);
  if (o == Op::kMinloc ? av < bv : av > bv) {
    std::memcpy(b, &av, sizeof av);
    std::memcpy(b + koff, &ak, 4);
  } else if (av == bv && ak < bk) {
    std::memcpy(b + koff, &ak, 4);
  }
}
template <typename S>
void c_elem(Op o, const uint8_t* a, uint8_t* b) {
  S x, y;
  std::memcpy(&x, a, sizeof x);
  std::memcpy(&y, b, sizeof y);
  y = c_op<S>(o, x, y);
  std::memcpy(b, &y, sizeof y);
}
// b = a (op) b for one element of MPIZip's type `t`.
void c_element(Type t, Op o, const uint8_t* a, uint8_t* b) {
  switch (t) {
    case Type::kI8: return c_elem<int8_t>(o, a, b);
    case Type::kU8: return c_elem<uint8_t>(o, a, b);
    case Type::kI16: return c_elem<int16_t>(o, a, b);
    case Type::kU16: return c_elem<uint16_t>(o, a, b);
    case Type::kI32: return c_elem<int32_t>(o, a, b);
    case Type::kU32: return c_elem<uint32_t>(o, a, b);
    case Type::kI64: return c_elem<int64_t>(o, a, b);
    case Type::kU64: return c_elem<uint64_t>(o, a, b);
    case Type::kFp32: {
      float x, y;
      std::memcpy(&x, a, 4);
      std::memcpy(&y, b, 4);
      y = o == Op::kSum ? x + y : o == Op::kProd ? x * y : o == Op::kMax ? (x > y ? x : y) : (x < y ? x : y);
      std::memcpy(b, &y, 4);
      return;
    }
    case Type::kFp64: {
      double x, y;
      std::memcpy(&x, a, 8);
      std::memcpy(&y, b, 8);
      y = o == Op::kSum ? x + y : o == Op::kProd ? x * y : o == Op::kMax ? (x > y ? x : y) : (x < y ? x : y);
      std::memcpy(b, &y, 8);
      return;
    }
    case Type::kFloatInt: return c_loc<float>(o, a, b);
    case Type::kDoubleInt: return c_loc<double>(o, a, b);
    case Type::kLongInt: return c_loc<int64_t>(o, a, b);
    case Type::k2Int: return c_loc<int32_t>(o, a, b);
    case Type::kShortInt: return c_loc<int16_t>(o, a, b);
    default: return;
  }
}

std::vector<uint8_t> c_fold(Type t, Op o, const std::vector<std::vector<uint8_t>>& in, int ext) {
  std::vector<uint8_t> acc = in[0];
  for (size_t r = 1; r < in.size(); ++r) {
    std::vector<uint8_t> next = in[r];
    for (size_t i = 0; i < next.size(); i += static_cast<size_t>(ext))
      c_element(t, o, acc.data() + i, next.data() + i);
    acc = std::move(next);
  }
  return acc;
}

// The pairs where the MPI libraries on Debian 12 depart from MPI's definition (C's operators on the
// C type), seen by this test: Open MPI 4.1.4 compares MPI_UNSIGNED_LONG as signed in MIN and MAX;
// MPICH 4.0.2 compares the unsigned integers as signed in MIN and MAX. MPIZip follows the
// definition there; elsewhere the library's result is checked too.
bool library_departs(MPI_Datatype t, Op o) {
  if (o != Op::kMin && o != Op::kMax) return false;
  const auto red = core::reduction_of(t, MPI_MIN);
  if (!red) return false;
  const Type rt = red->type;
  return rt == Type::kU8 || rt == Type::kU16 || rt == Type::kU32 || rt == Type::kU64;
}

void expect_same(Type rt, Op o, MPI_Datatype t, MPI_Op op, const char* what,
                 const std::vector<std::vector<uint8_t>>& in, uint64_t count) {
  const int ext = extent_of(t);
  const std::vector<uint8_t> want = c_fold(rt, o, in, ext);
  std::vector<const void*> ptrs;
  for (const auto& x : in) ptrs.push_back(x.data());
  std::vector<uint8_t> got(want.size(), 0);
  ASSERT_EQ(kernels::cpu::reduce(rt, o, ptrs.data(), static_cast<int>(ptrs.size()), got.data(),
                                 count),
            Status::kOk)
      << what;
  std::vector<uint8_t> lib;
  ASSERT_EQ(library_fold(in, t, op, static_cast<int>(count), &lib), MPI_SUCCESS)
      << what << ": MPIZip reduces a pair the MPI library refuses";
  const bool check_lib = !library_departs(t, o);
  for (uint64_t i = 0; i < count; ++i) {
    const bool ours = std::memcmp(got.data() + i * ext, want.data() + i * ext, static_cast<size_t>(ext)) == 0;
    const bool theirs = !check_lib || std::memcmp(lib.data() + i * ext, want.data() + i * ext,
                                                  static_cast<size_t>(ext)) == 0;
    if (!ours || !theirs) {
      std::string ops;
      for (const auto& x : in) ops += " " + hex_at(x, i, ext);
      FAIL() << what << ": element " << i << " operands" << ops << ": MPI's definition "
             << hex_at(want, i, ext) << ", MPIZip " << hex_at(got, i, ext) << ", the MPI library "
             << hex_at(lib, i, ext);
    }
  }
}

TEST(ReduceTypes, EveryTakenPairMatchesTheLibrary) {
  int taken = 0;
  for (const Named& d : datatypes()) {
    for (const NamedOp& o : kOps) {
      const auto red = core::reduction_of(d.t, o.op);
      if (!red) continue;
      ++taken;
      const std::string what = std::string(d.name) + " x " + o.name;
      for (int P : {2, 3, 5}) {
        std::vector<std::vector<uint8_t>> in;
        for (int r = 0; r < P; ++r) in.push_back(values(red->type, d.t, 4099, r, 17 + P));
        expect_same(red->type, red->op, d.t, o.op, what.c_str(), in, 4099);
        if (HasFatalFailure()) return;
      }
    }
  }
  EXPECT_GE(taken, 200) << "far fewer pairs taken than MPI defines";
}

// Every pair of 8-bit operands, under every op an 8-bit type takes.
TEST(ReduceTypes, EveryPairOfBytes) {
  for (const Named& d : std::vector<Named>{{MPI_CHAR, "MPI_CHAR"},
                                           {MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR"},
                                           {MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR"},
                                           {MPI_BYTE, "MPI_BYTE"}}) {
    std::vector<std::vector<uint8_t>> in(2, std::vector<uint8_t>(65536));
    for (uint32_t i = 0; i < 65536; ++i) {
      in[0][i] = static_cast<uint8_t>(i & 255);
      in[1][i] = static_cast<uint8_t>(i >> 8);
    }
    for (const NamedOp& o : kOps) {
      const auto red = core::reduction_of(d.t, o.op);
      if (!red) continue;
      expect_same(red->type, red->op, d.t, o.op, (std::string(d.name) + " x " + o.name).c_str(),
                  in, 65536);
      if (HasFatalFailure()) return;
    }
  }
}

TEST(ReduceTypes, WhatMpiDefinesIsTaken) {
  for (MPI_Datatype t : {MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_SHORT, MPI_UNSIGNED_SHORT, MPI_INT,
                         MPI_UNSIGNED, MPI_LONG, MPI_UNSIGNED_LONG, MPI_LONG_LONG_INT,
                         MPI_UNSIGNED_LONG_LONG, MPI_INT8_T, MPI_UINT8_T, MPI_INT16_T,
                         MPI_UINT16_T, MPI_INT32_T, MPI_UINT32_T, MPI_INT64_T, MPI_UINT64_T}) {
    for (MPI_Op op : {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_LAND, MPI_LOR, MPI_LXOR, MPI_BAND,
                      MPI_BOR, MPI_BXOR}) {
      EXPECT_TRUE(core::reduction_of(t, op).has_value());
    }
    EXPECT_FALSE(core::reduction_of(t, MPI_MINLOC).has_value());
  }
  for (MPI_Datatype t : {MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_INT, MPI_2INT, MPI_SHORT_INT}) {
    EXPECT_TRUE(core::reduction_of(t, MPI_MINLOC).has_value());
    EXPECT_TRUE(core::reduction_of(t, MPI_MAXLOC).has_value());
    EXPECT_FALSE(core::reduction_of(t, MPI_SUM).has_value());
  }
  for (MPI_Op op : {MPI_LAND, MPI_LOR, MPI_LXOR})
    EXPECT_TRUE(core::reduction_of(MPI_C_BOOL, op).has_value());
  for (MPI_Op op : {MPI_BAND, MPI_BOR, MPI_BXOR})
    EXPECT_TRUE(core::reduction_of(MPI_BYTE, op).has_value());
  // OSU's benchmarks reduce MPI_CHAR with MPI_SUM.
  EXPECT_TRUE(core::reduction_of(MPI_CHAR, MPI_SUM).has_value());
  // Not MPIZip's: user ops, MPI_REPLACE, bitwise ops on floats, complex and long double types.
  MPI_Op user = MPI_OP_NULL;
  MPI_Op_create([](void*, void*, int*, MPI_Datatype*) {}, 1, &user);
  EXPECT_FALSE(core::reduction_of(MPI_INT, user).has_value());
  MPI_Op_free(&user);
  EXPECT_FALSE(core::reduction_of(MPI_INT, MPI_REPLACE).has_value());
  EXPECT_FALSE(core::reduction_of(MPI_FLOAT, MPI_BAND).has_value());
  EXPECT_FALSE(core::reduction_of(MPI_C_FLOAT_COMPLEX, MPI_SUM).has_value());
  EXPECT_FALSE(core::reduction_of(MPI_LONG_DOUBLE, MPI_SUM).has_value());
  EXPECT_FALSE(core::reduction_of(MPI_DATATYPE_NULL, MPI_SUM).has_value());
  EXPECT_FALSE(core::reduction_of(MPI_INT, MPI_OP_NULL).has_value());
}

// The reduce refuses what kernels/reduce.h does not define.
TEST(ReduceTypes, InvalidPairsRefused) {
  int32_t a = 1, y = 0;
  const void* in[1] = {&a};
  EXPECT_EQ(kernels::cpu::reduce(Type::kI32, Op::kMinloc, in, 1, &y, 1), Status::kInvalidArgument);
  EXPECT_EQ(kernels::cpu::reduce(Type::kFp32, Op::kBand, in, 1, &y, 1), Status::kInvalidArgument);
  EXPECT_EQ(kernels::cpu::reduce(Type::k2Int, Op::kSum, in, 1, &y, 1), Status::kInvalidArgument);
  EXPECT_EQ(kernels::cpu::reduce(static_cast<Type>(9), Op::kSum, in, 1, &y, 1),
            Status::kInvalidArgument);
}

}  // namespace
}  // namespace mpizip

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // Open MPI 4.1's AVX op component saturates 8- and 16-bit integer sums of 16 (8) elements or
  // more, where its own C loops (and MPICH) wrap around as C does (open-mpi/ompi#8045, closed as
  // won't fix): the reference is the MPI library's C loops. Read by Open MPI only.
  setenv("OMPI_MCA_op", "^avx", 1);
  MPI_Init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  const int rc = RUN_ALL_TESTS();
  MPI_Finalize();
  return rc;
}
