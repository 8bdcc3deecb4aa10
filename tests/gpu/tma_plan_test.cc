// The TMA collectives' planner and tuning-table choice (coll/tma_plan.h, coll/tma_tuning.h), on the
// CPU: shards cover the buffer exactly once at 16-byte boundaries for every count and rank count;
// each rank's segments read and write exactly its share; in-place allgathers skip the local copy;
// every kind's plans, executed on host memory by every rank in turn (copies and the CPU reduce),
// give the collective's result (1-8 ranks, every root, uneven counts, in place where MPI allows it),
// and leave every byte they must not write alone; the CTA choice takes the fastest measured count
// within the budget at the nearest size.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cstring>
#include <random>

#include "coll/tma_plan.h"
#include "coll/tma_tuning.h"
#include "kernels/reduce_cpu.h"

using namespace mpizip::coll::tma;
using mpizip::Status;

namespace {

int failures = 0;
#define CHECK(cond)                                                          \
  do {                                                                       \
    if (!(cond)) {                                                           \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                            \
    }                                                                        \
  } while (0)

char* fake(int q, int which) { return reinterpret_cast<char*>(uintptr_t{0x100000000ull} * (q + 1) + which * 0x10000000ull); }

void shards() {
  for (uint32_t elem : {2u, 4u, 8u})
    for (int P = 1; P <= kMaxRanks; ++P)
      for (uint64_t count : {1ull, 2ull, 3ull, 7ull, 8ull, 9ull, 31ull, 1000ull, 4097ull, 1000003ull}) {
        uint64_t next = 0;
        for (int r = 0; r < P; ++r) {
          uint64_t first = 0, n = 0;
          shard(count, elem, P, r, &first, &n);
          CHECK(first == next);
          if (n > 0) CHECK(first * elem % 16 == 0);
          next = first + n;
        }
        CHECK(next == count);
      }
}

void plans() {
  const int P = 3;
  Buffers b;
  for (int q = 0; q < P; ++q) {
    b.in[q] = fake(q, 0);
    b.out[q] = fake(q, 1);
  }
  const uint64_t count = 1001;  // fp32
  uint64_t covered = 0;
  for (int r = 0; r < P; ++r) {
    mpizip::kernels::tma::Launch l;
    CHECK(plan(Kind::kAllreduce, P, r, count, 4, b, &l) == Status::kOk);
    uint64_t first = 0, n = 0;
    shard(count, 4, P, r, &first, &n);
    CHECK(l.nseg == (n > 0 ? 1 : 0));
    if (l.nseg == 0) continue;
    const auto& s = l.seg[0];
    CHECK(s.nsrc == P && s.ndst == P && s.bytes == n * 4);
    for (int q = 0; q < P; ++q) {
      CHECK(s.src[q] == fake(q, 0) + first * 4);  // rank order: the fold's order
      CHECK(s.dst[q] == fake(q, 1) + first * 4);
    }
    covered += n;
  }
  CHECK(covered == count);
  for (int r = 0; r < P; ++r) {
    mpizip::kernels::tma::Launch l;
    CHECK(plan(Kind::kReduceScatterBlock, P, r, 77, 2, b, &l) == Status::kOk);
    CHECK(l.nseg == 1 && l.seg[0].nsrc == P && l.seg[0].ndst == 1 && l.seg[0].bytes == 154);
    CHECK(l.seg[0].src[2] == fake(2, 0) + 154 * r && l.seg[0].dst[0] == fake(r, 1));
  }
  for (int ip = 0; ip < 2; ++ip) {
    Buffers g = b;
    const int r = 1;
    if (ip) g.in[r] = fake(r, 1) + 100 * r;
    mpizip::kernels::tma::Launch l;
    CHECK(plan(Kind::kAllgather, P, r, 100, 1, g, &l) == Status::kOk);
    CHECK(l.nseg == 1 && l.seg[0].nsrc == 1 && l.seg[0].bytes == 100);
    CHECK(static_cast<int>(l.seg[0].ndst) == (ip ? P - 1 : P));
    for (uint32_t k = 0; k < l.seg[0].ndst; ++k) CHECK(l.seg[0].dst[k] != g.in[r]);
  }
  mpizip::kernels::tma::Launch l;
  CHECK(plan(Kind::kAllreduce, 9, 0, 10, 4, b, &l) == Status::kInvalidArgument);
  CHECK(plan(Kind::kAllreduce, 2, 2, 10, 4, b, &l) == Status::kInvalidArgument);
}

void tuning() {
  const TuningEntry t[] = {
      {Kind::kAllreduce, 2, 1 << 20, {1, 2, 4, 8, 16}, {90, 50, 30, 20, 15}},
      {Kind::kAllreduce, 2, 1 << 10, {1, 2, 4}, {5, 6, 7}},
      {Kind::kAllgather, 4, 1 << 20, {1, 8}, {50, 10}},
  };
  CHECK(choose_ctas(Kind::kAllreduce, 2, 1 << 20, 8, t, 3) == 8);
  CHECK(choose_ctas(Kind::kAllreduce, 2, 1 << 20, 64, t, 3) == 16);
  CHECK(choose_ctas(Kind::kAllreduce, 2, 3 << 19, 3, t, 3) == 2);  // nearest: 1 MiB
  CHECK(choose_ctas(Kind::kAllreduce, 2, 2000, 8, t, 3) == 1);      // nearest: 1 KiB
  CHECK(choose_ctas(Kind::kAllgather, 4, 1 << 22, 4, t, 3) == 1);
  CHECK(choose_ctas(Kind::kReduceScatterBlock, 2, 64 << 20, 8, t, 3) == heuristic_ctas(64 << 20, 8));
  CHECK(heuristic_ctas(1024, 8) == 1);
  CHECK(heuristic_ctas(uint64_t{1} << 30, 8) == 8);
  CHECK(heuristic_ctas(uint64_t{3} << 19, 8) == 3);
}

// ---- Every kind's plans, executed on the CPU ---------------------------------------------------

using mpizip::kernels::reduce::Op;
using mpizip::kernels::reduce::Type;

// Executes a launch's segments: a copy (one source) or the CPU reduce of int32 sums.
void execute(const mpizip::kernels::tma::Launch& l) {
  for (int i = 0; i < l.nseg; ++i) {
    const auto& s = l.seg[i];
    std::vector<uint8_t> r(s.bytes);
    if (s.nsrc == 1) {
      std::memcpy(r.data(), s.src[0], s.bytes);
    } else {
      CHECK(mpizip::kernels::cpu::reduce(Type::kI32, Op::kSum, s.src, static_cast<int>(s.nsrc), r.data(),
                                         s.bytes / 4) == Status::kOk);
    }
    for (uint32_t k = 0; k < s.ndst; ++k) std::memcpy(s.dst[k], r.data(), s.bytes);
  }
}

int32_t val(int rank, uint64_t i) { return static_cast<int32_t>(rank * 1000003 + i * 7 + 1); }
constexpr uint8_t kUntouched = 0xEE;

// One collective on P simulated ranks: builds every rank's buffers from extents(), plans and executes
// each rank's part in turn, then checks every output byte (and that the bytes no rank may write keep
// kUntouched). Elements are int32 (elem 4) for reductions and bytes for the copies.
void simulate(Kind kind, int P, int root, bool in_place, uint64_t count, const uint64_t* counts_el,
              const uint64_t* displs_el) {
  const bool reduction = kind == Kind::kAllreduce || kind == Kind::kReduce ||
                         kind == Kind::kReduceScatterBlock || kind == Kind::kReduceScatter ||
                         kind == Kind::kScan || kind == Kind::kExscan;
  const uint32_t E = 4;
  Call c;
  c.kind = kind;
  c.root = root;
  c.count = reduction ? count : count * E;  // copies: bytes
  c.elem = reduction ? E : 1;
  uint64_t counts[kMaxRanks] = {}, displs[kMaxRanks] = {};
  if (counts_el) {
    for (int q = 0; q < P; ++q) {
      counts[q] = reduction ? counts_el[q] : counts_el[q] * E;
      displs[q] = displs_el ? displs_el[q] * E : 0;
    }
    c.counts = counts;
    c.displs = displs;
  }
  // Each rank's buffers; the in-place ranks' input lives in their output.
  std::vector<std::vector<uint8_t>> in(P), out(P);
  std::vector<Extents> ext(P);
  Buffers b;
  for (int q = 0; q < P; ++q) {
    const bool ip = in_place && (kind != Kind::kGather && kind != Kind::kReduce && kind != Kind::kScatter ? true : q == root);
    ext[q] = extents(c, P, q, ip);
    out[q].assign(ext[q].out_bytes, kUntouched);
    in[q].resize(ext[q].in_bytes);
    for (uint64_t i = 0; i < ext[q].in_bytes / E; ++i) {
      const int32_t v = val(q, i);
      std::memcpy(&in[q][i * E], &v, E);
    }
    b.out[q] = ext[q].out_bytes ? out[q].data() : nullptr;
    if (ext[q].in_bytes == 0) continue;
    if (ext[q].in_inside_out) {
      // MPI_IN_PLACE: the input sits in the output at in_offset.
      CHECK(ext[q].in_offset + ext[q].in_bytes <= ext[q].out_bytes);
      std::memcpy(out[q].data() + ext[q].in_offset, in[q].data(), ext[q].in_bytes);
      b.in[q] = out[q].data() + ext[q].in_offset;
    } else {
      b.in[q] = in[q].data();  // staged inputs are copies: a buffer of their own
    }
  }
  for (int r = 0; r < P; ++r) {
    mpizip::kernels::tma::Launch l;
    CHECK(plan(c, P, r, b, &l) == Status::kOk);
    for (int i = 0; i < l.nseg; ++i)
      CHECK(l.seg[i].nsrc == l.seg[0].nsrc);  // the engine's rule
    execute(l);
  }
  // The expected bytes of every output.
  auto input = [&](int q, uint64_t i) { return val(q, i); };
  auto at = [&](int q, uint64_t byte) {
    int32_t v;
    std::memcpy(&v, &out[q][byte], 4);
    return v;
  };
  auto untouched = [&](int q, uint64_t byte) {
    for (int k = 0; k < 4; ++k)
      if (out[q][byte + k] != kUntouched) return false;
    return true;
  };
  auto sum = [&](uint64_t i, int from, int to) {  // ranks [from, to)
    uint32_t s = 0;
    for (int q = from; q < to; ++q) s += static_cast<uint32_t>(input(q, i));
    return static_cast<int32_t>(s);
  };
  int bad = 0;
  auto expect = [&](bool ok, int q, uint64_t i) {
    if (!ok && bad++ < 3)
      std::fprintf(stderr, "kind %d P %d root %d in_place %d: rank %d element %llu wrong\n",
                   static_cast<int>(kind), P, root, in_place ? 1 : 0, q,
                   static_cast<unsigned long long>(i));
  };
  const uint64_t n = count;
  for (int q = 0; q < P; ++q) {
    switch (kind) {
      case Kind::kAllreduce:
        for (uint64_t i = 0; i < n; ++i) expect(at(q, i * 4) == sum(i, 0, P), q, i);
        break;
      case Kind::kReduce:
        if (q == root)
          for (uint64_t i = 0; i < n; ++i) expect(at(q, i * 4) == sum(i, 0, P), q, i);
        break;
      case Kind::kReduceScatterBlock:
        for (uint64_t i = 0; i < n; ++i) expect(at(q, i * 4) == sum(q * n + i, 0, P), q, i);
        break;
      case Kind::kReduceScatter: {
        uint64_t first = 0;
        for (int k = 0; k < q; ++k) first += counts_el[k];
        for (uint64_t i = 0; i < counts_el[q]; ++i) expect(at(q, i * 4) == sum(first + i, 0, P), q, i);
        break;
      }
      case Kind::kScan:
        for (uint64_t i = 0; i < n; ++i) expect(at(q, i * 4) == sum(i, 0, q + 1), q, i);
        break;
      case Kind::kExscan:
        for (uint64_t i = 0; q > 0 && i < n; ++i) expect(at(q, i * 4) == sum(i, 0, q), q, i);
        break;
      case Kind::kBcast:
        if (q != root)
          for (uint64_t i = 0; i < n; ++i) expect(at(q, i * 4) == input(root, i), q, i);
        break;
      case Kind::kGather:
        if (q == root)
          for (int s2 = 0; s2 < P; ++s2)
            for (uint64_t i = 0; i < n; ++i) expect(at(q, (s2 * n + i) * 4) == input(s2, i), q, i);
        break;
      case Kind::kScatter:
        if (!(in_place && q == root))
          for (uint64_t i = 0; i < n; ++i) expect(at(q, i * 4) == input(root, q * n + i), q, i);
        break;
      case Kind::kAlltoall:
        for (int s2 = 0; s2 < P; ++s2)
          for (uint64_t i = 0; i < n; ++i) expect(at(q, (s2 * n + i) * 4) == input(s2, q * n + i), q, i);
        break;
      case Kind::kAllgather:
        for (int s2 = 0; s2 < P; ++s2)
          for (uint64_t i = 0; i < n; ++i) expect(at(q, (s2 * n + i) * 4) == input(s2, i), q, i);
        break;
      case Kind::kAllgatherv: {
        std::vector<bool> covered(ext[q].out_bytes / 4, false);
        for (int s2 = 0; s2 < P; ++s2)
          for (uint64_t i = 0; i < counts_el[s2]; ++i) {
            expect(at(q, (displs_el[s2] + i) * 4) == input(s2, i), q, i);
            covered[displs_el[s2] + i] = true;
          }
        for (uint64_t i = 0; i < covered.size(); ++i)  // the gaps stay as they were
          if (!covered[i]) expect(untouched(q, i * 4), q, i);
        break;
      }
    }
  }
  CHECK(bad == 0);
}

void every_kind() {
  const uint64_t counts[kMaxRanks] = {5, 0, 17, 1, 64, 3, 0, 9};
  const uint64_t gaps[kMaxRanks] = {0, 7, 9, 40, 50, 130, 140, 150};  // displacements with gaps
  for (int P = 1; P <= kMaxRanks; ++P) {
    for (uint64_t n : {1ull, 3ull, 37ull, 1000ull}) {
      for (Kind k : {Kind::kAllreduce, Kind::kReduceScatterBlock, Kind::kScan, Kind::kExscan,
                     Kind::kAlltoall, Kind::kAllgather}) {
        simulate(k, P, 0, false, n, nullptr, nullptr);
        if (k == Kind::kAllreduce || k == Kind::kAllgather) simulate(k, P, 0, true, n, nullptr, nullptr);
      }
      for (int root = 0; root < P; ++root)
        for (Kind k : {Kind::kReduce, Kind::kBcast, Kind::kGather, Kind::kScatter}) {
          simulate(k, P, root, false, n, nullptr, nullptr);
          if (k != Kind::kBcast) simulate(k, P, root, true, n, nullptr, nullptr);
        }
    }
    simulate(Kind::kReduceScatter, P, 0, false, 0, counts, nullptr);
    simulate(Kind::kAllgatherv, P, 0, false, 0, counts, gaps);
    simulate(Kind::kAllgatherv, P, 0, true, 0, counts, gaps);
  }
  // Pairs of 16 bytes are an element size the planner takes.
  Buffers b;
  std::vector<uint8_t> x(64 * 16), y(64 * 16);
  b.in[0] = x.data();
  b.out[0] = y.data();
  b.in[1] = x.data();
  b.out[1] = y.data();
  Call c;
  c.kind = Kind::kAllreduce;
  c.count = 64;
  c.elem = 16;
  mpizip::kernels::tma::Launch l;
  CHECK(plan(c, 2, 1, b, &l) == Status::kOk && l.nseg == 1 && l.seg[0].bytes % 16 == 0);
  c.elem = 12;
  CHECK(plan(c, 2, 1, b, &l) == Status::kInvalidArgument);
}

// Which plans the runtime's copies take: copies alone, each to one destination, from the threshold.
void copy_choice() {
  std::vector<uint8_t> x(1 << 12), y(1 << 12);
  for (int P : {2, 3, 4}) {
    Buffers b;
    for (int q = 0; q < P; ++q) {
      b.in[q] = x.data();
      b.out[q] = y.data() + q;  // distinct outputs
    }
    for (int r = 0; r < P; ++r) {
      mpizip::kernels::tma::Launch l;
      Call c;
      c.kind = Kind::kBcast;
      c.count = 1024;
      c.elem = 1;
      CHECK(plan(c, P, r, b, &l) == Status::kOk);
      // A broadcast's shard goes to every rank but the root: one destination only on 2 ranks.
      const bool one = P == 2 || l.nseg == 0;
      CHECK(runtime_copies(l, 1024, 0) == (one && l.nseg > 0));
      CHECK(!runtime_copies(l, 1023, 1024));
      c.kind = Kind::kAlltoall;
      c.count = 16;
      CHECK(plan(c, P, r, b, &l) == Status::kOk);
      CHECK(runtime_copies(l, 16 * P, 16 * P));  // P segments of one destination each
      c.kind = Kind::kAllreduce;
      c.count = 256;
      c.elem = 4;
      CHECK(plan(c, P, r, b, &l) == Status::kOk);
      CHECK(!runtime_copies(l, 1024, 0));  // folds stay on the CTAs
    }
  }
}

}  // namespace

int main() {
  copy_choice();
  shards();
  plans();
  every_kind();
  tuning();
  std::printf("tma_plan_test: %d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
