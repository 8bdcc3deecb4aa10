// Hierarchical collectives across multi-GPU nodes: MPI_Allreduce, MPI_Reduce_scatter_block,
// MPI_Allgather and MPI_Bcast on a communicator of N >= 2 nodes of G >= 2 ranks each, composed of
// stages on two sub-communicators (docs/DESIGN.md, "Hierarchical collectives"):
//
//   node   the G ranks of one node (intra-node: the TMA engine over CUDA IPC where it takes the
//          call, else the two-shot's engine, whose pieces travel raw within a node);
//   cross  the N ranks of equal rank in their node, one per node (the two-shot's engine between
//          nodes, compressed as the flat two-shot is).
//
// The composition here is the order of the stages and where each stage's data lies; the stages
// themselves are run by the caller (src/core, which routes each on its sub-communicator) through
// `Stages`, so coll/ calls nothing above it. Shards are the two-shot's (coll/plan.h): a pure
// function of count, element size and rank count, the same on every rank.
//
//   allreduce        node reduce-scatter (local rank l gets shard l of G, folded in local-rank
//                    order), cross allreduce of shard l (folded in node order), node allgather.
//   reduce-scatter   the input's blocks reordered into scratch by (local rank, node); node
//   (block)          reduce-scatter (local rank l gets the blocks of the ranks of local rank l),
//                    cross reduce-scatter of those (node k gets its block), the block to the output.
//   allgather        this rank's block into scratch at (local rank, node); cross allgather of the N
//                    blocks of local rank l, node allgather of the G groups, scratch to the output
//                    in rank order.
//   bcast            the root's node broadcasts within itself; cross broadcast of shard l from the
//                    root's node; node allgather on every other node.
//
// A float reduction's result is the fold of each node's contributions in local-rank order, then of
// the nodes' results in node order (kernels/reduce.h's arithmetic at each fold: bf16 and fp16
// accumulated in fp32 and rounded once per fold): bitwise the same on every rank, from run to run,
// and compressed or not. After every stage the ranks agree (Stages::agree) that it succeeded, so
// a failure anywhere ends the collective on every rank, with the failing rank's own status and
// Status::kPeerFailed on the others; no stage is left half-run.
#pragma once

#include <cstdint>
#include <vector>

#include "src/platform/status.h"

namespace mpizip::coll::hier {

// Where the communicator's ranks sit: N nodes of G ranks.
struct Layout {
  int nodes = 1;                       // N
  int per_node = 1;                    // G
  int node = 0;                        // this rank's node: its rank in the cross communicator
  int local = 0;                       // its rank in its node: in the node communicator
  const int* node_of = nullptr;        // per rank of the communicator (N x G entries)
  const int* local_of = nullptr;
  int ranks() const { return nodes * per_node; }
};

// The stages' collectives, each collective over its sub-communicator, on `count` elements of the
// call's type (of `elem` bytes, given to the composition) in device or host memory.
class Stages {
 public:
  virtual ~Stages() = default;
  // Node: the fold, in local-rank order, of every local rank's `count` elements at `in`; this
  // rank's two-shot shard (of G) lands at its offset in `out` (`count` elements; `in` may be it).
  virtual Status node_reduce_scatter(const void* in, void* out, uint64_t count) = 0;
  // Node: each local rank's shard (of G) at its offset in `buf`, to every local rank's `buf`.
  virtual Status node_allgather(void* buf, uint64_t count) = 0;
  // Node: `count` elements at `buf` from local rank `root`.
  virtual Status node_bcast(void* buf, uint64_t count, int root) = 0;
  // Cross: the fold, in node order, of `count` elements at `buf`, into `buf` on every node.
  virtual Status cross_allreduce(void* buf, uint64_t count) = 0;
  // Cross: as cross_allreduce, but node k ends with its shard (of N) alone folded, at its offset.
  virtual Status cross_reduce_scatter(void* buf, uint64_t count) = 0;
  // Cross: node k's shard (of N) at its offset in `buf` to every node's `buf`.
  virtual Status cross_allgather(void* buf, uint64_t count) = 0;
  // Cross: `count` elements at `buf` from node `root`.
  virtual Status cross_bcast(void* buf, uint64_t count, int root) = 0;
  // Every rank of the whole communicator: whether every rank's `mine` is kOk. kOk where all are;
  // else this rank's own failure, or kPeerFailed where only others failed.
  virtual Status agree(Status mine) = 0;
};

// The collectives. `device`: the caller's buffers are device memory (scratch is taken there),
// else host memory. Counts in elements of `elem` bytes. Every rank of the communicator calls the
// same one with the same count (and root); the caller has checked that.
Status allreduce(Stages& s, const Layout& l, const void* in, void* out, uint64_t count,
                 uint32_t elem);
// `in`: every rank's P x `count` elements (for MPI_IN_PLACE: the output buffer); `out`: `count`
// elements. Needs count x elem a multiple of 16 bytes.
Status reduce_scatter_block(Stages& s, const Layout& l, const void* in, void* out, uint64_t count,
                            uint32_t elem, bool device);
// `in`: this rank's `count` elements (null for MPI_IN_PLACE: its block of `out`); `out`: P x
// `count`. Needs count x elem a multiple of 16 bytes.
Status allgather(Stages& s, const Layout& l, const void* in, void* out, uint64_t count,
                 uint32_t elem, bool device);
// `root`: a rank of the communicator.
Status bcast(Stages& s, const Layout& l, void* buf, uint64_t count, uint32_t elem, int root);

// Offset and size, in elements, of shard `owner` of `count` elements among `nranks` (the
// two-shot's plan, coll/plan.h).
void shard_of(uint64_t count, uint32_t elem, int nranks, int owner, uint64_t* begin,
              uint64_t* size);

}  // namespace mpizip::coll::hier
