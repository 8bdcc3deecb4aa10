// MPI_Bcast, MPI_Allgather, MPI_Reduce_scatter_block (and MPI_Reduce_scatter of equal counts) and
// MPI_Reduce of float types under MPIZip,
// on host buffers, driven by
// tests/coll/bcast.sh: for every type (MPI_FLOAT, MPI_DOUBLE, and MPIZIP_BF16 and MPIZIP_FP16 when
// MPIZip is loaded), root (0, 1, the last rank) and count (1, P - 1, P + 1, 1000, 4097 and
// 1000003), every rank's buffer must end bit for bit the root's data, NaN payloads, infinities,
// signed zeros and subnormals included; the bytes the call does not cover (a guard after the
// buffer) must stay as they were. The allgathers (blocks of 16-byte multiples, which MPIZip's
// engine takes between nodes, and others, which go to the MPI library; in place and not) must
// deliver every rank's block. Between nodes MPIZip runs both on its two-shot engine (pieces
// compressed on the wire: coll/allreduce.h, AllreduceArgs::Shape); the script checks that from the
// statistics. Also broadcasts interleaved with point-to-point traffic, non-blocking broadcasts
// (MPI_Ibcast) overlapped with both, MPI_Ireduce_scatter of equal counts, MPI_Iallgather (in place, and from a strided send datatype),
// MPI_Alltoall and MPI_Ialltoall (the same three forms),
// MPI_Ireduce_scatter_block and MPI_Ireduce, and a broadcast
// of MPI_INT (the MPI library's).
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
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

// MPI_Ibcast with point-to-point traffic and a blocking broadcast between its start and its wait
// (the same communicator), then MPI_Test until it completes: between nodes MPIZip runs it on its
// two-shot as an operation of its own.
void one_nonblocking(const Type& t, int root, uint64_t count, uint64_t seed) {
  const std::vector<uint8_t> want = data_of(t, count, seed);
  std::vector<uint8_t> buf(want.size() + kGuard, 0xA5);
  if (rank == root) std::memcpy(buf.data(), want.data(), want.size());
  MPI_Request req = MPI_REQUEST_NULL;
  int rc = MPI_Ibcast(buf.data(), static_cast<int>(count), t.mpi, root, MPI_COMM_WORLD, &req);
  int token = rank, got = -1;
  MPI_Sendrecv(&token, 1, MPI_INT, (rank + 1) % nranks, 9, &got, 1, MPI_INT,
               (rank + nranks - 1) % nranks, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  if (got != (rank + nranks - 1) % nranks) ++failures;
  std::vector<uint8_t> second = data_of(t, 4097, seed + 1000), other(second.size(), 0);
  if (rank == (root + 1) % nranks) other = second;
  MPI_Bcast(other.data(), 4097, t.mpi, (root + 1) % nranks, MPI_COMM_WORLD);
  if (other != second) ++failures;
  for (int done = 0; rc == MPI_SUCCESS && !done;) rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
  bool good = rc == MPI_SUCCESS && std::memcmp(buf.data(), want.data(), want.size()) == 0;
  for (size_t i = 0; i < kGuard; ++i) good = good && buf[want.size() + i] == 0xA5;
  if (!good) {
    ++failures;
    std::fprintf(stderr, "rank %d: MPI_Ibcast %s root %d count %llu: wrong (rc %d)\n", rank,
                 t.name, root, static_cast<unsigned long long>(count), rc);
  }
}

// How an allgather is called: blocking or not (MPI_Iallgather, with point-to-point traffic between
// its start and its wait), in place, or from a strided send datatype (every other element of a
// buffer twice the block, the same signature as the receive's: MPIZip packs it into the rank's
// block; the blocking form passes such a call to the MPI library).
enum class Gather { kBlocking, kInPlace, kStrided, kNonblocking, kNonblockingInPlace, kNonblockingStrided };

void gather(const Type& t, uint64_t count, Gather how, uint64_t seed) {
  const uint64_t block = count * t.bytes, P = static_cast<uint64_t>(nranks);
  std::vector<uint8_t> out(block * P + kGuard, 0xA5);
  const std::vector<uint8_t> mine = data_of(t, count, seed * 31 + static_cast<uint64_t>(rank));
  const bool in_place = how == Gather::kInPlace || how == Gather::kNonblockingInPlace;
  const bool strided = how == Gather::kStrided || how == Gather::kNonblockingStrided;
  const bool nonblocking = how == Gather::kNonblocking || how == Gather::kNonblockingInPlace ||
                           how == Gather::kNonblockingStrided;
  std::vector<uint8_t> spread(strided ? 2 * block : 0, 0x5A);
  MPI_Datatype every_other = MPI_DATATYPE_NULL;
  const void* send = mine.data();
  MPI_Datatype send_type = t.mpi;
  int send_count = static_cast<int>(count);
  if (in_place) {
    std::memcpy(out.data() + block * static_cast<uint64_t>(rank), mine.data(), block);
    send = MPI_IN_PLACE;
    send_type = MPI_DATATYPE_NULL;
    send_count = 0;
  } else if (strided) {
    for (uint64_t i = 0; i < count; ++i)
      std::memcpy(spread.data() + 2 * i * t.bytes, mine.data() + i * t.bytes, t.bytes);
    MPI_Type_vector(static_cast<int>(count), 1, 2, t.mpi, &every_other);
    MPI_Type_commit(&every_other);
    send = spread.data();
    send_type = every_other;
    send_count = 1;
  }
  int rc;
  if (nonblocking) {
    MPI_Request req = MPI_REQUEST_NULL;
    rc = MPI_Iallgather(send, send_count, send_type, out.data(), static_cast<int>(count), t.mpi,
                        MPI_COMM_WORLD, &req);
    int token = rank, got = -1;
    MPI_Sendrecv(&token, 1, MPI_INT, (rank + 1) % nranks, 11, &got, 1, MPI_INT,
                 (rank + nranks - 1) % nranks, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (got != (rank + nranks - 1) % nranks) ++failures;
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
  } else {
    rc = MPI_Allgather(send, send_count, send_type, out.data(), static_cast<int>(count), t.mpi,
                       MPI_COMM_WORLD);
  }
  if (every_other != MPI_DATATYPE_NULL) MPI_Type_free(&every_other);
  bool good = rc == MPI_SUCCESS;
  for (uint64_t q = 0; q < P && good; ++q) {
    const std::vector<uint8_t> want = data_of(t, count, seed * 31 + q);
    good = std::memcmp(out.data() + q * block, want.data(), block) == 0;
  }
  for (size_t i = 0; i < kGuard; ++i) good = good && out[block * P + i] == 0xA5;
  if (!good) {
    ++failures;
    std::fprintf(stderr, "rank %d: MPI_%sallgather %s count %llu%s: wrong (rc %d)\n", rank,
                 nonblocking ? "I" : "A", t.name, static_cast<unsigned long long>(count),
                 in_place ? " in place" : strided ? " strided" : "", rc);
  }
}

// MPI_Alltoall (MPI_Ialltoall, with point-to-point traffic between its start and its wait, for
// the non-blocking forms) of `count` elements a block, in place or from a strided send datatype
// (every other element of a buffer twice the input) or neither: rank r's block q must land, bit
// for bit, in rank q's block r. Between nodes MPIZip runs both on its two-shot engine.
void exchange(const Type& t, uint64_t count, Gather how, uint64_t seed) {
  const uint64_t block = count * t.bytes, P = static_cast<uint64_t>(nranks);
  const uint64_t me = static_cast<uint64_t>(rank);
  const bool in_place = how == Gather::kInPlace || how == Gather::kNonblockingInPlace;
  const bool strided = how == Gather::kStrided || how == Gather::kNonblockingStrided;
  const bool nonblocking = how == Gather::kNonblocking || how == Gather::kNonblockingInPlace ||
                           how == Gather::kNonblockingStrided;
  std::vector<uint8_t> in(block * P), out(block * P + kGuard, 0xA5);
  for (uint64_t q = 0; q < P; ++q) {
    const std::vector<uint8_t> b = data_of(t, count, seed * 977 + me * P + q);
    std::memcpy(in.data() + q * block, b.data(), block);
  }
  const void* send = in.data();
  int send_count = static_cast<int>(count);
  MPI_Datatype send_type = t.mpi, every_other = MPI_DATATYPE_NULL, block_type = MPI_DATATYPE_NULL;
  std::vector<uint8_t> spread;
  if (in_place) {
    std::memcpy(out.data(), in.data(), in.size());
    send = MPI_IN_PLACE;
    send_count = 0;
    send_type = MPI_DATATYPE_NULL;
  } else if (strided) {
    spread.assign(2 * in.size(), 0x5A);
    for (uint64_t i = 0; i < count * P; ++i)
      std::memcpy(spread.data() + 2 * i * t.bytes, in.data() + i * t.bytes, t.bytes);
    MPI_Type_vector(static_cast<int>(count), 1, 2, t.mpi, &every_other);
    // One block: resized so that block q starts at element 2 q count.
    MPI_Type_create_resized(every_other, 0, static_cast<MPI_Aint>(2 * block), &block_type);
    MPI_Type_commit(&block_type);
    send = spread.data();
    send_count = 1;
    send_type = block_type;
  }
  int rc;
  if (nonblocking) {
    MPI_Request req = MPI_REQUEST_NULL;
    rc = MPI_Ialltoall(send, send_count, send_type, out.data(), static_cast<int>(count), t.mpi,
                       MPI_COMM_WORLD, &req);
    int token = rank, got = -1;
    MPI_Sendrecv(&token, 1, MPI_INT, (rank + 1) % nranks, 12, &got, 1, MPI_INT,
                 (rank + nranks - 1) % nranks, 12, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (got != (rank + nranks - 1) % nranks) ++failures;
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
  } else {
    rc = MPI_Alltoall(send, send_count, send_type, out.data(), static_cast<int>(count), t.mpi,
                      MPI_COMM_WORLD);
  }
  if (block_type != MPI_DATATYPE_NULL) MPI_Type_free(&block_type);
  if (every_other != MPI_DATATYPE_NULL) MPI_Type_free(&every_other);
  bool good = rc == MPI_SUCCESS;
  for (uint64_t q = 0; q < P && good; ++q) {
    const std::vector<uint8_t> want = data_of(t, count, seed * 977 + q * P + me);
    good = std::memcmp(out.data() + q * block, want.data(), block) == 0;
  }
  for (size_t i = 0; i < kGuard; ++i) good = good && out[block * P + i] == 0xA5;
  if (!good) {
    ++failures;
    std::fprintf(stderr, "rank %d: MPI_%slltoall %s count %llu%s: wrong (rc %d)\n", rank,
                 nonblocking ? "Ia" : "A", t.name, static_cast<unsigned long long>(count),
                 in_place ? " in place" : strided ? " strided" : "", rc);
  }
}

// MPI_Reduce_scatter_block and MPI_Reduce of every type and op: between nodes MPIZip runs them on
// its two-shot (its fixed rank-order fold, compared bit for bit: kernels/reduce.h), elsewhere the
// MPI library (compared within tolerance: --library).
bool library_runs = false;
// --pretend G (MPIZIP_PRETEND_NODE_RANKS=G): the reduce-scatters between nodes run in stages
// (coll/hierarchical.h), whose fold is each node's, then the nodes' (hierarchical_fold); MPI_Reduce
// stays on the flat two-shot. Every root is broadcast from.
int per_node = 0;
// --quick (many-rank runs): no count of a million elements, smaller allgathers and reductions.
bool quick = false;
// --scratch-fault: only the failure of a rank's scratch memory (MPIZIP_FAULT=scratch on one rank).
bool scratch_fault = false;
// --iallgather-only, --alltoall-only (MPI_Alltoall and MPI_Ialltoall): those calls alone (the
// script checks in the statistics that MPIZip ran them).
bool iallgather_only = false;
bool alltoall_only = false;

void reductions(const Type& t, const OpInfo& o, uint64_t block, int root, uint64_t seed) {
  const uint64_t P = static_cast<uint64_t>(nranks), count = block * P;
  std::vector<std::vector<uint8_t>> in;
  for (int q = 0; q < nranks; ++q) in.push_back(inputs_of(t, q, count, o.op, seed, true));
  const std::vector<uint8_t> want = expected_fold(t, o.op, in, count);
  const std::vector<uint8_t> want_rs = hierarchical_fold(t, o.op, in, count, per_node);
  // Reduce-scatter-block, out of place and in place.
  for (bool in_place : {false, true}) {
    std::vector<uint8_t> mine = in[static_cast<size_t>(rank)];
    std::vector<uint8_t> out(block * t.bytes + kGuard, 0xA5);
    int rc;
    if (in_place) {
      rc = MPI_Reduce_scatter_block(MPI_IN_PLACE, mine.data(), static_cast<int>(block), t.mpi,
                                    o.mpi, MPI_COMM_WORLD);
      std::memcpy(out.data(), mine.data(), block * t.bytes);
    } else {
      rc = MPI_Reduce_scatter_block(mine.data(), out.data(), static_cast<int>(block), t.mpi, o.mpi,
                                    MPI_COMM_WORLD);
    }
    const uint8_t* expect = want_rs.data() + static_cast<uint64_t>(rank) * block * t.bytes;
    bool good = rc == MPI_SUCCESS;
    if (good && !library_runs) good = std::memcmp(out.data(), expect, block * t.bytes) == 0;
    for (size_t i = 0; i < kGuard && !in_place; ++i) good = good && out[block * t.bytes + i] == 0xA5;
    if (!good) {
      ++failures;
      std::fprintf(stderr, "rank %d: MPI_Reduce_scatter_block %s %s block %llu%s: wrong (rc %d)\n",
                   rank, t.name, o.name, static_cast<unsigned long long>(block),
                   in_place ? " in place" : "", rc);
    }
  }
  // MPI_Reduce_scatter with every count equal: MPIZip takes it as the reduce-scatter-block.
  {
    std::vector<int> counts(static_cast<size_t>(nranks), static_cast<int>(block));
    std::vector<uint8_t> out(block * t.bytes + kGuard, 0xA5);
    const int rc = MPI_Reduce_scatter(in[static_cast<size_t>(rank)].data(), out.data(),
                                      counts.data(), t.mpi, o.mpi, MPI_COMM_WORLD);
    const uint8_t* expect = want_rs.data() + static_cast<uint64_t>(rank) * block * t.bytes;
    bool good = rc == MPI_SUCCESS;
    if (good && !library_runs) good = std::memcmp(out.data(), expect, block * t.bytes) == 0;
    for (size_t i = 0; i < kGuard; ++i) good = good && out[block * t.bytes + i] == 0xA5;
    if (!good) {
      ++failures;
      std::fprintf(stderr, "rank %d: MPI_Reduce_scatter %s %s block %llu: wrong (rc %d)\n", rank,
                   t.name, o.name, static_cast<unsigned long long>(block), rc);
    }
  }
  // The non-blocking forms (between nodes MPIZip's flat two-shot, whatever --pretend says), with a
  // message and a blocking reduction between start and wait.
  {
    std::vector<uint8_t> rs(block * t.bytes + kGuard, 0xA5), red(count * t.bytes + kGuard, 0xA5);
    std::vector<uint8_t> rsv(block * t.bytes + kGuard, 0xA5);  // MPI_Ireduce_scatter, equal counts
    std::vector<int> counts(static_cast<size_t>(nranks), static_cast<int>(block));
    MPI_Request req[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    int rc = MPI_Ireduce_scatter_block(in[static_cast<size_t>(rank)].data(), rs.data(),
                                       static_cast<int>(block), t.mpi, o.mpi, MPI_COMM_WORLD, &req[0]);
    if (rc == MPI_SUCCESS)
      rc = MPI_Ireduce(in[static_cast<size_t>(rank)].data(), rank == root ? red.data() : nullptr,
                       static_cast<int>(count), t.mpi, o.mpi, root, MPI_COMM_WORLD, &req[1]);
    if (rc == MPI_SUCCESS)
      rc = MPI_Ireduce_scatter(in[static_cast<size_t>(rank)].data(), rsv.data(), counts.data(),
                               t.mpi, o.mpi, MPI_COMM_WORLD, &req[2]);
    int token = rank, got = -1;
    MPI_Sendrecv(&token, 1, MPI_INT, (rank + 1) % nranks, 11, &got, 1, MPI_INT,
                 (rank + nranks - 1) % nranks, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    long one_each = 1, sum = 0;
    MPI_Allreduce(&one_each, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rc == MPI_SUCCESS) rc = MPI_Waitall(3, req, MPI_STATUSES_IGNORE);
    const uint8_t* expect = want.data() + static_cast<uint64_t>(rank) * block * t.bytes;
    bool good = rc == MPI_SUCCESS && sum == nranks;
    if (good && !library_runs) good = std::memcmp(rs.data(), expect, block * t.bytes) == 0;
    if (good && !library_runs) good = std::memcmp(rsv.data(), expect, block * t.bytes) == 0;
    for (size_t i = 0; i < kGuard; ++i) good = good && rsv[block * t.bytes + i] == 0xA5;
    if (good && !library_runs && rank == root)
      good = std::memcmp(red.data(), want.data(), want.size()) == 0;
    for (size_t i = 0; i < kGuard; ++i) good = good && rs[block * t.bytes + i] == 0xA5;
    if (!good) {
      ++failures;
      std::fprintf(stderr, "rank %d: MPI_Ireduce_scatter(_block)/MPI_Ireduce %s %s block %llu: wrong (rc %d)\n",
                   rank, t.name, o.name, static_cast<unsigned long long>(block), rc);
    }
  }
  // Reduce to `root`.
  std::vector<uint8_t> out(count * t.bytes + kGuard, 0xA5);
  const int rc = MPI_Reduce(in[static_cast<size_t>(rank)].data(), rank == root ? out.data() : nullptr,
                            static_cast<int>(count), t.mpi, o.mpi, root, MPI_COMM_WORLD);
  bool good = rc == MPI_SUCCESS;
  if (good && rank == root && !library_runs)
    good = std::memcmp(out.data(), want.data(), want.size()) == 0;
  if (!good) {
    ++failures;
    std::fprintf(stderr, "rank %d: MPI_Reduce %s %s count %llu root %d: wrong (rc %d)\n", rank,
                 t.name, o.name, static_cast<unsigned long long>(count), root, rc);
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const std::vector<Type> types = test_types(mpizip_active());
  for (int i = 1; i < argc; ++i) {
    library_runs = library_runs || std::strcmp(argv[i], "--library") == 0;
    if (std::strcmp(argv[i], "--pretend") == 0 && i + 1 < argc) per_node = std::atoi(argv[++i]);
    quick = quick || std::strcmp(argv[i], "--quick") == 0;
    scratch_fault = scratch_fault || std::strcmp(argv[i], "--scratch-fault") == 0;
    iallgather_only = iallgather_only || std::strcmp(argv[i], "--iallgather-only") == 0;
    alltoall_only = alltoall_only || std::strcmp(argv[i], "--alltoall-only") == 0;
  }
  if (alltoall_only) {
    uint64_t seed = 11;
    for (const Type& t : types)
      for (uint64_t count : {uint64_t{8}, uint64_t{65536}})
        for (Gather how : {Gather::kBlocking, Gather::kInPlace, Gather::kStrided,
                           Gather::kNonblocking, Gather::kNonblockingInPlace,
                           Gather::kNonblockingStrided})
          exchange(t, count, how, seed++);
    long mine = failures, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) std::printf("bcast_test: alltoall only, %d ranks, %ld failures\n", nranks, all);
    MPI_Finalize();
    return all == 0 ? 0 : 1;
  }
  if (iallgather_only) {
    uint64_t seed = 7;
    for (const Type& t : types)
      for (uint64_t count : {uint64_t{8}, uint64_t{65536}})
        for (Gather how : {Gather::kNonblocking, Gather::kNonblockingInPlace, Gather::kNonblockingStrided})
          gather(t, count, how, seed++);
    long mine = failures, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) std::printf("bcast_test: iallgather only, %d ranks, %ld failures\n", nranks, all);
    MPI_Finalize();
    return all == 0 ? 0 : 1;
  }
  if (scratch_fault) {
    // One rank runs with MPIZIP_FAULT=scratch: its non-blocking reduce-scatter and reduce between
    // nodes have no scratch memory. Every rank's call must end with an error (none hangs), and
    // the communicator must still work.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const Type& t = types[0];
    const uint64_t block = 4096;
    std::vector<uint8_t> in = inputs_of(t, rank, block * static_cast<uint64_t>(nranks), Op::kSum, 3, false);
    std::vector<uint8_t> out(in.size());
    MPI_Request req = MPI_REQUEST_NULL;
    int rc = MPI_Ireduce_scatter_block(in.data(), out.data(), static_cast<int>(block), t.mpi,
                                       MPI_SUM, MPI_COMM_WORLD, &req);
    if (rc == MPI_SUCCESS) rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    int rc2 = MPI_Ireduce(in.data(), out.data(), static_cast<int>(block), t.mpi, MPI_SUM, 0,
                          MPI_COMM_WORLD, &req);
    if (rc2 == MPI_SUCCESS) rc2 = MPI_Wait(&req, MPI_STATUS_IGNORE);
    long one_each = 1, sum = 0;
    const int rc3 = MPI_Allreduce(&one_each, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    const bool good = rc != MPI_SUCCESS && rc2 != MPI_SUCCESS && rc3 == MPI_SUCCESS && sum == nranks;
    std::printf("bcast_test: scratch fault: rank %d: %s (rc %d %d %d)\n", rank,
                good ? "failed as expected" : "WRONG", rc, rc2, rc3);
    MPI_Finalize();
    return good ? 0 : 1;
  }
  uint64_t seed = 1;
  const uint64_t P = static_cast<uint64_t>(nranks);
  for (const Type& t : types) {
    std::vector<int> roots = {0, 1 % nranks, nranks - 1};
    if (per_node > 0) {
      roots.clear();
      for (int r = 0; r < nranks; ++r) roots.push_back(r);
    }
    for (int root : roots)
      for (uint64_t count : {uint64_t{1}, P - 1, P + 1, uint64_t{1000}, uint64_t{4097},
                             uint64_t{1000003}})
        // Every root on the small counts; the large one from the first and last rank.
        if (count > 0 && (count < 1000000 || ((per_node == 0 || root == 0 || root == nranks - 1) && !quick)))
          one(t, root, count, seed++);
  }
  for (const Type& t : types)
    for (uint64_t count : {uint64_t{1000}, uint64_t{300007}})
      one_nonblocking(t, nranks - 1, count, seed++);
  // Zero counts: nothing moves, nothing is written, every rank returns success.
  for (const Type& t : types) {
    uint8_t guard[16];
    std::memset(guard, 0xA5, sizeof guard);
    int rc = MPI_Bcast(guard, 0, t.mpi, nranks - 1, MPI_COMM_WORLD);
    if (rc == MPI_SUCCESS) rc = MPI_Allgather(guard, 0, t.mpi, guard + 8, 0, t.mpi, MPI_COMM_WORLD);
    // (bf16 and fp16 reductions of nothing reach the MPI library with MPIZip's own operation)
    if (rc == MPI_SUCCESS)
      rc = MPI_Reduce_scatter_block(guard, guard + 8, 0, t.mpi, MPI_SUM, MPI_COMM_WORLD);
    bool good = rc == MPI_SUCCESS;
    for (uint8_t g : guard) good = good && g == 0xA5;
    if (!good) {
      ++failures;
      std::fprintf(stderr, "rank %d: zero-count collectives of %s: wrong (rc %d)\n", rank, t.name,
                   rc);
    }
  }
  for (const Type& t : types)
    for (uint64_t count : {uint64_t{8}, uint64_t{1001}, uint64_t{65536}, uint64_t{250000}})
      for (Gather how : {Gather::kBlocking, Gather::kInPlace, Gather::kStrided, Gather::kNonblocking,
                         Gather::kNonblockingInPlace, Gather::kNonblockingStrided})
        // (the non-blocking and strided forms on the smaller counts, for time)
        if ((!quick || count < 100000) &&
            (count < 100000 || how == Gather::kBlocking || how == Gather::kInPlace))
          gather(t, count, how, seed++);
  for (const Type& t : types)
    for (uint64_t count : {uint64_t{8}, uint64_t{1001}, uint64_t{65536}})
      for (Gather how : {Gather::kBlocking, Gather::kInPlace, Gather::kStrided, Gather::kNonblocking,
                         Gather::kNonblockingInPlace, Gather::kNonblockingStrided})
        if (!quick || count < 65536 || how == Gather::kBlocking) exchange(t, count, how, seed++);
  for (const Type& t : types) {
    // bf16 and fp16 reach the MPI library with MPIZip's own operation (library_op).
    for (const OpInfo& o : kOps)
      for (uint64_t block : {uint64_t{64}, uint64_t{65536}})  // 16-byte multiples for every type
        if (!quick || block < 65536 || o.op == Op::kSum) reductions(t, o, block, nranks - 1, seed++);
  }
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
