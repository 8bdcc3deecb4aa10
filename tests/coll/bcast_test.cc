// MPI_Bcast and MPI_Allgather of float types under MPIZip, on host buffers, driven by
// tests/coll/bcast.sh: for every type (MPI_FLOAT, MPI_DOUBLE, and MPIZIP_BF16 and MPIZIP_FP16 when
// MPIZip is loaded), root (0, 1, the last rank) and count (1, P - 1, P + 1, 1000, 4097 and
// 1000003), every rank's buffer must end bit for bit the root's data, NaN payloads, infinities,
// signed zeros and subnormals included; the bytes the call does not cover (a guard after the
// buffer) must stay as they were. The allgathers (blocks of 16-byte multiples, which MPIZip's
// engine takes between nodes, and others, which go to the MPI library; in place and not) must
// deliver every rank's block. Between nodes MPIZip runs both on its two-shot engine (pieces
// compressed on the wire: coll/allreduce.h, AllreduceArgs::Shape); the script checks that from the
// statistics. Also broadcasts interleaved with point-to-point traffic, and a broadcast of MPI_INT
// (the MPI library's).
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "tests/coll/allreduce_check.h"

namespace {

using namespace allreduce_check;

constexpr size_t kGuard = 64;


// The root's data for a case: ordinary values with the special bit patterns mixed in.
std::vector<uint8_t> data_of(const Type& t, uint64_t count, uint64_t seed) {
  std::vector<uint8_t> v(count * t.bytes);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (uint64_t i = 0; i < count; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    uint8_t* e = v.data() + i * t.bytes;
    if (x % 13 == 0) {  // a raw bit pattern: NaNs with payloads, infinities, subnormals, zeros
      std::memcpy(e, &x, t.bytes);
    } else {
      store(t, static_cast<float>(static_cast<int64_t>(x % 20001) - 10000) / 4096.0f, e);
    }
  }
  return v;
}

void one(const Type& t, int root, uint64_t count, uint64_t seed) {
  const std::vector<uint8_t> want = data_of(t, count, seed);
  std::vector<uint8_t> buf(want.size() + kGuard, 0xA5);
  if (rank == root) std::memcpy(buf.data(), want.data(), want.size());
  const int rc = MPI_Bcast(buf.data(), static_cast<int>(count), t.mpi, root, MPI_COMM_WORLD);
  bool good = rc == MPI_SUCCESS && std::memcmp(buf.data(), want.data(), want.size()) == 0;
  for (size_t i = 0; i < kGuard; ++i) good = good && buf[want.size() + i] == 0xA5;
  if (!good) {
    ++failures;
    std::fprintf(stderr, "rank %d: MPI_Bcast %s root %d count %llu: wrong (rc %d)\n", rank,
                 t.name, root, static_cast<unsigned long long>(count), rc);
  }
}

void gather(const Type& t, uint64_t count, bool in_place, uint64_t seed) {
  const uint64_t block = count * t.bytes, P = static_cast<uint64_t>(nranks);
  std::vector<uint8_t> out(block * P + kGuard, 0xA5);
  const std::vector<uint8_t> mine = data_of(t, count, seed * 31 + static_cast<uint64_t>(rank));
  int rc;
  if (in_place) {
    std::memcpy(out.data() + block * static_cast<uint64_t>(rank), mine.data(), block);
    rc = MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, out.data(), static_cast<int>(count),
                       t.mpi, MPI_COMM_WORLD);
  } else {
    rc = MPI_Allgather(mine.data(), static_cast<int>(count), t.mpi, out.data(),
                       static_cast<int>(count), t.mpi, MPI_COMM_WORLD);
  }
  bool good = rc == MPI_SUCCESS;
  for (uint64_t q = 0; q < P && good; ++q) {
    const std::vector<uint8_t> want = data_of(t, count, seed * 31 + q);
    good = std::memcmp(out.data() + q * block, want.data(), block) == 0;
  }
  for (size_t i = 0; i < kGuard; ++i) good = good && out[block * P + i] == 0xA5;
  if (!good) {
    ++failures;
    std::fprintf(stderr, "rank %d: MPI_Allgather %s count %llu%s: wrong (rc %d)\n", rank, t.name,
                 static_cast<unsigned long long>(count), in_place ? " in place" : "", rc);
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const std::vector<Type> types = test_types(mpizip_active());
  uint64_t seed = 1;
  const uint64_t P = static_cast<uint64_t>(nranks);
  for (const Type& t : types)
    for (int root : {0, 1 % nranks, nranks - 1})
      for (uint64_t count : {uint64_t{1}, P - 1, P + 1, uint64_t{1000}, uint64_t{4097},
                             uint64_t{1000003}})
        if (count > 0) one(t, root, count, seed++);
  for (const Type& t : types)
    for (uint64_t count : {uint64_t{8}, uint64_t{1001}, uint64_t{65536}, uint64_t{250000}})
      for (bool in_place : {false, true}) gather(t, count, in_place, seed++);
  // Broadcasts between point-to-point messages on the same communicator.
  for (int i = 0; i < 20; ++i) {
    int token = i, got = -1;
    const int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
    MPI_Sendrecv(&token, 1, MPI_INT, next, 7, &got, 1, MPI_INT, prev, 7, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    if (got != i) ++failures;
    one(types[i % types.size()], i % nranks, 70001 + static_cast<uint64_t>(i), 500 + i);
  }
  // An integer broadcast: the MPI library's.
  std::vector<int> ints(100000, rank == 0 ? 42 : 0);
  MPI_Bcast(ints.data(), static_cast<int>(ints.size()), MPI_INT, 0, MPI_COMM_WORLD);
  for (int v : ints) {
    if (v != 42) {
      ++failures;
      break;
    }
  }
  long mine = failures, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("bcast_test: %d ranks, %ld failures\n", nranks, all);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
