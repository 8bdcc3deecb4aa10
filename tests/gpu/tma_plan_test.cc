// The TMA collectives' planner and tuning-table choice (coll/tma_plan.h, coll/tma_tuning.h), on the
// CPU: shards cover the buffer exactly once at 16-byte boundaries for every count and rank count;
// each rank's segments read and write exactly its share; in-place allgathers skip the local copy;
// the CTA choice takes the fastest measured count within the budget at the nearest size.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "coll/tma_plan.h"
#include "coll/tma_tuning.h"

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

}  // namespace

int main() {
  shards();
  plans();
  tuning();
  std::printf("tma_plan_test: %d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
