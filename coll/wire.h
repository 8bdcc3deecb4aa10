// What the two-shot allreduce puts on the wire besides the data: the hello every rank sends every
// other rank before any data moves, and the transfer tags.
//
// The hello carries the arguments that must agree across ranks (element type, op, count, piece
// size, the collective's sequence number) and what the sender does with the pieces it sends to
// the hello's receiver (compressed from some size on, or raw). Every rank receives a hello from
// every other rank, so if any two ranks disagree, every rank sees a disagreement (it differs from
// at least one of the two) and reports it, before any data message is posted: an erroneous program
// gets an error on every rank instead of a hang or corrupt data. Data messages then need no header:
// the plan says what each is, the sender's hello whether it is an MPIZip stream (docs/FORMAT.md,
// whose own header is checked when it is decoded) or raw elements.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/format.h"
#include "kernels/reduce.h"

namespace mpizip::coll {

inline constexpr size_t kHelloBytes = 64;

enum HelloFlags : uint8_t {
  // The sender compresses the pieces it sends to this hello's receiver when a piece holds at least
  // min_compress_bytes bytes.
  kHelloCompress = 1u << 0,
  // The sender cannot take part (it found no memory for the collective): every rank fails it.
  kHelloFailed = 1u << 1,
};

struct Hello {
  uint32_t magic;
  uint8_t version;
  format::DType dtype;
  kernels::reduce::Op op;
  uint8_t flags;
  uint8_t shape;  // the collective the engine runs (AllreduceArgs::Shape)
  uint8_t reserved[7];
  uint64_t count;  // elements
  uint64_t piece_elems;
  uint64_t min_compress_bytes;  // the sender's threshold for its compressed pieces
  uint64_t seq;                 // the collective's sequence number on the communicator
  uint64_t root;                // a reduce's or a broadcast's root (0 for the others)
  uint64_t check;  // hash of the fields above
};
static_assert(sizeof(Hello) == kHelloBytes, "hello is 64 bytes");

// `flags`: HelloFlags; `shape` and `root`: the collective (AllreduceArgs::shape and root).
Hello make_hello(format::DType dtype, kernels::reduce::Op op, uint64_t count, uint64_t piece_elems,
                 uint64_t seq, uint8_t flags, uint64_t min_compress_bytes, uint8_t shape = 0,
                 uint64_t root = 0);

// Validates a received hello of `bytes` bytes (size, magic, version, check). False for anything
// else.
bool parse_hello(const void* msg, uint64_t bytes, Hello* out);

// How a peer's hello disagrees with this rank's own (or says the peer failed), in the order of
// precedence used to report it.
enum class Disagreement {
  kNone, kMalformed, kFailed, kCollective, kRoot, kType, kOp, kCount, kPieceSize, kSequence
};
Disagreement compare_hello(const Hello& mine, const Hello& theirs);
const char* disagreement_string(Disagreement d);

// Which message of a collective a transfer carries.
enum class Kind { kHello, kReduceScatter, kAllgather };

// Most pieces a collective may have.
inline constexpr uint64_t kMaxPieces = (uint64_t{1} << 20) - 1;
// Tags one collective spans.
inline constexpr uint64_t kTagsPerCollective = uint64_t{1} << 21;

// kCollectiveTag | seq * kTagsPerCollective + index, the index 0 for the hello, 1 + 2j for piece
// j's reduce-scatter message and 2 + 2j for its all-gather message: a tag names one message per
// direction between two ranks. Tags are dense, so a transport that folds them modulo its own range
// (the PMPI transport: about (MPI_TAG_UB + 1) / 3) keeps the messages of the collectives in flight
// apart as long as they span less than that range (Open MPI: about 340 collectives).
uint64_t make_tag(uint64_t seq, Kind kind, uint64_t piece);

}  // namespace mpizip::coll
