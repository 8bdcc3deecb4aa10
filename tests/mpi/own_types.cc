// Reductions of MPIZip's own float types (MPIZIP_BF16, MPIZIP_FP16, MPIZIP_FP8_E4M3,
// MPIZIP_FP8_E5M2) through every reducing call, on host buffers: MPI_Reduce, MPI_Allreduce,
// MPI_Scan, MPI_Exscan, MPI_Reduce_scatter, MPI_Reduce_scatter_block, MPI_Reduce_local and the
// non-blocking forms, with SUM, PROD, MIN and MAX. The MPI library knows these types only as
// integers; where no engine of MPIZip's takes the call, it gets MPIZip's own operation
// (src/core/reduce_type.h, library_op). Values are small integers (and signed zeros for MIN and
// MAX), exact in every type under every grouping the library may choose, so each result is
// checked exactly. Run with MPIZip loaded (the types exist only then).
#include <dlfcn.h>
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kernels/reduce.h"

namespace {

namespace reduce = mpizip::kernels::reduce;

struct Type {
  const char* name;
  MPI_Datatype mpi;
  int bytes;
  std::function<double(const uint8_t*)> get;
  std::function<void(double, uint8_t*)> put;
};

int rank = 0, nranks = 1, failures = 0;

void fail(const std::string& what) {
  if (failures++ < 10) std::fprintf(stderr, "own_types: rank %d: %s\n", rank, what.c_str());
}

void check_rc(int rc, const std::string& what) {
  if (rc != MPI_SUCCESS) fail(what + ": rc " + std::to_string(rc));
}

MPI_Datatype lookup(const char* symbol) {
  auto* p = static_cast<MPI_Datatype*>(dlsym(RTLD_DEFAULT, symbol));
  return p != nullptr ? *p : MPI_DATATYPE_NULL;
}

std::vector<Type> types() {
  return {
      {"bf16", lookup("MPIZip_bf16"), 2,
       [](const uint8_t* p) { uint16_t h; std::memcpy(&h, p, 2); return double(reduce::bf16_to_f32(h)); },
       [](double v, uint8_t* p) { uint16_t h = reduce::f32_to_bf16(float(v)); std::memcpy(p, &h, 2); }},
      {"fp16", lookup("MPIZip_fp16"), 2,
       [](const uint8_t* p) { uint16_t h; std::memcpy(&h, p, 2); return double(reduce::fp16_to_f32(h)); },
       [](double v, uint8_t* p) { uint16_t h = reduce::f32_to_fp16(float(v)); std::memcpy(p, &h, 2); }},
      {"e4m3", lookup("MPIZip_fp8_e4m3"), 1,
       [](const uint8_t* p) { return double(reduce::fp8_to_f32<4, 3>(*p)); },
       [](double v, uint8_t* p) { *p = reduce::f32_to_fp8<4, 3>(float(v)); }},
      {"e5m2", lookup("MPIZip_fp8_e5m2"), 1,
       [](const uint8_t* p) { return double(reduce::fp8_to_f32<5, 2>(*p)); },
       [](double v, uint8_t* p) { *p = reduce::f32_to_fp8<5, 2>(float(v)); }},
  };
}

struct Op {
  const char* name;
  MPI_Op mpi;
};
const Op kOps[] = {{"sum", MPI_SUM}, {"prod", MPI_PROD}, {"min", MPI_MIN}, {"max", MPI_MAX}};

// Rank r's element i: 0, 1 or 2 for SUM (sums of up to 4 ranks at most 8, exact in E5M2), 1 or 2
// for PROD (products at most 16 with 4 ranks), -2..2 for MIN and MAX.
double value(int r, int i, const Op& op) {
  const int k = (i * 7 + r * 3) % 5;
  if (op.mpi == MPI_SUM) return k % 3;
  if (op.mpi == MPI_PROD) return 1 + k % 2;
  return k - 2;
}

double fold(const Op& op, double a, double b) {
  if (op.mpi == MPI_SUM) return a + b;
  if (op.mpi == MPI_PROD) return a * b;
  if (op.mpi == MPI_MIN) return std::fmin(a, b);
  return std::fmax(a, b);
}

// The fold of ranks [0, upto) for element i.
double expect(const Op& op, int i, int upto) {
  double acc = value(0, i, op);
  for (int r = 1; r < upto; ++r) acc = fold(op, acc, value(r, i, op));
  return acc;
}

std::vector<uint8_t> mine(const Type& t, const Op& op, int count) {
  std::vector<uint8_t> v(static_cast<size_t>(count) * t.bytes);
  for (int i = 0; i < count; ++i) t.put(value(rank, i, op), v.data() + static_cast<size_t>(i) * t.bytes);
  return v;
}

void compare(const Type& t, const Op& op, const char* call, const uint8_t* got, int first, int count,
             int upto) {
  for (int i = 0; i < count; ++i) {
    const double want = expect(op, first + i, upto), y = t.get(got + static_cast<size_t>(i) * t.bytes);
    if (y != want) {
      fail(std::string(call) + " " + t.name + " " + op.name + ": element " + std::to_string(first + i) +
           " is " + std::to_string(y) + ", expected " + std::to_string(want));
      return;
    }
  }
}

void run(const Type& t, const Op& op, int count) {
  const std::vector<uint8_t> in = mine(t, op, count);
  const size_t bytes = in.size();
  std::vector<uint8_t> out(bytes * static_cast<size_t>(nranks));
  const std::string tag = std::string(t.name) + " " + op.name;
  MPI_Request req = MPI_REQUEST_NULL;

  check_rc(MPI_Reduce(in.data(), out.data(), count, t.mpi, op.mpi, 0, MPI_COMM_WORLD), "MPI_Reduce " + tag);
  if (rank == 0) compare(t, op, "MPI_Reduce", out.data(), 0, count, nranks);
  req = MPI_REQUEST_NULL;
  check_rc(MPI_Ireduce(in.data(), out.data(), count, t.mpi, op.mpi, nranks - 1, MPI_COMM_WORLD, &req),
           "MPI_Ireduce " + tag);
  check_rc(MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait (ireduce) " + tag);
  if (rank == nranks - 1) compare(t, op, "MPI_Ireduce", out.data(), 0, count, nranks);

  check_rc(MPI_Allreduce(in.data(), out.data(), count, t.mpi, op.mpi, MPI_COMM_WORLD), "MPI_Allreduce " + tag);
  compare(t, op, "MPI_Allreduce", out.data(), 0, count, nranks);
  req = MPI_REQUEST_NULL;
  check_rc(MPI_Iallreduce(in.data(), out.data(), count, t.mpi, op.mpi, MPI_COMM_WORLD, &req),
           "MPI_Iallreduce " + tag);
  check_rc(MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait (iallreduce) " + tag);
  compare(t, op, "MPI_Iallreduce", out.data(), 0, count, nranks);

  check_rc(MPI_Scan(in.data(), out.data(), count, t.mpi, op.mpi, MPI_COMM_WORLD), "MPI_Scan " + tag);
  compare(t, op, "MPI_Scan", out.data(), 0, count, rank + 1);
  req = MPI_REQUEST_NULL;
  check_rc(MPI_Iscan(in.data(), out.data(), count, t.mpi, op.mpi, MPI_COMM_WORLD, &req), "MPI_Iscan " + tag);
  check_rc(MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait (iscan) " + tag);
  compare(t, op, "MPI_Iscan", out.data(), 0, count, rank + 1);
  check_rc(MPI_Exscan(in.data(), out.data(), count, t.mpi, op.mpi, MPI_COMM_WORLD), "MPI_Exscan " + tag);
  if (rank > 0) compare(t, op, "MPI_Exscan", out.data(), 0, count, rank);

  // The reduce-scatters: `count` elements a rank of a count x P input (MPIZip's input: element
  // i of the block of rank q is element q * count + i).
  std::vector<uint8_t> big(bytes * static_cast<size_t>(nranks));
  for (int i = 0; i < count * nranks; ++i) t.put(value(rank, i, op), big.data() + static_cast<size_t>(i) * t.bytes);
  check_rc(MPI_Reduce_scatter_block(big.data(), out.data(), count, t.mpi, op.mpi, MPI_COMM_WORLD),
           "MPI_Reduce_scatter_block " + tag);
  compare(t, op, "MPI_Reduce_scatter_block", out.data(), rank * count, count, nranks);
  std::vector<int> counts(static_cast<size_t>(nranks), count);
  check_rc(MPI_Reduce_scatter(big.data(), out.data(), counts.data(), t.mpi, op.mpi, MPI_COMM_WORLD),
           "MPI_Reduce_scatter " + tag);
  compare(t, op, "MPI_Reduce_scatter", out.data(), rank * count, count, nranks);

  // MPI_Reduce_local: inoutbuf = inbuf (op) inoutbuf, on this rank alone.
  std::vector<uint8_t> local(bytes);
  for (int i = 0; i < count; ++i) t.put(value(1, i, op), local.data() + static_cast<size_t>(i) * t.bytes);
  std::vector<uint8_t> in0(bytes);
  for (int i = 0; i < count; ++i) t.put(value(0, i, op), in0.data() + static_cast<size_t>(i) * t.bytes);
  check_rc(MPI_Reduce_local(in0.data(), local.data(), count, t.mpi, op.mpi), "MPI_Reduce_local " + tag);
  compare(t, op, "MPI_Reduce_local", local.data(), 0, count, 2);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int checked = 0;
  for (const Type& t : types()) {
    if (t.mpi == MPI_DATATYPE_NULL) {
      fail(std::string("MPIZip's type ") + t.name + " is missing (is MPIZip loaded?)");
      continue;
    }
    for (const Op& op : kOps) {
      for (int count : {1, 70001}) run(t, op, count);
      ++checked;
    }
  }
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0 && all == 0) std::printf("own_types: %d type and op pairs, every reducing call exact\n", checked);
  MPI_Finalize();
  return all == 0 && checked == 16 ? 0 : 1;
}
