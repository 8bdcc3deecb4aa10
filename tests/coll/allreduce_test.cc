// MPI_Allreduce and MPI_Iallreduce under MPIZip, on host buffers, driven by
// tests/coll/allreduce.sh. For every type (MPI_FLOAT, MPI_DOUBLE, MPIZIP_BF16, MPIZIP_FP16), op
// (MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX) and count (0, 1, P-1, P+1, a count not divisible by P, and
// 1000003 for some), out of place and in place, it checks that the result:
//   - is the same, bit for bit, on every rank (where the MPI library runs a MIN or MAX, +0 and -0
//     count as one value: MPI leaves their order open);
//   - lies within floating-point tolerance of a double-precision reference computed on the host
//   (MIN
//     and MAX: equal to it);
//   - where MPIZip's two-shot runs (--twoshot-from BYTES: calls of at least BYTES, and every bf16
//   and
//     fp16 call), is bit for bit the rank-order fold of kernels/reduce.h, NaN and signed zeros
//     included, and the same in place as out of place; with --pretend G (MPIZIP_PRETEND_NODE_RANKS=G,
//     the hierarchical collectives), the fold of each node's G ranks, then of the nodes' results.
// With --hashes FILE, rank 0 writes one line per case with a hash of the result, which the script
// compares between runs (compression on and off, run to run). Also: MPI_Iallreduce overlapped with
// point-to-point traffic and with another MPI_Iallreduce, and (--mismatch) arguments that differ
// across ranks, which must give an error on every rank and leave the communicator usable.
#include <cstdlib>
#include <string>

#include "tests/coll/allreduce_check.h"

namespace {

using namespace allreduce_check;

struct Options {
  uint64_t twoshot_from =
      ~uint64_t{0};  // bytes from which float and double calls take the two-shot
  FILE* hashes = nullptr;
  bool mismatch = false;
  bool mpizip = false;  // MPIZip is loaded (bf16 and fp16 exist)
  int per_node = 0;     // --pretend G: the two-shot's calls run hierarchically on nodes of G ranks
  bool quick = false;   // --quick: fp32 and bf16 only, no overlapped calls (many-rank runs)
};

Options opt;

// Whether MPIZip's two-shot serves this call (so its exact fold applies).
bool twoshot(const Type& t, uint64_t count) {
  if (!opt.mpizip) return false;
  if (t.dtype == DType::kBf16 || t.dtype == DType::kFp16) return true;
  return count * t.bytes >= opt.twoshot_from;
}

// The hash of a result compared across ranks. A MIN or MAX the MPI library runs may pick +0 on some
// ranks and -0 on others (MPICH's recursive doubling meets the ranks' values in different orders);
// MPI leaves that choice open, so zeros count as one value there. MPIZip's two-shot (`exact`) is
// compared bit for bit.
uint64_t result_hash(const Type& t, const OpInfo& o, bool exact, const uint8_t* p, uint64_t count) {
  if (exact || (o.op != Op::kMin && o.op != Op::kMax) ||
      (t.dtype != DType::kFp32 && t.dtype != DType::kFp64)) {
    return fnv1a(p, count * t.bytes);
  }
  std::vector<uint8_t> v(p, p + count * t.bytes);
  for (uint64_t i = 0; i < count; ++i) {
    uint8_t* e = v.data() + i * t.bytes;
    if (t.dtype == DType::kFp32) {
      float f;
      std::memcpy(&f, e, 4);
      if (f == 0.0f) std::memset(e, 0, 4);
    } else {
      double d;
      std::memcpy(&d, e, 8);
      if (d == 0.0) std::memset(e, 0, 8);
    }
  }
  return fnv1a(v.data(), v.size());
}

// One case: out of place and in place, checked as the header says.
void run_case(const Type& t, const OpInfo& o, uint64_t count, MPI_Comm comm) {
  const uint64_t seed =
      mix(count * 131 + static_cast<uint64_t>(o.op) * 7 + static_cast<uint64_t>(t.dtype));
  const bool exact = twoshot(t, count);
  std::vector<std::vector<uint8_t>> in(static_cast<size_t>(nranks));
  for (int r = 0; r < nranks; ++r) in[r] = inputs_of(t, r, count, o.op, seed, exact);
  std::vector<uint8_t> out(count * t.bytes + 1, 0xA5), inplace = in[rank];
  inplace.push_back(0xA5);
  const int n = static_cast<int>(count);
  int rc = MPI_Allreduce(in[rank].data(), out.data(), n, t.mpi, o.mpi, comm);
  CHECK(rc == MPI_SUCCESS, "%s %s count %d: MPI_Allreduce returned %d", t.name, o.name, n, rc);
  rc = MPI_Allreduce(MPI_IN_PLACE, inplace.data(), n, t.mpi, o.mpi, comm);
  CHECK(rc == MPI_SUCCESS, "%s %s count %d: in-place MPI_Allreduce returned %d", t.name, o.name, n,
        rc);
  CHECK(out.back() == 0xA5 && inplace.back() == 0xA5, "%s %s count %d: wrote past the buffer",
        t.name, o.name, n);
  const uint64_t h = fnv1a(out.data(), count * t.bytes);
  CHECK(same_on_all_ranks(result_hash(t, o, exact, out.data(), count), comm),
        "%s %s count %d: results differ across ranks", t.name, o.name, n);
  CHECK(same_on_all_ranks(result_hash(t, o, exact, inplace.data(), count), comm),
        "%s %s count %d: in-place results differ across ranks", t.name, o.name, n);
  int bad = tolerance_failures(t, o.op, in, count, out.data(), exact && opt.per_node > 0);
  CHECK(bad == 0, "%s %s count %d: %d elements outside tolerance", t.name, o.name, n, bad);
  if (exact) {
    const std::vector<uint8_t> want = hierarchical_fold(t, o.op, in, count, opt.per_node);
    // (memcmp is given no null pointers, even for count 0)
    CHECK(want.empty() || std::memcmp(out.data(), want.data(), want.size()) == 0,
          "%s %s count %d: not the rank-order fold", t.name, o.name, n);
    CHECK(want.empty() || std::memcmp(inplace.data(), want.data(), want.size()) == 0,
          "%s %s count %d: in place, not the rank-order fold", t.name, o.name, n);
  }
  if (opt.hashes != nullptr && rank == 0) {
    std::fprintf(opt.hashes, "%s %s %d %016" PRIx64 "\n", t.name, o.name, n, h);
  }
}

// MPI_Iallreduce while point-to-point messages (float, so protocol messages) circle the ring, and a
// second MPI_Iallreduce in flight at the same time. Under the two-shot the results must equal the
// blocking ones bit for bit; the MPI library may associate differently, so there they must lie
// within tolerance.
void overlapped(const Type& t, uint64_t count, MPI_Comm comm) {
  const OpInfo& sum = kOps[0];
  const OpInfo& max = kOps[3];
  std::vector<std::vector<uint8_t>> a(static_cast<size_t>(nranks)), b(a.size());
  for (int r = 0; r < nranks; ++r) {
    a[r] = inputs_of(t, r, count, sum.op, 0x51, false);
    b[r] = inputs_of(t, r, count, max.op, 0x52, false);
  }
  std::vector<uint8_t> ra(a[rank].size()), rb(b[rank].size()), want_a(ra.size()), want_b(rb.size());
  const int n = static_cast<int>(count);
  MPI_Allreduce(a[rank].data(), want_a.data(), n, t.mpi, sum.mpi, comm);
  MPI_Allreduce(b[rank].data(), want_b.data(), n, t.mpi, max.mpi, comm);
  MPI_Request req[2];
  int rc = MPI_Iallreduce(a[rank].data(), ra.data(), n, t.mpi, sum.mpi, comm, &req[0]);
  CHECK(rc == MPI_SUCCESS, "MPI_Iallreduce returned %d", rc);
  rc = MPI_Iallreduce(b[rank].data(), rb.data(), n, t.mpi, max.mpi, comm, &req[1]);
  CHECK(rc == MPI_SUCCESS, "MPI_Iallreduce returned %d", rc);
  const int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
  std::vector<float> send(1 << 16), recv(1 << 16);
  for (int round = 0; round < 8; ++round) {
    for (size_t i = 0; i < send.size(); ++i)
      send[i] = static_cast<float>(rank * 1000 + round) + i * 0.5f;
    MPI_Sendrecv(send.data(), static_cast<int>(send.size()), MPI_FLOAT, next, round, recv.data(),
                 static_cast<int>(recv.size()), MPI_FLOAT, prev, round, comm, MPI_STATUS_IGNORE);
    bool okay = true;
    for (size_t i = 0; i < recv.size(); ++i) {
      okay = okay && recv[i] == static_cast<float>(prev * 1000 + round) + i * 0.5f;
    }
    CHECK(okay, "point-to-point data wrong while MPI_Iallreduce runs (round %d)", round);
  }
  rc = MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
  CHECK(rc == MPI_SUCCESS, "MPI_Waitall returned %d", rc);
  if (twoshot(t, count) && opt.per_node > 0) {
    // The blocking calls ran in stages, the non-blocking ones on the flat two-shot.
    CHECK(want_a == hierarchical_fold(t, sum.op, a, count, opt.per_node),
          "%s: MPI_Allreduce (sum) is not the hierarchical fold", t.name);
    CHECK(ra == expected_fold(t, sum.op, a, count), "%s: MPI_Iallreduce (sum) is not the rank-order fold",
          t.name);
    CHECK(rb == want_b, "%s: MPI_Iallreduce (max) differs from MPI_Allreduce", t.name);
  } else if (twoshot(t, count)) {
    CHECK(ra == want_a, "%s: MPI_Iallreduce (sum) differs from MPI_Allreduce", t.name);
    CHECK(rb == want_b, "%s: MPI_Iallreduce (max) differs from MPI_Allreduce", t.name);
  } else {
    CHECK(tolerance_failures(t, sum.op, a, count, ra.data()) == 0, "%s: MPI_Iallreduce (sum) wrong",
          t.name);
    CHECK(tolerance_failures(t, max.op, b, count, rb.data()) == 0, "%s: MPI_Iallreduce (max) wrong",
          t.name);
  }
}

// Arguments that differ across ranks: rank 0 passes another count, type or op. Every rank must get
// the error (with MPI_ERRORS_RETURN) rather than hang, and the communicator must work afterwards.
// Every call must take the two-shot (MPIZIP_ALLREDUCE_MIN_BYTES=0: rank 0's small float call too),
// or the ranks would not even meet in one algorithm.
void mismatches(const Type& bf16, MPI_Comm world) {
  MPI_Comm comm;
  MPI_Comm_dup(world, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  const int n = 1 << 12;
  std::vector<uint8_t> in(static_cast<size_t>(n + 8) * 4), out(in.size());
  struct Bad {
    const char* what;
    int count;
    MPI_Datatype type;
    MPI_Op op;
    int error_class;
  };
  const Bad cases[] = {
      {"count", rank == 0 ? n + 8 : n, bf16.mpi, MPI_SUM, MPI_ERR_COUNT},
      {"type", n, rank == 0 ? MPI_FLOAT : bf16.mpi, MPI_SUM, MPI_ERR_TYPE},
      {"op", n, bf16.mpi, rank == 0 ? MPI_MAX : MPI_SUM, MPI_ERR_OP},
  };
  for (const Bad& c : cases) {
    const int rc = MPI_Allreduce(in.data(), out.data(), c.count, c.type, c.op, comm);
    int cls = MPI_SUCCESS;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    CHECK(cls == c.error_class, "mismatched %s: error class %d, expected %d", c.what, cls,
          c.error_class);
  }
  const std::vector<uint8_t> a = inputs_of(bf16, rank, n, Op::kSum, 7, false);
  std::vector<uint8_t> r(a.size());
  const int rc = MPI_Allreduce(a.data(), r.data(), n, bf16.mpi, MPI_SUM, comm);
  CHECK(rc == MPI_SUCCESS, "MPI_Allreduce after the errors returned %d", rc);
  CHECK(same_on_all_ranks(fnv1a(r.data(), r.size()), comm),
        "results after the errors differ across ranks");
  MPI_Comm_free(&comm);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const char* hashes = nullptr;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--twoshot-from" && i + 1 < argc)
      opt.twoshot_from = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--hashes" && i + 1 < argc)
      hashes = argv[++i];
    else if (a == "--mismatch")
      opt.mismatch = true;
    else if (a == "--pretend" && i + 1 < argc)
      opt.per_node = std::atoi(argv[++i]);
    else if (a == "--quick")
      opt.quick = true;
  }
  opt.mpizip = mpizip_active();
  if (hashes != nullptr && rank == 0) opt.hashes = std::fopen(hashes, "w");

  const std::vector<Type> types = test_types(opt.mpizip);
  const uint64_t p = static_cast<uint64_t>(nranks);
  const uint64_t small[] = {0, 1, p - 1, p + 1, 4099 * p + 3};
  for (const Type& t : types) {
    if (opt.quick && t.dtype != DType::kFp32 && t.dtype != DType::kBf16) continue;
    for (const OpInfo& o : kOps) {
      for (uint64_t count : small) run_case(t, o, count, MPI_COMM_WORLD);
    }
    // The large count, with pieces and pipelining: SUM on every type, MAX on bf16.
    if (nranks <= 4) {
      run_case(t, kOps[0], 1000003, MPI_COMM_WORLD);
      if (t.dtype == DType::kBf16) run_case(t, kOps[3], 1000003, MPI_COMM_WORLD);
    }
  }
  if (!opt.quick) {
    overlapped(types[0], 300007, MPI_COMM_WORLD);
    if (opt.mpizip) overlapped(types[2], 300007, MPI_COMM_WORLD);
  }
  if (opt.mismatch && opt.mpizip) mismatches(types[2], MPI_COMM_WORLD);

  if (opt.hashes != nullptr) std::fclose(opt.hashes);
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("allreduce_test: %d ranks, %s\n", nranks, total == 0 ? "passed" : "FAILED");
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
