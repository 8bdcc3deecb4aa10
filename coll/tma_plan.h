// The planner of the TMA intra-node collectives (coll/tma_coll.h): from a collective's shape and the
// ranks' buffers as this rank addresses them, the tasks this rank executes, as segments of the TMA
// engine (kernels/tma_engine.h). Pure host code, no GPU: tested on the CPU (tests/gpu/tma_plan_test).
//
// Shard ownership (T-CCL): an allreduce's `count` elements are cut into one shard per rank, at
// 16-byte boundaries so that every shard starts where bulk copies can (shards differ by at most one
// 16-byte unit; with fewer units than ranks, the last ranks own nothing). The owner of shard r pulls
// every rank's contribution to it, folds them in rank order 0, 1, ..., P-1 and pushes the result to
// every rank's output: one reduce task with P sources and P destinations. A reduce-scatter-block is
// the same with one destination, the owner's own output; an allgather is one copy task per rank,
// from its input to its block of every rank's output (fan-out). Synchronisation tasks (the end
// barrier) are the engine's, the same for every plan.
#pragma once

#include <cstdint>

#include "kernels/tma_engine.h"
#include "src/platform/status.h"

namespace mpizip::coll::tma {

using kernels::tma::kMaxRanks;

enum class Kind : uint8_t { kAllreduce = 0, kReduceScatterBlock = 1, kAllgather = 2 };

// The ranks' buffers as this rank addresses them: in[q] is rank q's input (the whole input: count
// elements of an allreduce, P x recvcount of a reduce-scatter-block, the rank's own block of an
// allgather), out[q] rank q's output. Only in[rank] is read for an allgather.
struct Buffers {
  const void* in[kMaxRanks] = {};
  void* out[kMaxRanks] = {};
};

// The elements [*first, *first + *n) of `count` that rank `r` of `nranks` owns, `elem` bytes each
// (1, 2, 4 or 8).
void shard(uint64_t count, uint32_t elem, int nranks, int r, uint64_t* first, uint64_t* n);

// The segments of rank `rank` (0 <= rank < nranks <= kMaxRanks) for collective `kind`, written into
// out->seg / out->nseg (nothing else of *out changes). `count`: the allreduce's elements, the
// reduce-scatter-block's recvcount, the allgather's bytes per rank (elem 1). An allgather whose
// in[rank] is already its own block of out[rank] (MPI_IN_PLACE) copies to the other ranks only.
// kInvalidArgument for bad arguments.
Status plan(Kind kind, int nranks, int rank, uint64_t count, uint32_t elem, const Buffers& b,
            kernels::tma::Launch* out);

// The bytes one rank's part moves through its CTAs (the planner's measure of a collective's size,
// the key of the tuning table): an allreduce's buffer, a reduce-scatter-block's input, an
// allgather's output.
uint64_t collective_bytes(Kind kind, int nranks, uint64_t count, uint32_t elem);

}  // namespace mpizip::coll::tma
