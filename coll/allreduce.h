// The two-shot compressed allreduce: reduce-scatter, then all-gather, over a communicator's
// transport (src/transport/transport.h), as one asynchronous operation that src/core runs behind an
// MPI_Iallreduce request or drives to completion for MPI_Allreduce.
//
//   hello       every rank sends every other rank a 64-byte hello (coll/wire.h) and checks the
//               P-1 it receives: a disagreement in type, op or count is an error on every rank,
//               before any data moves.
//   reduce-     the buffer is cut into P shards (rank r owns shard r) and shards into pieces
//   scatter     (coll/plan.h). For each piece index, a rank compresses the pieces it sends to the
//               P-1 owners in one batched call and sends each as soon as the batch is done; an
//               owner posts its receives up front, decodes each incoming piece as soon as it lands,
//               and once all have landed folds the P contributions, its own at its rank's
//               position, in rank order (kernels/reduce.h) into its shard of the output.
//   all-gather  as soon as a piece is reduced, its owner compresses it once and sends it to every
//               other rank; receivers decode straight into the output.
//
// Up to kDepth pieces are in flight at once, so compression, transfer, decoding and reduction of
// successive pieces overlap. A rank works in its buffers' memory: host buffers with the CPU codec
// and reduce, device buffers with the GPU codec and reduce kernels (staged through pinned host
// memory when the transport cannot reach device memory); the wire format is shared, so host and
// device ranks mix in one collective. Pieces go compressed to peers on other nodes when the
// sender's policy says so and the piece is large enough, raw otherwise (the sender's hello says
// which), and since the codec is lossless the result is bitwise the same either way, and the same
// on every rank.
//
// Decoding: the fold must see all P contributions of an element at once (fixed rank order, bf16
// and fp16 accumulated in fp32 and rounded once), and pieces land in any order. Pieces that land
// while others are still on the wire are decoded at once (the codec's batched decompressor) into
// bounded temporaries; on device ranks the pieces that complete the set are decoded inside the fold
// itself (kernels/decode_fold.cuh, Policy::fuse, where osu-bench/fold measured it faster), which
// tiles streams of different block sizes (a host rank's CPU-codec stream, say) by the largest
// block; host ranks decode every piece, then fold (docs/DESIGN.md, "the owner's fold").
//
// Errors: a piece that cannot be produced (a codec or copy failure) is replaced by an empty
// message, and a piece that lands with the wrong size or does not decode marks the receiver's
// result; an owner whose contributions failed sends empty all-gather messages, so every rank that
// depends on the piece reports MPIZip's corrupt-payload error, and every rank still completes the
// exchange (no hang). A transport failure ends the collective at once with its status.
//
// Memory per collective in flight: kDepth slots of, per peer, an outgoing stream, a landing buffer
// and a decode temporary of one piece each (the bound of a piece's stream, docs/FORMAT.md "Sizes",
// is about 2% above its raw size), plus the all-gather's outgoing stream and landing buffers:
// about kDepth x (4 (P - 1) + 1) x MPIZIP_ALLREDUCE_PIECE_BYTES, and as much pinned host memory
// again when device buffers are staged. With the piece size left to MPIZip (the default), that is at
// most the larger of MPIZIP_DEVICE_POOL_BYTES and the buffer's size, beyond the 4 MiB floor.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>

#include "coll/resources.h"
#include "kernels/format.h"
#include "kernels/reduce.h"
#include "src/platform/operation.h"
#include "src/transport/transport.h"

namespace mpizip::cost {
class Model;
}

namespace mpizip::coll {

// Most ranks of a two-shot communicator (the codec's batch and the reduce kernel's inputs).
inline constexpr int kMaxRanks = 64;
// Pieces in flight per collective.
inline constexpr int kDepth = 3;

struct Policy {
  bool compress = true;             // compress pieces for peers on other nodes
  bool host_compress = false;       // host buffers too, with the CPU codec
  uint64_t min_compress_bytes = 0;  // smaller pieces travel raw
  uint64_t piece_bytes = 0;         // largest piece, in bytes; 0: chosen per call (allreduce.cc)
  uint64_t memory_bytes = uint64_t{2} << 30;  // what automatic pieces may take in flight (or the buffer's size)
  bool checksum = false;            // compressed pieces carry a checksum of their data
  bool fuse = true;                 // the last pieces to land are decoded inside the fold
  bool fault = false;  // test hook (MPIZIP_FAULT=allreduce): this rank's part fails with
                       // kOutOfMemory as its second piece starts, as device memory exhausted
                       // mid-collective would (collectives of one piece are left alone)
};

// What a collective needs to know about its communicator, handed down by src/core.
struct Channel {
  // Keeps what `transport` and `resources` point to alive while an operation holds the channel,
  // even once the application has freed the communicator.
  std::shared_ptr<const void> owner;
  transport::Transport* transport = nullptr;
  int rank = 0;
  int nranks = 1;  // 2..kMaxRanks
  Resources* resources = nullptr;
  Policy policy;
  // Whether a call compresses (cost/model.h, measured per size class), where policy.compress
  // leaves it open; null: policy.compress alone.
  cost::Model* cost = nullptr;
};

// What a collective moved, for statistics.
struct Traffic {
  uint64_t messages = 0;    // data messages sent
  uint64_t compressed = 0;  // of which compressed
  uint64_t app_bytes = 0;   // bytes of elements they carry
  uint64_t wire_bytes = 0;  // bytes as sent
};

struct AllreduceArgs {
  const void* input = nullptr;  // `count` elements; equal to output for MPI_IN_PLACE
  void* output = nullptr;       // `count` elements
  uint64_t count = 0;
  format::DType dtype = format::DType::kFp32;  // one of kernels::reduce::dtype_reducible
  kernels::reduce::Op op = kernels::reduce::Op::kSum;
  bool device = false;        // the output is device memory (else host memory)
  bool input_device = false;  // the input is device memory; an input in the other memory than the
                              // output is copied into the output first, and the collective runs in
                              // place
  std::function<void(const Traffic&)> on_complete;  // called once when the collective completes
  // What the engine runs: an allreduce; a reduce-scatter (the reduce-scatter phase alone: each
  // owner's folded shard is in its output, the rest of which it leaves alone); a reduce to `root`
  // (the reduce-scatter, then each owner's shard to the root alone); a broadcast from `root` (a
  // scatter-allgather broadcast:
  // the root's shard r goes to rank r, compressed once by the root, and each rank sends its shard
  // to every rank but the root, compressed once by that rank, so every byte crosses each link
  // compressed; input and output are the broadcast's buffer, and op is MAX: a fold of the root's
  // piece alone under MAX is that piece, bit for bit); or an allgather (the all-gather phase
  // alone: each rank's shard, which is its block of the output and holds its data already, goes
  // compressed once to every other rank; the caller makes shards the ranks' blocks: a block of a
  // multiple of 16 bytes, coll/plan.h); or an alltoall (the reduce-scatter phase alone, each
  // contribution placed instead of folded: rank r's shard q, its block for rank q, goes to q,
  // compressed once, and lands in q's output block r; op is MAX, as for a broadcast; input and
  // output are distinct buffers in the same memory, and the caller makes shards the blocks).
  // Or an inclusive (exclusive) prefix reduction, MPI_Scan (MPI_Exscan): the reduce-scatter
  // phase, then each owner folds, for every rank q, the contributions of ranks 0..q (0..q-1) to its
  // shard in rank order and sends rank q its own prefix (compressed for q where q takes it so),
  // which lands in q's output; a prefix of one contribution is that contribution, copied. Rank 0's
  // output of an exclusive prefix is left alone.
  enum class Shape : uint8_t {
    kAllreduce, kReduceScatter, kReduce, kBcast, kAllgather, kAlltoall, kScan, kExscan
  };
  Shape shape = Shape::kAllreduce;
  int root = 0;  // kReduce, kBcast
  // Not kOk: this rank cannot take part (its caller's scratch memory was not there, say). It
  // touches no buffer, tells its peers in its hello, and the collective fails on every rank (this
  // one with this status), as when its own preparation fails: a non-blocking call, which may not
  // wait for an agreement round, still ends on every rank.
  Status local_error = Status::kOk;
};

// Starts the two-shot allreduce numbered `seq` on the communicator (every rank numbers its
// collectives alike; the number makes the collective's transfer tags). On success *op completes
// the collective as it is progressed, and its status carries the collective's outcome: kCorruptStream
// when a piece this rank depends on did not decode; kPeerFailed when another rank's part failed
// (its hello said so, or it sent a piece empty); this rank's own failure (kOutOfMemory,
// kDeviceError, ...) when its part failed, after it has told its peers (TwoShot::drain). Every
// rank's collective ends; none waits for a rank whose part failed.
Status start_allreduce(const Channel& ch, const AllreduceArgs& args, uint64_t seq,
                       std::unique_ptr<platform::Operation>* op);

}  // namespace mpizip::coll
