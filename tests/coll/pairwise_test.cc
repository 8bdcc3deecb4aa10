// MPI_Alltoallv, MPI_Alltoallw, MPI_Gatherv, MPI_Scatterv and MPI_Allgatherv, and MPI_Gather and
// MPI_Scatter of every size, blocking and non-blocking (each
// non-blocking call overlapped with a ring of point-to-point messages), under MPIZip on host buffers, driven
// by tests/coll/pairwise.sh: for every type (MPI_FLOAT, MPI_DOUBLE, and MPIZIP_BF16 and MPIZIP_FP16
// when MPIZip is loaded) and size (a few elements to blocks of 300,000), with uneven counts (zero
// for some pairs), displacements that leave gaps and reverse the blocks' order, every root, the
// roots' MPI_IN_PLACE, a strided receive datatype and a second call in flight on another
// communicator order: every receiving byte must end the sender's (smooth values with NaN payloads,
// infinities, signed zeros and subnormals mixed in), and every byte the call does not cover (the
// gaps, a guard after each buffer) as it was. MPIZip runs them as point-to-point messages
// (src/core/coll_pairwise.h); the script checks that, and the compression of their float blocks
// between nodes, from the statistics. --truncate: a receiver that expects fewer bytes than its
// sender sends must get MPI_ERR_TRUNCATE (MPI_ERRORS_RETURN), and the communicator still work.
// First of all, a non-blocking MPI_Ialltoallv as the first v-collective of a new communicator,
// with a peer that starts its own only after a message this rank sends after its call.
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tests/coll/allreduce_check.h"

namespace {

using namespace allreduce_check;

constexpr uint8_t kFill = 0xA5;
constexpr size_t kGuard = 32;

// Element i of what rank `from` sends rank `to` in case `seed`: ordinary values with special bit
// patterns mixed in, each element distinct.
void element(const Type& t, int from, int to, uint64_t i, uint64_t seed, uint8_t* e) {
  uint64_t x = mix(seed * 1000003 + static_cast<uint64_t>(from) * 7919 + static_cast<uint64_t>(to) * 104729 + i);
  if (x % 17 == 0) {
    std::memcpy(e, &x, t.bytes);  // raw bits: NaN payloads, infinities, subnormals, zeros
  } else {
    store(t, static_cast<float>(static_cast<int64_t>(i % 2001) - 1000) / 64.0f +
                 static_cast<float>(from) * 0.25f, e);
  }
}

// Elements rank `from` sends rank `to`: uneven, zero for some pairs.
int count_of(int from, int to, int base) {
  const int k = (from * 3 + to * 5) % 4;
  return k == 0 ? 0 : base * k / 2 + (from + to) % 3;
}

bool guard_ok(const std::vector<uint8_t>& buf, size_t from) {
  for (size_t i = from; i < buf.size(); ++i)
    if (buf[i] != kFill) return false;
  return true;
}

// Block layout of one side: counts and displacements (elements), blocks in reverse rank order with
// a gap of 3 elements before each; returns the elements the buffer spans.
int layout(const std::vector<int>& counts, std::vector<int>* displs) {
  const int P = static_cast<int>(counts.size());
  displs->assign(P, 0);
  int at = 0;
  for (int q = P - 1; q >= 0; --q) {
    at += 3;
    (*displs)[q] = at;
    at += counts[q];
  }
  return at;
}

// Point-to-point traffic on MPI_COMM_WORLD while a non-blocking call is in flight: a ring
// exchange whose bytes must arrive intact.
void ring_traffic(uint64_t seed) {
  const int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
  std::vector<float> out(4096), in(4096, 0.0f);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(rank * 10000 + i + seed % 7);
  MPI_Sendrecv(out.data(), 4096, MPI_FLOAT, right, 77, in.data(), 4096, MPI_FLOAT, left, 77,
               MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  bool good = true;
  for (size_t i = 0; i < in.size(); ++i) good = good && in[i] == static_cast<float>(left * 10000 + i + seed % 7);
  CHECK(good, "ring traffic during a non-blocking call arrived wrong");
}

// Completes a call: `req` null for a blocking one (err its result); else a non-blocking one's
// request, waited for after point-to-point traffic.
int complete(int err, MPI_Request* req, uint64_t seed) {
  if (req == nullptr || err != MPI_SUCCESS) return err;
  ring_traffic(seed);
  return MPI_Wait(req, MPI_STATUS_IGNORE);
}

void alltoallv(const Type& t, int base, uint64_t seed, bool w, bool nb) {
  const int P = nranks;
  std::vector<int> sc(P), rc(P), sd, rd;
  for (int q = 0; q < P; ++q) {
    sc[q] = count_of(rank, q, base);
    rc[q] = count_of(q, rank, base);
  }
  const int sspan = layout(sc, &sd), rspan = layout(rc, &rd);
  std::vector<uint8_t> in(sspan * t.bytes + kGuard, kFill), out(rspan * t.bytes + kGuard, kFill);
  for (int q = 0; q < P; ++q)
    for (int i = 0; i < sc[q]; ++i) element(t, rank, q, i, seed, &in[(sd[q] + i) * t.bytes]);
  int err;
  MPI_Request req = MPI_REQUEST_NULL;
  MPI_Request* r = nb ? &req : nullptr;
  std::vector<int> sdb(P), rdb(P);
  std::vector<MPI_Datatype> st(P, t.mpi), rt(P, t.mpi);
  if (!w) {
    err = nb ? MPI_Ialltoallv(in.data(), sc.data(), sd.data(), t.mpi, out.data(), rc.data(),
                              rd.data(), t.mpi, MPI_COMM_WORLD, r)
             : MPI_Alltoallv(in.data(), sc.data(), sd.data(), t.mpi, out.data(), rc.data(),
                             rd.data(), t.mpi, MPI_COMM_WORLD);
  } else {
    for (int q = 0; q < P; ++q) {
      sdb[q] = sd[q] * static_cast<int>(t.bytes);
      rdb[q] = rd[q] * static_cast<int>(t.bytes);
    }
    err = nb ? MPI_Ialltoallw(in.data(), sc.data(), sdb.data(), st.data(), out.data(), rc.data(),
                              rdb.data(), rt.data(), MPI_COMM_WORLD, r)
             : MPI_Alltoallw(in.data(), sc.data(), sdb.data(), st.data(), out.data(), rc.data(),
                             rdb.data(), rt.data(), MPI_COMM_WORLD);
  }
  err = complete(err, r, seed);
  const char* name = w ? (nb ? "MPI_Ialltoallw" : "MPI_Alltoallw") : (nb ? "MPI_Ialltoallv" : "MPI_Alltoallv");
  CHECK(err == MPI_SUCCESS, "%s %s base %d: rc %d", name, t.name, base, err);
  std::vector<uint8_t> want(out.size(), kFill);
  std::vector<uint8_t> e(t.bytes);
  for (int q = 0; q < P; ++q)
    for (int i = 0; i < rc[q]; ++i) element(t, q, rank, i, seed, &want[(rd[q] + i) * t.bytes]);
  size_t at = 0;
  while (at < want.size() && want[at] == out[at]) ++at;
  CHECK(at == want.size(), "%s %s base %d: byte %zu of %zu differs", name, t.name, base, at,
        want.size());
}

void gatherv(const Type& t, int base, int root, bool in_place, uint64_t seed, bool nb) {
  const int P = nranks;
  std::vector<int> rc(P), rd;
  for (int q = 0; q < P; ++q) rc[q] = count_of(q, root, base);
  const int span = layout(rc, &rd);
  const int mine = rc[rank];
  std::vector<uint8_t> in(mine * t.bytes + kGuard, kFill), out(span * t.bytes + kGuard, kFill);
  for (int i = 0; i < mine; ++i) element(t, rank, root, i, seed, &in[i * t.bytes]);
  const bool place = in_place && rank == root;
  if (place) std::memcpy(&out[rd[rank] * t.bytes], in.data(), mine * t.bytes);
  MPI_Request req = MPI_REQUEST_NULL;
  const void* send = place ? MPI_IN_PLACE : in.data();
  void* recv = rank == root ? out.data() : nullptr;
  const int err = complete(
      nb ? MPI_Igatherv(send, mine, t.mpi, recv, rc.data(), rd.data(), t.mpi, root, MPI_COMM_WORLD, &req)
         : MPI_Gatherv(send, mine, t.mpi, recv, rc.data(), rd.data(), t.mpi, root, MPI_COMM_WORLD),
      nb ? &req : nullptr, seed);
  CHECK(err == MPI_SUCCESS, "MPI_Gatherv %s base %d root %d: rc %d", t.name, base, root, err);
  CHECK(guard_ok(in, mine * t.bytes), "MPI_Gatherv %s: the send buffer's guard changed", t.name);
  if (rank != root) return;
  std::vector<uint8_t> want(out.size(), kFill);
  for (int q = 0; q < P; ++q)
    for (int i = 0; i < rc[q]; ++i) element(t, q, root, i, seed, &want[(rd[q] + i) * t.bytes]);
  size_t at = 0;
  while (at < want.size() && want[at] == out[at]) ++at;
  CHECK(at == want.size(), "MPI_%sGatherv %s base %d root %d%s: byte %zu of %zu differs",
        nb ? "I" : "", t.name, base, root, in_place ? " in place" : "", at, want.size());
}

// MPI_Allgatherv: every rank's block (uneven counts, zero for some ranks) to every rank, blocks in
// reverse order with gaps; in place, each rank's block where its output has it.
void allgatherv(const Type& t, int base, bool in_place, uint64_t seed, bool nb) {
  const int P = nranks;
  std::vector<int> rc(P), rd;
  for (int q = 0; q < P; ++q) rc[q] = count_of(q, (q + 1) % P, base);
  const int span = layout(rc, &rd);
  const int mine = rc[rank];
  std::vector<uint8_t> in(mine * t.bytes + kGuard, kFill), out(span * t.bytes + kGuard, kFill);
  for (int i = 0; i < mine; ++i) element(t, rank, -1, i, seed, &in[i * t.bytes]);
  if (in_place) std::memcpy(&out[rd[rank] * t.bytes], in.data(), mine * t.bytes);
  MPI_Request req = MPI_REQUEST_NULL;
  const void* send = in_place ? MPI_IN_PLACE : in.data();
  const int err = complete(
      nb ? MPI_Iallgatherv(send, mine, t.mpi, out.data(), rc.data(), rd.data(), t.mpi, MPI_COMM_WORLD, &req)
         : MPI_Allgatherv(send, mine, t.mpi, out.data(), rc.data(), rd.data(), t.mpi, MPI_COMM_WORLD),
      nb ? &req : nullptr, seed);
  CHECK(err == MPI_SUCCESS, "MPI_Allgatherv %s base %d: rc %d", t.name, base, err);
  CHECK(guard_ok(in, mine * t.bytes), "MPI_Allgatherv %s: the send buffer's guard changed", t.name);
  std::vector<uint8_t> want(out.size(), kFill);
  for (int q = 0; q < P; ++q)
    for (int i = 0; i < rc[q]; ++i) element(t, q, -1, i, seed, &want[(rd[q] + i) * t.bytes]);
  size_t at = 0;
  while (at < want.size() && want[at] == out[at]) ++at;
  CHECK(at == want.size(), "MPI_%sAllgatherv %s base %d%s: byte %zu of %zu differs",
        nb ? "I" : "", t.name, base, in_place ? " in place" : "", at, want.size());
}

void scatterv(const Type& t, int base, int root, bool in_place, uint64_t seed, bool nb) {
  const int P = nranks;
  std::vector<int> sc(P), sd;
  for (int q = 0; q < P; ++q) sc[q] = count_of(root, q, base);
  const int span = layout(sc, &sd);
  const int mine = sc[rank];
  std::vector<uint8_t> in(span * t.bytes + kGuard, kFill), out(mine * t.bytes + kGuard, kFill);
  if (rank == root)
    for (int q = 0; q < P; ++q)
      for (int i = 0; i < sc[q]; ++i) element(t, root, q, i, seed, &in[(sd[q] + i) * t.bytes]);
  const bool place = in_place && rank == root;
  const std::vector<uint8_t> before = in;
  MPI_Request req = MPI_REQUEST_NULL;
  const void* send = rank == root ? in.data() : nullptr;
  void* recv = place ? MPI_IN_PLACE : out.data();
  const int err = complete(
      nb ? MPI_Iscatterv(send, sc.data(), sd.data(), t.mpi, recv, mine, t.mpi, root, MPI_COMM_WORLD, &req)
         : MPI_Scatterv(send, sc.data(), sd.data(), t.mpi, recv, mine, t.mpi, root, MPI_COMM_WORLD),
      nb ? &req : nullptr, seed);
  CHECK(err == MPI_SUCCESS, "MPI_Scatterv %s base %d root %d: rc %d", t.name, base, root, err);
  CHECK(in == before, "MPI_Scatterv %s: the root's send buffer changed", t.name);
  if (place) return;
  std::vector<uint8_t> want(out.size(), kFill);
  for (int i = 0; i < mine; ++i) element(t, root, rank, i, seed, &want[i * t.bytes]);
  CHECK(want == out, "MPI_%sScatterv %s base %d root %d: rank %d's block differs", nb ? "I" : "",
        t.name, base, root, rank);
}

// MPI_Gather and MPI_Scatter (and MPI_Igather, MPI_Iscatter) of `n` elements a rank, the root's
// MPI_IN_PLACE too: every block where it belongs, the root's send buffer and the gaps untouched.
void gather_scatter(const Type& t, int n, int root, bool in_place, bool nb, uint64_t seed) {
  const int P = nranks;
  const size_t block = static_cast<size_t>(n) * t.bytes;
  std::vector<uint8_t> mine(block + kGuard, kFill), all(P * block + kGuard, kFill);
  for (int i = 0; i < n; ++i) element(t, rank, root, i, seed, &mine[i * t.bytes]);
  const bool place = in_place && rank == root;
  if (place) std::memcpy(&all[rank * block], mine.data(), block);
  MPI_Request req = MPI_REQUEST_NULL;
  const void* send = place ? MPI_IN_PLACE : mine.data();
  void* recv = rank == root ? all.data() : nullptr;
  int err = complete(nb ? MPI_Igather(send, n, t.mpi, recv, n, t.mpi, root, MPI_COMM_WORLD, &req)
                        : MPI_Gather(send, n, t.mpi, recv, n, t.mpi, root, MPI_COMM_WORLD),
                     nb ? &req : nullptr, seed);
  CHECK(err == MPI_SUCCESS, "MPI_%sGather %s n %d root %d: rc %d", nb ? "I" : "", t.name, n, root, err);
  if (rank == root) {
    std::vector<uint8_t> want(all.size(), kFill);
    for (int q = 0; q < P; ++q)
      for (int i = 0; i < n; ++i) element(t, q, root, i, seed, &want[q * block + i * t.bytes]);
    CHECK(want == all, "MPI_%sGather %s n %d root %d%s: the output differs", nb ? "I" : "", t.name,
          n, root, in_place ? " in place" : "");
  }
  // Scatter: the root's blocks out; in place, the root's own block stays where it is.
  std::vector<uint8_t> src(P * block + kGuard, kFill), dst(block + kGuard, kFill);
  if (rank == root)
    for (int q = 0; q < P; ++q)
      for (int i = 0; i < n; ++i) element(t, root, q, i, seed + 1, &src[q * block + i * t.bytes]);
  const std::vector<uint8_t> before = src;
  err = complete(nb ? MPI_Iscatter(rank == root ? src.data() : nullptr, n, t.mpi,
                                   place ? MPI_IN_PLACE : dst.data(), n, t.mpi, root, MPI_COMM_WORLD, &req)
                    : MPI_Scatter(rank == root ? src.data() : nullptr, n, t.mpi,
                                  place ? MPI_IN_PLACE : dst.data(), n, t.mpi, root, MPI_COMM_WORLD),
                 nb ? &req : nullptr, seed);
  CHECK(err == MPI_SUCCESS, "MPI_%sScatter %s n %d root %d: rc %d", nb ? "I" : "", t.name, n, root, err);
  CHECK(src == before, "MPI_%sScatter %s: the root's send buffer changed", nb ? "I" : "", t.name);
  if (!place) {
    std::vector<uint8_t> want(dst.size(), kFill);
    for (int i = 0; i < n; ++i) element(t, root, rank, i, seed + 1, &want[i * t.bytes]);
    CHECK(want == dst, "MPI_%sScatter %s n %d root %d: rank %d's block differs", nb ? "I" : "",
          t.name, n, root, rank);
  }
}

// A strided receive datatype (every other element) in an alltoallv: the signatures match, the
// layouts differ.
void strided(const Type& t, int base, uint64_t seed) {
  const int P = nranks;
  MPI_Datatype pair;
  MPI_Type_vector(1, 1, 2, t.mpi, &pair);
  MPI_Datatype every_other;
  MPI_Type_create_resized(pair, 0, static_cast<MPI_Aint>(2 * t.bytes), &every_other);
  MPI_Type_commit(&every_other);
  std::vector<int> sc(P), rc(P), sd(P), rd(P);
  for (int q = 0; q < P; ++q) {
    sc[q] = rc[q] = base;
    sd[q] = rd[q] = q * base;
  }
  std::vector<uint8_t> in(P * base * t.bytes), out(2 * P * base * t.bytes + kGuard, kFill);
  for (int q = 0; q < P; ++q)
    for (int i = 0; i < base; ++i) element(t, rank, q, i, seed, &in[(q * base + i) * t.bytes]);
  const int err = MPI_Alltoallv(in.data(), sc.data(), sd.data(), t.mpi, out.data(), rc.data(),
                                rd.data(), every_other, MPI_COMM_WORLD);
  CHECK(err == MPI_SUCCESS, "MPI_Alltoallv strided %s: rc %d", t.name, err);
  std::vector<uint8_t> want(out.size(), kFill);
  for (int q = 0; q < P; ++q)
    for (int i = 0; i < base; ++i) element(t, q, rank, i, seed, &want[2 * (q * base + i) * t.bytes]);
  CHECK(want == out, "MPI_Alltoallv strided %s base %d: the output differs", t.name, base);
  MPI_Type_free(&every_other);
  MPI_Type_free(&pair);
}

// The first v-collective on a new communicator non-blocking, with point-to-point messages that a
// peer sends only after its own call: even ranks start MPI_Ialltoallv and then send to the next
// rank, odd ranks receive from the previous rank first and start theirs after. A call that waited
// for its peers when it starts would hang here (the script bounds the run).
void first_nonblocking(const Type& t) {
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  const int P = nranks, n = 4096;
  std::vector<int> counts(P, n), displs(P);
  for (int q = 0; q < P; ++q) displs[q] = q * n;
  std::vector<uint8_t> in(P * n * t.bytes), out(P * n * t.bytes, kFill);
  for (int q = 0; q < P; ++q)
    for (int i = 0; i < n; ++i) element(t, rank, q, i, 99, &in[(q * n + i) * t.bytes]);
  MPI_Request req = MPI_REQUEST_NULL;
  int token = rank;
  const bool even = rank % 2 == 0;
  if (even) {
    MPI_Ialltoallv(in.data(), counts.data(), displs.data(), t.mpi, out.data(), counts.data(),
                   displs.data(), t.mpi, comm, &req);
    if (rank + 1 < P) MPI_Send(&token, 1, MPI_INT, rank + 1, 5, comm);
  } else {
    MPI_Recv(&token, 1, MPI_INT, rank - 1, 5, comm, MPI_STATUS_IGNORE);
    MPI_Ialltoallv(in.data(), counts.data(), displs.data(), t.mpi, out.data(), counts.data(),
                   displs.data(), t.mpi, comm, &req);
  }
  const int err = MPI_Wait(&req, MPI_STATUS_IGNORE);
  CHECK(err == MPI_SUCCESS && (even || token == rank - 1), "first non-blocking alltoallv: rc %d", err);
  std::vector<uint8_t> want(out.size());
  for (int q = 0; q < P; ++q)
    for (int i = 0; i < n; ++i) element(t, q, rank, i, 99, &want[(q * n + i) * t.bytes]);
  CHECK(want == out, "first non-blocking alltoallv %s: the output differs", t.name);
  MPI_Comm_free(&comm);
}

// Rank 1 expects one element fewer from rank 0 than rank 0 sends: rank 1's call fails with
// MPI_ERR_TRUNCATE, the others complete, and the communicator works afterwards.
int truncate() {
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const int P = nranks, n = 1000;
  std::vector<int> sc(P, n), rc(P, n), sd(P), rd(P);
  for (int q = 0; q < P; ++q) sd[q] = rd[q] = q * n;
  if (rank == 1) rc[0] = n - 1;
  std::vector<float> in(P * n, 1.5f), out(P * n, 0.0f);
  const int err = MPI_Alltoallv(in.data(), sc.data(), sd.data(), MPI_FLOAT, out.data(), rc.data(),
                                rd.data(), MPI_FLOAT, MPI_COMM_WORLD);
  int cls = MPI_SUCCESS;
  if (err != MPI_SUCCESS) MPI_Error_class(err, &cls);
  const bool want = rank == 1 ? cls == MPI_ERR_TRUNCATE : err == MPI_SUCCESS;
  long one = 1, sum = 0;
  const int after = MPI_Allreduce(&one, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  const bool good = want && after == MPI_SUCCESS && sum == P;
  std::printf("pairwise_test: truncation: rank %d: %s (rc %d class %d)\n", rank,
              good ? "as expected" : "WRONG", err, cls);
  return good ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--truncate") == 0) {
      const int rc = truncate();
      MPI_Finalize();
      return rc;
    }
    quick = quick || std::strcmp(argv[i], "--quick") == 0;
  }
  const std::vector<Type> types = test_types(mpizip_active());
  first_nonblocking(types[0]);
  uint64_t seed = 1;
  std::vector<int> bases = {1, 7, 1000, 65536};
  if (!quick) bases.push_back(300000);
  for (const Type& t : types) {
    for (int base : bases) {
      for (bool nb : {false, true}) {
        alltoallv(t, base, seed++, false, nb);
        alltoallv(t, base, seed++, true, nb);
        // (Every block to every rank: the largest base would move P times a gatherv's bytes.)
        if (base <= 65536)
          for (bool in_place : {false, true}) allgatherv(t, base, in_place, seed++, nb);
        for (int root = 0; root < nranks; ++root) {
          if (base > 1000 && root != 0 && root != nranks - 1) continue;  // every root when small
          for (bool in_place : {false, true}) {
            gatherv(t, base, root, in_place, seed++, nb);
            scatterv(t, base, root, in_place, seed++, nb);
          }
        }
      }
    }
    strided(t, 1000, seed++);
    for (int n : {1, 4097, 65536})
      for (int root : {0, nranks - 1})
        for (bool in_place : {false, true})
          for (bool nb : {false, true}) {
            gather_scatter(t, n, root, in_place, nb, seed);
            seed += 2;
          }
  }
  long mine = failures, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("pairwise_test: %d ranks, %ld failures\n", nranks, all);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
