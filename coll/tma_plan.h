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
// from its input to its block of every rank's output (fan-out). The other collectives (plan() below)
// are tasks of the same two shapes. Synchronisation tasks (the end barrier) are the engine's, the
// same for every plan.
#pragma once

#include <cstdint>

#include "kernels/tma_engine.h"
#include "src/platform/status.h"

namespace mpizip::coll::tma {

using kernels::tma::kMaxRanks;

enum class Kind : uint8_t {
  kAllreduce = 0,
  kReduceScatterBlock = 1,
  kAllgather = 2,
  kBcast = 3,
  kReduce = 4,
  kGather = 5,
  kScatter = 6,
  kAlltoall = 7,
  kScan = 8,
  kExscan = 9,
  kReduceScatter = 10,
  kAllgatherv = 11,
};

// One collective as every rank of it describes it (the same on every rank, as MPI requires of these
// arguments). `count` is in elements of `elem` bytes (1, 2, 4, 8 or 16): the whole buffer of an
// allreduce, a reduce, a broadcast, a scan and an exscan; the block of one rank of a
// reduce-scatter-block, an allgather, a gather, a scatter and an alltoall (the copies run with
// elem 1 and count in bytes). `counts` and `displs` (P entries each) are the per-rank elements of a
// reduce-scatter and an allgatherv, and the allgatherv's displacements (elements).
struct Call {
  Kind kind = Kind::kAllreduce;
  int root = 0;
  uint64_t count = 0;
  uint32_t elem = 1;
  const uint64_t* counts = nullptr;
  const uint64_t* displs = nullptr;
};

// What one rank's buffers are to a call: the bytes of its input and its output (0: the rank has
// none of that kind in this call), whether its peers read the input or write the output (then they
// map it), and with MPI_IN_PLACE where the input lies: inside the output at `in_offset` (peers may
// read it there), or copied aside first (`stage_in`: a peer would overwrite it while another reads
// it).
struct Extents {
  uint64_t in_bytes = 0;
  uint64_t out_bytes = 0;
  bool share_in = false;
  bool share_out = false;
  bool in_inside_out = false;  // in place: the input is the output's bytes at in_offset
  uint64_t in_offset = 0;
  bool stage_in = false;       // in place: the input (the output buffer's bytes) is staged
};
Extents extents(const Call& c, int nranks, int rank, bool in_place);

// The ranks' buffers as this rank addresses them: in[q] is rank q's input, out[q] its output (see
// Extents; null where a rank has none).
struct Buffers {
  const void* in[kMaxRanks] = {};
  void* out[kMaxRanks] = {};
};

// The elements [*first, *first + *n) of `count` that rank `r` of `nranks` owns, `elem` bytes each
// (1, 2, 4, 8 or 16).
void shard(uint64_t count, uint32_t elem, int nranks, int r, uint64_t* first, uint64_t* n);

// The segments of rank `rank` (0 <= rank < nranks <= kMaxRanks) for `c`, written into out->seg /
// out->nseg (nothing else of *out changes). Shard ownership for the reductions of a whole buffer
// (allreduce, reduce: the owner of shard r folds it and writes it to every output, or the root's)
// and for a broadcast (the owner of shard r copies it from the root's buffer to every other rank);
// a reduce-scatter's owner folds its own block; a scan's rank r folds ranks 0..r (an exscan's
// 0..r-1; rank 0 of an exscan writes nothing); a gather's, an allgather's and an allgatherv's rank
// pushes its block; a scatter's rank pulls its block; an alltoall's rank pushes each of its blocks
// to its peer. Where a rank's input already sits where it goes (MPI_IN_PLACE) nothing copies it.
// kInvalidArgument for bad arguments.
Status plan(const Call& c, int nranks, int rank, const Buffers& b, kernels::tma::Launch* out);
// The same for the first three kinds, as (kind, count, elem).
Status plan(Kind kind, int nranks, int rank, uint64_t count, uint32_t elem, const Buffers& b,
            kernels::tma::Launch* out);

// Whether this rank's plan `l` of a collective of `bytes` (collective_bytes) runs on the GPU
// runtime's copies (coll/tma_coll.h, Options::copy_engine_bytes): a plan of copies alone, each to
// one destination, of at least `threshold` bytes. A fan-out stays on the CTAs, which load a chunk
// once for every destination.
bool runtime_copies(const kernels::tma::Launch& l, uint64_t bytes, uint64_t threshold);

// The bytes one rank's part moves through its CTAs (the planner's measure of a collective's size,
// the key of the tuning table): an allreduce's buffer, a reduce-scatter-block's input, an
// allgather's output; the others as the measured kind they resemble (tuned_kind).
uint64_t collective_bytes(const Call& c, int nranks);
uint64_t collective_bytes(Kind kind, int nranks, uint64_t count, uint32_t elem);
// The measured kind whose tuning a call takes: the copies an allgather's, the reductions of a
// block a reduce-scatter-block's, the reductions of a whole buffer an allreduce's.
Kind tuned_kind(Kind kind);

}  // namespace mpizip::coll::tma
