// MPI_Scan, MPI_Exscan, MPI_Iscan and MPI_Iexscan of float types under MPIZip, on host buffers,
// driven by tests/coll/scan.sh. For every type (MPI_FLOAT, MPI_DOUBLE, and MPIZIP_BF16 and
// MPIZIP_FP16 when MPIZip is loaded), op (MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX) and count (1, P - 1,
// P + 1, 1000, 65537), out of place and in place, blocking and non-blocking (the non-blocking call
// overlapped with an exchange of MPI_INT messages between neighbours, checked too), rank q's
// result must be, bit for bit, the fold of ranks 0..q's inputs (0..q-1's for the exclusive scan) in
// rank order (kernels/reduce.h; NaNs and signed zeros included), and a rank's own input alone where
// the prefix has one operand; rank 0's output of an exclusive scan and the bytes after every
// output buffer (a guard) must stay as they were. With --library the MPI library runs the calls:
// results within floating-point tolerance of the exact prefix (its order of folding and its NaNs
// are its own); with --library-blocking the blocking calls alone (one node without a GPU, where
// MPIZip takes only the non-blocking ones, deferred).
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "tests/coll/allreduce_check.h"

namespace {

using namespace allreduce_check;

constexpr size_t kGuard = 64;
bool library_runs = false;
bool library_blocking = false;

// Exchanges a few MPI_INT with both neighbours while a non-blocking call is under way.
void neighbour_traffic(uint64_t seed) {
  const int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
  int out[4], in[4] = {0, 0, 0, 0};
  for (int i = 0; i < 4; ++i) out[i] = static_cast<int>(seed) * 16 + rank * 4 + i;
  MPI_Request r[2];
  MPI_Irecv(in, 4, MPI_INT, left, 77, MPI_COMM_WORLD, &r[0]);
  MPI_Isend(out, 4, MPI_INT, right, 77, MPI_COMM_WORLD, &r[1]);
  MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
  for (int i = 0; i < 4; ++i)
    CHECK(in[i] == static_cast<int>(seed) * 16 + left * 4 + i, "neighbour traffic, int %d", i);
}

void one(const Type& t, const OpInfo& op, uint64_t count, bool exclusive, bool in_place,
         bool nonblocking, uint64_t seed) {
  std::vector<std::vector<uint8_t>> in(static_cast<size_t>(nranks));
  for (int r = 0; r < nranks; ++r) in[r] = inputs_of(t, r, count, op.op, seed, op.op != Op::kProd);
  const size_t bytes = count * t.bytes;
  std::vector<uint8_t> send = in[rank];
  std::vector<uint8_t> out(bytes + kGuard, 0xA5);
  if (in_place) std::memcpy(out.data(), send.data(), bytes);
  const void* sendbuf = in_place ? MPI_IN_PLACE : send.data();
  const int n = static_cast<int>(count);
  int rc;
  if (nonblocking) {
    MPI_Request req;
    rc = exclusive ? MPI_Iexscan(sendbuf, out.data(), n, t.mpi, op.mpi, MPI_COMM_WORLD, &req)
                   : MPI_Iscan(sendbuf, out.data(), n, t.mpi, op.mpi, MPI_COMM_WORLD, &req);
    neighbour_traffic(seed);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
  } else {
    rc = exclusive ? MPI_Exscan(sendbuf, out.data(), n, t.mpi, op.mpi, MPI_COMM_WORLD)
                   : MPI_Scan(sendbuf, out.data(), n, t.mpi, op.mpi, MPI_COMM_WORLD);
  }
  const char* name = exclusive ? (nonblocking ? "MPI_Iexscan" : "MPI_Exscan")
                               : (nonblocking ? "MPI_Iscan" : "MPI_Scan");
  CHECK(rc == MPI_SUCCESS, "%s %s %s count %llu: error %d", name, t.name, op.name,
        static_cast<unsigned long long>(count), rc);
  for (size_t i = 0; i < kGuard; ++i)
    CHECK(out[bytes + i] == 0xA5, "%s %s %s count %llu: the guard after the output changed", name,
          t.name, op.name, static_cast<unsigned long long>(count));
  const int k = exclusive ? rank : rank + 1;  // operands of this rank's prefix
  if (k == 0) {  // rank 0 of an exclusive scan: its output stays as it was
    const std::vector<uint8_t>& before = in_place ? send : std::vector<uint8_t>(bytes, 0xA5);
    CHECK(std::memcmp(out.data(), before.data(), bytes) == 0,
          "%s %s %s count %llu: rank 0's output changed", name, t.name, op.name,
          static_cast<unsigned long long>(count));
    return;
  }
  const std::vector<std::vector<uint8_t>> prefix(in.begin(), in.begin() + k);
  if (library_runs || (library_blocking && !nonblocking)) {
    // (bf16 and fp16, which the MPI library cannot reduce, are folded a pair at a time by MPIZip's
    // operation, each of the k - 1 steps rounded: the staged bound.)
    const int bad = tolerance_failures(t, op.op, prefix, count, out.data(), true, k - 1);
    CHECK(bad == 0, "%s %s %s count %llu%s: %d elements beyond tolerance", name, t.name, op.name,
          static_cast<unsigned long long>(count), in_place ? " in place" : "", bad);
    return;
  }
  const std::vector<uint8_t> want = k == 1 ? in[0] : expected_fold(t, op.op, prefix, count);
  size_t at = 0;
  while (at < bytes && out[at] == want[at]) ++at;
  CHECK(at == bytes, "%s %s %s count %llu%s: byte %zu of %zu differs from the rank-order fold",
        name, t.name, op.name, static_cast<unsigned long long>(count), in_place ? " in place" : "",
        at, bytes);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  for (int i = 1; i < argc; ++i) {
    library_runs = library_runs || std::strcmp(argv[i], "--library") == 0;
    library_blocking = library_blocking || std::strcmp(argv[i], "--library-blocking") == 0;
  }
  const std::vector<Type> types = test_types(mpizip_active());
  uint64_t seed = 1;
  int cases = 0;
  const uint64_t P = static_cast<uint64_t>(nranks);
  for (const Type& t : types)
    for (const OpInfo& op : kOps)
      for (uint64_t count : {uint64_t{1}, P - 1, P + 1, uint64_t{1000}, uint64_t{65537}})
        for (bool exclusive : {false, true})
          for (bool in_place : {false, true})
            for (bool nonblocking : {false, true}) {
              if (count == 0) continue;
              one(t, op, count, exclusive, in_place, nonblocking, seed++);
              ++cases;
            }
  long mine = failures, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("scan_test: %d cases on %d ranks, %ld failures\n", cases, nranks, all);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
