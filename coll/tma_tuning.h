// The CTA count of a TMA collective (coll/tma_coll.h): from the tuning table that
// osu-bench/tma_sweep.sh measures (compiled in from coll/tma_tuning_table.inc), the configuration
// with the lowest time among those within the budget, at the measured size nearest (in ratio) to
// the call's; a heuristic where the table has no entry for the collective and rank count. The
// choice depends only on the collective, the rank count, the size and the budget, so every rank of a
// communicator makes the same one.
#pragma once

#include <cstdint>

#include "coll/tma_plan.h"

namespace mpizip::coll::tma {

// One measured point: the time of the collective with each CTA count tried.
struct TuningEntry {
  Kind kind;
  int nranks;
  uint64_t bytes;       // collective_bytes()
  int ctas[8];          // CTA counts tried, 0 past the last
  double us[8];         // their times, microseconds
};

// The CTA count for a collective of `bytes` (collective_bytes()) over `nranks` ranks, at most
// `budget` (>= 1), from `table` (n entries; the compiled-in table when table == nullptr).
int choose_ctas(Kind kind, int nranks, uint64_t bytes, int budget,
                const TuningEntry* table = nullptr, int n = -1);

// Without a measurement: one CTA per 512 KiB a rank moves, within the budget (small transfers on
// one CTA).
int heuristic_ctas(uint64_t bytes, int budget);

}  // namespace mpizip::coll::tma
